/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/member.c - member paths ("a.b[2].c") in a struct or union: their
 * byte offsets.  See dwarf/member.h.
 */
#include "dwarf/member.h"
#include "base/error.h"
#include "base/wrapper.h"
#include "dwarf/type.h"

#include <dwarf.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

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

int member_path_offset(struct dw_bin *b, Dwarf_Die *type, const char *desc,
		       const char *member, int quiet, long long *out)
{
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
	int r = walk_path(b, type, desc, path, quiet, out);
	if (r == 2 && !quiet)
		r = error("member '%s' of %s is a bit-field: it has no byte "
			  "offset (in '%s')", path, desc, b->path);
	free(path);
	return r;
}
