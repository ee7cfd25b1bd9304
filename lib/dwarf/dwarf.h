/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf.h - type layouts and symbols from the target binaries' DWARF (libdw).
 *
 * A dw_set is an ordered list of binaries (the executable first, then its
 * shared libraries in load order).  Each is opened lazily, once, with libdwfl
 * and dwfl_standard_find_debuginfo (build-id, .gnu_debuglink, /usr/lib/debug)
 * and stays open until dw_set_free(), so strings that point into DWARF stay
 * valid for the set's lifetime.
 *
 * On first use a binary is indexed once: the top-level DIEs of every unit
 * (and of a dwz alternate file, type units and split-DWARF units) are
 * hashed by name, so each query is a hash look-up plus a walk of one type.
 * Types and variables declared inside functions are not indexed.
 *
 * TYPE strings are "struct X", "union X", "enum X" or a typedef or base
 * type name; "const"/"volatile" words are ignored and integer names are
 * spelled as GCC's DWARF does ("unsigned long" finds "long unsigned int").
 * Pointer types are rejected.  Typedefs and const/volatile are peeled.
 * Declarations are skipped: a complete definition wins (a typedef to a
 * declared struct resolves to the struct's definition in another unit of
 * the same binary).  MODULE is a path that must be one of the set's
 * binaries (or is added to it; compared as given and by realpath()); NULL
 * means: search the set in order and use the first binary that has a
 * complete definition.  Within one binary the first definition in DWARF
 * order wins.
 *
 * MEMBER paths are "a", "a.b.c" or "arr[3].x" (also "grid[1][2]" and
 * arrays of array typedefs); members of anonymous structs/unions are found
 * through them.  An index is checked against the array's size unless the
 * array has 0 or 1 elements or no size (trailing flexible arrays).
 * Bit-fields exist for dw_has_member() but have no byte offset:
 * dw_offsetof() on one is an error.
 *
 * Every query returns 0 on success and -1 on failure, after printing the
 * reason through error() (so a location set with error_set_location()
 * prefixes it), e.g.
 *     error: no member 'x' in struct 'lua_State' (in '/path/libluajit-5.1.so.2')
 *     error: cannot find struct 'lua_State' in '/usr/bin/luajit'
 *     error: cannot find struct 'nope' in '/a', '/b'   (several searched)
 *     error: no debug info in '/usr/sbin/nginx'  + hint: lines (dbgsym
 *            package / -g, the build-id path and .gnu_debuglink file
 *            looked for; printed once per binary)
 *     error: cannot open '/x': No such file or directory
 *     error: '/x' is not an ELF file
 * When searching the set (MODULE NULL), binaries without debug info are
 * skipped and named in a hint if the search fails; unreadable ones get a
 * warning (once) and are skipped.  Naming such a binary as MODULE is an
 * error.
 *
 * No debug info: when no binary of the set has lua_State in its DWARF but
 * one is identified as a LuaJIT (version string, exported API, the
 * interpreter's code: dwarf/ident.h), the queries are answered from the
 * matching entry of the layout database (layouts/, layouts/README.md),
 * with "stap++: using layout 'X' for 'PATH' (no debug info)" once per
 * set.  A LuaJIT that no entry matches is refused once with an error
 * naming its version string, GC64 mode and build-id and hints (how to
 * capture an entry); every query of the set that DWARF cannot answer then
 * fails without more output.  The database answers only what its entry
 * recorded (LuaJIT's types); nginx's own types still need nginx's DWARF.
 *
 * Recording: with STAPXX_LAYOUT_RECORD=FILE in the environment, each set
 * appends to FILE, when freed, every answer that its LuaJIT binary's
 * DWARF gave (and the negative ones) as "KEY = VALUE" lines, with the
 * binary's identification lines: dev/capture-layout sorts them into an
 * entry.
 */
#ifndef STAPXX_DWARF_H
#define STAPXX_DWARF_H

#include <stddef.h>

struct dw_set;

/* New empty set; never NULL (dies on OOM).  Free with dw_set_free(). */
struct dw_set *dw_set_new(void);
void dw_set_free(struct dw_set *set);

/* Append binary PATH (copied) to the search order; duplicates are ignored.
 * Does not open it yet.  Returns 0. */
int dw_set_add(struct dw_set *set, const char *path);

/* Also look for separate debug files (by build-id and .gnu_debuglink)
 * under ROOT/usr/lib/debug, after the standard places: ROOT is a target's
 * /proc/PID/root, a container whose image holds its debug files.  Call
 * it before any binary is opened; the last call wins. */
void dw_debug_root(const char *root);

/*
 * The names cache, kept by the caller (the driver's cache dir): what each
 * binary's DWARF names, by build-id, so that a search for a name a binary
 * does not define passes over it without loading its DWARF (libc's costs
 * about 0.3 s of CPU time, and a luajit CLI target's libc, libm and ld.so
 * were searched for nginx's types in every run).  GET(ID, CTX) returns
 * the path (malloc'd) of the file stored for build-id ID (hex), or NULL;
 * PUT(ID, WRITE, WCTX, REPLACE, CTX) stores one, which WRITE(PATH, WCTX)
 * writes (0, or -1 after error()), replacing the stored one if REPLACE (a
 * file that is not one of ID's names: cut short, or another format).  A binary without a build-id is not cached.
 * The cache only saves time: an answer never depends on it.  C NULL: none
 * (the default).  The last call wins; C is copied.
 */
struct dw_names_cache {
	char *(*get)(const char *id, void *ctx);
	void (*put)(const char *id, int (*write)(const char *path, void *wctx),
		    void *wctx, int replace, void *ctx);
	void *ctx;
};
void dw_names_cache(const struct dw_names_cache *c);

/* @sizeof(TYPE[, MODULE]): byte size of TYPE. */
int dw_sizeof(struct dw_set *set, const char *type, const char *module,
	      long long *out);

/* @offsetof(TYPE, a.b.c[, MODULE]): byte offset of a (nested) member;
 * members of anonymous structs/unions are found through them; array
 * members may be indexed as "a[3].b". */
int dw_offsetof(struct dw_set *set, const char *type, const char *member,
		const char *module, long long *out);

/* @has_member(TYPE, a.b[, MODULE]): *out = 1 or 0.  A missing TYPE (or
 * a malformed path) is an error (-1); a missing member, a path through a
 * non-struct or an out-of-range index is *out = 0. */
int dw_has_member(struct dw_set *set, const char *type, const char *member,
		  const char *module, int *out);

/* @has_type(TYPE[, MODULE]): *out = 1 if a complete definition exists,
 * else 0.  Still an error (-1) if no binary with debug info could be
 * searched: 0 would be a guess. */
int dw_has_type(struct dw_set *set, const char *type, const char *module,
		int *out);

/* @enum(NAME[, MODULE]): value of enumerator NAME (sign-extended unless
 * the enum's underlying type is unsigned). */
int dw_enum(struct dw_set *set, const char *name, const char *module,
	    long long *out);

/* @var("sym") helper: find the binary and compile unit that define global
 * variable SYM (a definition, not a declaration).  On success *module_out
 * and *cu_out point into the set (valid until dw_set_free()); *cu_out is
 * the CU's DW_AT_name as stap expects in "sym@CU".  A definition has
 * DW_AT_location or DW_AT_specification; an external definition anywhere
 * in the set wins over a file-local (static) one.  A static defined in
 * several compile units: the first, with a warning naming it.
 * Returns 0 when found; 1, with nothing printed, when binaries with DWARF
 * were searched and none defines a global SYM (SYM may then be a
 * parameter or local of a probed function: stap resolves it); -1 after
 * error() when nothing could be searched (no debug info, no binary) or
 * SYM is not an identifier. */
int dw_find_var(struct dw_set *set, const char *sym, const char *module,
		const char **module_out, const char **cu_out);

/* @var("sym") helper: does a definition of function FUNC, in a binary of
 * the set with DWARF, have a parameter or local variable SYM (in any of
 * its lexical blocks)?  Then @var("SYM") in a probe on FUNC means that
 * context variable, even where a global SYM exists.  Returns 1 or 0; 0
 * too when no binary can be read (nothing is printed). */
int dw_func_has_local(struct dw_set *set, const char *func, const char *sym);

/* A constant table of unsigned 16-bit values that the walk reads
 * (lj_bc_mode[]): from the ELF file of the binary whose symbols (its own
 * .symtab, or its separate debug file's) define NAME, else from the layout
 * database's entry for the set's LuaJIT (layouts/README.md).  MODULE
 * limits the search to that binary.  On success *vals (malloc'd, the
 * caller frees it) holds *n values in host order; -1 after error(). */
int dw_table_u16(struct dw_set *set, const char *name, const char *module,
		 unsigned short **vals, size_t *n);

/* 1 when the set's LuaJIT was refused (no entry of the layout database
 * describes it; the error was printed), else 0.  Scripts' own errors
 * after that need not be printed: their cause was said. */
int dw_refused(struct dw_set *set);

/* The path of the binary whose LuaJIT layouts come from the layout
 * database (it has no debug info), or NULL when they come from DWARF or
 * nothing was asked yet.  Valid until dw_set_free(). */
const char *dw_database_binary(struct dw_set *set);

/* The interpreter of a LuaJIT the layout database identified. */
struct dw_vm {
	unsigned long long size;	/* length of its code ("id vm") */
	unsigned long long head;	/* its first 8 bytes, little-endian
					   ("id vm-head") */
	unsigned long long exit_lo, exit_hi;	/* lj_vm_exit_interp's window
					   (dwarf/vmexit.h), offsets from
					   its start; both 0 when not found */
};

/* The set's LuaJIT as the layout database identified it, for code that
 * must not rely on its internal symbols (the tapsets on a stripped
 * target): 1 when its layouts come from an entry (it has no debug info):
 * *path is its binary (valid until dw_set_free()), *V its interpreter
 * (read from the binary and the entry); 0 when they come from DWARF or
 * no LuaJIT was found (the outputs are then 0 and NULL); -1 when the
 * LuaJIT was refused (the error was printed).  Identifies the set's
 * LuaJIT if no query did yet. */
int dw_database(struct dw_set *set, const char **path, struct dw_vm *v);

/* The path of an nginx of the set (it exports ngx_cycle) that has no debug
 * info, or NULL.  Its own types and the lua module's are then unknown:
 * the layout database holds LuaJIT's only.  Ask after a query has opened
 * the set's binaries.  Valid until dw_set_free(). */
const char *dw_nodebug_nginx(struct dw_set *set);

/* Whether stap finds names for every function of the ELF file PATH: 1
 * when PATH, or the separate debug file that libdwfl's standard lookup
 * finds for it (build-id, .gnu_debuglink, /usr/lib/debug, debuginfod, as
 * for the set's binaries), has a symbol table (.symtab); 0 when only its
 * exported symbols (.dynsym) would name its code; -1 when it cannot be
 * read as an ELF file (no message). */
int dw_file_has_symtab(const char *path);

/* Hints (hint()) naming the set's binaries without debug info, with the
 * how-to for the first, if a dw_has_type() answered 0 so far: after a
 * script's own error (@error), missing debug info may be why a type was
 * not found.  Nothing when all binaries have debug info. */
void dw_hint_nodebug(struct dw_set *set);

#endif
