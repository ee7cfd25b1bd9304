/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/ident.h - private to lib/dwarf/: what identifies the LuaJIT in a
 * binary that may have no symbols and no DWARF, read from the ELF file
 * alone (libelf): what a stripped binary keeps.
 *
 *  - the version string in its read-only data ("LuaJIT 2.1.0-beta3",
 *    "LuaJIT 2.1.1710398010"), a NUL-terminated string of its own;
 *  - its exported LuaJIT API (dynsym names starting lua_, luaL_, luaJIT_,
 *    luaopen_): their number and a hash of the sorted names;
 *  - the interpreter: the code of every function that .eh_frame_hdr lists
 *    (that table survives strip --strip-all) can be hashed.  The
 *    interpreter is one block of DynASM-generated machine code with an
 *    FDE of its own; its bytes do not depend on the C compiler or its -O
 *    level, except the displacements of calls and jumps to C functions.
 *    The hash masks the 4 bytes after every 0xe8/0xe9 byte, so two builds
 *    of the same source and flags hash alike; a change in the layouts the
 *    interpreter uses (GG_State, global_State, lua_State, TValue: GC64)
 *    changes its code.
 */
#ifndef STAPXX_DWARF_IDENT_H
#define STAPXX_DWARF_IDENT_H

#include <stddef.h>

#define IDENT_HEAD 8	/* bytes of a function's start kept for matching */

struct ident_fn {
	unsigned long long addr, len;	/* link-time address and size */
	unsigned char head[IDENT_HEAD];	/* first bytes (0 past the end) */
	unsigned long long hash;	/* masked hash, 0 until asked */
};

struct ident {
	char version[80];	/* "" when none was found */
	int nexports;		/* 0: no LuaJIT API exported */
	int ngx_cycle;		/* exports nginx's ngx_cycle */
	int is_exec;		/* has PT_INTERP: an executable */
	unsigned long long exports_hash;
	char build_id[2 * 64 + 1];	/* hex, "" when none */
	struct ident_fn *fns;	/* the functions .eh_frame_hdr lists */
	size_t nfns;
	unsigned long long vm_addr;	/* symtab's lj_vm_asm_begin, or 0 */
	const unsigned char *image;	/* the mapped file */
	size_t size;
	void *elf;		/* Elf *, kept open for image */
	int fd;
};

/* Read PATH into *ID.  0, or -1 (not an ELF file, unreadable): no
 * message.  Free with ident_free(). */
int ident_read(const char *path, struct ident *id);
void ident_free(struct ident *id);

/* Does ID look like a LuaJIT (a version string or the LuaJIT API)? */
int ident_is_luajit(const struct ident *id);

/* The masked hash of function F of ID (computed once). */
unsigned long long ident_fn_hash(struct ident *id, struct ident_fn *f);

/* The code of function F of ID (f->len bytes, in ID's image: valid until
 * ident_free()), or NULL when the file does not hold it all. */
const unsigned char *ident_fn_bytes(struct ident *id, const struct ident_fn *f);

/* The function of ID starting at ADDR, or NULL. */
struct ident_fn *ident_fn_at(struct ident *id, unsigned long long addr);

#endif
