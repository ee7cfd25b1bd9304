/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand/caret.c - the $^ macros: $^arg_NAME [:default(V)], $^exec_path,
 * $^libNAME_path, $^dso_NAME_path, $^target, $^pid_ok and $^vm_allocf*.
 * See expand/caret.h.
 *
 * Values from outside the script (--arg values, paths) are escaped inside
 * string literals and checked in code, so they cannot change the script's
 * structure.
 */
#include "expand/caret.h"
#include "base/wrapper.h"
#include "expand/scan.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* 0 if V may be substituted into script code, else -1 after the error
 * "WHAT contains REASON, which could change the script's structure". */
static int check_code_value(const char *what, const char *v)
{
	int paren = 0, bracket = 0;
	const char *why = NULL;

	for (const char *p = v; !why && *p; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '\n' || ch == '\r')
			why = "a newline";
		else if (ch < 0x20 || ch == 0x7f)
			why = "a control character";
		else if (ch == '"') {
			for (p++; *p && *p != '"'; p++) {
				if (*p == '\\' && p[1])
					p++;
				if (*p == '\n' || *p == '\r')
					break;
			}
			if (*p != '"')
				why = "an unterminated string";
		} else if (ch == ';')
			why = "';'";
		else if (ch == '{' || ch == '}')
			why = "a brace";
		else if (ch == '#' || (ch == '/' && (p[1] == '/' || p[1] == '*')))
			why = "a comment";
		else if (ch == '%' && p[1] && strchr("{}()?:", p[1]))
			why = "a '%' directive";
		else if (ch == '@' && strncmp(p, "@define", 7) == 0)
			why = "'@define'";
		else if (ch == '(')
			paren++;
		else if (ch == ')' && --paren < 0)
			why = "unbalanced parentheses";
		else if (ch == '[')
			bracket++;
		else if (ch == ']' && --bracket < 0)
			why = "unbalanced brackets";
	}
	if (!why && paren)
		why = "unbalanced parentheses";
	if (!why && bracket)
		why = "unbalanced brackets";
	if (!why)
		return 0;
	error("%s contains %s, which could change the script's structure",
	      what, why);
	hint("use it inside a string literal in the script, or pass a plain "
	     "number, name or probe point");
	return -1;
}

/* Would V, put between BEFORE and AFTER (the script bytes around it), form
 * a comment or a %-directive with them ("8/$^arg_v" with v = "*2")? */
static int fuses(char before, const char *v, char after)
{
	size_t n = strlen(v);

	if (n == 0)
		return 0;
	return (before == '/' && (v[0] == '/' || v[0] == '*')) ||
	       (before == '%' && strchr("{}()?:", v[0])) ||
	       (v[n - 1] == '/' && (after == '/' || after == '*')) ||
	       (v[n - 1] == '%' && after && strchr("{}()?:", after));
}

/* Emit a value that comes from outside the script text (an --arg value, a
 * path) for the macro at OFF..END: escaped inside a string, checked in code
 * (also against the bytes around it). */
static int emit_outside(struct xctx *c, size_t off, size_t end,
			struct buf *out, const char *what, const char *v,
			int in_str)
{
	if (in_str) {
		add_escaped(out, v);
		return 0;
	}
	error_set_location(c->src->path, source_line(c->src, off));
	int rc = check_code_value(what, v);
	if (rc == 0 && fuses(out->len ? out->s[out->len - 1] : '\0', v,
			     end < c->src->len ? c->src->text[end] : '\0')) {
		rc = error("%s would join the script text next to it into a "
			   "comment or a '%%' directive", what);
		hint("put spaces around the macro in the script, or pass a "
		     "plain number, name or probe point");
	}
	error_clear_location();
	if (rc < 0) {
		c->errors++;
		return -1;
	}
	buf_adds(out, v);
	return 0;
}

static struct xparam *find_param(struct expansion *x, const char *name)
{
	for (size_t i = 0; i < x->nparams; i++)
		if (strcmp(x->params[i].name, name) == 0)
			return &x->params[i];
	return NULL;
}

static struct expand_arg *find_arg(const struct expand_opts *o,
				   const char *name)
{
	for (size_t i = 0; i < o->nargs; i++)
		if (strcmp(o->args[i].name, name) == 0)
			return &o->args[i];
	return NULL;
}

/* Does basename B match PREFIX NAME[-.0-9]*.so(.[0-9]+)* exactly? */
static int so_exact(const char *b, const char *prefix, const char *name)
{
	size_t p = strlen(prefix), n = strlen(name);

	if (strncmp(b, prefix, p) != 0 || strncmp(b + p, name, n) != 0)
		return 0;
	b += p + n;
	while (*b == '-' || *b == '.' || isdigit((unsigned char)*b)) {
		if (strncmp(b, ".so", 3) == 0 &&
		    (b[3] == '\0' || b[3] == '.'))
			break;
		b++;
	}
	if (strncmp(b, ".so", 3) != 0)
		return 0;
	b += 3;
	while (*b == '.') {
		b++;
		if (!isdigit((unsigned char)*b))
			return 0;
		while (isdigit((unsigned char)*b))
			b++;
	}
	return *b == '\0';
}

static int lib_exact(const char *b, const char *name)
{
	return so_exact(b, "lib", name);
}

/* Looser: basename starts with libNAME and is a shared object (".so"). */
static int lib_loose(const char *b, const char *name)
{
	size_t n = strlen(name);

	return strncmp(b, "lib", 3) == 0 && strncmp(b + 3, name, n) == 0 &&
	       strstr(b, ".so") != NULL;
}

static const char *find_lib(struct xctx *c, size_t off, const char *name)
{
	const struct expand_opts *o = c->o;
	const char *found = NULL;

	for (size_t i = 0; i < c->nlibs; i++)
		if (strcmp(c->libs[i].name, name) == 0)
			return c->libs[i].path;
	for (int pass = 0; pass < 2 && !found; pass++)
		for (size_t i = 0; i < o->nlibs && !found; i++) {
			const char *b = strrchr(o->libs[i], '/');
			b = b ? b + 1 : o->libs[i];
			if (pass == 0 ? lib_exact(b, name) : lib_loose(b, name))
				found = o->libs[i];
		}
	for (int pass = 0; pass < 2 && !found; pass++)
		for (size_t i = 0; i < o->nmissing; i++)
			if (pass == 0 ? lib_exact(o->missing[i], name)
				      : lib_loose(o->missing[i], name)) {
				xerr(c, off, "the target needs library '%s', but "
				     "it was not found", o->missing[i]);
				hint("make the dynamic loader find it "
				     "(LD_LIBRARY_PATH, ldconfig), or use -x PID "
				     "of a running process");
				return NULL;
			}
	if (!found) {
		found = o->exec_path;
		xwarn(c, off, "no library 'lib%s' in the target: assuming '%s' "
		      "is statically linked with it", name, found);
	}
	c->libs = xrealloc(c->libs, (c->nlibs + 1) * sizeof(*c->libs));
	c->libs[c->nlibs].name = xstrdup(name);
	c->libs[c->nlibs].path = found;
	c->nlibs++;
	return found;
}

/* $^dso_NAME_path: the shared object NAME[-.0-9]*.so(.N)* among the
 * target's libraries and the -d paths, else the executable (a plugin
 * such as an nginx module is as often built in: no warning). */
static const char *find_dso(struct xctx *c, const char *name)
{
	const struct expand_opts *o = c->o;

	for (size_t i = 0; i < o->nlibs; i++) {
		const char *b = strrchr(o->libs[i], '/');
		if (so_exact(b ? b + 1 : o->libs[i], "", name))
			return o->libs[i];
	}
	return o->exec_path;
}

/* Append the $^pid_ok expression for the mode; 0, or -1 without target. */
static int add_pid_ok(struct buf *out, const struct expand_opts *o)
{
	if (o->mode == PID_OK_NONE)
		return -1;
	if (o->mode == PID_OK_TARGET) {
		buf_adds(out, "(pid() == target())");
		return 0;
	}
	/* Master mode: the master's PID is the module global STAPXX_MASTER
	 * (stap -G, or staprun MOD.ko stapxx_master=PID), not staprun -x:
	 * with -x, SystemTap's task finder follows only the master and the
	 * children it forks later, so workers that already run would never
	 * get their mappings tracked (@var, usymname fail in them). */
	if (o->mode == PID_OK_MASTER)
		buf_adds(out, "(" STAPXX_MASTER " ? ppid() == " STAPXX_MASTER
			 " : target() ? ppid() == target() : execname() == \"");
	else	/* at run time: staprun MOD.ko stapxx_master=PID (that master's
		   children, as --master -), staprun -x PID, or else the name:
		   one module for all three */
		buf_adds(out, "(" STAPXX_MASTER " ? ppid() == " STAPXX_MASTER
			 " : target() ? pid() == target() : execname() == \"");
	add_escaped(out, o->exec_comm ? o->exec_comm : "");
	buf_adds(out, "\")");
	return 0;
}


/* Pass 1 ($^arg_NAME seen while scanning): record parameter NAME at I and
 * its default *DEFP, written at text[from, to) (taken: *DEFP becomes
 * NULL).  P is the parameter if already known.  0, or -1 on conflicting
 * defaults. */
static int arg_scan(struct xctx *c, const char *name, char **defp, size_t i,
		    size_t from, size_t to, struct xparam *p)
{
	char *def = *defp;

	if (!p) {
		struct expansion *x = c->x;
		x->params = xrealloc(x->params, (x->nparams + 1) *
				     sizeof(*x->params));
		p = &x->params[x->nparams++];
		p->name = xstrdup(name);
		p->def = NULL;
		p->def_src = NULL;
		p->def_from = p->def_to = 0;
		p->file = c->src->path;
		p->line = source_line(c->src, i);
	}
	if (def && p->def && strcmp(def, p->def) != 0)
		return xerr(c, i, "argument '%s' has conflicting defaults "
			    "'%s' and '%s'", name, p->def, def);
	if (def && !p->def) {
		p->def = def;
		p->def_src = c->src;
		p->def_from = from;
		p->def_to = to;
		*defp = NULL;
	}
	return 0;
}

/* The default of parameter P (NAME), expanded as script text, appended
 * to OUT on one line.  0, or -1 (self-reference, too deep, too long). */
static int arg_default(struct xctx *c, const char *name, size_t i,
		       struct xparam *p, struct buf *out)
{
	struct source *here = c->src;
	struct buf v = {0};
	size_t r;

	for (int q = 0; q < c->nactive; q++)
		if (strcmp(c->active[q], name) == 0)
			return xerr(c, i, "the default of argument '%s' refers "
				    "to itself", name);
	if (c->nactive == MAX_ACTIVE)
		return xerr(c, i, "argument defaults nested too deeply");
	c->active[c->nactive++] = name;
	c->src = p->def_src;
	r = expand_range(c, p->def_from, p->def_to, &v, 1);
	c->src = here;
	c->nactive--;
	if (r == (size_t)-1 || v.len > MAX_VALUE) {
		/* stop here: the enclosing default would expand this one
		 * again */
		if (r != (size_t)-1)
			xerr(c, i, "the default of argument '%s' expands to "
			     "more than %d bytes", name, MAX_VALUE);
		buf_free(&v);
		return -1;
	}
	char *d = trim_dup(v.s ? v.s : "", v.len);
	add_oneline(out, d);
	free(d);
	buf_free(&v);
	return 0;
}

/* Pass 2: the value of $^arg_NAME (at text[i, j)): --arg NAME, else the
 * default of P, else an error.  0, or -1 when expansion must stop. */
static int arg_value(struct xctx *c, const char *name, size_t i, size_t j,
		     struct buf *out, int in_str, struct xparam *p)
{
	struct expand_arg *a = find_arg(c->o, name);

	if (a) {
		a->used = 1;
		char *what = xasprintf("the value of --arg %s", name);
		emit_outside(c, i, j, out, what, a->value, in_str);
		free(what);
	} else if (p && p->def) {
		return arg_default(c, name, i, p, out);
	} else {
		xerr(c, i, "missing value for argument '%s'", name);
		hint("pass it with --arg %s=VALUE", name);
	}
	return 0;
}

/* $^arg_NAME [:default(V)] at t[i]; ID is "arg_NAME", t[j] follows it.
 * Returns the index after the macro (and its default), or -1. */
static size_t caret_arg(struct xctx *c, const char *id, size_t i, size_t j,
			size_t end, struct buf *out, int in_str)
{
	const char *t = c->src->text;
	const char *name = id + 4;
	char *def = NULL;
	size_t k;
	int rc;

	if (!*name) {
		xerr(c, i, "expected an argument name after '$^arg_'");
		return (size_t)-1;
	}
	k = j;
	while (k < end && (t[k] == ' ' || t[k] == '\t'))
		k++;
	if (end - k >= 9 && strncmp(t + k, ":default(", 9) == 0) {
		size_t close = match_paren(t, k + 8, end, NULL, NULL, NULL);
		if (close == (size_t)-1) {
			xerr(c, i, "unterminated ':default(' of argument '%s'",
			     name);
			return (size_t)-1;
		}
		def = uncomment_dup(t, k + 9, close);
		j = close + 1;
	}
	struct xparam *p = find_param(c->x, name);
	if (c->o->scan_only)
		rc = arg_scan(c, name, &def, i, k + 9, j - 1, p);
	else
		rc = arg_value(c, name, i, j, out, in_str, p);
	free(def);
	if (rc < 0)
		return (size_t)-1;
	if (in_str) {
		for (size_t q = i; q < j; q++)
			c->pending_nl += t[q] == '\n';
	} else {
		add_newlines(out, t, i, j);
	}
	return j;
}

/* $^exec_path or $^libNAME_path (ID without "$^") at text[i, j). */
static void caret_path(struct xctx *c, const char *id, size_t i, size_t j,
		       struct buf *out, int in_str)
{
	const struct expand_opts *o = c->o;

	if (o->scan_only) {
		buf_adds(out, "/scan");	/* only the arguments matter now */
	} else if (c->dead) {
		buf_adds(out, "/dead");	/* stap drops the branch: no lookup */
	} else if (strcmp(id, "exec_path") == 0) {
		if (need_exec(c, i, "$^exec_path") == 0)
			emit_outside(c, i, j, out, "the path of $^exec_path",
				     o->exec_path, in_str);
	} else if (strncmp(id, "dso_", 4) == 0) {
		if (need_exec(c, i, "$^dso_*_path") == 0) {
			char *name = xstrndup(id + 4, strlen(id) - 9);
			char *what = xasprintf("the path of $^%s", id);
			emit_outside(c, i, j, out, what, find_dso(c, name), in_str);
			free(what);
			free(name);
		}
	} else if (need_exec(c, i, "$^lib*_path") == 0) {
		char *name = xstrndup(id + 3, strlen(id) - 8);
		const char *path = find_lib(c, i, name);
		char *what = xasprintf("the path of $^%s", id);
		if (path)
			emit_outside(c, i, j, out, what, path, in_str);
		free(what);
		free(name);
	}
}

/* $^target or $^pid_ok (ID) at t[i]. */
static void caret_target(struct xctx *c, const char *id, size_t i,
			 struct buf *out, int in_str)
{
	const struct expand_opts *o = c->o;

	if (in_str && id[0] == 't') {
		/* As the Perl stap++ did: the PID as text ("process
		 * $^target"), known only with -x PID or --master PID. */
		buf_addf(out, "%ld", (long)o->target_pid);
		if (!o->target_pid && !o->scan_only && !c->warned_pidless++) {
			xwarn(c, i, "$^target inside a string reads \"0\": no "
			      "PID is known when the script is expanded");
			hint("give -x PID or --master PID; in code, $^target "
			     "is target(), the PID at run time");
		}
		return;
	}
	if (in_str)
		xerr(c, i, "$^%s cannot be used inside a string", id);
	else if (id[0] == 't')
		buf_adds(out, o->mode == PID_OK_MASTER || o->mode == PID_OK_EXEC
			 ? "(" STAPXX_MASTER " ? " STAPXX_MASTER " : target())"
			 : "target()");
	else if (!o->scan_only && add_pid_ok(out, o) < 0)
		need_exec(c, i, "$^pid_ok");
	if (o->mode == PID_OK_MASTER || o->mode == PID_OK_EXEC)
		c->x->uses_master = 1;
}

/* $^vm_allocf_path, $^vm_allocf or $^vm_allocd_to_G (ID) at t[i, j):
 * LuaJIT's allocator in the running target, found once (by the
 * driver's vm_allocf) for the whole expansion; the first use that fails
 * says why, later ones fail quietly. */
static void caret_vm(struct xctx *c, const char *id, size_t i, size_t j,
		     struct buf *out, int in_str)
{
	const struct expand_opts *o = c->o;
	struct expansion *x = c->x;
	int path = strcmp(id, "vm_allocf_path") == 0, sym = strcmp(id, "vm_allocf") == 0;

	if (o->scan_only || c->dead) {
		/* (stap drops a dead branch: nothing to find) */
		buf_adds(out, path ? "/dead" : sym ? "dead" : "0");
		return;
	}
	if (!path && !sym && in_str) {
		xerr(c, i, "$^%s cannot be used inside a string", id);
		return;
	}
	if (x->allocf_state == 0) {
		if (!o->vm_allocf) {
			xerr(c, i, "$^%s needs a running target whose allocator "
			     "can be found, which this run has not", id);
			x->allocf_state = -1;
			return;
		}
		error_set_location(c->src->path, source_line(c->src, i));
		x->allocf_state = o->vm_allocf(o->vm_allocf_ctx, &x->allocf) < 0 ? -1 : 1;
		error_clear_location();
		if (x->allocf_state < 0) {
			c->errors++;
			return;
		}
	}
	if (x->allocf_state < 0) {
		c->errors++;
		return;
	}
	if (path)
		emit_outside(c, i, j, out, "the path of $^vm_allocf_path", x->allocf.path, in_str);
	else if (sym)
		emit_outside(c, i, j, out, "the symbol of $^vm_allocf", x->allocf.sym, in_str);
	else
		buf_addf(out, "%lld", x->allocf.g_off);
}

/* The name after "$^" at t[i] (malloc'd; *after = its end), or NULL after
 * an error.  A $^lib name may hold '-' and '.' ($^libluajit-5.1_path):
 * the longest run that ends in "_path". */
static char *caret_name(struct xctx *c, size_t i, size_t end, size_t *after)
{
	const char *t = c->src->text;
	char *id = sigil_name(c, i, end, after);
	size_t e = *after, best = 0;

	if (!id || strncmp(id, "lib", 3) != 0 || e >= end ||
	    (t[e] != '-' && t[e] != '.'))
		return id;
	while (e < end && (is_ident(t[e]) || t[e] == '-' || t[e] == '.')) {
		e++;
		if (e - (i + 2) >= 5 && strncmp(t + e - 5, "_path", 5) == 0)
			best = e;
	}
	if (best) {
		free(id);
		id = xstrndup(t + i + 2, best - i - 2);
		*after = best;
	}
	return id;
}

size_t do_caret(struct xctx *c, size_t i, size_t end, struct buf *out,
		int in_str)
{
	size_t j;
	char *id = caret_name(c, i, end, &j);
	size_t n = id ? strlen(id) : 0;

	if (!id)
		return (size_t)-1;
	if (strncmp(id, "arg_", 4) == 0) {
		j = caret_arg(c, id, i, j, end, out, in_str);
	} else if (strcmp(id, "exec_path") == 0 ||
		   (((strncmp(id, "lib", 3) == 0 && n > 8) ||
		     (strncmp(id, "dso_", 4) == 0 && n > 9)) &&
		    (c->o->scan_only || strcmp(id + n - 5, "_path") == 0))) {
		caret_path(c, id, i, j, out, in_str);
	} else if (strcmp(id, "target") == 0 || strcmp(id, "pid_ok") == 0) {
		caret_target(c, id, i, out, in_str);
	} else if (strcmp(id, "vm_allocf_path") == 0 || strcmp(id, "vm_allocf") == 0 ||
		   strcmp(id, "vm_allocd_to_G") == 0) {
		caret_vm(c, id, i, j, out, in_str);
	} else {
		xerr(c, i, "unknown macro '$^%s'", id);
		hint("known: $^arg_NAME, $^exec_path, $^libNAME_path, "
		     "$^dso_NAME_path, "
		     "$^target, $^pid_ok, $^vm_allocf_path, $^vm_allocf, "
		     "$^vm_allocd_to_G");
		j = (size_t)-1;
	}
	free(id);
	return j;
}
