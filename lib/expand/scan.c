/* SPDX-License-Identifier: GPL-2.0-or-later */
/* expand/scan.c - see expand/scan.h. */
#include "expand/scan.h"
#include "base/wrapper.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int is_ident(int c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Append one newline per newline in text[from, to): keeps line numbers. */
void add_newlines(struct buf *out, const char *t, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (t[i] == '\n')
			buf_addc(out, '\n');
}

/* Append S with newlines (and other line breaks) turned into spaces. */
void add_oneline(struct buf *out, const char *s)
{
	for (; *s; s++)
		buf_addc(out, (*s == '\n' || *s == '\r') ? ' ' : *s);
}

/* Append S escaped for the inside of a stap string literal. */
void add_escaped(struct buf *out, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		switch (ch) {
		case '\\': buf_adds(out, "\\\\"); break;
		case '"': buf_adds(out, "\\\""); break;
		case '\n': buf_adds(out, "\\n"); break;
		case '\r': buf_adds(out, "\\r"); break;
		case '\t': buf_adds(out, "\\t"); break;
		default:
			if (ch < 0x20 || ch == 0x7f)
				buf_addf(out, "\\%03o", ch);
			else
				buf_addc(out, (char)ch);
		}
	}
}

char *trim_dup(const char *s, size_t n)
{
	while (n > 0 && isspace((unsigned char)*s))
		s++, n--;
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	return xstrndup(s, n);
}

/* Skip a string literal starting at t[i] == '"'; returns the index after
 * the closing quote (or of the newline / END when unterminated, and then
 * *closed = 0). */
size_t skip_string(const char *t, size_t i, size_t end, int *closed)
{
	*closed = 0;
	for (i++; i < end; i++) {
		if (t[i] == '\\' && i + 1 < end && t[i + 1] != '\n') {
			i++;
		} else if (t[i] == '"') {
			*closed = 1;
			return i + 1;
		} else if (t[i] == '\n') {
			return i;
		}
	}
	return end;
}

/* Skip a comment at t[i] ('#', '//' or '/ *'); returns the index of the
 * terminating newline (line comments) or after the closing '* /'. */
size_t skip_comment(const char *t, size_t i, size_t end)
{
	if (t[i] == '/' && i + 1 < end && t[i + 1] == '*') {
		for (i += 2; i + 1 < end; i++)
			if (t[i] == '*' && t[i + 1] == '/')
				return i + 2;
		return end;
	}
	while (i < end && t[i] != '\n')
		i++;
	return i;
}

int comment_at(const char *t, size_t i, size_t end, int embedded)
{
	if (t[i] == '#')
		return !embedded;
	return t[i] == '/' && i + 1 < end && (t[i + 1] == '/' || t[i + 1] == '*');
}

/* Copy t[from, to) without its comments (each becomes a space), trimmed. */
char *uncomment_dup(const char *t, size_t from, size_t to)
{
	struct buf b = {0};
	char *r;

	for (size_t i = from; i < to;) {
		if (t[i] == '"') {
			int closed;
			size_t e = skip_string(t, i, to, &closed);
			buf_add(&b, t + i, e - i);
			i = e;
		} else if (comment_at(t, i, to, 0)) {
			i = skip_comment(t, i, to);
			buf_addc(&b, ' ');
		} else {
			buf_addc(&b, t[i++]);
		}
	}
	r = trim_dup(b.s ? b.s : "", b.len);
	buf_free(&b);
	return r;
}

size_t match_paren(const char *t, size_t open, size_t end,
		   size_t *starts, size_t *ends, int *nargs)
{
	int depth = 0, n = 0;
	size_t argstart = open + 1;

	for (size_t i = open; i < end; i++) {
		char ch = t[i];
		if (ch == '"') {
			int closed;
			i = skip_string(t, i, end, &closed) - 1;
			if (!closed)
				return (size_t)-1;
			continue;
		}
		if (comment_at(t, i, end, 0)) {
			i = skip_comment(t, i, end) - 1;
			continue;
		}
		if (ch == '(' || ch == '[' || ch == '{') {
			depth++;
		} else if (ch == ')' || ch == ']' || ch == '}') {
			depth--;
			if (depth == 0) {
				if (ch != ')')
					return (size_t)-1;
				if (starts && n < MAXARGS) {
					starts[n] = argstart;
					ends[n] = i;
				}
				n++;
				if (nargs)
					*nargs = n;
				return i;
			}
		} else if (ch == ',' && depth == 1) {
			if (starts && n < MAXARGS) {
				starts[n] = argstart;
				ends[n] = i;
			}
			n++;
			argstart = i + 1;
		}
	}
	return (size_t)-1;
}

char *unquote(char *s)
{
	size_t n = strlen(s);
	char *r, *w;

	if (n < 2 || s[0] != '"' || s[n - 1] != '"')
		return s;
	r = s + 1;
	w = s;
	for (; r < s + n - 1; r++) {
		if (*r == '\\' && r + 1 < s + n - 1)
			r++;
		*w++ = *r;
	}
	*w = '\0';
	return s;
}

void add_quoted(struct buf *out, const char *s)
{
	buf_addc(out, '"');
	add_escaped(out, s);
	buf_addc(out, '"');
}
