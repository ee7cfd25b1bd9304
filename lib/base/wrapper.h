/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * wrapper.h - libc wrappers: allocation that cannot fail, whole-file reads
 * and writes, and the $PATH look-up.
 *
 * The allocators die("out of memory") instead of returning NULL; the
 * caller owns (and frees) what they return.
 */
#ifndef STAPXX_WRAPPER_H
#define STAPXX_WRAPPER_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* asprintf that dies on failure; caller frees. */
char *xasprintf(const char *fmt, ...) PRINTF_LIKE(1, 2);
/* The same with a va_list; caller frees. */
char *xvasprintf(const char *fmt, va_list ap) PRINTF_LIKE(1, 0);

/* The whole contents of file PATH, NUL-terminated (malloc'd; the caller
 * frees it); *len (if LEN is not NULL) gets its size without the NUL.
 * NULL with errno set when it cannot be opened or read: no message. */
char *read_file(const char *path, size_t *len);

/* Write LEN bytes of DATA to file PATH (created with MODE, truncated).
 * Returns 0, or -1 after error("cannot write 'PATH': REASON"). */
int write_file(const char *path, const char *data, size_t len, mode_t mode);

/* Find NAME (no '/') in $PATH (or "/usr/local/bin:/usr/bin:/bin" when it
 * is unset): the first DIR/NAME that is an executable regular file.
 * Returns it (malloc'd; the caller frees it), or NULL (no message). */
char *path_lookup(const char *name);

/* PATH seen from directory ROOT: its part from the '/' after ROOT when it
 * lies under ROOT ("/proc/7/root/usr/lib/x.so" under "/proc/7/root" is
 * "/usr/lib/x.so", a pointer into PATH), else PATH itself (also when ROOT
 * is NULL). */
const char *path_under(const char *root, const char *path);

#endif
