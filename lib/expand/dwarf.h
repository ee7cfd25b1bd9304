/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand/dwarf.h - the macros answered from the target's DWARF (through
 * dwarf.h): @sizeof(T[, MOD]), @offsetof(T, a.b[, MOD]),
 * @has_member(T, a[, MOD]), @has_type(T[, MOD]), @enum(NAME[, MOD]) expand
 * to a number; @var("sym") to @var("sym@CU", "MODULE").  The layout
 * database's (dw_database, dw_table_u16): @layout_db(on) 1 or 0,
 * @layout_db(binary) a string, @layout_db(vm_size), @layout_db(vm_head)
 * numbers; @table_u16(NAME) a string of 4 hex digits per value.
 *
 * While scanning (pass 1) and inside a %( %? %: %) branch stap drops
 * (c->dead), nothing is looked up: numbers are 0.  A failed look-up is
 * counted as an error and expands to 0; expansion goes on.
 */
#ifndef STAPXX_EXPAND_DWARF_H
#define STAPXX_EXPAND_DWARF_H

#include "expand/ctx.h"

/* The macro @ID at t[i], its '(' expected at t[open].  Returns the index
 * after it, (size_t)-1 after an error that stops the file, or 0 when @ID
 * is not one of these macros (or a @var form that is stap's own). */
size_t do_dwarf_macro(struct xctx *c, const char *id, size_t i, size_t open,
		      size_t end, struct buf *out);

#endif
