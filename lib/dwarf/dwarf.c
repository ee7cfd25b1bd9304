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
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "dwarf/index.h"
#include "dwarf/ldb.h"
#include "dwarf/member.h"
#include "dwarf/names.h"
#include "dwarf/open.h"
#include "dwarf/search.h"
#include "dwarf/type.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* The queries */

static int sizeof_dwarf(struct dw_set *set, const char *type,
			const char *module, long long *out, struct dw_bin **b)
{
	struct tyname t;
	Dwarf_Die die;
	if (find_type(set, type, module, &t, b, &die, 0) != 1)
		return -1;
	if (type_size(*b, &die, out) < 0)
		return error("%s has no size (in '%s')", t.desc, (*b)->path);
	return 0;
}

/* A query answered by the layout database (R > 0 from ldb_*()), refused
 * (R < 0) or by DWARF (R == 0: DWARF's answer DR, from binary B, is
 * recorded as KEY = *V).  Frees KEY.  0 or -1. */
static int settle(struct dw_set *set, char *key, int r, int dr,
		  struct dw_bin *b, long long v)
{
	if (r == 0 && dr == 0)
		rec_add(set, b, key, "%lld", v);
	else if (r == 0)
		ldb_hint_missing(set, key);
	free(key);
	return r > 0 ? 0 : r < 0 ? -1 : dr;
}

int dw_sizeof(struct dw_set *set, const char *type, const char *module,
	      long long *out)
{
	char *key = xasprintf("sizeof(%s)", type);
	struct dw_bin *b = NULL;
	int r = ldb_number(set, module, key, out), dr = 0;
	if (r == 0)
		dr = sizeof_dwarf(set, type, module, out, &b);
	return settle(set, key, r, dr, b, *out);
}

static int offsetof_common(struct dw_set *set, const char *type,
			   const char *member, const char *module,
			   long long *out, int quiet, struct dw_bin **b)
{
	struct tyname t;
	Dwarf_Die die;
	if (find_type(set, type, module, &t, b, &die, 0) != 1)
		return -1;
	describe_type(&t, &die);
	if (!is_aggregate(&die))
		return error("%s is not a struct or union (in '%s')", t.desc,
			     (*b)->path);
	return member_path_offset(*b, &die, t.desc, member, quiet, out);
}

int dw_offsetof(struct dw_set *set, const char *type, const char *member,
		const char *module, long long *out)
{
	char *key = xasprintf("offsetof(%s, %s)", type, member);
	struct dw_bin *b = NULL;
	int r = ldb_number(set, module, key, out), dr = 0;
	if (r == 0)
		dr = offsetof_common(set, type, member, module, out, 0,
				     &b) == 1 ? 0 : -1;
	return settle(set, key, r, dr, b, *out);
}

int dw_has_member(struct dw_set *set, const char *type, const char *member,
		  const char *module, int *out)
{
	char *key = xasprintf("has_member(%s, %s)", type, member);
	struct dw_bin *b = NULL;
	long long v = 0, off;
	int r = ldb_number(set, module, key, &v), dr = 0;
	if (r == 0) {
		dr = offsetof_common(set, type, member, module, &off, 1, &b);
		v = dr > 0;
		dr = dr < 0 ? -1 : 0;
	}
	*out = (int)v;
	return settle(set, key, r, dr, b, v);
}

/* Is TYPE completely defined in the DWARF of a binary of the set?  No
 * message. */
static int dwarf_defines(struct dw_set *set, const char *type)
{
	struct tyname t;
	if (parse_type(type, &t) < 0)
		return 0;
	for (size_t i = 0; i < set->n; i++) {
		struct dw_bin *b = set->bins[i];
		struct entry *e;
		Dwarf_Die die;
		if (b->state == B_READY &&
		    (e = index_lookup(b, t.kind, t.name))) {
			die = e->die;
			if (peel(b, &die) == P_COMPLETE)
				return 1;
		}
	}
	return 0;
}

/* @has_type answered with the layout database: DWARF first (nginx's
 * types), then the entry. */
static int has_type_db(struct dw_set *set, const char *type,
		       const char *key, long long v, int r, int *out)
{
	struct dw_bin *ngx;
	if (dwarf_defines(set, type)) {
		*out = 1;
		return 0;
	}
	if (r > 0 && v == 1) {
		*out = 1;
		return 0;
	}
	if ((ngx = ldb_nodebug_nginx(set))) {
		error("cannot tell whether type '%s' exists: '%s' has no "
		      "debug info, and the layout database holds LuaJIT's "
		      "layouts only", type, ngx->path);
		hint_debuginfo(ngx);
		return -1;
	}
	if (r == 0) {
		error("cannot find type '%s' in the DWARF of the set or in "
		      "the layout of its LuaJIT", type);
		ldb_hint_missing(set, key);
		return -1;
	}
	*out = 0;
	set->type_misses++;
	return 0;
}

int dw_has_type(struct dw_set *set, const char *type, const char *module,
		int *out)
{
	struct tyname t;
	struct dw_bin *b = NULL;
	Dwarf_Die die;
	char *key = xasprintf("has_type(%s)", type);
	long long v = 0;
	int r = ldb_number(set, module, key, &v);
	if (r >= 0 && !module && ldb_active(set, &b)) {
		r = has_type_db(set, type, key, v, r, out);
		free(key);
		return r;
	}
	if (r != 0) {
		*out = (int)v;
		free(key);
		return r < 0 ? -1 : 0;
	}
	r = find_type(set, type, module, &t, &b, &die, 1);
	if (r < 0) {
		free(key);
		return -1;
	}
	if (r == 0)
		set->type_misses++;
	*out = r;
	return settle(set, key, 0, 0, r ? b : NULL, r);
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

static int enum_dwarf(struct dw_set *set, const char *name,
		      const char *module, long long *out, struct dw_bin **from)
{
	struct search s;
	struct dw_bin *b;
	int err, ret;
	search_init(&s, set, module);
	search_key(&s, KIND_BIT(K_ENUMERATOR), name);
	while ((b = search_next(&s, &err))) {
		struct entry *e = index_lookup(b, K_ENUMERATOR, name);
		if (e) {
			*from = b;
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

int dw_enum(struct dw_set *set, const char *name, const char *module,
	    long long *out)
{
	if (check_ident(name, "enumerator") < 0)
		return -1;
	char *key = xasprintf("enum(%s)", name);
	struct dw_bin *b = NULL;
	int r = ldb_number(set, module, key, out), dr = 0;
	if (r == 0)
		dr = enum_dwarf(set, name, module, out, &b);
	return settle(set, key, r, dr, b, *out);
}

static int find_var_dwarf(struct dw_set *set, const char *sym,
			  const char *module, const char **module_out,
			  const char **cu_out, struct dw_bin **from)
{
	struct search s;
	struct dw_bin *b;
	struct entry *local = NULL;
	struct dw_bin *local_bin = NULL;
	int err, ret;
	search_init(&s, set, module);
	search_key(&s, KIND_BIT(K_VAR) | KIND_BIT(K_STATIC_VAR), sym);
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
		*from = local_bin;
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

int dw_find_var(struct dw_set *set, const char *sym, const char *module,
		const char **module_out, const char **cu_out)
{
	if (check_ident(sym, "variable") < 0)
		return -1;
	char *key = xasprintf("var(%s)", sym);
	struct dw_bin *b = NULL;
	const char *cu;
	int r = ldb_string(set, module, key, &cu);
	if (r > 0 && strcmp(cu, "-") && ldb_active(set, &b)) {
		*module_out = b->path;
		*cu_out = cu;
	}
	if (r != 0) {
		free(key);
		return r < 0 ? -1 : strcmp(cu, "-") ? 0 : 1;
	}
	r = find_var_dwarf(set, sym, module, module_out, cu_out, &b);
	if (r == 0)
		rec_add(set, b, key, "%s", *cu_out);
	else if (r == 1)
		rec_add(set, NULL, key, "-");
	else
		ldb_hint_missing(set, key);
	free(key);
	return r;
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
	char *key = xasprintf("local(%s, %s)", func, sym);
	long long v;
	int r = ldb_number(set, NULL, key, &v);
	free(key);
	if (r != 0)
		return r > 0 && v;
	struct local_query q = { func, sym, 0 };
	struct search s;
	struct dw_bin *b = NULL;
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
	key = xasprintf("local(%s, %s)", func, sym);
	rec_add(set, q.found ? b : NULL, key, "%d", q.found);
	free(key);
	return q.found;
}

void dw_hint_nodebug(struct dw_set *set)
{
	struct search s;
	int err;

	if (!set->type_misses)
		return;
	search_init(&s, set, NULL);
	search_key(&s, NAMES_ALL_KINDS, NULL);	/* (cached: has DWARF) */
	while (search_next(&s, &err))
		;
	search_hint_nodebug(&s);
	search_done(&s);
}

/* Table NAME from B's symbols (its own or its separate debug file's
 * symtab), read from B's ELF file.  1 (*vals, *n set), 0 absent. */
static int elf_table_u16(struct dw_bin *b, const char *name,
			 unsigned short **vals, size_t *n)
{
	Dwarf_Addr bias;
	Elf *elf = b->mod ? dwfl_module_getelf(b->mod, &bias) : NULL;
	int nsym = b->mod ? dwfl_module_getsymtab(b->mod) : -1;
	size_t nph;
	for (int i = 0; elf && i < nsym; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *sn = dwfl_module_getsym_info(b->mod, i, &sym, &addr,
							 NULL, NULL, NULL);
		if (!sn || strcmp(sn, name) || sym.st_size < 2 ||
		    GELF_ST_TYPE(sym.st_info) != STT_OBJECT ||
		    elf_getphdrnum(elf, &nph) != 0)
			continue;
		for (size_t k = 0; k < nph; k++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(elf, (int)k, &ph) ||
			    ph.p_type != PT_LOAD || sym.st_value < ph.p_vaddr ||
			    sym.st_value + sym.st_size >
				    ph.p_vaddr + ph.p_filesz)
				continue;
			Elf_Data *d = elf_getdata_rawchunk(
				elf, (int64_t)(ph.p_offset + sym.st_value -
					       ph.p_vaddr),
				sym.st_size, ELF_T_BYTE);
			if (!d)
				return 0;
			*n = sym.st_size / 2;
			*vals = xcalloc(*n, sizeof(**vals));
			memcpy(*vals, d->d_buf, *n * 2);
			return 1;
		}
	}
	return 0;
}

/* "N V0 V1 ..." into *vals, *n.  0, or -1 if malformed. */
static int parse_table(const char *s, unsigned short **vals, size_t *n)
{
	char *end;
	unsigned long long cnt = strtoull(s, &end, 10);
	if (end == s || cnt == 0 || cnt > 65536)
		return -1;
	*vals = xcalloc(cnt, sizeof(**vals));
	for (size_t i = 0; i < cnt; i++) {
		s = end;
		unsigned long v = strtoul(s, &end, 0);
		if (end == s || v > 0xffff) {
			free(*vals);
			*vals = NULL;
			return -1;
		}
		(*vals)[i] = (unsigned short)v;
	}
	*n = cnt;
	return *end ? -1 : 0;
}

int dw_table_u16(struct dw_set *set, const char *name, const char *module,
		 unsigned short **vals, size_t *n)
{
	char *key = xasprintf("table_u16(%s)", name);
	const char *s;
	int r = 0;
	*vals = NULL;
	*n = 0;
	for (size_t i = 0; i < set->n; i++) {
		struct dw_bin *b = set->bins[i];
		if (module && b != set_get(set, module))
			continue;
		bin_open_elf(b);	/* (symbols: no DWARF needed) */
		if (b->state == B_UNUSABLE || !elf_table_u16(b, name, vals, n))
			continue;
		struct buf v = { 0 };
		buf_addf(&v, "%zu", *n);
		for (size_t k = 0; k < *n; k++)
			buf_addf(&v, " %u", (*vals)[k]);
		rec_add(set, b, key, "%s", v.s);
		buf_free(&v);
		free(key);
		return 0;
	}
	r = ldb_string(set, module, key, &s);
	if (r > 0 && parse_table(s, vals, n) < 0) {
		r = error("malformed table '%s' in the layout database", key);
	} else if (r == 0) {
		r = error("cannot find table '%s' in the symbols of the set "
			  "or in the layout of its LuaJIT", name);
		ldb_hint_missing(set, key);
	}
	free(key);
	return r < 0 ? -1 : 0;
}
