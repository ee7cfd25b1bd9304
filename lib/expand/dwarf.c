/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand/dwarf.c - the DWARF macros (@sizeof, @offsetof, @has_member,
 * @has_type, @enum) and @var("sym").  See expand/dwarf.h.
 */
#include "expand/dwarf.h"
#include "base/wrapper.h"
#include "dwarf/dwarf.h"

#include <stdlib.h>
#include <string.h>

enum dwop { DW_SIZEOF, DW_OFFSETOF, DW_HAS_MEMBER, DW_HAS_TYPE, DW_ENUM };

/* @var's binary PATH: for a target in a container, the copy in stap's
 * sysroot (malloc'd). */
static char *var_module(const struct expand_opts *o, const char *path)
{
	const char *t = path_under(o->target_root, path);

	return t != path && o->sysroot ? xasprintf("%s%s", o->sysroot, t) : xstrdup(path);
}

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

/* Whether the macro at t[at] can look anything up (MOD: it names its
 * module); else it expands to DEAD (a scan, a dropped branch), after an
 * error when there is no target. */
static int can_look_up(struct xctx *c, size_t at, const char *mod,
		       const char *dead, struct buf *out)
{
	if (c->o->scan_only || c->dead) {
		buf_adds(out, dead);
		return 0;
	}
	if (!c->o->dw || (!mod && !c->o->exec_path)) {
		xerr(c, at, "DWARF macros need a target binary");
		hint("use -x PID, --master PID, --exec PATH or -c CMD, or name "
		     "the binary as the last argument");
		buf_adds(out, dead);
		return 0;
	}
	return 1;
}

static void do_dwarf(struct xctx *c, size_t at, enum dwop op,
		     struct callargs *a, int min, struct buf *out)
{
	const char *mod = a->n > min ? a->v[min] : NULL;
	long long v = 0;
	int flag = 0, rc;

	if (!can_look_up(c, at, mod, "0", out))
		return;
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

/* Is the word at t[i, j) the keyword KW starting a top-level definition
 * (not the ".function" of a probe point)? */
static int definition_word(const char *t, size_t i, size_t j, const char *kw)
{
	size_t k = i;
	if (j - i != strlen(kw) || memcmp(t + i, kw, j - i) != 0)
		return 0;
	while (k > 0 && (t[k - 1] == ' ' || t[k - 1] == '\t' || t[k - 1] == '\n'))
		k--;
	return k == 0 || t[k - 1] != '.';
}

/* The functions the probe whose body holds t[at] probes: NAME of each
 * .function("NAME") and .statement("NAME@...") in its header, without
 * "@..." and without wildcards (those are skipped).  Appended to NAMES;
 * nothing when t[at] is not in a probe's body. */
static void probed_functions(const char *t, size_t at, struct strv *names)
{
	static const char *const kw[] = { ".function(\"", ".statement(\"" };
	size_t i = 0, head = 0, body = 0;
	int depth = 0, in_probe = 0, closed;

	while (i < at) {
		if (comment_at(t, i, at, 0)) {
			i = skip_comment(t, i, at);
		} else if (t[i] == '"') {
			i = skip_string(t, i, at, &closed);
		} else if (t[i] == '%' && i + 1 < at && t[i + 1] == '{') {
			const char *e = strstr(t + i, "%}");
			i = e && (size_t)(e - t) < at ? (size_t)(e - t) + 2 : at;
		} else if (t[i] == '{') {
			if (depth++ == 0)
				body = i;
			i++;
		} else if (t[i] == '}') {
			if (depth > 0 && --depth == 0)
				in_probe = 0;
			i++;
		} else if (depth == 0 && is_ident(t[i]) &&
			   (i == 0 || !is_ident(t[i - 1]))) {
			size_t j = i;
			while (j < at && is_ident(t[j]))
				j++;
			if (definition_word(t, i, j, "probe")) {
				in_probe = 1;
				head = j;
			} else if (definition_word(t, i, j, "function")) {
				in_probe = 0;
			}
			i = j;
		} else {
			i++;
		}
	}
	if (!in_probe || depth == 0 || body < head)
		return;
	for (size_t k = head; k < body; k++) {
		for (size_t w = 0; w < sizeof(kw) / sizeof(kw[0]); w++) {
			size_t n = strlen(kw[w]), e = k + n;
			if (strncmp(t + k, kw[w], n) != 0)
				continue;
			while (e < body && !strchr("\"@\\\n", t[e]))
				e++;
			char *name = xstrndup(t + k + n, e - k - n);
			if (*name && !strpbrk(name, "*?[$"))
				strv_add(names, name);
			free(name);
		}
	}
}

/* @var("sym") at t[i] whose '(' is at t[open]: "@var(\"sym@CU\",
 * \"MODULE\")" with the CU and module found in DWARF; unchanged when
 * "sym" is a parameter or local of a function the enclosing probe probes,
 * or the target's DWARF has no global "sym" (stap resolves it from the
 * probe's context, or says it cannot).  Returns the index after it, or 0
 * when the call is not that form (stap's own forms stay as they are). */
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
		struct strv fns = { 0 };
		const char *ctx = NULL;
		probed_functions(t, i, &fns);
		for (size_t k = 0; k < fns.n && !ctx; k++)
			if (dw_func_has_local(c->o->dw, fns.v[k], sym))
				ctx = fns.v[k];
		error_set_location(c->src->path, source_line(c->src, i));
		int rc = ctx ? 1 : dw_find_var(c->o->dw, sym, NULL, &mod, &cu);
		error_clear_location();
		if (ctx) {
			/* The probed function's own: stap reads it from the
			 * probe's context (it shadows a global of that name,
			 * as in C). */
			info(1, "%s:%d: '%s' is a parameter or local of the "
			     "probed function '%s': @var(\"%s\") left to stap",
			     c->src->path, source_line(c->src, i), sym, ctx, sym);
			buf_adds(out, "@var(");
			add_quoted(out, sym);
			buf_addc(out, ')');
		} else if (rc < 0) {
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
			char *vm = var_module(c->o, mod);
			add_quoted(out, vm);
			free(vm);
			buf_addc(out, ')');
			if (strv_find(&c->x->modules, mod) < 0)
				strv_add(&c->x->modules, mod);
		}
		strv_free(&fns);
	}
	free(arg0);
	add_newlines(out, t, i, close);
	return close + 1;
}

/* @layout_db(on|binary|vm_size|vm_head|exit_lo|exit_hi|nginx): how the
 * layout database identified the target's LuaJIT (dw_database); nginx: 1
 * when the LuaJIT's layouts come from it and the target is an nginx
 * without debug info (dw_nodebug_nginx). */
static void do_layout_db(struct xctx *c, size_t at, const char *key,
			 struct buf *out)
{
	static const char *const keys[] = { "on", "binary", "vm_size",
					    "vm_head", "exit_lo", "exit_hi",
					    "nginx" };
	const size_t nkeys = sizeof(keys) / sizeof(*keys);
	const char *path = NULL;
	struct dw_vm vm;
	unsigned long long v[] = { 0, 0, 0, 0, 0, 0, 0 };
	size_t k = 0;
	int rc;

	while (k < nkeys && strcmp(key, keys[k]) != 0)
		k++;
	if (k == nkeys) {
		xerr(c, at, "unknown key '%s' of @layout_db (on, binary, "
		     "vm_size, vm_head, exit_lo, exit_hi or nginx)", key);
		return;
	}
	if (!can_look_up(c, at, NULL, k == 1 ? "\"\"" : "0", out))
		return;
	error_set_location(c->src->path, source_line(c->src, at));
	rc = dw_database(c->o->dw, &path, &vm);
	error_clear_location();
	if (rc < 0)
		c->errors++;
	v[0] = rc > 0;
	v[2] = vm.size;
	v[3] = vm.head;
	v[4] = vm.exit_lo;
	v[5] = vm.exit_hi;
	v[6] = rc > 0 && dw_nodebug_nginx(c->o->dw) != NULL;
	if (k == 1)
		add_quoted(out, path ? path_under(c->o->target_root, path) : "");
	else if ((long long)v[k] >= 0)
		buf_addf(out, "%llu", v[k]);
	else	/* stap's numbers are signed 64-bit */
		buf_addf(out, "(%lld)", (long long)v[k]);
}

/* @table_u16(NAME): the values of the constant table NAME
 * (dw_table_u16) as a string, 4 hex digits each. */
static void do_table_u16(struct xctx *c, size_t at, const char *name,
			 struct buf *out)
{
	unsigned short *v;
	size_t n;

	if (!can_look_up(c, at, NULL, "\"\"", out))
		return;
	error_set_location(c->src->path, source_line(c->src, at));
	if (dw_table_u16(c->o->dw, name, NULL, &v, &n) < 0) {
		error_clear_location();
		c->errors++;
		buf_adds(out, "\"\"");
		return;
	}
	error_clear_location();
	buf_addc(out, '"');
	for (size_t i = 0; i < n; i++)
		buf_addf(out, "%04x", v[i]);
	buf_addc(out, '"');
	free(v);
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
	if (strcmp(id, "layout_db") == 0 || strcmp(id, "table_u16") == 0) {
		char *macro = xasprintf("@%s", id);
		int rc = parse_call(c, macro, i, open, end, 1, 1, &a);
		free(macro);
		if (rc < 0)
			return (size_t)-1;
		if (id[0] == 'l')
			do_layout_db(c, i, a.v[0], out);
		else
			do_table_u16(c, i, a.v[0], out);
		callargs_free(&a);
		add_newlines(out, c->src->text, i, a.close);
		return a.close + 1;
	}
	return 0;
}
