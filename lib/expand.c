/* expand.c - see expand.h. */
#include "expand.h"
#include "dwarf.h"
#include "error.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A $*NAME binding (per file). */
struct binding {
	char *name;
	char *value;
};

/* A library lookup already done (so each warning is printed once). */
struct libmemo {
	char *name;
	const char *path;
};

#define MAX_ACTIVE 16
struct xctx {
	const struct expand_opts *o;
	struct expansion *x;
	struct source *src;		/* file being expanded (stable while
				   x->files grows) */
	struct binding *binds;
	size_t nbinds;
	struct libmemo *libs;
	size_t nlibs;
	int errors;
	int depth;			/* nesting of expand_range() */
	const char *active[MAX_ACTIVE];	/* arguments whose default is being
					   expanded (to catch self-reference) */
	int nactive;
	int pending_nl;			/* newlines of a macro inside a string,
					   emitted after the string ends */
	int dead;			/* > 0: inside a %( %? %: %) branch that
					   stap will drop (no DWARF lookups) */
	struct binding *defs;		/* @define NAME %( BODY %), expanded */
	size_t ndefs;
};

#define MAX_DEPTH 64
#define MAX_VALUE (64 * 1024)	/* longest $*NAME value */

static int is_ident(int c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Print "FILE:LINE: error: ..." (or warning) for offset OFF of the
 * current file. */
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

static int xerr(struct xctx *c, size_t off, const char *fmt, ...)
	PRINTF_LIKE(3, 4);
static int xerr(struct xctx *c, size_t off, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xreport(c, off, 1, fmt, ap);
	va_end(ap);
	return -1;
}

static void xwarn(struct xctx *c, size_t off, const char *fmt, ...)
	PRINTF_LIKE(3, 4);
static void xwarn(struct xctx *c, size_t off, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xreport(c, off, 0, fmt, ap);
	va_end(ap);
}

/* Append one newline per newline in text[from, to): keeps line numbers. */
static void add_newlines(struct buf *out, const char *t, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (t[i] == '\n')
			buf_addc(out, '\n');
}

/* Append S with newlines (and other line breaks) turned into spaces. */
static void add_oneline(struct buf *out, const char *s)
{
	for (; *s; s++)
		buf_addc(out, (*s == '\n' || *s == '\r') ? ' ' : *s);
}

/* Append S escaped for the inside of a stap string literal. */
static void add_escaped(struct buf *out, const char *s)
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

static char *trim_dup(const char *s, size_t n)
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
static size_t skip_string(const char *t, size_t i, size_t end, int *closed)
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
static size_t skip_comment(const char *t, size_t i, size_t end)
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

static int comment_at(const char *t, size_t i, size_t end, int embedded)
{
	if (t[i] == '#')
		return !embedded;
	return t[i] == '/' && i + 1 < end && (t[i + 1] == '/' || t[i + 1] == '*');
}

/* Copy t[from, to) without its comments (each becomes a space), trimmed. */
static char *uncomment_dup(const char *t, size_t from, size_t to)
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

/*
 * Find the ')' matching the '(' at t[open].  Records the argument ranges
 * (split at depth-1 commas) in starts/ends when non-NULL (up to MAXARGS;
 * *nargs gets the real count).  Returns the index of ')' or (size_t)-1.
 */
#define MAXARGS 8
static size_t match_paren(const char *t, size_t open, size_t end,
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

static size_t expand_range(struct xctx *c, size_t i, size_t end,
			   struct buf *out, int strip_comments);

/* ---------------------------------------------------------------- values */

int check_code_value(const char *what, const char *v)
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

/* Does basename B match libNAME[-.0-9]*.so(.[0-9]+)* exactly? */
static int lib_exact(const char *b, const char *name)
{
	size_t n = strlen(name);

	if (strncmp(b, "lib", 3) != 0 || strncmp(b + 3, name, n) != 0)
		return 0;
	b += 3 + n;
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

static int need_exec(struct xctx *c, size_t off, const char *macro)
{
	if (c->o->exec_path)
		return 0;
	xerr(c, off, "%s needs a target", macro);
	hint("use -x PID, --master PID, --exec PATH or -c CMD");
	return -1;
}

/* Append the $^pid_ok expression for the mode; 0, or -1 without target. */
static int add_pid_ok(struct buf *out, const struct expand_opts *o)
{
	if (o->mode == TARGET_NONE)
		return -1;
	if (o->mode == TARGET_PID) {
		buf_adds(out, "(pid() == target())");
		return 0;
	}
	/* Master mode: the master's PID is the module global STAPXX_MASTER
	 * (stap -G, or staprun MOD.ko stapxx_master=PID), not staprun -x:
	 * with -x, SystemTap's task finder follows only the master and the
	 * children it forks later, so workers that already run would never
	 * get their mappings tracked (@var, usymname fail in them). */
	if (o->mode == TARGET_MASTER)
		buf_adds(out, "(" STAPXX_MASTER " ? ppid() == " STAPXX_MASTER
			 " : target() ? ppid() == target() : execname() == \"");
	else	/* staprun -x PID decides at run time; without it, the name */
		buf_adds(out, "(target() ? pid() == target() : execname() == \"");
	add_escaped(out, o->exec_comm ? o->exec_comm : "");
	buf_adds(out, "\")");
	return 0;
}

/* The name after "$^" or "$*" at t[i] (malloc'd; *after = its end), or
 * NULL after an error. */
static char *sigil_name(struct xctx *c, size_t i, size_t end, size_t *after)
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

/* $^... at t[i] ('$').  Returns the index after the macro, or -1. */
static size_t do_caret(struct xctx *c, size_t i, size_t end, struct buf *out,
		       int in_str)
{
	const char *t = c->src->text;
	const struct expand_opts *o = c->o;
	size_t j, k;
	char *id = sigil_name(c, i, end, &j);

	if (!id)
		return (size_t)-1;
	if (strncmp(id, "lib", 3) == 0 && j < end && (t[j] == '-' || t[j] == '.')) {
		/* $^libluajit-5.1_path: library names may have '-' and '.';
		 * take the longest run that ends in "_path" */
		size_t e = j, best = 0;
		while (e < end && (is_ident(t[e]) || t[e] == '-' || t[e] == '.')) {
			e++;
			if (e - (i + 2) >= 5 && strncmp(t + e - 5, "_path", 5) == 0)
				best = e;
		}
		if (best) {
			free(id);
			id = xstrndup(t + i + 2, best - i - 2);
			j = best;
		}
	}

	if (strncmp(id, "arg_", 4) == 0) {
		const char *name = id + 4;
		char *def = NULL;
		struct xparam *p;

		if (!*name) {
			xerr(c, i, "expected an argument name after '$^arg_'");
			goto fail;
		}
		k = j;
		while (k < end && (t[k] == ' ' || t[k] == '\t'))
			k++;
		if (end - k >= 9 && strncmp(t + k, ":default(", 9) == 0) {
			size_t close = match_paren(t, k + 8, end, NULL, NULL,
						   NULL);
			if (close == (size_t)-1) {
				xerr(c, i, "unterminated ':default(' of "
				     "argument '%s'", name);
				goto fail;
			}
			def = uncomment_dup(t, k + 9, close);
			j = close + 1;
		}
		p = find_param(c->x, name);
		if (o->scan_only) {
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
			if (def && p->def && strcmp(def, p->def) != 0) {
				xerr(c, i, "argument '%s' has conflicting "
				     "defaults '%s' and '%s'", name, p->def,
				     def);
				free(def);
				goto fail;
			}
			if (def && !p->def) {
				p->def = def;
				p->def_src = c->src;
				p->def_from = k + 9;
				p->def_to = j - 1;
				def = NULL;
			}
		} else {
			struct expand_arg *a = find_arg(o, name);
			if (a) {
				a->used = 1;
				char *what = xasprintf("the value of --arg %s",
							name);
				emit_outside(c, i, j, out, what, a->value,
					     in_str);
				free(what);
			} else if (p && p->def) {
				/* the default is script text: expand it too */
				struct source *here = c->src;
				struct buf v = {0};
				size_t r = (size_t)-1;
				for (int q = 0; q < c->nactive; q++)
					if (strcmp(c->active[q], name) == 0) {
						xerr(c, i, "the default of argument "
						     "'%s' refers to itself", name);
						free(def);
						goto fail;
					}
				if (c->nactive == MAX_ACTIVE) {
					xerr(c, i, "argument defaults nested "
					     "too deeply");
					free(def);
					goto fail;
				}
				c->active[c->nactive++] = name;
				c->src = p->def_src;
				r = expand_range(c, p->def_from, p->def_to, &v, 1);
				c->src = here;
				c->nactive--;
				if (r == (size_t)-1 || v.len > MAX_VALUE) {
					/* stop here: the enclosing default
					 * would expand this one again */
					if (r != (size_t)-1)
						xerr(c, i, "the default of argument "
						     "'%s' expands to more than %d "
						     "bytes", name, MAX_VALUE);
					buf_free(&v);
					free(def);
					goto fail;
				} else {
					char *d = trim_dup(v.s ? v.s : "", v.len);
					add_oneline(out, d);
					free(d);
				}
				buf_free(&v);
			} else {
				xerr(c, i, "missing value for argument '%s'",
				     name);
				hint("pass it with --arg %s=VALUE", name);
			}
		}
		free(def);
		if (in_str) {
			for (size_t q = i; q < j; q++)
				c->pending_nl += t[q] == '\n';
		} else {
			add_newlines(out, t, i, j);
		}
	} else if (o->scan_only && (strcmp(id, "exec_path") == 0 ||
				    strncmp(id, "lib", 3) == 0)) {
		buf_adds(out, "/scan");	/* only the arguments matter now */
	} else if (strcmp(id, "exec_path") == 0) {
		if (need_exec(c, i, "$^exec_path") == 0)
			emit_outside(c, i, j, out, "the path of $^exec_path",
				     o->exec_path, in_str);
	} else if (strncmp(id, "lib", 3) == 0 && strlen(id) > 8 &&
		   strcmp(id + strlen(id) - 5, "_path") == 0) {
		char *name = xstrndup(id + 3, strlen(id) - 8);
		if (need_exec(c, i, "$^lib*_path") == 0) {
			const char *path = find_lib(c, i, name);
			char *what = xasprintf("the path of $^%s", id);
			if (path)
				emit_outside(c, i, j, out, what, path, in_str);
			free(what);
		}
		free(name);
	} else if (strcmp(id, "target") == 0 || strcmp(id, "pid_ok") == 0) {
		if (in_str) {
			xerr(c, i, "$^%s cannot be used inside a string", id);
		} else if (id[0] == 't') {
			buf_adds(out, o->mode == TARGET_MASTER
				 ? "(" STAPXX_MASTER " ? " STAPXX_MASTER
				   " : target())" : "target()");
		} else if (!o->scan_only && add_pid_ok(out, o) < 0) {
			need_exec(c, i, "$^pid_ok");
		}
		if (o->mode == TARGET_MASTER)
			c->x->uses_master = 1;
	} else {
		xerr(c, i, "unknown macro '$^%s'", id);
		hint("known: $^arg_NAME, $^exec_path, $^libNAME_path, "
		     "$^target, $^pid_ok");
		goto fail;
	}
	free(id);
	return j;
fail:
	free(id);
	return (size_t)-1;
}

/* ------------------------------------------------------------- bindings */

static struct binding *find_binding(struct xctx *c, const char *name)
{
	for (size_t i = 0; i < c->nbinds; i++)
		if (strcmp(c->binds[i].name, name) == 0)
			return &c->binds[i];
	return NULL;
}

/* End of the expression of "$*NAME := EXPR" starting at t[i]: a newline,
 * ';' or comment at bracket depth 0, or an unmatched closing bracket.
 * *bad is set when brackets do not match or stay open. */
static size_t expr_end(const char *t, size_t i, size_t end, int *bad)
{
	char stack[64];
	int depth = 0;

	*bad = 0;
	for (; i < end; i++) {
		char ch = t[i];
		if (ch == '"') {
			int closed;
			size_t e = skip_string(t, i, end, &closed);
			if (!closed) {
				i = e;	/* unterminated: stap will say so */
				break;
			}
			i = e - 1;
		} else if (comment_at(t, i, end, 0)) {
			if (depth == 0)
				break;
			i = skip_comment(t, i, end) - 1;
		} else if (ch == '(' || ch == '[' || ch == '{') {
			if (depth == (int)sizeof(stack)) {
				*bad = 1;
				return i;
			}
			stack[depth++] = ch == '(' ? ')' : ch == '[' ? ']' : '}';
		} else if (ch == ')' || ch == ']' || ch == '}') {
			if (depth == 0)
				break;
			if (stack[--depth] != ch) {
				*bad = 1;
				return i;
			}
		} else if ((ch == '\n' || ch == ';') && depth == 0) {
			break;
		}
	}
	if (depth)
		*bad = 1;
	return i;
}

/* $*NAME or $*NAME := EXPR at t[i]. */
static size_t do_star(struct xctx *c, size_t i, size_t end, struct buf *out)
{
	const char *t = c->src->text;
	size_t j, k;
	char *name = sigil_name(c, i, end, &j);

	if (!name)
		return (size_t)-1;
	k = j;
	while (k < end && (t[k] == ' ' || t[k] == '\t'))
		k++;
	if (k + 1 < end && t[k] == ':' && t[k + 1] == '=') {
		int bad;
		size_t vs = k + 2, ve = expr_end(t, vs, end, &bad);
		struct buf val = {0};
		struct binding *b;
		char *v;

		if (bad) {
			xerr(c, i, "unbalanced brackets in the value of '$*%s'",
			     name);
			free(name);
			return (size_t)-1;
		}
		if (expand_range(c, vs, ve, &val, 1) == (size_t)-1) {
			buf_free(&val);
			free(name);
			return (size_t)-1;
		}
		v = trim_dup(val.s ? val.s : "", val.len);
		buf_free(&val);
		if (strlen(v) > MAX_VALUE) {
			xerr(c, i, "the value of '$*%s' is longer than %d bytes",
			     name, MAX_VALUE);
			free(v);
			free(name);
			return (size_t)-1;
		}
		if (!*v) {
			xerr(c, i, "empty value for '$*%s'", name);
			free(v);
			free(name);
			return (size_t)-1;
		}
		b = find_binding(c, name);
		if (b) {
			free(b->value);
			free(name);
		} else {
			c->binds = xrealloc(c->binds,
					    (c->nbinds + 1) * sizeof(*c->binds));
			b = &c->binds[c->nbinds++];
			b->name = name;
		}
		b->value = v;
		add_newlines(out, t, i, ve);
		return ve;
	}
	struct binding *b = find_binding(c, name);
	if (!b) {
		xerr(c, i, "'$*%s' is used before it is bound", name);
		hint("bind it first: $*%s := EXPRESSION", name);
	} else {
		add_oneline(out, b->value);
	}
	free(name);
	return j;
}

/* ------------------------------------------------------------ @ macros */

static int valid_module_name(const char *s)
{
	int start = 1;

	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s == '.') {
			if (start)
				return 0;
			start = 1;
		} else if (is_ident(*s) && !(start && isdigit((unsigned char)*s))) {
			start = 0;
		} else {
			return 0;
		}
	}
	return !start;
}

char *module_relpath(const char *name)
{
	char *p;

	if (!valid_module_name(name))
		return NULL;
	p = xasprintf("%s.sxx", name);
	for (char *q = p; q < p + strlen(name); q++)
		if (*q == '.')
			*q = '/';
	return p;
}

static int module_loaded(struct expansion *x, const char *name)
{
	for (size_t i = 1; i < x->nfiles; i++)
		if (strcmp(x->files[i].module, name) == 0)
			return 1;
	return 0;
}

/* Check the "// module NAME" header. */
static int check_header(struct xctx *c, struct source *src, const char *name)
{
	const char *t = src->text;
	size_t n = strlen(name);

	while (*t == ' ' || *t == '\t')
		t++;
	if (strncmp(t, "//", 2) == 0) {
		t += 2;
		while (*t == ' ' || *t == '\t')
			t++;
		if (strncmp(t, "module", 6) == 0 && (t[6] == ' ' || t[6] == '\t')) {
			const char *e;
			t += 7;
			while (*t == ' ' || *t == '\t')
				t++;
			e = t;
			while (*e && !isspace((unsigned char)*e))
				e++;
			if ((size_t)(e - t) == n && strncmp(t, name, n) == 0)
				return 0;
			error_set_location(src->path, 1);
			error("module file declares '%.*s', but was loaded as '%s'",
			      (int)(e - t), t, name);
			error_clear_location();
			c->errors++;
			return -1;
		}
	}
	error_set_location(src->path, 1);
	error("a module file must start with '// module %s'", name);
	error_clear_location();
	c->errors++;
	return -1;
}

/* Find and read module NAME (used at offset OFF of the current file). */
static int load_module(struct xctx *c, size_t off, const char *name)
{
	const struct expand_opts *o = c->o;
	struct expansion *x = c->x;
	char *rel = module_relpath(name);
	struct source *src = NULL;
	struct buf looked = {0};

	if (!rel)
		return xerr(c, off, "invalid module name '%s'", name);
	for (size_t i = 0; i < o->nincdirs && !src; i++) {
		char *path = strcmp(o->incdirs[i], ".") == 0 ?
			xstrdup(rel) : xasprintf("%s/%s", o->incdirs[i], rel);
		if (access(path, F_OK) == 0) {
			error_set_location(c->src->path,
					   source_line(c->src, off));
			src = source_read(path);
			error_clear_location();
			if (!src) {
				c->errors++;
				free(path);
				free(rel);
				buf_free(&looked);
				return -1;
			}
		}
		buf_addf(&looked, "%s%s", i ? ", " : "", o->incdirs[i]);
		free(path);
	}
	if (!src) {
		xerr(c, off, "cannot find module '%s' (%s)", name, rel);
		hint("looked in: %s; add a directory with -I DIR",
		     looked.s ? looked.s : "(nowhere)");
		free(rel);
		buf_free(&looked);
		return -1;
	}
	free(rel);
	buf_free(&looked);
	if (check_header(c, src, name) < 0) {
		source_free(src);
		return -1;
	}
	x->files = xrealloc(x->files, (x->nfiles + 1) * sizeof(*x->files));
	x->files[x->nfiles].module = xstrdup(name);
	x->files[x->nfiles].src = src;
	x->files[x->nfiles].out = NULL;
	x->nfiles++;
	return 0;
}

/* @use a.b, c.d at t[i].  Consumes up to the end of the line. */
static size_t do_use(struct xctx *c, size_t i, size_t end)
{
	const char *t = c->src->text;
	size_t j = i + 4;
	int count = 0;

	for (;;) {
		size_t s;
		while (j < end && (t[j] == ' ' || t[j] == '\t'))
			j++;
		s = j;
		while (j < end && (is_ident(t[j]) || t[j] == '.'))
			j++;
		if (j == s) {
			if (count && (j >= end || t[j] == '\n' || t[j] == ';'))
				break;
			xerr(c, j < end ? j : i, "expected a module name after "
			     "'@use'");
			return (size_t)-1;
		}
		char *name = xstrndup(t + s, j - s);
		if (!valid_module_name(name)) {
			xerr(c, s, "invalid module name '%s'", name);
			free(name);
			return (size_t)-1;
		}
		if (c->o->scan_only && !module_loaded(c->x, name))
			load_module(c, s, name);
		free(name);
		count++;
		while (j < end && (t[j] == ' ' || t[j] == '\t'))
			j++;
		if (j < end && t[j] == ',') {
			j++;
			continue;
		}
		if (j < end && t[j] == ';')
			j++;
		while (j < end && (t[j] == ' ' || t[j] == '\t'))
			j++;
		if (j < end && t[j] != '\n' && !comment_at(t, j, end, 0)) {
			xerr(c, j, "unexpected text after '@use' list");
			return (size_t)-1;
		}
		return j;
	}
	return j;
}

/* Arguments of a macro call, expanded, trimmed and unquoted. */
struct callargs {
	int n;
	char *v[MAXARGS];
	size_t close;			/* index of ')' */
};

static void callargs_free(struct callargs *a)
{
	for (int k = 0; k < a->n && k < MAXARGS; k++)
		free(a->v[k]);
}

static char *unquote(char *s)
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

/* Parse "(a, b, c)" at t[open]. */
static int parse_call(struct xctx *c, const char *macro, size_t at,
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

static void add_quoted(struct buf *out, const char *s)
{
	buf_addc(out, '"');
	add_escaped(out, s);
	buf_addc(out, '"');
}

/* @NAME at t[i]. */
static size_t do_at(struct xctx *c, size_t i, size_t end, struct buf *out)
{
	const char *t = c->src->text;
	size_t j = i + 1, open;
	struct callargs a;
	char *id;

	while (j < end && is_ident(t[j]))
		j++;
	id = xstrndup(t + i + 1, j - i - 1);
	if (strcmp(id, "use") == 0) {
		free(id);
		return do_use(c, i, end);
	}
	open = j;
	while (open < end && (t[open] == ' ' || t[open] == '\t'))
		open++;

	if (strcmp(id, "pfunc") == 0) {
		free(id);
		if (parse_call(c, "@pfunc", i, open, end, 1, 1, &a) < 0)
			return (size_t)-1;
		if (strpbrk(a.v[0], "\"\\\n")) {
			xerr(c, i, "invalid function name '%s' in @pfunc",
			     a.v[0]);
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
		add_newlines(out, t, i, a.close);
		return a.close + 1;
	}
	if (strcmp(id, "error") == 0) {
		free(id);
		if (parse_call(c, "@error", i, open, end, 1, 1, &a) < 0)
			return (size_t)-1;
		if (!c->o->scan_only && !c->dead) {
			xerr(c, i, "%s", a.v[0]);
			if (c->o->dw)
				dw_hint_nodebug(c->o->dw);
		}
		callargs_free(&a);
		add_newlines(out, t, i, a.close);
		return a.close + 1;
	}
	for (size_t k = 0; k < sizeof(dwmacros) / sizeof(dwmacros[0]); k++) {
		if (strcmp(id, dwmacros[k].name) != 0)
			continue;
		char *macro = xasprintf("@%s", id);
		free(id);
		int rc = parse_call(c, macro, i, open, end, dwmacros[k].min,
				    dwmacros[k].max, &a);
		free(macro);
		if (rc < 0)
			return (size_t)-1;
		do_dwarf(c, i, dwmacros[k].op, &a, dwmacros[k].min, out);
		callargs_free(&a);
		add_newlines(out, t, i, a.close);
		return a.close + 1;
	}
	if (strcmp(id, "var") == 0 && open < end && t[open] == '(') {
		size_t starts[MAXARGS], ends[MAXARGS];
		int n = 0;
		size_t close = match_paren(t, open, end, starts, ends, &n);
		char *arg0 = n == 1 ? trim_dup(t + starts[0], ends[0] - starts[0])
				    : NULL;
		/* Only the one-argument form without "@CU" is ours; stap's
		 * own forms go through untouched (their strings expanded). */
		if (close != (size_t)-1 && arg0 && arg0[0] == '"' &&
		    strlen(arg0) >= 2 && arg0[strlen(arg0) - 1] == '"' &&
		    !strchr(arg0, '@') && !strchr(arg0, '$') &&
		    !strchr(arg0, '\\')) {
			char *sym = unquote(arg0);
			const char *mod = NULL, *cu = NULL;
			free(id);
			if (c->o->scan_only || c->dead) {
				buf_adds(out, "@var(\"\")");
			} else if (!*sym) {
				xerr(c, i, "empty symbol name in @var");
			} else if (!c->o->dw || !c->o->exec_path) {
				xerr(c, i, "@var(\"%s\") needs a target binary "
				     "to find the module that defines it", sym);
				hint("use -x PID, --master PID, --exec PATH "
				     "or -c CMD, or write @var(\"%s@CU\", "
				     "\"MODULE\")", sym);
			} else {
				error_set_location(c->src->path,
						   source_line(c->src, i));
				int rc = dw_find_var(c->o->dw, sym, NULL, &mod,
						     &cu);
				error_clear_location();
				if (rc < 0) {
					c->errors++;
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
		free(arg0);
	}
	/* Not ours (stap's @cast, @defined, @entry...): copy the name. */
	buf_add(out, t + i, j - i);
	free(id);
	return j;
}

/* ------------------------------------------- %( COND %? A %: B %) */

/*
 * stap's preprocessor conditionals pick one branch at parse time.  When the
 * condition (after expansion) is plain integer arithmetic, e.g.
 * "%( @has_member(TValue, ftsz) == 1 %?" -> "%( 0 == 1 %?", we evaluate it
 * the same way so DWARF macros in the branch stap drops are not resolved
 * (they may well not exist in this build: that is why the test is there).
 * Anything else (kernel_v, arch, ...) leaves both branches live.
 */
struct ceval {
	struct xctx *c;
	const char *p, *end;
	int ok, depth;
	int nest;		/* operators seen: bounds the recursion */
};

static long long cond_or(struct ceval *e);

static void ce_space(struct ceval *e)
{
	while (e->p < e->end && isspace((unsigned char)*e->p))
		e->p++;
}

static int ce_eat(struct ceval *e, const char *tok)
{
	size_t n = strlen(tok);
	ce_space(e);
	if ((size_t)(e->end - e->p) >= n && strncmp(e->p, tok, n) == 0) {
		e->p += n;
		return 1;
	}
	return 0;
}

static const char *find_define(struct xctx *c, const char *name, size_t n)
{
	for (size_t i = c->ndefs; i-- > 0;)
		if (strlen(c->defs[i].name) == n &&
		    strncmp(c->defs[i].name, name, n) == 0)
			return c->defs[i].value;
	return NULL;
}

static long long cond_primary(struct ceval *e)
{
	ce_space(e);
	if (!e->ok || e->p >= e->end || ++e->nest > 256)
		goto bad;
	if (ce_eat(e, "!"))
		return !cond_primary(e);
	if (ce_eat(e, "-"))
		return -cond_primary(e);
	if (ce_eat(e, "(")) {
		long long v = cond_or(e);
		if (!ce_eat(e, ")"))
			goto bad;
		return v;
	}
	if (isdigit((unsigned char)*e->p)) {
		char *endp;
		long long v = strtoll(e->p, &endp, 0);
		if (endp > e->end)
			goto bad;
		e->p = endp;
		return v;
	}
	if (*e->p == '@') {
		const char *n = ++e->p, *body;
		while (e->p < e->end && is_ident(*e->p))
			e->p++;
		body = find_define(e->c, n, (size_t)(e->p - n));
		if (!body || e->depth > 16)
			goto bad;
		struct ceval sub = { e->c, body, body + strlen(body), 1,
				     e->depth + 1, e->nest };
		long long v = cond_or(&sub);
		ce_space(&sub);
		if (!sub.ok || sub.p != sub.end)
			goto bad;
		return v;
	}
bad:
	e->ok = 0;
	return 0;
}

static long long cond_cmp(struct ceval *e)
{
	long long l = cond_primary(e);
	static const char *const ops[] = { "==", "!=", "<=", ">=", "<", ">" };

	for (size_t k = 0; k < 6; k++) {
		if (!ce_eat(e, ops[k]))
			continue;
		long long r = cond_primary(e);
		switch (k) {
		case 0: return l == r;
		case 1: return l != r;
		case 2: return l <= r;
		case 3: return l >= r;
		case 4: return l < r;
		default: return l > r;
		}
	}
	return l;
}

static long long cond_and(struct ceval *e)
{
	long long v = cond_cmp(e);
	while (e->ok && ce_eat(e, "&&")) {
		long long r = cond_cmp(e);
		v = v && r;
	}
	return v;
}

static long long cond_or(struct ceval *e)
{
	long long v = cond_and(e);
	while (e->ok && ce_eat(e, "||")) {
		long long r = cond_and(e);
		v = v || r;
	}
	return v;
}

/* 1 or 0, or -1 when COND is not plain integer arithmetic. */
static int eval_cond(struct xctx *c, const char *cond, size_t n)
{
	struct ceval e = { c, cond, cond + n, 1, 0, 0 };
	long long v = cond_or(&e);

	ce_space(&e);
	if (!e.ok || e.p != e.end)
		return -1;
	return v != 0;
}

/* One open %( ... %) in expand_range(). */
struct ppframe {
	size_t cond_out;	/* where the condition starts in the output */
	char *define;		/* "@define NAME %(": NAME, to record the body */
	int value;		/* -1 unknown, 0, 1 */
	int phase;		/* 0 condition, 1 then, 2 else */
	int dead;		/* this frame incremented c->dead */
};
#define MAX_PP 32

/* If OUT ends with "@define NAME " (no parameters), return NAME. */
static char *define_name(const struct buf *out)
{
	size_t e = out->len, s;

	while (e > 0 && isspace((unsigned char)out->s[e - 1]))
		e--;
	s = e;
	while (s > 0 && is_ident(out->s[s - 1]))
		s--;
	if (s == e)
		return NULL;
	size_t d = s;
	while (d > 0 && isspace((unsigned char)out->s[d - 1]))
		d--;
	if (d < 7 || strncmp(out->s + d - 7, "@define", 7) != 0)
		return NULL;
	return xstrndup(out->s + s, e - s);
}

static void pp_directive(struct xctx *c, char kind, struct buf *out,
			 struct ppframe *st, int *n)
{
	struct ppframe *top = *n > 0 ? &st[*n - 1] : NULL;

	switch (kind) {
	case '(':
		if (*n < MAX_PP) {
			struct ppframe f = { out->len + 2, define_name(out), -1,
					     0, 0 };
			st[*n] = f;
		}
		(*n)++;
		break;
	case '?':
		if (!top || *n > MAX_PP || top->phase != 0)
			break;
		top->value = eval_cond(c, out->s + top->cond_out,
				       out->len - top->cond_out);
		top->phase = 1;
		if (top->value == 0) {
			top->dead = 1;
			c->dead++;
		}
		break;
	case ':':
		if (!top || *n > MAX_PP || top->phase != 1)
			break;
		top->phase = 2;
		if (top->dead) {
			top->dead = 0;
			c->dead--;
		}
		if (top->value == 1) {
			top->dead = 1;
			c->dead++;
		}
		break;
	case ')':
		if (!top)
			break;
		if (*n <= MAX_PP) {
			if (top->dead)
				c->dead--;
			if (top->define && top->phase == 0) {
				c->defs = xrealloc(c->defs, (c->ndefs + 1) *
						   sizeof(*c->defs));
				c->defs[c->ndefs].name = top->define;
				c->defs[c->ndefs].value =
					trim_dup(out->s + top->cond_out,
						 out->len - top->cond_out);
				c->ndefs++;
				top->define = NULL;
			}
			free(top->define);
		}
		(*n)--;
		break;
	}
}

/* --------------------------------------------------------------- driver */

/*
 * Expand text[i, end) of the current file into OUT.  Returns END, or
 * (size_t)-1 on an error that stops this file.  With STRIP_COMMENTS,
 * comments become one space (for values that are pasted elsewhere).
 */
static size_t expand_range(struct xctx *c, size_t i, size_t end,
			   struct buf *out, int strip_comments)
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
	for (size_t i = 0; i < c->nbinds; i++) {
		free(c->binds[i].name);
		free(c->binds[i].value);
	}
	free(c->binds);
	c->binds = NULL;
	c->nbinds = 0;
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
	for (size_t i = 0; i < c.ndefs; i++) {
		free(c.defs[i].name);
		free(c.defs[i].value);
	}
	free(c.defs);
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
