/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand_dwarf.c - the DWARF macros (@sizeof, @offsetof, @has_member,
 * @has_type, @enum) and @var("sym").  See expand_dwarf.h.
 */
#include "expand_dwarf.h"
#include "dwarf.h"
#include "wrapper.h"

#include <stdlib.h>
#include <string.h>

enum dwop { DW_SIZEOF, DW_OFFSETOF, DW_HAS_MEMBER, DW_HAS_TYPE, DW_ENUM };

static const struct {
	const char *name;
	enum dwop op;
	int min, max;
} dwmacros[] = {
	{ "sizeof", DW_SIZEOF, 1, 2 },
	{ "offsetof", DW_OFFSETOF, 2, 3 },
	{ "has_member", DW_HAS_MEMBER, 2, 3 },
	{ "has_type", DW_HAS_TYPE, 1, 2 },
	{ "enum", DW_ENUM, 1, 2 },
};

static void do_dwarf(struct xctx *c, size_t at, enum dwop op,
		     struct callargs *a, int min, struct buf *out)
{
	const char *mod = a->n > min ? a->v[min] : NULL;
	long long v = 0;
	int flag = 0, rc;

	if (c->o->scan_only || c->dead) {
		buf_addc(out, '0');
		return;
	}
	if (!c->o->dw || (!mod && !c->o->exec_path)) {
		xerr(c, at, "DWARF macros need a target binary");
		hint("use -x PID, --master PID, --exec PATH or -c CMD, or name "
		     "the binary as the last argument");
		buf_addc(out, '0');
		return;
	}
	error_set_location(c->src->path, source_line(c->src, at));
	switch (op) {
	case DW_SIZEOF:
		rc = dw_sizeof(c->o->dw, a->v[0], mod, &v);
		break;
	case DW_OFFSETOF:
		rc = dw_offsetof(c->o->dw, a->v[0], a->v[1], mod, &v);
		break;
	case DW_HAS_MEMBER:
		rc = dw_has_member(c->o->dw, a->v[0], a->v[1], mod, &flag);
		v = flag;
		break;
	case DW_HAS_TYPE:
		rc = dw_has_type(c->o->dw, a->v[0], mod, &flag);
		v = flag;
		break;
	default:
		rc = dw_enum(c->o->dw, a->v[0], mod, &v);
		break;
	}
	error_clear_location();
	if (rc < 0) {
		c->errors++;
		v = 0;
	}
	if (v < 0)
		buf_addf(out, "(%lld)", v);
	else
		buf_addf(out, "%lld", v);
}

/* @var("sym") at t[i] whose '(' is at t[open]: "@var(\"sym@CU\",
 * \"MODULE\")" with the CU and module found in DWARF; unchanged when the
 * target's DWARF has no global "sym" (a probed function's parameter or
 * local, which stap resolves from the probe's context).  Returns the index
 * after it, or 0 when the call is not that form (stap's own forms stay as
 * they are). */
static size_t do_var(struct xctx *c, size_t i, size_t open, size_t end,
		     struct buf *out)
{
	const char *t = c->src->text;
	size_t starts[MAXARGS], ends[MAXARGS];
	int n = 0;
	size_t close = match_paren(t, open, end, starts, ends, &n);
	char *arg0 = n == 1 ? trim_dup(t + starts[0], ends[0] - starts[0])
			    : NULL;

	/* Only the one-argument form without "@CU" is ours; stap's own
	 * forms go through untouched (their strings expanded). */
	if (close == (size_t)-1 || !arg0 || arg0[0] != '"' ||
	    strlen(arg0) < 2 || arg0[strlen(arg0) - 1] != '"' ||
	    strchr(arg0, '@') || strchr(arg0, '$') || strchr(arg0, '\\')) {
		free(arg0);
		return 0;
	}
	char *sym = unquote(arg0);
	const char *mod = NULL, *cu = NULL;
	if (c->o->scan_only || c->dead) {
		buf_adds(out, "@var(\"\")");
	} else if (!*sym) {
		xerr(c, i, "empty symbol name in @var");
	} else if (!c->o->dw || !c->o->exec_path) {
		xerr(c, i, "@var(\"%s\") needs a target binary to find the "
		     "module that defines it", sym);
		hint("use -x PID, --master PID, --exec PATH or -c CMD, or "
		     "write @var(\"%s@CU\", \"MODULE\")", sym);
	} else {
		error_set_location(c->src->path, source_line(c->src, i));
		int rc = dw_find_var(c->o->dw, sym, NULL, &mod, &cu);
		error_clear_location();
		if (rc < 0) {
			c->errors++;
		} else if (rc > 0) {
			/* No global of that name: stap resolves it against
			 * the probe's context (a parameter or local), or
			 * reports its own error. */
			info(1, "%s:%d: no global '%s' in the target's DWARF: "
			     "@var(\"%s\") left to stap (a context variable?)",
			     c->src->path, source_line(c->src, i), sym, sym);
			buf_adds(out, "@var(");
			add_quoted(out, sym);
			buf_addc(out, ')');
		} else {
			buf_adds(out, "@var(");
			char *s = xasprintf("%s@%s", sym, cu);
			add_quoted(out, s);
			free(s);
			buf_adds(out, ", ");
			add_quoted(out, mod);
			buf_addc(out, ')');
			if (strv_find(&c->x->modules, mod) < 0)
				strv_add(&c->x->modules, mod);
		}
	}
	free(arg0);
	add_newlines(out, t, i, close);
	return close + 1;
}

size_t do_dwarf_macro(struct xctx *c, const char *id, size_t i, size_t open,
		      size_t end, struct buf *out)
{
	struct callargs a;

	for (size_t k = 0; k < sizeof(dwmacros) / sizeof(dwmacros[0]); k++) {
		if (strcmp(id, dwmacros[k].name) != 0)
			continue;
		char *macro = xasprintf("@%s", id);
		int rc = parse_call(c, macro, i, open, end, dwmacros[k].min,
				    dwmacros[k].max, &a);
		free(macro);
		if (rc < 0)
			return (size_t)-1;
		do_dwarf(c, i, dwmacros[k].op, &a, dwmacros[k].min, out);
		callargs_free(&a);
		add_newlines(out, c->src->text, i, a.close);
		return a.close + 1;
	}
	if (strcmp(id, "var") == 0 && open < end && c->src->text[open] == '(')
		return do_var(c, i, open, end, out);
	return 0;
}
