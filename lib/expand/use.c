/* SPDX-License-Identifier: GPL-2.0-or-later */
/* expand/use.c - the @use module loader.  See expand/use.h. */
#include "expand/use.h"
#include "base/wrapper.h"
#include "expand/ctx.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Module name "a.b" -> relative path "a/b.sxx" (malloc'd); NULL if NAME is
 * not a dotted list of identifiers. */
static char *module_relpath(const char *name)
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

/* Check the "// module NAME" header: a missing header is an error; a header
 * naming another module is only a warning, because the Perl stap++ never
 * checked it and published stapxx modules (nginx/lua.sxx declares
 * 'nginx.config') rely on that.  The module loads either way. */
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
			warning("module file declares '%.*s', but was loaded "
				"as '%s'", (int)(e - t), t, name);
			error_clear_location();
			return 0;
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

size_t do_use(struct xctx *c, size_t i, size_t end)
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

void module_search_path(const struct strv *incdirs, struct strv *dirs)
{
	char self[PATH_MAX];
	ssize_t n;

	for (size_t i = 0; i < incdirs->n; i++)
		if (strv_find(dirs, incdirs->v[i]) < 0)
			strv_add(dirs, incdirs->v[i]);
	if (strv_find(dirs, ".") < 0)
		strv_add(dirs, ".");
	if (strv_find(dirs, "tapset") < 0)
		strv_add(dirs, "tapset");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			/* in-tree (./stap++ next to tapset/), then installed
			 * under any prefix (PREFIX/bin/../share/stap++) */
			*slash = '\0';
			char *d[2] = { xasprintf("%s/tapset", self),
				       xasprintf("%s/../share/stap++/tapset", self) };
			for (int k = 0; k < 2; k++) {
				char real[PATH_MAX];
				if (realpath(d[k], real) && strv_find(dirs, real) < 0)
					strv_add(dirs, real);
				free(d[k]);
			}
		}
	}
	if (strv_find(dirs, STAPXX_DATADIR "/tapset") < 0)
		strv_add(dirs, STAPXX_DATADIR "/tapset");
}
