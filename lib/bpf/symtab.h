/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/symtab.h - the native code of a target process: its executable
 * file mappings and the functions in them, from each file's ELF symbols
 * (.symtab, else .dynsym and the FDEs of .eh_frame_hdr), at their
 * run-time addresses; what the kernel's syms map and the stack texts'
 * C frames are made from.
 */
#ifndef STAPXX_BPF_SYMTAB_H
#define STAPXX_BPF_SYMTAB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/lj_bpf.h"

struct ljb_symtab;

/*
 * ljb_symtab_load - the function symbols (with a size) of every
 * executable file mapping of PID, at their run-time addresses, sorted and
 * without overlaps.  Symbols of LuaJIT's assembler VM (lj_BC_*, lj_vm_*,
 * lj_ff_*, ...) are marked.  A file without a .symtab (stripped) also
 * gets its functions that .dynsym does not name, from the table of
 * .eh_frame_hdr, as "FILE+0xADDR" (the function's start in the file), so
 * that no C function a sample lands in goes without a frame.  Returns a
 * table (free with ljb_symtab_free()), or NULL after error().
 */
struct ljb_symtab *ljb_symtab_load(pid_t pid);
void ljb_symtab_free(struct ljb_symtab *st);

/* The sorted ranges for the kernel's syms map: *n entries, owned by ST. */
const struct ljb_sym *ljb_symtab_ranges(const struct ljb_symtab *st, size_t *n);

/*
 * ljb_symtab_add - adds the function range [START, END) named NAME
 * (copied) where the table has no symbol (a symbol at START wins), for a
 * target without symbols (lib/bpf/vm.c).  Names of LuaJIT's assembler VM
 * (lj_BC_*, lj_vm_*) mark the range as the VM's.  The kernel's ranges
 * (ljb_symtab_ranges) are rebuilt.
 */
void ljb_symtab_add(struct ljb_symtab *st, uint64_t start, uint64_t end, const char *name);

/* An executable file mapping of the process: run-time [lo, hi), and the
 * bias (run-time address minus the ELF address) of its file. */
struct ljb_file {
	const char *path;	/* owned by the table */
	uint64_t lo, hi, bias;
};

/* The file mapping holding ADDR, NULL if none; all of them (*n). */
const struct ljb_file *ljb_symtab_file(const struct ljb_symtab *st, uint64_t addr);
const struct ljb_file *ljb_symtab_files(const struct ljb_symtab *st, size_t *n);

/* The address of the symbol NAME (any type), 0 if none. */
uint64_t ljb_symtab_addr(const struct ljb_symtab *st, const char *name);

/* The name of the symbol whose range holds ADDR ("FILE+0xADDR" for a
 * function only its FDE knows), NULL if none (owned by ST). */
const char *ljb_symtab_name(const struct ljb_symtab *st, uint64_t addr);

/* Whether a symbol names the function ADDR lies in: not only its FDE, as
 * "FILE+0xADDR" (a file without a .symtab: ljb_symtab_load). */
int ljb_symtab_named(const struct ljb_symtab *st, uint64_t addr);

#endif
