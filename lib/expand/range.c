/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand/range.c - expand_range() (see expand/ctx.h): the scan of a range
 * of script text that finds each macro and hands it to its family's
 * handler, and the @ macros that need no DWARF (@pfunc, @error).
 *
 * The handlers expand their macros' arguments through expand_range()
 * again: this recursion is the one call back, bounded by MAX_DEPTH.
 */
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "dwarf/dwarf.h"
#include "expand/bind.h"
#include "expand/caret.h"
#include "expand/cond.h"
#include "expand/ctx.h"
#include "expand/dwarf.h"
#include "expand/scan.h"
#include "expand/use.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

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
	if (!c->o->scan_only && !c->dead && c->o->dw && dw_refused(c->o->dw)) {
		c->errors++;	/* the refusal of the target's LuaJIT said why */
	} else if (!c->o->scan_only && !c->dead) {
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
