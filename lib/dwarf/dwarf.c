/* SPDX-License-Identifier: GPL-2.0-or-later */
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
 *
 * This file holds the queries; the machinery is in pairs named for it:
 * dwarf_index (the set of binaries and each one's index), dwarf_open
 * (opening, debug-info hints), dwarf_search (searching the set), dwarf_type
 * (type names, peeling, sizes) and dwarf_member (member paths).
 */
#include "dwarf/dwarf.h"
#include "base/error.h"
#include "base/wrapper.h"
#include "dwarf/index.h"
#include "dwarf/member.h"
#include "dwarf/search.h"
#include "dwarf/type.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>

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
	describe_type(&t, &die);
	if (!is_aggregate(&die))
		return error("%s is not a struct or union (in '%s')", t.desc,
			     b->path);
	return member_path_offset(b, &die, t.desc, member, quiet, out);
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
		struct entry *e = index_lookup(b, K_ENUMERATOR, name);
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
		struct entry *e = index_lookup(b, K_VAR, sym);
		if (!e && !local && (e = index_lookup(b, K_STATIC_VAR, sym))) {
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
	if (err >= 0 && s.n_searched) {
		/* DWARF was read and no binary defines a global SYM: not
		 * ours to resolve (a parameter or local of a probed
		 * function, for stap). */
		search_done(&s);
		return 1;
	}
	char *what = xasprintf("variable '%s'", sym);
	ret = err < 0 ? -1 : search_fail(&s, what, NULL);
	free(what);
	search_done(&s);
	return ret;
}

/* Does DIE (a subprogram or lexical block) own a parameter or variable
 * named SYM, at any block depth (bounded)? */
static int die_has_local(Dwarf_Die *die, const char *sym, int depth)
{
	Dwarf_Die child;
	if (depth > 32 || dwarf_child(die, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);
		const char *name = dwarf_diename(&child);
		if ((tag == DW_TAG_formal_parameter || tag == DW_TAG_variable) &&
		    name && strcmp(name, sym) == 0)
			return 1;
		if (tag == DW_TAG_lexical_block &&
		    die_has_local(&child, sym, depth + 1))
			return 1;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

struct local_query {
	const char *func, *sym;
	int found;
};

static int func_cb(Dwarf_Die *die, void *arg)
{
	struct local_query *q = arg;
	const char *name = dwarf_diename(die);
	if (name && strcmp(name, q->func) == 0 && !is_declaration(die) &&
	    die_has_local(die, q->sym, 0)) {
		q->found = 1;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

int dw_func_has_local(struct dw_set *set, const char *func, const char *sym)
{
	struct local_query q = { func, sym, 0 };
	struct search s;
	struct dw_bin *b;
	int err;
	search_init(&s, set, NULL);
	while (!q.found && (b = search_next(&s, &err))) {
		Dwarf_CU *cu = NULL, *next;
		Dwarf_Half version;
		uint8_t unit_type;
		Dwarf_Die cudie, subdie;
		while (!q.found &&
		       dwarf_get_units(b->dw, cu, &next, &version, &unit_type,
				       &cudie, &subdie) == 0) {
			cu = next;
			Dwarf_Die *top = &cudie;
			if (unit_type == DW_UT_skeleton &&
			    dwarf_tag(&subdie) == DW_TAG_compile_unit)
				top = &subdie;
			if (dwarf_tag(top) == DW_TAG_compile_unit)
				dwarf_getfuncs(top, func_cb, &q, 0);
		}
	}
	search_done(&s);
	return q.found;
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
