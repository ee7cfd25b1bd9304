/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand.c - the expander's driver (see expand.h): the two passes over the
 * script and its modules, the scan of each file that finds the macros, and
 * the @ macros that need no DWARF (@pfunc, @error).
 *
 * The macro families live in pairs named for them: expand_scan (stap's
 * lexical structure), expand_caret ($^), expand_bind ($*), expand_use
 * (@use), expand_dwarf (@sizeof ... @var) and expand_cond (%( %)).
 */
#include "expand/expand.h"
#include "dwarf/dwarf.h"
#include "base/error.h"
#include "expand/bind.h"
#include "expand/caret.h"
#include "expand/cond.h"
#include "expand/ctx.h"
#include "expand/dwarf.h"
#include "expand/scan.h"
#include "expand/use.h"
#include "base/strbuf.h"
#include "base/wrapper.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* @pfunc(NAME) at t[i]: process("EXEC").function("NAME"). */
static size_t do_pfunc(struct xctx *c, size_t i, size_t open, size_t end,
		       struct buf *out)
{
	struct callargs a;

	if (parse_call(c, "@pfunc", i, open, end, 1, 1, &a) < 0)
		return (size_t)-1;
	if (strpbrk(a.v[0], "\"\\\n")) {
		xerr(c, i, "invalid function name '%s' in @pfunc", a.v[0]);
	} else if (c->o->scan_only) {
		buf_adds(out, "process(\"\")");
	} else if (need_exec(c, i, "@pfunc") == 0) {
		buf_adds(out, "process(");
		add_quoted(out, c->o->exec_path);
		buf_adds(out, ").function(");
		add_quoted(out, a.v[0]);
		buf_addc(out, ')');
	}
	callargs_free(&a);
	add_newlines(out, c->src->text, i, a.close);
	return a.close + 1;
}

/* @error(MSG) at t[i]: the script's own error, unless in a dead branch. */
static size_t do_error(struct xctx *c, size_t i, size_t open, size_t end,
		       struct buf *out)
{
	struct callargs a;

	if (parse_call(c, "@error", i, open, end, 1, 1, &a) < 0)
		return (size_t)-1;
	if (!c->o->scan_only && !c->dead) {
		xerr(c, i, "%s", a.v[0]);
		if (c->o->dw)
			dw_hint_nodebug(c->o->dw);
	}
	callargs_free(&a);
	add_newlines(out, c->src->text, i, a.close);
	return a.close + 1;
}

/* @NAME at t[i]. */
static size_t do_at(struct xctx *c, size_t i, size_t end, struct buf *out)
{
	const char *t = c->src->text;
	size_t j = i + 1, open, next = 0;
	char *id;

	while (j < end && is_ident(t[j]))
		j++;
	id = xstrndup(t + i + 1, j - i - 1);
	open = j;
	while (open < end && (t[open] == ' ' || t[open] == '\t'))
		open++;
	if (strcmp(id, "use") == 0)
		next = do_use(c, i, end);
	else if (strcmp(id, "pfunc") == 0)
		next = do_pfunc(c, i, open, end, out);
	else if (strcmp(id, "error") == 0)
		next = do_error(c, i, open, end, out);
	else
		next = do_dwarf_macro(c, id, i, open, end, out);
	free(id);
	if (next)
		return next;
	/* Not ours (stap's @cast, @defined, @entry...): copy the name. */
	buf_add(out, t + i, j - i);
	return j;
}

/* --------------------------------------------------------------- driver */

size_t expand_range(struct xctx *c, size_t i, size_t end, struct buf *out,
		    int strip_comments)
{
	const char *t = c->src->text;
	int in_str = 0, embedded = 0, npp = 0;
	struct ppframe pp[MAX_PP];
	size_t run = i;		/* start of text not yet copied */

	if (++c->depth > MAX_DEPTH) {
		c->depth--;
		xerr(c, i, "macros nested too deeply");
		return (size_t)-1;
	}
#define FLUSH() do { buf_add(out, t + run, i - run); } while (0)
	while (i < end) {
		char ch = t[i];
		size_t next;

		if (in_str) {
			if (ch == '\\' && i + 1 < end && t[i + 1] != '\n') {
				i += 2;
				continue;
			}
			if (ch == '"' || ch == '\n') {
				in_str = 0;
				if (c->pending_nl) {
					i += ch == '"';
					FLUSH();
					for (; c->pending_nl > 0; c->pending_nl--)
						buf_addc(out, '\n');
					run = i;
					continue;
				}
			} else if (ch == '$' && i + 1 < end && t[i + 1] == '^') {
				FLUSH();
				next = do_caret(c, i, end, out, 1);
				if (next == (size_t)-1)
					goto fail;
				i = run = next;
				continue;
			}
			i++;
			continue;
		}
		if (ch == '"') {
			in_str = 1;
			i++;
			continue;
		}
		if (comment_at(t, i, end, embedded)) {
			next = skip_comment(t, i, end);
			if (strip_comments) {
				FLUSH();
				buf_addc(out, ' ');
				add_newlines(out, t, i, next);
				run = next;
			}
			i = next;
			continue;
		}
		if (ch == '%' && i + 1 < end && (t[i + 1] == '{' || t[i + 1] == '}')) {
			embedded = t[i + 1] == '{';
			i += 2;
			continue;
		}
		if (ch == '%' && i + 1 < end && !embedded &&
		    strchr("(?:)", t[i + 1])) {
			FLUSH();
			pp_directive(c, t[i + 1], out, pp, &npp);
			buf_add(out, t + i, 2);
			i = run = i + 2;
			continue;
		}
		if (ch == '$' && i + 1 < end && (t[i + 1] == '^' || t[i + 1] == '*')) {
			FLUSH();
			next = t[i + 1] == '^' ? do_caret(c, i, end, out, 0)
					       : do_star(c, i, end, out);
			if (next == (size_t)-1)
				goto fail;
			i = run = next;
			continue;
		}
		if (ch == '@' && i + 1 < end && isalpha((unsigned char)t[i + 1])) {
			FLUSH();
			next = do_at(c, i, end, out);
			if (next == (size_t)-1)
				goto fail;
			i = run = next;
			continue;
		}
		i++;
	}
	FLUSH();
#undef FLUSH
	c->depth--;
	if (c->depth == 0)
		for (; c->pending_nl > 0; c->pending_nl--)
			buf_addc(out, '\n');
	while (npp > 0)		/* unbalanced %( : stap reports it */
		pp_directive(c, ')', out, pp, &npp);
	return end;
fail:
	c->depth--;
	while (npp > 0)
		pp_directive(c, ')', out, pp, &npp);
	return (size_t)-1;
}


/* Expand (or scan) one file. */
static int expand_file(struct xctx *c, struct xfile *f)
{
	struct buf out = {0};
	const char *t = f->src->text;
	size_t start = 0;
	int before = c->errors;

	c->src = f->src;
	if (t[0] == '#' && t[1] == '!') {
		/* "#!/usr/bin/env stap++" -> "#!/usr/bin/env stap" */
		const char *nl = strchr(t, '\n');
		size_t n = nl ? (size_t)(nl - t) : f->src->len;
		char *line = xstrndup(t, n);
		char *pp = strstr(line, "stap++");
		if (pp)
			memmove(pp + 4, pp + 6, strlen(pp + 6) + 1);
		buf_adds(&out, line);
		free(line);
		start = n;
	}
	if (expand_range(c, start, f->src->len, &out, 0) == (size_t)-1 &&
	    c->errors == before)
		c->errors++;
	bindings_free(&c->binds, &c->nbinds);
	if (c->o->scan_only)
		buf_free(&out);
	else
		f->out = buf_steal(&out);
	return c->errors == before ? 0 : -1;
}

int expand_script(const struct expand_opts *o, struct source *main,
		  struct expansion *x)
{
	struct expand_opts scan = *o;
	struct xctx c = { .o = &scan, .x = x };

	memset(x, 0, sizeof(*x));
	x->files = xcalloc(1, sizeof(*x->files));
	x->files[0].src = main;
	x->nfiles = 1;

	/* Pass 1: load every module, collect arguments and defaults. */
	scan.scan_only = 1;
	for (size_t i = 0; i < x->nfiles; i++)
		expand_file(&c, &x->files[i]);
	if (c.errors || o->scan_only)
		goto out;

	/* Pass 2: expand. */
	c.o = o;
	for (size_t i = 0; i < x->nfiles; i++)
		expand_file(&c, &x->files[i]);
	/* Declare the master global after the last line (no line moves). */
	if (!c.errors && x->uses_master && x->files[0].out) {
		char *main_out = xasprintf("%s\nglobal " STAPXX_MASTER " = 0"
					   "  /* stap++ --master */\n",
					   x->files[0].out);
		free(x->files[0].out);
		x->files[0].out = main_out;
	}
out:
	bindings_free(&c.defs, &c.ndefs);
	for (size_t i = 0; i < c.nlibs; i++)
		free(c.libs[i].name);
	free(c.libs);
	return c.errors ? -1 : 0;
}

void expansion_free(struct expansion *x)
{
	for (size_t i = 0; i < x->nfiles; i++) {
		free(x->files[i].module);
		source_free(x->files[i].src);
		free(x->files[i].out);
	}
	free(x->files);
	for (size_t i = 0; i < x->nparams; i++) {
		free(x->params[i].name);
		free(x->params[i].def);
	}
	free(x->params);
	strv_free(&x->modules);
	memset(x, 0, sizeof(*x));
}
