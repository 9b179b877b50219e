/* SPDX-License-Identifier: MIT */
/* wire-internal.h: what wire.c and wire-decode.c share (src/event/ only). */

#ifndef BGRUN_WIRE_INTERNAL_H
#define BGRUN_WIRE_INTERNAL_H

#include "bgrun/wire.h"

/* Shared by wire.c and wire-decode.c only. */
bool bgrun__wire_valid_id(const uint8_t *s, size_t n);
int64_t *bgrun__wire_int_at(struct bgrun_event *ev,
			    const struct bgrun_wire_field *f);
const char **bgrun__wire_str_at(struct bgrun_event *ev,
				const struct bgrun_wire_field *f);
const char *const **bgrun__wire_argv_at(struct bgrun_event *ev,
					const struct bgrun_wire_field *f);

static inline uint32_t bgrun__wire_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline int64_t bgrun__wire_get_i64(const uint8_t *p)
{
	uint64_t v = (uint64_t)bgrun__wire_get_u32(p) << 32 |
		     bgrun__wire_get_u32(p + 4);

	return (int64_t)v; /* two's complement, as gcc and clang define it */
}

#endif /* BGRUN_WIRE_H */
