/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/ldb.h - private to lib/dwarf/: the layout database (layouts/,
 * format in layouts/README.md) and the recorder that captures its entries.
 *
 * Queries are keyed by their macro form, as scripts ask them:
 * "sizeof(GCproto)", "offsetof(lua_State, glref)", "has_member(TValue,
 * it64)", "has_type(lua_State)", "enum(FRAME_LUA)", "var(lj_bc_mode)",
 * "local(FUNC, SYM)", "table_u16(lj_bc_mode)".
 *
 * The database is used for a set only when no binary of it has lua_State
 * in its DWARF and one of its binaries is identified (dwarf/ident.h) as
 * the LuaJIT of an entry.  A LuaJIT that no entry matches is refused
 * once, with the error and hints; queries then fail without more output.
 */
#ifndef STAPXX_DWARF_LDB_H
#define STAPXX_DWARF_LDB_H

#include "dwarf/index.h"

/* The answer to KEY from the database.  1: answered (*out, or *str
 * pointing into the set); 0: not the database's to answer (debug info
 * is there, no LuaJIT, MODULE is another binary, or the entry does not
 * have KEY); -1: the LuaJIT was refused (already said). */
int ldb_number(struct dw_set *set, const char *module, const char *key,
	       long long *out);
int ldb_string(struct dw_set *set, const char *module, const char *key,
	       const char **str);

/* After a DWARF query for KEY failed: a hint when the set's LuaJIT came
 * from an entry that lacks KEY. */
void ldb_hint_missing(struct dw_set *set, const char *key);

/* Is the set answered by an entry (identification done, not refused)?
 * Then *lj is its LuaJIT binary. */
int ldb_active(struct dw_set *set, struct dw_bin **lj);

/* A binary of the set without DWARF that exports nginx's ngx_cycle
 * (nginx's own types are not in the database), or NULL. */
struct dw_bin *ldb_nodebug_nginx(struct dw_set *set);

/* Record that KEY = VALUE, answered by binary FROM (NULL: nowhere, a
 * negative answer), if the set records (STAPXX_LAYOUT_RECORD). */
void rec_add(struct dw_set *set, struct dw_bin *from, const char *key,
	     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Start recording if STAPXX_LAYOUT_RECORD names a file (dw_set_new). */
void rec_init(struct dw_set *set);

/* Append what was recorded to the file, free the database state
 * (dw_set_free). */
void ldb_free(struct dw_set *set);

#endif
