/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand/expand.c - the expander's entry (see expand/expand.h): the two
 * passes over the script and its modules, one file at a time.
 *
 * The rest of the expander, from the bottom up: scan (stap's lexical
 * structure), ctx (what every handler shares: messages, arguments),
 * range (the scan of a range that finds the macros: @pfunc, @error) and
 * the macro families: caret ($^), bind ($*), use (@use), dwarf (@sizeof
 * ... @var) and cond (%( %)).  Nothing there calls back into this file.
 */
#include "expand/expand.h"
#include "base/source.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "expand/bind.h"
#include "expand/ctx.h"

#include <stdlib.h>
#include <string.h>

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
