/*
 * dwarf.c - type layouts, enumerators and globals from the target binaries'
 * DWARF, with elfutils libdwfl/libdw.  See dwarf.h for the contract.
 *
 * Each binary is opened on first use with an offline Dwfl whose
 * find_debuginfo is dwfl_standard_find_debuginfo (so build-id,
 * .gnu_debuglink and /usr/lib/debug work, and dwz alternate files are
 * found), then indexed once: every top-level DIE of every unit (and of the
 * dwz alternate file) is hashed by (kind, name).  Queries are then hash
 * look-ups plus a short walk of one type's members.
 */
#include "dwarf.h"
#include "error.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What a name means in a binary's index. */
enum kind {
	K_STRUCT,	/* struct/class tag (definitions only) */
	K_UNION,	/* union tag (definitions only) */
	K_ENUM,		/* enum tag (definitions only) */
	K_NAME,		/* typedef or base type name */
	K_ENUMERATOR,	/* enumeration constant */
	K_VAR,		/* external variable definition */
	K_STATIC_VAR,	/* file-local (static) variable definition */
};

struct entry {
	const char *name;	/* into the DWARF data; NULL: empty slot */
	enum kind kind;
	Dwarf_Die die;
	Dwarf_Die parent;	/* K_ENUMERATOR: its enumeration type */
	const char *cu_name;	/* K_VAR, K_STATIC_VAR: DW_AT_name of the CU */
	int more;		/* K_STATIC_VAR: definitions in other CUs */
};

enum state { B_NEW, B_READY, B_NODEBUG, B_UNUSABLE };

struct dw_bin {
	char *path;		/* as given */
	char *real;		/* realpath(), or a copy of path */
	enum state state;
	char *why;		/* B_UNUSABLE: the reason, for messages */
	int warned;		/* B_UNUSABLE: warning already printed */
	int hinted;		/* B_NODEBUG: how-to hint already printed */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf *dw;
	struct entry *tab;	/* open addressing, cap is a power of 2 */
	size_t cap, used;
};

struct dw_set {
	struct dw_bin **bins;
	size_t n, alloc;
	int type_misses;	/* @has_type answers 0 so far */
};

/* ------------------------------------------------------------------ */
/* The set */

struct dw_set *dw_set_new(void)
{
	return xcalloc(1, sizeof(struct dw_set));
}

void dw_set_free(struct dw_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n; i++) {
		struct dw_bin *b = set->bins[i];
		if (b->dwfl)
			dwfl_end(b->dwfl);
		free(b->tab);
		free(b->why);
		free(b->real);
		free(b->path);
		free(b);
	}
	free(set->bins);
	free(set);
}

static char *canonical(const char *path)
{
	char *r = realpath(path, NULL);
	return r ? r : xstrdup(path);
}

static struct dw_bin *set_find(struct dw_set *set, const char *path)
{
	for (size_t i = 0; i < set->n; i++)
		if (!strcmp(set->bins[i]->path, path))
			return set->bins[i];
	char *real = canonical(path);
	struct dw_bin *found = NULL;
	for (size_t i = 0; i < set->n && !found; i++)
		if (!strcmp(set->bins[i]->real, real))
			found = set->bins[i];
	free(real);
	return found;
}

/* The binary PATH of the set, added at the end if new. */
static struct dw_bin *set_get(struct dw_set *set, const char *path)
{
	struct dw_bin *b = set_find(set, path);
	if (b)
		return b;
	if (set->n == set->alloc) {
		set->alloc = set->alloc ? 2 * set->alloc : 8;
		set->bins = xrealloc(set->bins, set->alloc * sizeof(*set->bins));
	}
	b = xcalloc(1, sizeof(*b));
	b->path = xstrdup(path);
	b->real = canonical(path);
	set->bins[set->n++] = b;
	return b;
}

int dw_set_add(struct dw_set *set, const char *path)
{
	set_get(set, path);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The per-binary index */

static uint64_t hash_key(enum kind kind, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)kind;	/* FNV-1a */
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return h;
}

static struct entry *slot(struct dw_bin *b, enum kind kind, const char *name)
{
	size_t mask = b->cap - 1;
	for (size_t i = hash_key(kind, name) & mask;; i = (i + 1) & mask) {
		struct entry *e = &b->tab[i];
		if (!e->name || (e->kind == kind && !strcmp(e->name, name)))
			return e;
	}
}

static struct entry *lookup(struct dw_bin *b, enum kind kind, const char *name)
{
	if (!b->cap)
		return NULL;
	struct entry *e = slot(b, kind, name);
	return e->name ? e : NULL;
}

/* Insert unless (KIND, NAME) is already there: the first one wins.
 * Returns the new entry, or NULL if it was already present. */
static struct entry *insert(struct dw_bin *b, enum kind kind, const char *name,
			    Dwarf_Die *die)
{
	if (2 * (b->used + 1) > b->cap) {
		struct entry *old = b->tab;
		size_t oldcap = b->cap;
		b->cap = oldcap ? 2 * oldcap : 1024;
		b->tab = xcalloc(b->cap, sizeof(*b->tab));
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].name)
				*slot(b, old[i].kind, old[i].name) = old[i];
		free(old);
	}
	struct entry *e = slot(b, kind, name);
	if (e->name)
		return NULL;
	e->name = name;
	e->kind = kind;
	e->die = *die;
	b->used++;
	return e;
}

static int is_declaration(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	bool flag;
	return dwarf_attr(die, DW_AT_declaration, &a) &&
	       dwarf_formflag(&a, &flag) == 0 && flag;
}

static const char *integrated_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
}

static void index_enumerators(struct dw_bin *b, Dwarf_Die *enum_die)
{
	Dwarf_Die c;
	if (dwarf_child(enum_die, &c) != 0)
		return;
	do {
		const char *name;
		struct entry *e;
		if (dwarf_tag(&c) == DW_TAG_enumerator &&
		    (name = dwarf_diename(&c)) &&
		    (e = insert(b, K_ENUMERATOR, name, &c)))
			e->parent = *enum_die;
	} while (dwarf_siblingof(&c, &c) == 0);
}

static void index_variable(struct dw_bin *b, Dwarf_Die *die,
			   const char *cu_name)
{
	Dwarf_Attribute a;
	bool ext = false;
	if (!cu_name || is_declaration(die) ||
	    !(dwarf_hasattr(die, DW_AT_location) ||
	      dwarf_hasattr(die, DW_AT_specification)))
		return;
	const char *name = integrated_name(die);
	if (!name)
		return;
	if (dwarf_attr_integrate(die, DW_AT_external, &a))
		dwarf_formflag(&a, &ext);
	struct entry *e = insert(b, ext ? K_VAR : K_STATIC_VAR, name, die);
	if (e)
		e->cu_name = cu_name;
	else if (!ext && (e = lookup(b, K_STATIC_VAR, name)) &&
		 strcmp(e->cu_name, cu_name))
		e->more++;	/* "static int x" in several files */
}

/* The index kind of a struct/class, union or enum DIE tag; -1 if TAG is
 * none of them. */
static int tag_kind(int tag, enum kind *kind)
{
	switch (tag) {
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
		*kind = K_STRUCT;
		return 0;
	case DW_TAG_union_type:
		*kind = K_UNION;
		return 0;
	case DW_TAG_enumeration_type:
		*kind = K_ENUM;
		return 0;
	default:
		return -1;
	}
}

/* Index the children of a unit DIE. */
static void index_unit(struct dw_bin *b, Dwarf_Die *unit, int is_cu)
{
	const char *cu_name = is_cu ? dwarf_diename(unit) : NULL;
	Dwarf_Die c;
	if (dwarf_child(unit, &c) != 0)
		return;
	do {
		enum kind kind;
		const char *name;
		int tag = dwarf_tag(&c);
		if (tag == DW_TAG_variable) {
			index_variable(b, &c, cu_name);
			continue;
		}
		if (tag == DW_TAG_enumeration_type)
			index_enumerators(b, &c);
		if (tag == DW_TAG_typedef || tag == DW_TAG_base_type)
			kind = K_NAME;
		else if (tag_kind(tag, &kind) < 0)
			continue;
		if ((name = dwarf_diename(&c)) &&
		    (kind == K_NAME || !is_declaration(&c)))
			insert(b, kind, name, &c);
	} while (dwarf_siblingof(&c, &c) == 0);
}

static void index_dwarf(struct dw_bin *b, Dwarf *dw)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	uint8_t unit_type;
	Dwarf_Die cudie, subdie;
	while (dwarf_get_units(dw, cu, &next, &version, &unit_type, &cudie,
			       &subdie) == 0) {
		cu = next;
		Dwarf_Die *top = &cudie;
		if (unit_type == DW_UT_skeleton &&
		    dwarf_tag(&subdie) == DW_TAG_compile_unit)
			top = &subdie;	/* split DWARF: the .dwo's unit */
		index_unit(b, top, dwarf_tag(top) == DW_TAG_compile_unit);
	}
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------ */
/* Opening a binary */

static char *debuginfo_path;	/* NULL: libdwfl's default search path */

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

static void unusable(struct dw_bin *b, char *why)
{
	b->state = B_UNUSABLE;
	b->why = why;
}

/* Open and index B once; afterwards b->state says what we got. */
static void bin_open(struct dw_bin *b)
{
	if (b->state != B_NEW)
		return;
	double t0 = now_ms();
	int fd = open(b->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		unusable(b, xasprintf("cannot open '%s': %s", b->path,
				      strerror(errno)));
		return;
	}
	unsigned char magic[4];
	ssize_t n = read(fd, magic, sizeof(magic));
	close(fd);
	if (n != 4 || memcmp(magic, ELFMAG, SELFMAG)) {
		unusable(b, n < 0 ? xasprintf("cannot read '%s': %s", b->path,
					      strerror(errno))
				  : xasprintf("'%s' is not an ELF file",
					      b->path));
		return;
	}
	b->dwfl = dwfl_begin(&offline_callbacks);
	if (!b->dwfl)
		die("cannot initialize libdwfl: %s", dwfl_errmsg(-1));
	const char *base = strrchr(b->path, '/');
	b->mod = dwfl_report_offline(b->dwfl, base ? base + 1 : b->path,
				     b->path, -1);
	dwfl_report_end(b->dwfl, NULL, NULL);
	if (!b->mod) {
		unusable(b, xasprintf("cannot read ELF file '%s': %s", b->path,
				      dwfl_errmsg(-1)));
		return;
	}
	Dwarf_Addr bias;
	b->dw = dwfl_module_getdwarf(b->mod, &bias);
	if (!b->dw) {
		b->state = B_NODEBUG;
		info(1, "no debug info in '%s': %s", b->path, dwfl_errmsg(-1));
		return;
	}
	double t1 = now_ms();
	index_dwarf(b, b->dw);
	Dwarf *alt = dwarf_getalt(b->dw);	/* dwz's common file */
	if (alt)
		index_dwarf(b, alt);
	b->state = b->used ? B_READY : B_NODEBUG;
	info(1, "indexed '%s': %zu names in %.1f ms (%.1f ms to load its "
	     "DWARF)", b->path, b->used, now_ms() - t0, t1 - t0);
}

/* The Debian package that installed binary B (from dpkg's file lists),
 * or NULL.  Only for hints: reads a few MB, once per binary without debug
 * info.  Caller frees. */
static char *dpkg_owner(struct dw_bin *b)
{
	DIR *d = opendir("/var/lib/dpkg/info");
	if (!d)
		return NULL;
	char *owner = NULL, *line = NULL;
	size_t cap = 0;
	struct dirent *de;
	while (!owner && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".list"))
			continue;
		char *f = xasprintf("/var/lib/dpkg/info/%s", de->d_name);
		FILE *fp = fopen(f, "r");
		free(f);
		if (!fp)
			continue;
		ssize_t len;
		while (!owner && (len = getline(&line, &cap, fp)) > 0) {
			if (line[len - 1] == '\n')
				line[--len] = '\0';
			/* merged /usr: dpkg may list /lib/x, realpath() says
			 * /usr/lib/x */
			if (!strcmp(line, b->path) || !strcmp(line, b->real) ||
			    (!strncmp(b->real, "/usr/", 5) &&
			     !strcmp(line, b->real + 4))) {
				size_t end = strcspn(de->d_name, ":"); /* arch */
				owner = xstrndup(de->d_name,
						 end < n - 5 ? end : n - 5);
			}
		}
		fclose(fp);
	}
	free(line);
	closedir(d);
	return owner;
}

/* The hints printed after "no debug info in ...": how to get it, and
 * where libdwfl looked for a separate debug file.  Only the first time for
 * B: a script with many macros would repeat them for every one. */
static void hint_debuginfo(struct dw_bin *b)
{
	if (b->hinted++)
		return;		/* once per binary is enough */
	const unsigned char *id = NULL;
	GElf_Addr vaddr;
	int len = b->mod ? dwfl_module_build_id(b->mod, &id, &vaddr) : 0;
	char *pkg = dpkg_owner(b);
	if (pkg)
		hint("install the debug symbols of '%s' (Debian: %s-dbgsym "
		     "from the debian-debug archive, or %s-dbg) or rebuild it "
		     "with -g", b->path, pkg, pkg);
	else
		hint("install the debug symbols of '%s' (Debian: its -dbgsym "
		     "package from the debian-debug archive) or rebuild it "
		     "with -g", b->path);
	free(pkg);
	if (len > 1) {
		char hex[2 * 64 + 1];
		int m = len < 64 ? len : 64;
		for (int i = 0; i < m; i++)
			snprintf(hex + 2 * i, 3, "%02x", id[i]);
		hint("a separate debug file is found by build-id as "
		     "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	} else {
		hint("a separate debug file is found by build-id under "
		     "/usr/lib/debug/.build-id/ (this binary has no build-id)");
	}
	Dwarf_Addr bias;
	GElf_Word crc;
	Elf *elf = b->mod ? dwfl_module_getelf(b->mod, &bias) : NULL;
	const char *link = elf ? dwelf_elf_gnu_debuglink(elf, &crc) : NULL;
	if (link) {
		const char *slash = strrchr(b->real, '/');
		int dl = slash ? (int)(slash - b->real) : 0;
		hint("or by its .gnu_debuglink as '%s' in '%.*s/', "
		     "'%.*s/.debug/' or '/usr/lib/debug%.*s/' (with a "
		     "matching CRC)", link, dl, b->real, dl, b->real, dl,
		     b->real);
	}
}

/* Open B for a query naming it explicitly; errors if it has no usable
 * DWARF. */
static int bin_require(struct dw_bin *b)
{
	bin_open(b);
	switch (b->state) {
	case B_READY:
		return 0;
	case B_NODEBUG:
		error("no debug info in '%s'", b->path);
		hint_debuginfo(b);
		return -1;
	default:
		return error("%s", b->why);
	}
}

/* ------------------------------------------------------------------ */
/* Searching the set */

/* What a search over the set saw, for the final message. */
struct search {
	struct dw_set *set;
	struct dw_bin *only;	/* explicit MODULE, or NULL */
	size_t i;
	char *searched;		/* "'a', 'b'" binaries with DWARF */
	char *nodebug;		/* same, without DWARF */
	struct dw_bin *first_nodebug;
	int n_searched, n_nodebug, n_unusable;
};

static void list_add(char **list, const char *path)
{
	char *old = *list;
	*list = old ? xasprintf("%s, '%s'", old, path) : xasprintf("'%s'", path);
	free(old);
}

/* Next binary with usable DWARF, or NULL at the end.  An explicit module
 * without DWARF is an error (returns NULL with *err = -1). */
static struct dw_bin *search_next(struct search *s, int *err)
{
	*err = 0;
	if (s->only) {
		if (s->i++)
			return NULL;
		if (bin_require(s->only) < 0) {
			*err = -1;
			return NULL;
		}
		list_add(&s->searched, s->only->path);
		s->n_searched++;
		return s->only;
	}
	while (s->i < s->set->n) {
		struct dw_bin *b = s->set->bins[s->i++];
		bin_open(b);
		if (b->state == B_READY) {
			list_add(&s->searched, b->path);
			s->n_searched++;
			return b;
		}
		if (b->state == B_NODEBUG) {
			list_add(&s->nodebug, b->path);
			if (!s->n_nodebug++)
				s->first_nodebug = b;
		} else {
			s->n_unusable++;
			if (!b->warned++)
				warning("%s (skipped)", b->why);
		}
	}
	return NULL;
}

static void search_init(struct search *s, struct dw_set *set,
			const char *module)
{
	memset(s, 0, sizeof(*s));
	s->set = set;
	if (module)
		s->only = set_get(set, module);
}

/* Hints naming the binaries the search skipped for lack of debug info,
 * with the how-to for the first. */
static void search_hint_nodebug(struct search *s)
{
	if (s->n_nodebug) {
		hint("not searched, no debug info in %s", s->nodebug);
		hint_debuginfo(s->first_nodebug);
	}
}

/* The search found nothing: print "cannot find WHAT in LIST" (or "no debug
 * info in ...") with hints.  The first binary without debug info (the
 * executable, if it is one of them) gets the full how-to hint.  Returns
 * -1. */
static int search_fail(struct search *s, const char *what, const char *extra)
{
	if (!s->n_searched && s->n_nodebug) {
		error("no debug info in %s", s->nodebug);
		hint_debuginfo(s->first_nodebug);
	} else if (!s->n_searched && s->n_unusable) {
		error("cannot find %s: no readable binary to search", what);
	} else if (!s->n_searched) {
		error("cannot find %s: no target binary to search", what);
		hint("name the target with -x PID or --exec PATH, or give a "
		     "module path as the last argument");
	} else {
		error("cannot find %s in %s", what, s->searched);
		if (extra)
			hint("%s", extra);
		search_hint_nodebug(s);
	}
	return -1;
}

static void search_done(struct search *s)
{
	free(s->searched);
	free(s->nodebug);
}

void dw_hint_nodebug(struct dw_set *set)
{
	struct search s;
	int err;

	if (!set->type_misses)
		return;
	search_init(&s, set, NULL);
	while (search_next(&s, &err))
		;
	search_hint_nodebug(&s);
	search_done(&s);
}

/* ------------------------------------------------------------------ */
/* Type names */

struct tyname {
	enum kind kind;		/* K_STRUCT, K_UNION, K_ENUM or K_NAME */
	char name[256];
	char desc[300];		/* "struct 'X'", "type 'X'" for messages */
};

static int ident_char(int c, int first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (!first && c >= '0' && c <= '9');
}

/* Spell C's integer type names as GCC's DWARF does ("unsigned long" ->
 * "long unsigned int").  Writes into OUT; returns 0 if NAME is not made of
 * integer keywords only. */
static int canonical_int(const char *name, char *out, size_t outsz)
{
	int nlong = 0, nshort = 0, nint = 0, nchar = 0, nsigned = 0, nuns = 0;
	const char *p = name;
	while (*p) {
		while (*p == ' ')
			p++;
		const char *w = p;
		while (*p && *p != ' ')
			p++;
		size_t len = (size_t)(p - w);
		if (!len)
			break;
#define IS(s) (len == sizeof(s) - 1 && !memcmp(w, s, len))
		if (IS("long"))
			nlong++;
		else if (IS("short"))
			nshort++;
		else if (IS("int"))
			nint++;
		else if (IS("char"))
			nchar++;
		else if (IS("signed"))
			nsigned++;
		else if (IS("unsigned"))
			nuns++;
		else
			return 0;
#undef IS
	}
	if (nlong > 2 || nshort > 1 || nint > 1 || nchar > 1 ||
	    nsigned + nuns > 1 || (nchar && (nlong || nshort || nint)) ||
	    (nshort && nlong))
		return 0;
	if (nchar)
		snprintf(out, outsz, "%schar",
			 nuns ? "unsigned " : nsigned ? "signed " : "");
	else
		snprintf(out, outsz, "%s%sint",
			 nshort ? "short " : nlong == 2 ? "long long " :
			 nlong ? "long " : "",
			 nuns ? "unsigned " : "");
	return 1;
}

static int parse_type(const char *s, struct tyname *t)
{
	static const struct { const char *kw; enum kind kind; } tags[] = {
		{ "struct", K_STRUCT }, { "union", K_UNION },
		{ "enum", K_ENUM }, { "class", K_STRUCT },
	};
	char buf[256];
	size_t n = 0;
	/* Collapse blanks, drop const/volatile qualifiers. */
	for (const char *p = s; *p;) {
		if (*p == ' ' || *p == '\t' || *p == '\n') {
			p++;
			continue;
		}
		const char *w = p;
		while (*p && *p != ' ' && *p != '\t' && *p != '\n')
			p++;
		size_t len = (size_t)(p - w);
		if ((len == 5 && !memcmp(w, "const", 5)) ||
		    (len == 8 && !memcmp(w, "volatile", 8)))
			continue;
		if (n + len + 2 > sizeof(buf))
			return error("invalid type '%s': name too long", s);
		if (n)
			buf[n++] = ' ';
		memcpy(buf + n, w, len);
		n += len;
	}
	buf[n] = '\0';
	t->kind = K_NAME;
	const char *name = buf, *what = "type";
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		size_t kl = strlen(tags[i].kw);
		if (!strncmp(buf, tags[i].kw, kl) && buf[kl] == ' ') {
			t->kind = tags[i].kind;
			name = buf + kl + 1;
			what = tags[i].kw;
			break;
		}
	}
	int ok = ident_char((unsigned char)*name, 1);
	for (const char *p = name; ok && *p; p++)
		ok = ident_char((unsigned char)*p, 0) ||
		     (t->kind == K_NAME && *p == ' ');
	for (size_t i = 0; ok && i < sizeof(tags) / sizeof(tags[0]); i++)
		ok = strcmp(name, tags[i].kw) != 0;	/* "struct" alone */
	if (!ok) {
		if (strchr(buf, '*'))
			return error("invalid type '%s': pointer types are not "
				     "supported", s);
		return error("invalid type '%s': expected 'struct NAME', "
			     "'union NAME', 'enum NAME' or a type name", s);
	}
	if (t->kind != K_NAME || !canonical_int(name, t->name, sizeof(t->name)))
		snprintf(t->name, sizeof(t->name), "%s", name);
	snprintf(t->desc, sizeof(t->desc), "%s '%s'", what, name);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Types */

static int die_type(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(die, DW_AT_type, &a) &&
	       dwarf_formref_die(&a, out) ? 0 : -1;
}

enum peeled { P_VOID, P_COMPLETE, P_DECLARATION };

/* Peel typedefs and qualifiers off *DIE; a declaration of a named
 * struct/union/enum is replaced by its definition elsewhere in B. */
static enum peeled peel(struct dw_bin *b, Dwarf_Die *die)
{
	for (int depth = 0; depth < 64; depth++) {
		switch (dwarf_tag(die)) {
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
		case DW_TAG_restrict_type:
		case DW_TAG_atomic_type:
		case DW_TAG_immutable_type:
		case DW_TAG_packed_type:
		case DW_TAG_shared_type:
			if (die_type(die, die) < 0)
				return P_VOID;
			continue;
		default:
			break;
		}
		Dwarf_Attribute a;
		if (dwarf_attr(die, DW_AT_signature, &a)) {
			if (!dwarf_formref_die(&a, die))
				return P_DECLARATION;
			continue;	/* definition in a type unit */
		}
		if (!is_declaration(die))
			return P_COMPLETE;
		enum kind kind;
		if (tag_kind(dwarf_tag(die), &kind) < 0)
			return P_DECLARATION;
		const char *name = dwarf_diename(die);
		struct entry *e = name ? lookup(b, kind, name) : NULL;
		if (!e)
			return P_DECLARATION;
		*die = e->die;
		return P_COMPLETE;
	}
	return P_DECLARATION;	/* a typedef loop: treat as unusable */
}

/* Find TYPE (parsed into *T) in the set or in MODULE; on success *bin_out
 * and *die (peeled) are set and 1 is returned.  If QUIET, a missing type
 * returns 0 without a message (still -1 when nothing could be searched). */
static int find_type(struct dw_set *set, const char *type, const char *module,
		     struct tyname *t, struct dw_bin **bin_out, Dwarf_Die *die,
		     int quiet)
{
	if (parse_type(type, t) < 0)
		return -1;
	struct search s;
	struct dw_bin *b;
	int err, declared = 0, ret;
	char *extra = NULL;
	search_init(&s, set, module);
	while ((b = search_next(&s, &err))) {
		struct entry *e = lookup(b, t->kind, t->name);
		if (!e)
			continue;
		*die = e->die;
		switch (peel(b, die)) {
		case P_COMPLETE:
			*bin_out = b;
			free(extra);
			search_done(&s);
			return 1;
		case P_DECLARATION:
			if (!declared++)
				extra = xasprintf("'%s' declares it but has no "
						  "complete definition",
						  b->path);
			break;
		case P_VOID:
			break;
		}
	}
	if (err < 0)
		ret = -1;
	else if (quiet && s.n_searched)
		ret = 0;
	else
		ret = search_fail(&s, t->desc, extra);
	free(extra);
	search_done(&s);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Members */

static int attr_number(Dwarf_Attribute *a, long long *out)
{
	Dwarf_Word u;
	Dwarf_Sword sv;
	switch (dwarf_whatform(a)) {
	case DW_FORM_sdata:
	case DW_FORM_implicit_const:
		if (dwarf_formsdata(a, &sv) != 0)
			return -1;
		*out = sv;
		return 0;
	case DW_FORM_data1:
	case DW_FORM_data2:
	case DW_FORM_data4:
	case DW_FORM_data8:
	case DW_FORM_udata:
		if (dwarf_formudata(a, &u) != 0)
			return -1;
		*out = (long long)u;
		return 0;
	default:
		return -1;
	}
}

/* Byte offset of member DIE within its struct: DW_AT_data_member_location
 * as a constant or as an expression (DW_OP_plus_uconst N, as DWARF 2/3
 * write it); no attribute (union members) means 0. */
static int member_offset(Dwarf_Die *m, long long *out)
{
	Dwarf_Attribute a;
	*out = 0;
	if (!dwarf_attr(m, DW_AT_data_member_location, &a))
		return 0;
	if (attr_number(&a, out) == 0)
		return 0;
	Dwarf_Op *ops;
	size_t nops;
	if (dwarf_getlocation(&a, &ops, &nops) == 0 && nops == 1 &&
	    (ops[0].atom == DW_OP_plus_uconst || ops[0].atom == DW_OP_constu)) {
		*out = (long long)ops[0].number;
		return 0;
	}
	return -1;
}

/* Search struct/union S for member NAME, through anonymous members.
 * Returns 1 with *m and *off (relative to S), 0 if absent, -1 on a
 * location we cannot read (error printed). */
static int find_member(struct dw_bin *b, Dwarf_Die *s, const char *name,
		       Dwarf_Die *m, long long *off)
{
	Dwarf_Die c;
	if (dwarf_child(s, &c) != 0)
		return 0;
	do {
		if (dwarf_tag(&c) != DW_TAG_member)
			continue;
		const char *cn = dwarf_diename(&c);
		if (cn && strcmp(cn, name))
			continue;
		long long here;
		if (member_offset(&c, &here) < 0)
			return error("cannot read the location of member '%s' "
				     "(in '%s')", cn ? cn : "(anonymous)",
				     b->path);
		if (cn) {
			*m = c;
			*off = here;
			return 1;
		}
		Dwarf_Die inner;	/* anonymous struct/union: look inside */
		if (die_type(&c, &inner) < 0 || peel(b, &inner) != P_COMPLETE)
			continue;
		int tag = dwarf_tag(&inner);
		if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type &&
		    tag != DW_TAG_class_type)
			continue;
		int r = find_member(b, &inner, name, m, off);
		if (r)
			return r < 0 ? -1 : (*off += here, 1);
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

static int is_aggregate(Dwarf_Die *d)
{
	int tag = dwarf_tag(d);
	return tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
	       tag == DW_TAG_class_type;
}

/* Number of elements of subrange SR, or -1 if unknown (flexible). */
static long long subrange_count(Dwarf_Die *sr)
{
	Dwarf_Attribute a;
	long long count, lo = 0, hi;
	if (dwarf_attr(sr, DW_AT_count, &a) && attr_number(&a, &count) == 0)
		return count;
	if (!dwarf_attr(sr, DW_AT_upper_bound, &a) || attr_number(&a, &hi) < 0)
		return -1;
	if (dwarf_attr(sr, DW_AT_lower_bound, &a))
		attr_number(&a, &lo);
	return hi - lo + 1;
}

/* Byte size of type DIE: like dwarf_aggregate_size(), but through
 * declarations and type-unit stubs (peel()) at every level. */
static int type_size(struct dw_bin *b, Dwarf_Die *die, long long *out)
{
	Dwarf_Die d = *die;
	if (peel(b, &d) != P_COMPLETE)
		return -1;
	if (dwarf_tag(&d) != DW_TAG_array_type) {
		Dwarf_Word sz;
		if (dwarf_aggregate_size(&d, &sz) != 0)
			return -1;
		*out = (long long)sz;
		return 0;
	}
	Dwarf_Attribute a;
	long long n = 1, elem;
	Dwarf_Die el, c;
	if (dwarf_attr(&d, DW_AT_byte_size, &a) && attr_number(&a, out) == 0)
		return 0;
	if (die_type(&d, &el) < 0 || type_size(b, &el, &elem) < 0)
		return -1;
	if (dwarf_attr(&d, DW_AT_byte_stride, &a))
		attr_number(&a, &elem);
	if (dwarf_child(&d, &c) == 0) {
		do {
			if (dwarf_tag(&c) == DW_TAG_subrange_type) {
				long long cnt = subrange_count(&c);
				n *= cnt > 0 ? cnt : 0;
			}
		} while (dwarf_siblingof(&c, &c) == 0);
	}
	*out = n * elem;
	return 0;
}

/* Walk a member path ("a.b[2].c") from struct/union TYPE.  Returns 1 with
 * *out = byte offset, 0 when the path names nothing (with a message unless
 * QUIET), -1 on a malformed path or unreadable DWARF. */
static int walk_path(struct dw_bin *b, Dwarf_Die *type, const char *desc,
		     const char *path, int quiet, long long *out)
{
	Dwarf_Die cur = *type;		/* the current struct/union or array */
	long long off = 0;
	const char *p = path;
	char name[256];
	/* For arrays: the dimensions of cur not yet indexed. */
	Dwarf_Die dims[16];
	int ndims = 0, dim = 0;
	long long elem_size = 0;
	int bitfield = 0;
#define MISSING(...) do { if (!quiet) error(__VA_ARGS__); return 0; } while (0)
	if (!*p)
		return error("empty member name for %s", desc);
	for (;;) {
		/* ".NAME" (the first one without the dot) */
		const char *start = p;
		while (ident_char((unsigned char)*p, p == start))
			p++;
		size_t len = (size_t)(p - start);
		if (!len || len >= sizeof(name))
			return error("invalid member path '%s' for %s", path,
				     desc);
		memcpy(name, start, len);
		name[len] = '\0';
		int prefix = (int)(start - path) - (start > path);
		if (bitfield || ndims || !is_aggregate(&cur))
			MISSING("member '%.*s' of %s is not a struct or union "
				"(looking up '%s') (in '%s')", prefix, path,
				desc, name, b->path);
		Dwarf_Die m;
		long long moff;
		int r = find_member(b, &cur, name, &m, &moff);
		if (r < 0)
			return -1;
		if (!r) {
			if (start == path)
				MISSING("no member '%s' in %s (in '%s')", name,
					desc, b->path);
			MISSING("no member '%s' in '%.*s' of %s (in '%s')",
				name, prefix, path, desc, b->path);
		}
		off += moff;
		bitfield = dwarf_hasattr(&m, DW_AT_bit_size);
		if (die_type(&m, &cur) < 0 || peel(b, &cur) != P_COMPLETE)
			cur = m;	/* void or opaque: no further walk */
		ndims = 0;
		/* "[N]"... */
		while (*p == '[') {
			char *end;
			errno = 0;
			long long idx = strtoll(p + 1, &end, 0);
			if (end == p + 1 || *end != ']' || errno || idx < 0)
				return error("invalid array index in '%s' for "
					     "%s", path, desc);
			if (!ndims || dim == ndims) {
				if (ndims) {	/* array of arrays via typedef */
					Dwarf_Die el;
					if (die_type(&cur, &el) < 0 ||
					    peel(b, &el) != P_COMPLETE)
						return error("cannot read "
							"array '%.*s' of %s "
							"(in '%s')",
							(int)(p - path), path,
							desc, b->path);
					cur = el;
				}
				if (dwarf_tag(&cur) != DW_TAG_array_type)
					MISSING("member '%.*s' of %s is not an array "
						"(in '%s')", (int)(p - path),
						path, desc, b->path);
				ndims = 0;
				dim = 0;
				Dwarf_Die c;
				if (dwarf_child(&cur, &c) == 0) {
					do {
						if (dwarf_tag(&c) ==
						    DW_TAG_subrange_type &&
						    ndims < 16)
							dims[ndims++] = c;
					} while (dwarf_siblingof(&c, &c) == 0);
				}
				Dwarf_Die el;
				if (!ndims || die_type(&cur, &el) < 0 ||
				    type_size(b, &el, &elem_size) < 0)
					return error("cannot read array '%.*s' "
						     "of %s (in '%s')",
						     (int)(p - path), path,
						     desc, b->path);
				Dwarf_Attribute a;
				long long stride;
				if (dwarf_attr(&cur, DW_AT_byte_stride, &a) &&
				    attr_number(&a, &stride) == 0)
					elem_size = stride;
			}
			long long n = subrange_count(&dims[dim]);
			if (n > 1 && idx >= n)
				MISSING("index %lld out of range for '%.*s' "
					"of %s (%lld elements) (in '%s')", idx,
					(int)(p - path), path, desc, n,
					b->path);
			long long stride = elem_size;
			for (int j = dim + 1; j < ndims; j++) {
				long long c = subrange_count(&dims[j]);
				stride *= c > 0 ? c : 0;
			}
			if (stride && idx > (LLONG_MAX - off) / stride)
				return error("index %lld too large for '%.*s' "
					     "of %s", idx, (int)(p - path),
					     path, desc);
			off += idx * stride;
			dim++;
			p = end + 1;
		}
		if (ndims && dim == ndims) {	/* fully indexed: element */
			Dwarf_Die el;
			if (die_type(&cur, &el) == 0 &&
			    peel(b, &el) == P_COMPLETE)
				cur = el;
			ndims = 0;
		}
		if (!*p)
			break;
		if (*p != '.')
			return error("invalid member path '%s' for %s", path,
				     desc);
		p++;
	}
#undef MISSING
	if (bitfield)
		return 2;
	*out = off;
	return 1;
}

/* Describe a type found for TYPENAME: a typedef to a struct of the same
 * name reads "struct 'lua_State'". */
static void describe(struct tyname *t, Dwarf_Die *die)
{
	if (t->kind != K_NAME)
		return;
	const char *tag = NULL;
	switch (dwarf_tag(die)) {
	case DW_TAG_structure_type: tag = "struct"; break;
	case DW_TAG_class_type: tag = "class"; break;
	case DW_TAG_union_type: tag = "union"; break;
	case DW_TAG_enumeration_type: tag = "enum"; break;
	}
	const char *n = dwarf_diename(die);
	if (tag && n && !strcmp(n, t->name))
		snprintf(t->desc, sizeof(t->desc), "%s '%s'", tag, n);
}

/* ------------------------------------------------------------------ */
/* The queries */

int dw_sizeof(struct dw_set *set, const char *type, const char *module,
	      long long *out)
{
	struct tyname t;
	struct dw_bin *b;
	Dwarf_Die die;
	if (find_type(set, type, module, &t, &b, &die, 0) != 1)
		return -1;
	if (type_size(b, &die, out) < 0)
		return error("%s has no size (in '%s')", t.desc, b->path);
	return 0;
}

static int offsetof_common(struct dw_set *set, const char *type,
			   const char *member, const char *module,
			   long long *out, int quiet)
{
	struct tyname t;
	struct dw_bin *b;
	Dwarf_Die die;
	if (find_type(set, type, module, &t, &b, &die, 0) != 1)
		return -1;
	describe(&t, &die);
	if (!is_aggregate(&die))
		return error("%s is not a struct or union (in '%s')", t.desc,
			     b->path);
	/* Blanks around punctuation are insignificant: "a . b[ 2 ]" is
	 * "a.b[2]"; "a b" stays invalid. */
	char *path = xmalloc(strlen(member) + 2), *q = path;
	int blank = 0;
	for (const char *p = member; *p; p++) {
		if (*p == ' ' || *p == '\t' || *p == '\n') {
			blank = 1;
			continue;
		}
		if (blank && q > path && ident_char((unsigned char)q[-1], 0) &&
		    ident_char((unsigned char)*p, 0))
			*q++ = ' ';	/* walk_path rejects it */
		blank = 0;
		*q++ = *p;
	}
	*q = '\0';
	int r = walk_path(b, &die, t.desc, path, quiet, out);
	if (r == 2 && !quiet)
		r = error("member '%s' of %s is a bit-field: it has no byte "
			  "offset (in '%s')", path, t.desc, b->path);
	free(path);
	return r;
}

int dw_offsetof(struct dw_set *set, const char *type, const char *member,
		const char *module, long long *out)
{
	return offsetof_common(set, type, member, module, out, 0) == 1 ? 0 : -1;
}

int dw_has_member(struct dw_set *set, const char *type, const char *member,
		  const char *module, int *out)
{
	long long off;
	int r = offsetof_common(set, type, member, module, &off, 1);
	if (r < 0)
		return -1;
	*out = r > 0;
	return 0;
}

int dw_has_type(struct dw_set *set, const char *type, const char *module,
		int *out)
{
	struct tyname t;
	struct dw_bin *b;
	Dwarf_Die die;
	int r = find_type(set, type, module, &t, &b, &die, 1);
	if (r < 0)
		return -1;
	if (r == 0)
		set->type_misses++;
	*out = r;
	return 0;
}

static int check_ident(const char *s, const char *what)
{
	int ok = ident_char((unsigned char)*s, 1);
	for (const char *p = s; ok && *p; p++)
		ok = ident_char((unsigned char)*p, 0);
	return ok ? 0 : error("invalid %s name '%s'", what, s);
}

/* Value of enumerator DIE of enumeration type PARENT.  DW_FORM_dataN
 * constants have no sign of their own: they are sign-extended when the
 * enum's underlying type (DW_AT_type) is signed; without one (strict
 * DWARF 2/3) they are unsigned, as GCC writes negative values as sdata. */
static int enumerator_value(struct dw_bin *b, Dwarf_Die *die,
			    Dwarf_Die *parent, long long *out)
{
	Dwarf_Attribute a;
	if (!dwarf_attr(die, DW_AT_const_value, &a) || attr_number(&a, out) < 0)
		return error("cannot read the value of enumerator '%s' "
			     "(in '%s')", dwarf_diename(die), b->path);
	int bytes;
	switch (dwarf_whatform(&a)) {
	case DW_FORM_data1: bytes = 1; break;
	case DW_FORM_data2: bytes = 2; break;
	case DW_FORM_data4: bytes = 4; break;
	default: return 0;
	}
	Dwarf_Die ut;
	Dwarf_Attribute enc;
	Dwarf_Word e;
	if (die_type(parent, &ut) == 0 && peel(b, &ut) == P_COMPLETE &&
	    dwarf_attr(&ut, DW_AT_encoding, &enc) &&
	    dwarf_formudata(&enc, &e) == 0 &&
	    (e == DW_ATE_signed || e == DW_ATE_signed_char)) {
		int shift = 64 - 8 * bytes;
		*out = (long long)((unsigned long long)*out << shift) >> shift;
	}
	return 0;
}

int dw_enum(struct dw_set *set, const char *name, const char *module,
	    long long *out)
{
	if (check_ident(name, "enumerator") < 0)
		return -1;
	struct search s;
	struct dw_bin *b;
	int err, ret;
	search_init(&s, set, module);
	while ((b = search_next(&s, &err))) {
		struct entry *e = lookup(b, K_ENUMERATOR, name);
		if (e) {
			ret = enumerator_value(b, &e->die, &e->parent, out);
			search_done(&s);
			return ret;
		}
	}
	char *what = xasprintf("enumerator '%s'", name);
	ret = err < 0 ? -1 : search_fail(&s, what, NULL);
	free(what);
	search_done(&s);
	return ret;
}

int dw_find_var(struct dw_set *set, const char *sym, const char *module,
		const char **module_out, const char **cu_out)
{
	if (check_ident(sym, "variable") < 0)
		return -1;
	struct search s;
	struct dw_bin *b;
	struct entry *local = NULL;
	struct dw_bin *local_bin = NULL;
	int err, ret;
	search_init(&s, set, module);
	while ((b = search_next(&s, &err))) {
		struct entry *e = lookup(b, K_VAR, sym);
		if (!e && !local && (e = lookup(b, K_STATIC_VAR, sym))) {
			local = e;	/* an external one later wins */
			local_bin = b;
			continue;
		}
		if (e) {
			local = e;
			local_bin = b;
			break;
		}
	}
	if (local) {
		*module_out = local_bin->path;
		*cu_out = local->cu_name;
		if (local->more) {
			warning("'%s' is file-local (static) in %d compile "
				"units of '%s'; using the one in '%s'", sym,
				local->more + 1, local_bin->path,
				local->cu_name);
			hint("to pick another, write @var(\"%s@CU\", "
			     "\"MODULE\")", sym);
		}
		search_done(&s);
		return 0;
	}
	char *what = xasprintf("variable '%s'", sym);
	ret = err < 0 ? -1 : search_fail(&s, what, NULL);
	free(what);
	search_done(&s);
	return ret;
}
