/* SPDX-License-Identifier: MIT */
/* strerror.c: in the bgrun built against musl, strerror() says what glibc's says (the table errtab.c made from it), so that bgrun words an errno as the project's other programs and the system's tools do. */

#include <string.h>

#include "errtab.h"

/* The link's --wrap=strerror makes every strerror() call in bgrun this one. */
char *__real_strerror(int error);
char *__wrap_strerror(int error);

char *__wrap_strerror(int error)
{
	if (error > 0 && (size_t)error < sizeof(glibc_errtab) / sizeof(glibc_errtab[0]) &&
	    glibc_errtab[error] != NULL)
		return (char *)glibc_errtab[error];
	return __real_strerror(error);
}
