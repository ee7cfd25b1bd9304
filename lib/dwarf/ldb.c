/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/ldb.c - the layout database and its recorder.  See dwarf/ldb.h
 * and layouts/README.md.
 */
#include "dwarf/ldb.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "dwarf/ident.h"
#include "dwarf/names.h"
#include "dwarf/vmexit.h"
#include "dwarf/open.h"
#include "dwarf/type.h"

#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One file of layouts/: "KEY = VALUE" lines. */
struct lentry {
	char *name;		/* file name without .layout */
	char *path;
	struct strv keys, vals;
};

enum { L_UNKNOWN, L_OFF, L_ON, L_REFUSED };

struct ldb {
	int state;
	struct dw_bin *lj;	/* L_ON: the LuaJIT binary */
	struct lentry *e;	/* L_ON: its entry */
	int cli;		/* L_ON: the luajit CLI (luajit.c is in it) */
	size_t exit_lo, exit_hi;	/* L_ON: lj_vm_exit_interp's window in
					   the interpreter (dwarf/vmexit.h), or 0 */
};

struct rec {
	char *path;
	struct strv lines;	/* "KEY = VALUE" */
	struct dw_bin **from;
};

/* ------------------------------------------------------------------ */
/* Entries */

static void lentry_free(struct lentry *e)
{
	if (!e)
		return;
	free(e->name);
	free(e->path);
	strv_free(&e->keys);
	strv_free(&e->vals);
	free(e);
}

static const char *lentry_get(const struct lentry *e, const char *key)
{
	for (size_t i = 0; i < e->keys.n; i++)
		if (!strcmp(e->keys.v[i], key))
			return e->vals.v[i];
	return NULL;
}

/* Parse the entry at PATH; NULL (after a warning) if it is malformed. */
static struct lentry *lentry_load(const char *path, const char *name)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	struct lentry *e = xcalloc(1, sizeof(*e));
	e->path = xstrdup(path);
	e->name = xstrdup(name);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int lineno = 0, bad = 0;
	while ((len = getline(&line, &cap, f)) > 0) {
		lineno++;
		while (len && (line[len - 1] == '\n' || line[len - 1] == ' '))
			line[--len] = '\0';
		if (!len || line[0] == '#')
			continue;
		char *eq = strstr(line, " = ");
		if (!eq) {
			if (!bad++)
				warning("%s:%d: not 'KEY = VALUE' (entry "
					"skipped)", path, lineno);
			continue;
		}
		*eq = '\0';
		strv_add(&e->keys, line);
		strv_add(&e->vals, eq + 3);
	}
	free(line);
	fclose(f);
	if (bad) {
		lentry_free(e);
		return NULL;
	}
	return e;
}

/* The folders holding layouts: $STAPXX_LAYOUTS, else layouts/ next to
 * the running stap++, under its prefix and STAPXX_DATADIR. */
static void layout_dirs(struct strv *dirs)
{
	const char *env = getenv("STAPXX_LAYOUTS");
	char self[PATH_MAX], real[PATH_MAX];
	if (env && *env) {
		strv_add(dirs, env);
		return;
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			char *d[2] = { xasprintf("%s/layouts", self),
				       xasprintf("%s/../share/stap++/layouts",
						 self) };
			for (int k = 0; k < 2; k++) {
				if (realpath(d[k], real) &&
				    strv_find(dirs, real) < 0)
					strv_add(dirs, real);
				free(d[k]);
			}
		}
	}
	if (realpath(STAPXX_DATADIR "/layouts", real) &&
	    strv_find(dirs, real) < 0)
		strv_add(dirs, real);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every entry of DIRS, by file name within each folder. */
static void load_all(const struct strv *dirs, struct lentry ***out,
		     size_t *n)
{
	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < dirs->n; i++) {
		DIR *d = opendir(dirs->v[i]);
		struct dirent *de;
		struct strv names = { 0 };
		if (!d)
			continue;
		while ((de = readdir(d))) {
			size_t l = strlen(de->d_name);
			if (l > 7 && !strcmp(de->d_name + l - 7, ".layout"))
				strv_add(&names, de->d_name);
		}
		closedir(d);
		if (names.n)
			qsort(names.v, names.n, sizeof(*names.v), cmp_str);
		for (size_t k = 0; k < names.n; k++) {
			char *p = xasprintf("%s/%s", dirs->v[i], names.v[k]);
			char *name = xstrndup(names.v[k],
					      strlen(names.v[k]) - 7);
			struct lentry *e = lentry_load(p, name);
			free(p);
			free(name);
			if (!e)
				continue;
			*out = xrealloc(*out, (*n + 1) * sizeof(**out));
			(*out)[(*n)++] = e;
		}
		strv_free(&names);
	}
}

/* ------------------------------------------------------------------ */
/* Identification */

static char *exports_key(const struct ident *id)
{
	return xasprintf("%d %016llx", id->nexports, id->exports_hash);
}

static int hex_head(const char *hex, unsigned char *head)
{
	for (int i = 0; i < IDENT_HEAD; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		head[i] = (unsigned char)v;
	}
	return 0;
}

/* The function of ID that is the interpreter of entry E (its length and
 * masked hash), or NULL. */
static struct ident_fn *vm_fn(const struct lentry *e, struct ident *id)
{
	const char *vm = lentry_get(e, "id vm");
	unsigned long long len, hash;
	if (!vm || sscanf(vm, "%llu %llx", &len, &hash) != 2)
		return NULL;
	for (size_t i = 0; i < id->nfns; i++)
		if (id->fns[i].len == len &&
		    ident_fn_hash(id, &id->fns[i]) == hash)
			return &id->fns[i];
	return NULL;
}

/* Does ID's code have a function starting like E's interpreter? */
static int head_matches(const struct lentry *e, const struct ident *id)
{
	const char *hex = lentry_get(e, "id vm-head");
	unsigned char head[IDENT_HEAD];
	if (!hex || hex_head(hex, head) < 0)
		return 0;
	for (size_t i = 0; i < id->nfns; i++)
		if (id->fns[i].len >= 1024 &&
		    !memcmp(id->fns[i].head, head, IDENT_HEAD))
			return 1;
	return 0;
}

static int entry_matches(const struct lentry *e, struct ident *id)
{
	const char *v = lentry_get(e, "id version");
	const char *x = lentry_get(e, "id exports");
	char *mine = exports_key(id);
	int ok = v && !strcmp(v, id->version) &&
		 (!id->nexports || (x && !strcmp(x, mine))) &&
		 vm_fn(e, id) != NULL;
	free(mine);
	return ok;
}

static void refuse(struct dw_bin *b, struct ident *id, struct lentry **es,
		   size_t n, const struct strv *dirs)
{
	const char *gc64 = "unknown";
	const struct lentry *near = NULL;
	char *mine = exports_key(id);
	int near_x = 0;
	for (size_t i = 0; i < n; i++) {
		const char *g = lentry_get(es[i], "id gc64");
		if (g && head_matches(es[i], id))
			gc64 = !strcmp(g, "1") ? "on" : "off";
		const char *v = lentry_get(es[i], "id version");
		const char *x = lentry_get(es[i], "id exports");
		int same_x = x && !strcmp(x, mine);
		if (v && !strcmp(v, id->version) && (!near || same_x > near_x)) {
			near = es[i];
			near_x = same_x;
		}
	}
	free(mine);
	error_clear_location();	/* about the binary, not a script line */
	error("no known layout for the LuaJIT in '%s' (%s, GC64 %s, "
	      "build-id %s)", b->path,
	      id->version[0] ? id->version : "no version string", gc64,
	      id->build_id[0] ? id->build_id : "none");
	if (near)
		hint("layout '%s' has its version string but not its "
		     "interpreter: their layouts may differ", near->name);
	if (!dirs->n)
		hint("no layouts folder found (layouts/ next to stap++, or "
		     "$STAPXX_LAYOUTS)");
	for (size_t i = 0; i < dirs->n; i++)
		hint("%zu layouts searched in '%s'", n, dirs->v[i]);
	hint("capture its layout from a debug build (-g) of the same source "
	     "and flags: dev/capture-layout DEBUG-BINARY > "
	     "layouts/NAME.layout (layouts/README.md)");
	hint_debuginfo(b);
}

/* The binary of the set whose DWARF defines lua_State, or NULL. */
static struct dw_bin *lj_in_dwarf(struct dw_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		struct dw_bin *b = set->bins[i];
		if (names_skip(b, KIND_BIT(K_NAME), "lua_State"))
			continue;
		bin_open(b);
		struct entry *e;
		Dwarf_Die die;
		if (b->state == B_READY &&
		    (e = index_lookup(b, K_NAME, "lua_State"))) {
			die = e->die;
			if (peel(b, &die) == P_COMPLETE)
				return b;
		}
	}
	return NULL;
}

static void identify(struct dw_set *set)
{
	struct ldb *l = set->ldb;
	struct ident id;
	struct dw_bin *b = NULL;

	l->state = L_OFF;
	if (lj_in_dwarf(set))
		return;
	for (size_t i = 0; i < set->n && !b; i++) {
		if (set->bins[i]->state == B_UNUSABLE ||
		    ident_read(set->bins[i]->path, &id) < 0)
			continue;
		if (ident_is_luajit(&id))
			b = set->bins[i];
		else
			ident_free(&id);
	}
	if (!b)
		return;
	struct strv dirs = { 0 };
	struct lentry **es;
	size_t n;
	layout_dirs(&dirs);
	load_all(&dirs, &es, &n);
	for (size_t i = 0; i < n && !l->e; i++)
		if (entry_matches(es[i], &id)) {
			l->e = es[i];
			es[i] = NULL;
		}
	if (l->e) {
		l->state = L_ON;
		l->lj = b;
		l->cli = id.is_exec && !id.ngx_cycle;
		struct ident_fn *fn = vm_fn(l->e, &id);
		const unsigned char *code = fn ? ident_fn_bytes(&id, fn) : NULL;
		if (!code || lj_vm_exit_window(code, fn->len, &l->exit_lo, &l->exit_hi) < 0)
			l->exit_lo = l->exit_hi = 0;
		info(0, "using layout '%s' for '%s' (no debug info)",
		     l->e->name, b->path);
	} else {
		l->state = L_REFUSED;
		refuse(b, &id, es, n, &dirs);
	}
	for (size_t i = 0; i < n; i++)
		lentry_free(es[i]);
	free(es);
	strv_free(&dirs);
	ident_free(&id);
}

static int state(struct dw_set *set)
{
	if (!set->ldb)
		set->ldb = xcalloc(1, sizeof(*set->ldb));
	if (set->ldb->state == L_UNKNOWN)
		identify(set);
	return set->ldb->state;
}

int dw_refused(struct dw_set *set)
{
	return set->ldb && set->ldb->state == L_REFUSED;
}

const char *dw_database_binary(struct dw_set *set)
{
	return set->ldb && set->ldb->state == L_ON ? set->ldb->lj->path : NULL;
}

int dw_database(struct dw_set *set, const char **path, struct dw_vm *v)
{
	unsigned char head[IDENT_HEAD];
	const char *vm, *hex;
	int st = state(set);

	*path = NULL;
	memset(v, 0, sizeof(*v));
	if (st == L_REFUSED)
		return -1;
	if (st != L_ON)
		return 0;
	vm = lentry_get(set->ldb->e, "id vm");
	hex = lentry_get(set->ldb->e, "id vm-head");
	if (!vm || sscanf(vm, "%llu", &v->size) != 1 || !hex ||
	    hex_head(hex, head) < 0)
		return error("layout '%s' has no interpreter ('id vm', 'id "
			     "vm-head'): capture it again (layouts/README.md)",
			     set->ldb->e->name);
	for (int i = IDENT_HEAD - 1; i >= 0; i--)
		v->head = v->head << 8 | head[i];
	v->exit_lo = set->ldb->exit_lo;
	v->exit_hi = set->ldb->exit_hi;
	*path = set->ldb->lj->path;
	return 1;
}

int ldb_active(struct dw_set *set, struct dw_bin **lj)
{
	if (state(set) != L_ON)
		return 0;
	*lj = set->ldb->lj;
	return 1;
}

int ldb_string(struct dw_set *set, const char *module, const char *key,
	       const char **str)
{
	switch (state(set)) {
	case L_REFUSED:
		return -1;
	case L_ON:
		break;
	default:
		return 0;
	}
	if (module && set_get(set, module) != set->ldb->lj)
		return 0;
	*str = lentry_get(set->ldb->e, key);
	if (*str && !set->ldb->cli && !strcmp(*str, "luajit.c"))
		return 0;	/* the CLI's own variable (globalL) */
	return *str ? 1 : 0;
}

int ldb_number(struct dw_set *set, const char *module, const char *key,
	       long long *out)
{
	const char *s;
	int r = ldb_string(set, module, key, &s);
	if (r <= 0)
		return r;
	char *end;
	*out = strtoll(s, &end, 0);
	if (end == s || *end) {
		error("malformed value '%s' of '%s' in '%s'", s, key,
		      set->ldb->e->path);
		return -1;
	}
	return 1;
}

void ldb_hint_missing(struct dw_set *set, const char *key)
{
	if (set->ldb && set->ldb->state == L_ON)
		hint("layout '%s' has no answer for %s: capture it again "
		     "(layouts/README.md)", set->ldb->e->name, key);
}

struct dw_bin *ldb_nodebug_nginx(struct dw_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		struct dw_bin *b = set->bins[i];
		struct ident id;
		if (b->state != B_NODEBUG || ident_read(b->path, &id) < 0)
			continue;
		int ngx = id.ngx_cycle;
		ident_free(&id);
		if (ngx)
			return b;
	}
	return NULL;
}

const char *dw_nodebug_nginx(struct dw_set *set)
{
	struct dw_bin *b = ldb_nodebug_nginx(set);
	return b ? b->path : NULL;
}

/* ------------------------------------------------------------------ */
/* Recording */

void rec_init(struct dw_set *set)
{
	const char *p = getenv("STAPXX_LAYOUT_RECORD");
	if (!p || !*p)
		return;
	set->rec = xcalloc(1, sizeof(*set->rec));
	set->rec->path = xstrdup(p);
}

void rec_add(struct dw_set *set, struct dw_bin *from, const char *key,
	     const char *fmt, ...)
{
	struct rec *r = set->rec;
	if (!r || (set->ldb && set->ldb->state == L_ON))
		return;
	va_list ap;
	char *v;
	va_start(ap, fmt);
	if (vasprintf(&v, fmt, ap) < 0)
		die("out of memory");
	va_end(ap);
	strv_take(&r->lines, xasprintf("%s = %s", key, v));
	free(v);
	r->from = xrealloc(r->from, r->lines.n * sizeof(*r->from));
	r->from[r->lines.n - 1] = from;
}

/* The identification lines of LuaJIT binary B, into OUT. */
static void rec_ident(struct dw_bin *b, const struct rec *r, FILE *out)
{
	struct ident id;
	if (ident_read(b->path, &id) < 0)
		return;
	char *x = exports_key(&id);
	fprintf(out, "id version = %s\nid exports = %s\n", id.version, x);
	free(x);
	struct ident_fn *fn = id.vm_addr ? ident_fn_at(&id, id.vm_addr) : NULL;
	if (fn) {
		fprintf(out, "id vm = %llu %016llx\nid vm-head = ", fn->len,
			ident_fn_hash(&id, fn));
		for (int i = 0; i < IDENT_HEAD; i++)
			fprintf(out, "%02x", fn->head[i]);
		fputc('\n', out);
	} else {
		warning("no lj_vm_asm_begin with an FDE in '%s': the entry "
			"will match no binary", b->path);
	}
	for (size_t i = 0; i < r->lines.n; i++)
		if (!strncmp(r->lines.v[i], "has_member(TValue, it64) = ", 27))
			fprintf(out, "id gc64 = %s\n", r->lines.v[i] + 27);
	ident_free(&id);
}

static void rec_write(struct dw_set *set)
{
	struct rec *r = set->rec;
	struct dw_bin *lj = lj_in_dwarf(set);
	if (!lj || !r->lines.n)
		return;
	FILE *f = fopen(r->path, "a");
	if (!f) {
		warning("cannot record layouts into '%s'", r->path);
		return;
	}
	rec_ident(lj, r, f);
	for (size_t i = 0; i < r->lines.n; i++)
		if (!r->from[i] || r->from[i] == lj)
			fprintf(f, "%s\n", r->lines.v[i]);
	if (fclose(f) != 0)
		warning("cannot record layouts into '%s'", r->path);
}

void ldb_free(struct dw_set *set)
{
	if (set->rec) {
		rec_write(set);
		strv_free(&set->rec->lines);
		free(set->rec->from);
		free(set->rec->path);
		free(set->rec);
	}
	if (set->ldb) {
		lentry_free(set->ldb->e);
		free(set->ldb);
	}
}
