/* SPDX-License-Identifier: MIT */
/* probe.c: whether musl has one of the C library functions meson.build probes glibc for (src/musl/meson.build links this once per function). */
#include PROBE_HEADER

int main(void)
{
	return (int)(long)&PROBE_FUNCTION;
}
