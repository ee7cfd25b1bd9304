/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/symbolize.h - user space of the eBPF backend: the native symbols of
 * a target process (ELF symbol tables of its mapped objects), its memory
 * (/proc/PID/mem), and the text of a stack the kernel side sent as raw
 * frames (struct ljb_event), with the tapset's rules (tapset/luajit.sxx):
 * chunk names, caller-derived function names, lines, traces, C symbols.
 */
#ifndef STAPXX_BPF_SYMBOLIZE_H
#define STAPXX_BPF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/strbuf.h"
#include "bpf/layout.h"

struct ljb_symtab;

/*
 * ljb_symtab_load - the function symbols (with a size) of every
 * executable file mapping of PID, at their run-time addresses, sorted and
 * without overlaps.  Symbols of LuaJIT's assembler VM (lj_BC_*, lj_vm_*,
 * lj_ff_*, ...) are marked.  Returns a table (free with ljb_symtab_free()),
 * or NULL after error().
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

/* Reads N bytes at ADDR of PID's memory into BUF; 0, or -1.  Only pages
 * present in PID's page tables are read (pagemap): a read of one the
 * target never touched would map the zero page or a new page of shared
 * memory into it, and one of a swapped-out page swap it in; those read
 * as a fault (-1). */
int ljb_read(pid_t pid, uint64_t addr, void *buf, size_t n);

/* Whether every page of [ADDR, ADDR+N) is present in PID's page tables:
 * 1 or 0 (0 too when PID's pagemap cannot be read). */
int ljb_present(pid_t pid, uint64_t addr, size_t n);

/* Opens PID's memory and pagemap for ljb_read() (one process at a time;
 * another PID closes the last one's).  0, or -1. */
int ljb_read_open(pid_t pid);

/* The address of the symbol NAME (any type), 0 if none. */
uint64_t ljb_symtab_addr(const struct ljb_symtab *st, const char *name);

/* The name of the symbol whose range holds ADDR, NULL if none (owned by
 * ST). */
const char *ljb_symtab_name(const struct ljb_symtab *st, uint64_t addr);

/*
 * ljb_find_G - the global_State of PID's LuaJIT VM from symbols: the
 * luajit CLI's globalL, or the lua module's main state in nginx
 * (ngx_cycle and the modules, which nginx exports).  0 when not set up
 * yet, unreadable, or without the symbols (a stripped luajit CLI:
 * lib/bpf/vm.c finds its VM from the interpreter's registers).
 */
uint64_t ljb_find_G(pid_t pid, const struct ljb_layout *ly,
		    const struct ljb_symtab *st);

/* Options of the text (as the sample's --arg lines and fullpath). */
struct ljb_textopts {
	int lines, fullpath;
};

/*
 * ljb_stack_text - the text of the stack EV (frames innermost first, one
 * per line, each ending in '\n'; "[truncated]" last when cut at depth),
 * appended to OUT.  Reads the target's memory now.  Sets *UNSURE (unless
 * NULL) to 1 when a function's name was left out because the global or
 * upvalue that names it no longer held it when read: the sample may have
 * seen it there (the caller's closure freed since, the value changed), so
 * a later sample of the stack may name it; to 0 otherwise.  Returns 0, or
 * -1 when the target's memory could not be read (OUT is then undefined).
 */
int ljb_stack_text(const struct ljb_event *ev, const struct ljb_layout *ly,
		   const struct ljb_symtab *st, const struct ljb_textopts *o,
		   struct buf *out, int *unsure);

/* Appends S (N bytes) as a frame text: ';' as ',', control bytes as \t,
 * \n, \r or \xHH; bytes >= 0x80 unchanged. */
void ljb_escape(struct buf *out, const char *s, size_t n);

#endif
