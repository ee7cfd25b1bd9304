/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/index.c - the set of binaries and the per-binary index.  See
 * dwarf/index.h.
 */
#include "dwarf/index.h"
#include "base/hash.h"
#include "base/wrapper.h"
#include "dwarf/ldb.h"
#include "dwarf/names.h"

#include <dwarf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* The set */

struct dw_set *dw_set_new(void)
{
	struct dw_set *set = xcalloc(1, sizeof(struct dw_set));
	rec_init(set);
	return set;
}

void dw_set_free(struct dw_set *set)
{
	if (!set)
		return;
	ldb_free(set);
	for (size_t i = 0; i < set->n; i++) {
		struct dw_bin *b = set->bins[i];
		if (b->dwfl)
			dwfl_end(b->dwfl);
		free(b->tab);
		names_free(b);
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
struct dw_bin *set_get(struct dw_set *set, const char *path)
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
	return fnv1a_str(FNV1A_INIT ^ (uint64_t)kind, name);
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

struct entry *index_lookup(struct dw_bin *b, enum kind kind,
			   const char *name)
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

int is_declaration(Dwarf_Die *die)
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
	else if (!ext && (e = index_lookup(b, K_STATIC_VAR, name)) &&
		 strcmp(e->cu_name, cu_name))
		e->more++;	/* "static int x" in several files */
}

/* The index kind of a struct/class, union or enum DIE tag; -1 if TAG is
 * none of them. */
int tag_kind(int tag, enum kind *kind)
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

void index_dwarf(struct dw_bin *b, Dwarf *dw)
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
