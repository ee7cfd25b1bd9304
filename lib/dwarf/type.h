/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/type.h - private to lib/dwarf/: type names as scripts write them,
 * finding a type in the set, peeling typedefs and qualifiers, sizes.
 */
#ifndef STAPXX_DWARF_TYPE_H
#define STAPXX_DWARF_TYPE_H

#include "dwarf/index.h"

struct tyname {
	enum kind kind;		/* K_STRUCT, K_UNION, K_ENUM or K_NAME */
	char name[256];
	char desc[300];		/* "struct 'X'", "type 'X'" for messages */
};

/* Parse type name S into *T; 0, or -1 after error() if malformed. */
int parse_type(const char *s, struct tyname *t);

/* Can C be in an identifier (FIRST: as its first character)? */
int ident_char(int c, int first);

/* *out = the DIE DW_AT_type of DIE refers to; 0, or -1 if it has none
 * (void). */
int die_type(Dwarf_Die *die, Dwarf_Die *out);

enum peeled { P_VOID, P_COMPLETE, P_DECLARATION };

/* Peel typedefs and qualifiers off *DIE; a declaration of a named
 * struct/union/enum is replaced by its definition elsewhere in B. */
enum peeled peel(struct dw_bin *b, Dwarf_Die *die);

/* Find TYPE (parsed into *T) in the set or in MODULE; on success *bin_out
 * and *die (peeled) are set and 1 is returned.  If QUIET, a missing type
 * returns 0 without a message (still -1 when nothing could be searched).
 * Other failures: -1 after error(). */
int find_type(struct dw_set *set, const char *type, const char *module,
	      struct tyname *t, struct dw_bin **bin_out, Dwarf_Die *die,
	      int quiet);

/* A typedef T names that resolves to a struct/union/enum DIE of the same
 * name is described as that ("struct 'lua_State'") in t->desc. */
void describe_type(struct tyname *t, Dwarf_Die *die);

/* Is D a struct, class or union? */
int is_aggregate(Dwarf_Die *d);

/* *out = the constant in attribute A (data1..8, udata, sdata,
 * implicit_const); 0, or -1 for other forms. */
int attr_number(Dwarf_Attribute *a, long long *out);

/* Number of elements of subrange SR, or -1 if unknown (flexible). */
long long subrange_count(Dwarf_Die *sr);

/* *out = byte size of type DIE (like dwarf_aggregate_size(), but through
 * declarations and type-unit stubs at every level); 0, or -1 if it has
 * none.  No message. */
int type_size(struct dw_bin *b, Dwarf_Die *die, long long *out);

#endif
