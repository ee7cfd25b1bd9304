/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand/ctx.c - what every macro handler shares (see expand/ctx.h): the
 * expander's messages (FILE:LINE of the macro), names after a sigil, the
 * "needs a target" check and the parsing of a macro's arguments.
 */
#include "expand/ctx.h"
#include "base/error.h"
#include "base/source.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "expand/scan.h"

#include <stdarg.h>
#include <stdlib.h>

/* The one place expander messages are printed: FILE:LINE of offset OFF. */
static void xreport(struct xctx *c, size_t off, int is_error,
		    const char *fmt, va_list ap)
{
	char *msg = xvasprintf(fmt, ap);

	error_set_location(c->src->path, source_line(c->src, off));
	if (is_error) {
		error("%s", msg);
		c->errors++;
	} else {
		warning("%s", msg);
	}
	error_clear_location();
	free(msg);
}

int xerr(struct xctx *c, size_t off, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xreport(c, off, 1, fmt, ap);
	va_end(ap);
	return -1;
}

void xwarn(struct xctx *c, size_t off, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xreport(c, off, 0, fmt, ap);
	va_end(ap);
}

int need_exec(struct xctx *c, size_t off, const char *macro)
{
	if (c->o->exec_path)
		return 0;
	xerr(c, off, "%s needs a target", macro);
	hint("use -x PID, --master PID, --exec PATH or -c CMD");
	return -1;
}

char *sigil_name(struct xctx *c, size_t i, size_t end, size_t *after)
{
	const char *t = c->src->text;
	size_t j = i + 2;

	while (j < end && is_ident(t[j]))
		j++;
	if (j == i + 2) {
		xerr(c, i, "expected a name after '%.2s'", t + i);
		return NULL;
	}
	*after = j;
	return xstrndup(t + i + 2, j - i - 2);
}


void callargs_free(struct callargs *a)
{
	for (int k = 0; k < a->n && k < MAXARGS; k++)
		free(a->v[k]);
}

/* Parse "(a, b, c)" at t[open]. */
int parse_call(struct xctx *c, const char *macro, size_t at,
		      size_t open, size_t end, int min, int max,
		      struct callargs *a)
{
	const char *t = c->src->text;
	size_t starts[MAXARGS], ends[MAXARGS];

	a->n = 0;
	if (open >= end || t[open] != '(')
		return xerr(c, at, "expected '(' after '%s'", macro);
	a->close = match_paren(t, open, end, starts, ends, &a->n);
	if (a->close == (size_t)-1) {
		a->n = 0;
		return xerr(c, at, "unterminated '%s(' (unbalanced parentheses "
			    "or quotes)", macro);
	}
	if (a->n == 1 && starts[0] == ends[0])
		a->n = 0;
	if (a->n < min || a->n > max) {
		int n = a->n;
		a->n = 0;
		if (min == max)
			return xerr(c, at, "%s takes %d argument%s, not %d",
				    macro, min, min == 1 ? "" : "s", n);
		return xerr(c, at, "%s takes %d to %d arguments, not %d",
			    macro, min, max, n);
	}
	for (int k = 0; k < a->n; k++) {
		struct buf b = {0};
		if (expand_range(c, starts[k], ends[k], &b, 1) == (size_t)-1) {
			buf_free(&b);
			a->n = k;
			callargs_free(a);
			a->n = 0;
			return -1;
		}
		a->v[k] = unquote(trim_dup(b.s ? b.s : "", b.len));
		buf_free(&b);
		if (!*a->v[k]) {
			a->n = k + 1;
			callargs_free(a);
			a->n = 0;
			return xerr(c, at, "empty argument %d of %s", k + 1,
				    macro);
		}
	}
	return 0;
}
