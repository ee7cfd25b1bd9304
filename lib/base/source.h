/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * source.h - script text: reading .sxx files (or -e text), line tracking.
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

/* Wrap TEXT (LEN bytes, copied) named NAME (copied) in a new source (free
 * with source_free()).  Embedded NUL bytes are rejected like in
 * source_read(): NULL after error(). */
struct source *source_from_mem(const char *name, const char *text, size_t len);

/* Free SRC and everything it holds; NULL is fine. */
void source_free(struct source *src);

/* The rest of the first line of SRC's header comment (its leading lines
 * that start with '#', blank ones included) that starts with TAG, up to
 * the first blank: "# stap++ native: bpf lj-lua-stacks" gives
 * "lj-lua-stacks" for TAG "# stap++ native: bpf ".  A new string (the
 * caller frees it), or NULL when no such line. */
char *source_header_tag(const struct source *src, const char *tag);

/* 1-based line number of byte OFFSET (offset == len gives the last line). */
int source_line(const struct source *src, size_t offset);

#endif
