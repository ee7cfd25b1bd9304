/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * driver/symbols.h - names for every function of a stripped file, for stap.
 *
 * stap names an address by the closest symbol before it.  In a file
 * without a symbol table (.symtab), such as a stripped library or a stock
 * executable, a function that .dynsym does not export (a static one, or
 * libc's memset variants) then gets the name of an exported function
 * before it: a wrong frame.  So the driver gives stap, in its sysroot, a
 * copy of each such file (same build-id: stap's probes still land in the
 * target's own file) whose symbol table names every function: the
 * exported symbols, and each function of .eh_frame_hdr's table (which
 * stripping keeps) that no exported symbol starts, as "FILE+0xADDR": its
 * address in the file, named as the eBPF backend names it
 * (bpf/symtab.h).  The target is not touched.
 */
#ifndef STAPXX_DRIVER_SYMBOLS_H
#define STAPXX_DRIVER_SYMBOLS_H

/* One more symbol for a copy: a function named NAME at file address
 * VADDR (LuaJIT's allocator, driver/allocf.h). */
struct symbols_extra {
	const char *name;
	unsigned long long vaddr;
};

/*
 * symbols_needed - whether stap would name the functions of the ELF file
 * PATH wrongly: it has no symbol table, nor does the debug file that
 * libdwfl's standard lookup finds for it.  1 or 0 (0 as well when PATH
 * cannot be read: stap then says so itself).
 */
int symbols_needed(const char *path);

/*
 * symbols_write - rewrites COPY, a copy of the file SHOWN as this process
 * reads it (the target's file; its real path's last component names the
 * functions without a symbol, as the target's maps show it), with
 * objcopy: with FUNCS, the symbol table described above (when COPY has
 * no .symtab); with EXTRA (not NULL), one more function symbol.  Returns
 * 0, or -1 after error() (objcopy missing or failing, no code section at
 * EXTRA's address).
 */
int symbols_write(const char *copy, const char *shown, int funcs,
		  const struct symbols_extra *extra);

#endif
