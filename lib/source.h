/*
 * source.h - script text: reading .sxx files, line tracking, text buffers.
 *
 * A source holds the whole text of one file (or of a -e string) plus an
 * index of line starts, so any byte offset maps to its 1-based line number.
 */
#ifndef STAPXX_SOURCE_H
#define STAPXX_SOURCE_H

#include <stddef.h>

struct source {
	char *path;		/* name shown in messages (owned) */
	char *text;		/* NUL-terminated contents (owned) */
	size_t len;		/* bytes in text, without the NUL */
	size_t *lines;		/* byte offset of each line start (owned) */
	size_t nlines;
};

/* Read file PATH ("-": standard input, named "<stdin>").  Returns a new
 * source (free with source_free()) or NULL after printing "cannot read
 * 'PATH': REASON".  A NUL byte in the file is an error (scripts are text). */
struct source *source_read(const char *path);

/* Wrap TEXT (LEN bytes, copied) named NAME (copied); never NULL.  Embedded
 * NUL bytes are rejected like in source_read(): returns NULL after error(). */
struct source *source_from_mem(const char *name, const char *text, size_t len);

void source_free(struct source *src);

/* 1-based line number of byte OFFSET (offset == len gives the last line). */
int source_line(const struct source *src, size_t offset);

/* A growable NUL-terminated text buffer.  Zero-initialise it; the caller
 * owns b->s and frees it with free() (or buf_free()). */
struct buf {
	char *s;
	size_t len, cap;
};
void buf_add(struct buf *b, const char *s, size_t n);
void buf_adds(struct buf *b, const char *s);
void buf_addc(struct buf *b, char c);
void buf_addf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Detach the string (never NULL; "" when empty); the caller frees it. */
char *buf_steal(struct buf *b);
void buf_free(struct buf *b);

/* A growable vector of owned strings.  Zero-initialise it. */
struct strv {
	char **v;
	size_t n, cap;
};
/* Append a copy of S. */
void strv_add(struct strv *sv, const char *s);
/* Append S itself (the vector takes ownership). */
void strv_take(struct strv *sv, char *s);
/* Index of S in SV, or -1. */
long strv_find(const struct strv *sv, const char *s);
void strv_free(struct strv *sv);

/* Write LEN bytes of DATA to file PATH (created 0644, truncated).
 * Returns 0, or -1 after error(). */
int write_file(const char *path, const char *data, size_t len);

#endif
