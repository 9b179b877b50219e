/* SPDX-License-Identifier: MIT */
/* bgrun/wire.h: the sink protocol's frames (docs/protocol.md): pure encoders and decoders, no I/O (libbgrun). */

#ifndef BGRUN_WIRE_H
#define BGRUN_WIRE_H

#include "bgrun/common.h"
#include "bgrun/event.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A frame: u32 length (big-endian, the bytes after itself), u8 version,
 * u8 type, u32 sequence number, then fields: u16 tag, u32 length, bytes.
 * docs/protocol.md is the reference; this header is the C face of it.
 *
 * THREAD SAFETY: every function here is pure (no I/O, no global state)
 * and may run in any thread. None of them prints.
 */
#define BGRUN_WIRE_VERSION 1
/* The largest value of a frame's length field (1 MiB). */
#define BGRUN_WIRE_MAX_FRAME (1024u * 1024u)
/* The length field, then version, type and sequence number. */
#define BGRUN_WIRE_LEN_SIZE 4u
#define BGRUN_WIRE_HEADER 10u

enum bgrun_wire_type {
	BGRUN_WIRE_HELLO = 1, /* either way: who speaks, and for which store */
	BGRUN_WIRE_EVENT = 2, /* client to daemon: one event to store */
	BGRUN_WIRE_ACK = 3,   /* daemon to client: the event is committed */
	BGRUN_WIRE_ERROR = 4, /* daemon to client: a refusal, with a code */
};

/* The codes of an ERROR frame. */
enum bgrun_wire_code {
	BGRUN_WIRE_E_MALFORMED = 1,  /* not a valid frame: connection closed */
	BGRUN_WIRE_E_TOO_LARGE = 2,  /* length above the maximum: closed */
	BGRUN_WIRE_E_VERSION = 3,    /* a version the daemon does not speak */
	BGRUN_WIRE_E_UNEXPECTED = 4, /* a type the daemon does not take */
	BGRUN_WIRE_E_INVALID = 5,    /* the store refuses this event for good */
	BGRUN_WIRE_E_STORE = 6,      /* the store failed; try another way */
	BGRUN_WIRE_E_DENIED = 7,     /* the peer's uid is not allowed */
	BGRUN_WIRE_E_BUSY = 8,       /* too many connections */
	BGRUN_WIRE_E_SHUTDOWN = 9,   /* the daemon is stopping */
};

/* How a field's bytes are read. */
enum bgrun_wire_kind {
	BGRUN_WIRE_STR,  /* UTF-8 bytes, no NUL, no terminator */
	BGRUN_WIRE_INT,  /* 8 bytes, big-endian two's complement */
	BGRUN_WIRE_ARGV, /* u32 count, then per string: u32 length, bytes */
	BGRUN_WIRE_ID,   /* the event id: 1 to 36 of [0-9A-Za-z._-] */
};

/* The tags of the fields of an ACK, an ERROR and a HELLO. */
enum {
	BGRUN_WIRE_T_STATUS = 64,   /* ACK: int, 0 = committed */
	BGRUN_WIRE_T_CODE = 65,     /* ERROR: int, a bgrun_wire_code */
	BGRUN_WIRE_T_TEXT = 66,     /* ERROR: str, one line for people */
	BGRUN_WIRE_T_VERSION = 67,  /* HELLO: int, the highest version spoken */
	BGRUN_WIRE_T_MAX_FRAME = 68,/* HELLO: int, the largest length taken */
	BGRUN_WIRE_T_PID = 69,      /* HELLO: int, the sender's pid */
	BGRUN_WIRE_T_DB_PATH = 70,  /* HELLO: str, the daemon's database */
	BGRUN_WIRE_T_DB_DEV = 71,   /* HELLO: int, its st_dev */
	BGRUN_WIRE_T_DB_INO = 72,   /* HELLO: int, its st_ino */
	BGRUN_WIRE_T_STARTED = 73,  /* HELLO: int, the daemon's start (ns, realtime) */
	BGRUN_WIRE_T_EVENTS = 74,   /* HELLO: int, events it committed so far */
	BGRUN_WIRE_T_QUEUED = 75,   /* HELLO: int, events waiting for its writer */
};

/*
 * One field of an EVENT: each member of struct bgrun_event, in its order;
 * bgrun_wire_fields[i] has tag i + 1 (1 to 35 in this version).
 */
struct bgrun_wire_field {
	uint16_t tag;
	uint8_t kind;      /* enum bgrun_wire_kind */
	const char *name;  /* the member's name ("exit_code") */
	size_t offset;     /* in struct bgrun_event */
};
extern BGRUN_EXTERN const struct bgrun_wire_field bgrun_wire_fields[];
extern BGRUN_EXTERN const size_t bgrun_wire_n_fields;

/* The event field called name, or NULL. */
BGRUN_EXTERN const struct bgrun_wire_field *bgrun_wire_field_by_name(const char *name);

/* Sets every field of ev to unknown (BGRUN_NULL, NULL) and the id to "". */
BGRUN_EXTERN void bgrun_wire_event_clear(struct bgrun_event *ev);

/* A growing output buffer. Start from {0}; release with _buf_free. */
struct bgrun_wire_buf {
	uint8_t *data;
	size_t len, cap;
};
BGRUN_EXTERN void bgrun_wire_buf_free(struct bgrun_wire_buf *b);

/*
 * Encoders: each appends one whole frame to b and returns its size, or
 * -ENOMEM, -EINVAL (an event without a valid id or an event name),
 * -EMSGSIZE (larger than BGRUN_WIRE_MAX_FRAME); b is unchanged on failure.
 * Unknown fields (BGRUN_NULL, NULL) are left out.
 */
BGRUN_EXTERN int bgrun_wire_put_event(struct bgrun_wire_buf *b, uint32_t seq,
			  const struct bgrun_event *ev);
BGRUN_EXTERN int bgrun_wire_put_ack(struct bgrun_wire_buf *b, uint32_t seq,
			int64_t status);
BGRUN_EXTERN int bgrun_wire_put_error(struct bgrun_wire_buf *b, uint32_t seq, int code,
			  const char *text);

struct bgrun_wire_hello {
	int64_t version;     /* BGRUN_NULL: not said */
	int64_t max_frame;
	int64_t pid;
	const char *db_path; /* NULL: not said */
	int64_t db_dev, db_ino;
	/* The daemon's state when it answered (its status); BGRUN_NULL: not said. */
	int64_t started_ns, events, queued;
};
BGRUN_EXTERN int bgrun_wire_put_hello(struct bgrun_wire_buf *b, uint32_t seq,
			  const struct bgrun_wire_hello *h);

/*
 * Whether buf (len bytes) starts with a whole frame, judging from the
 * length field only (nothing is allocated). 1: yes, *ret_size is its
 * size (length field included). 0: not yet; *ret_size is the size the
 * frame will have once known (len >= 4), else 0. -EMSGSIZE: the length
 * is above max_len (at most BGRUN_WIRE_MAX_FRAME); -EBADMSG: below the
 * header's.
 */
BGRUN_EXTERN int bgrun_wire_frame_size(const uint8_t *buf, size_t len, size_t max_len,
			   size_t *ret_size);

/* The sequence number of a frame with a whole header, else 0. */
BGRUN_EXTERN uint32_t bgrun_wire_frame_seq(const uint8_t *frame, size_t size);

/*
 * A decoded frame. Strings and argv point into mem (one allocation, owned
 * by the message, released by bgrun_wire_msg_release).
 */
struct bgrun_wire_msg {
	unsigned type;                   /* enum bgrun_wire_type */
	uint32_t seq;
	struct bgrun_event ev;           /* EVENT */
	int64_t status;                  /* ACK */
	int64_t code;                    /* ERROR */
	const char *text;                /* ERROR, or NULL */
	struct bgrun_wire_hello hello;  /* HELLO */
	void *mem;
};

/*
 * Decodes one whole frame of size bytes (as bgrun_wire_frame_size found
 * it). -EBADMSG: malformed (a truncated field, a duplicate tag, a string
 * holding NUL, an integer not 8 bytes long, a missing required field, an
 * unknown type...); -EPROTONOSUPPORT: another version; -ENOMEM. On
 * failure *why (optional) gets a static one-line reason. Fields with tags
 * unknown to the message's type are skipped.
 */
BGRUN_EXTERN int bgrun_wire_decode(const uint8_t *frame, size_t size,
		       struct bgrun_wire_msg *ret_msg, const char **why);

/* Frees what a decoded message owns; accepts a zeroed message. */
BGRUN_EXTERN void bgrun_wire_msg_release(struct bgrun_wire_msg *msg);

/* A code's name ("malformed frame", "too many connections"...). */
BGRUN_EXTERN const char *bgrun_wire_code_name(int64_t code);

#ifdef __cplusplus
}
#endif

#endif /* BGRUN_WIRE_H */
