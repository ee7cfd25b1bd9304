/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand/scan.h - the expander's scanner: stap's lexical structure
 * (string literals, comments, brackets) over raw script text, and the
 * helpers that append text to the output without moving line numbers.
 *
 * Nothing here reports errors: the scanning functions return indexes
 * into T (the text, with END as its limit) and let the caller decide.
 */
#ifndef STAPXX_EXPAND_SCAN_H
#define STAPXX_EXPAND_SCAN_H

#include <stddef.h>

#include "base/strbuf.h"

/* Most macro arguments match_paren() records. */
#define MAXARGS 8

/* Can C be part of an identifier (letter, digit, '_')? */
int is_ident(int c);

/* Skip a string literal starting at t[i] == '"'; returns the index after
 * the closing quote (or of the newline / END when unterminated, and then
 * *closed = 0). */
size_t skip_string(const char *t, size_t i, size_t end, int *closed);

/* Skip a comment at t[i] ('#', '//' or '/ *'); returns the index of the
 * terminating newline (line comments) or after the closing '* /'. */
size_t skip_comment(const char *t, size_t i, size_t end);

/* Does a comment start at t[i]?  '#' does not inside embedded C
 * (EMBEDDED set: between %{ and %}). */
int comment_at(const char *t, size_t i, size_t end, int embedded);

/*
 * Find the ')' matching the '(' at t[open].  Records the argument ranges
 * (split at depth-1 commas) in starts/ends when non-NULL (up to MAXARGS;
 * *nargs gets the real count).  Returns the index of ')' or (size_t)-1.
 */
size_t match_paren(const char *t, size_t open, size_t end,
		   size_t *starts, size_t *ends, int *nargs);

/* S[0, N) without leading and trailing white space (malloc'd; the caller
 * frees it). */
char *trim_dup(const char *s, size_t n);

/* t[from, to) with each comment turned into a space, trimmed (malloc'd;
 * the caller frees it). */
char *uncomment_dup(const char *t, size_t from, size_t to);

/* Strip the quotes of "..." in place (and the backslashes of its escapes);
 * anything else is left alone.  Returns S. */
char *unquote(char *s);

/* Append one newline per newline in t[from, to): keeps line numbers. */
void add_newlines(struct buf *out, const char *t, size_t from, size_t to);

/* Append S with newlines (and other line breaks) turned into spaces. */
void add_oneline(struct buf *out, const char *s);

/* Append S escaped for the inside of a stap string literal. */
void add_escaped(struct buf *out, const char *s);

/* Append S as a stap string literal (quoted, escaped). */
void add_quoted(struct buf *out, const char *s);

#endif
