/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/type.c - type names, finding and peeling types, sizes.  See
 * dwarf/type.h.
 */
#include "dwarf/type.h"
#include "base/error.h"
#include "base/wrapper.h"
#include "dwarf/names.h"
#include "dwarf/search.h"

#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Type names */
int ident_char(int c, int first)
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

int parse_type(const char *s, struct tyname *t)
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

int die_type(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(die, DW_AT_type, &a) &&
	       dwarf_formref_die(&a, out) ? 0 : -1;
}


/* Peel typedefs and qualifiers off *DIE; a declaration of a named
 * struct/union/enum is replaced by its definition elsewhere in B. */
enum peeled peel(struct dw_bin *b, Dwarf_Die *die)
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
		struct entry *e = name ? index_lookup(b, kind, name) : NULL;
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
int find_type(struct dw_set *set, const char *type, const char *module,
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
	search_key(&s, KIND_BIT(t->kind), t->name);
	while ((b = search_next(&s, &err))) {
		struct entry *e = index_lookup(b, t->kind, t->name);
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

int attr_number(Dwarf_Attribute *a, long long *out)
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

int is_aggregate(Dwarf_Die *d)
{
	int tag = dwarf_tag(d);
	return tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
	       tag == DW_TAG_class_type;
}

/* Number of elements of subrange SR, or -1 if unknown (flexible). */
long long subrange_count(Dwarf_Die *sr)
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
int type_size(struct dw_bin *b, Dwarf_Die *die, long long *out)
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

/* Describe a type found for TYPENAME: a typedef to a struct of the same
 * name reads "struct 'lua_State'". */
void describe_type(struct tyname *t, Dwarf_Die *die)
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
