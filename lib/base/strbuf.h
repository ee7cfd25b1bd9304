/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * strbuf.h - growable text buffers (struct buf) and string vectors
 * (struct strv).
 *
 * Both are zero-initialised ("struct buf b = {0};") and die("out of
 * memory") rather than fail.  Whoever declares one owns what it holds and
 * releases it with buf_free() / strv_free().
 */
#ifndef STAPXX_STRBUF_H
#define STAPXX_STRBUF_H

#include <stddef.h>

#include "base/error.h"

/* A growable byte buffer, NUL-terminated once anything was added (s is
 * NULL while empty).  len excludes the NUL. */
struct buf {
	char *s;
	size_t len, cap;
};

/* Append N bytes of S (which may hold NUL bytes). */
void buf_add(struct buf *b, const char *s, size_t n);
/* Append the string S. */
void buf_adds(struct buf *b, const char *s);
/* Append one byte. */
void buf_addc(struct buf *b, char c);
/* Append printf-style formatted text. */
void buf_addf(struct buf *b, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* Make room for N more bytes (and the NUL) without adding anything. */
void buf_grow(struct buf *b, size_t n);
/* Append everything that can be read from FD (until end of file),
 * retrying on EINTR; a regular file is read into one allocation of its
 * size.  Returns 0, or -1 with errno set (what was read stays in B).
 * FD stays open. */
int buf_read_fd(struct buf *b, int fd);
/* Detach the string: never NULL ("" when empty); the caller frees it.
 * B is empty afterwards. */
char *buf_steal(struct buf *b);
/* Free the contents; B is empty (and reusable) afterwards. */
void buf_free(struct buf *b);

/* A growable vector of owned strings, NULL-terminated once anything was
 * added (v[n] == NULL), so v can be passed as an argv. */
struct strv {
	char **v;
	size_t n, cap;
};

/* Append a copy of S. */
void strv_add(struct strv *sv, const char *s);
/* Append S itself (malloc'd; the vector takes ownership). */
void strv_take(struct strv *sv, char *s);
/* Index of the first string equal to S, or -1. */
long strv_find(const struct strv *sv, const char *s);
/* Free every string and the vector; SV is empty afterwards. */
void strv_free(struct strv *sv);

#endif
