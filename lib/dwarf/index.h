/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/index.h - private to lib/dwarf/: the set of binaries and each
 * binary's index of top-level DIEs.  Other callers use dwarf.h.
 *
 * A dw_set holds dw_bins in search order.  A dw_bin is opened and indexed
 * once (dwarf/open.h); its index hashes (kind, name) to the first DIE of
 * that kind and name in DWARF order.  Names and DIEs point into the
 * binary's DWARF, which stays open until dw_set_free().
 */
#ifndef STAPXX_DWARF_INDEX_H
#define STAPXX_DWARF_INDEX_H

#include <stddef.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "dwarf/dwarf.h"

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
	char *build_id;		/* hex, NULL if none (dwarf/names.h) */
	int id_read;		/* build_id and own_dwarf were read */
	int own_dwarf;		/* the file has a .debug_info section */
	char *dwarf_file;	/* B_READY: the separate file its DWARF came
				   from, NULL when from the binary itself */
	struct nameset *names;	/* its names, from the names cache, or NULL */
	int names_tried;	/* the names cache was asked: 1, or -1 (a bad file) */
};

struct dw_set {
	struct dw_bin **bins;
	size_t n, alloc;
	int type_misses;	/* @has_type answers 0 so far */
	struct ldb *ldb;	/* the layout database's state (ldb.h) */
	struct rec *rec;	/* what is recorded, or NULL (ldb.h) */
};

/* The binary PATH of the set (compared as given, then by realpath()),
 * appended (not opened yet) if new.  Owned by the set. */
struct dw_bin *set_get(struct dw_set *set, const char *path);

/* The entry (KIND, NAME) of B's index, or NULL. */
struct entry *index_lookup(struct dw_bin *b, enum kind kind,
			   const char *name);

/* Index every top-level DIE of every unit of DW into B (the first of a
 * kind and name wins; later calls add to the index). */
void index_dwarf(struct dw_bin *b, Dwarf *dw);

/* Does DIE have DW_AT_declaration set? */
int is_declaration(Dwarf_Die *die);

/* *kind = the index kind of a struct/class, union or enum DIE tag and 0;
 * -1 if TAG is none of them. */
int tag_kind(int tag, enum kind *kind);

#endif
