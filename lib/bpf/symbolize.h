/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/symbolize.h - user space of the eBPF backend: a target process's
 * memory (/proc/PID/mem), and the text of a stack the kernel side sent as
 * raw frames (struct ljb_event), with the tapset's rules
 * (tapset/luajit.sxx): chunk names, caller-derived function names, lines,
 * traces (the frames they inlined: bpf/snapshot.h), C symbols (from
 * bpf/symtab.h, which this includes).
 */
#ifndef STAPXX_BPF_SYMBOLIZE_H
#define STAPXX_BPF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/strbuf.h"
#include "bpf/layout.h"
#include "bpf/symtab.h"

/* Reads N bytes at ADDR of PID's memory into BUF; 0, or -1.  Only pages
 * present in PID's page tables are read (pagemap): a read of one the
 * target never touched would map the zero page or a new page of shared
 * memory into it, and one of a swapped-out page swap it in; those read
 * as a fault (-1). */
int ljb_read(pid_t pid, uint64_t addr, void *buf, size_t n);

/* From ljb_read_keep(1) to ljb_read_keep(0), ljb_read() reads whole
 * pages (at most 16 kept, the oldest replaced) and takes each value from
 * the copy of its page: one read of the pagemap and one of the memory
 * per page, not per value, and the values of one page from one moment.
 * Reads of more than two pages are not kept.  Either call forgets the
 * pages kept. */
void ljb_read_keep(int on);

/* Whether every page of [ADDR, ADDR+N) is present in PID's page tables:
 * 1 or 0 (0 too when PID's pagemap cannot be read). */
int ljb_present(pid_t pid, uint64_t addr, size_t n);

/* Opens PID's memory and pagemap for ljb_read() (one process at a time;
 * another PID closes the last one's).  0, or -1. */
int ljb_read_open(pid_t pid);


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
	int names_fd;	/* the kernel's names map (lj_walk.bpf.h), -1: none */
};

/* What ljb_stack_text found besides the text. */
struct ljb_textres {
	int unsure;	/* a function's name was left out because the global
			   or upvalue that names it no longer held it when
			   read: the sample may have seen it there (the
			   caller's closure freed since, the value changed),
			   so a later sample of the stack may name it */
	int snapwhy;	/* in a trace: LJB_SNAP_OK when the frames it
			   inlined are shown exact, else how or why not
			   (LJB_SNAP_*); -1 when the sample has no snapshot */
	int cut;	/* cut at depth (by the kernel, or here, where the
			   frames a trace inlined made it deeper) */
	int gone;	/* a function on it was freed (its GCproto or name
			   no longer what the sample read) before it was
			   named: shown by its file and first line (and the
			   line the sample read), from the chunkname's bytes
			   the kernel kept (names map) */
};

/*
 * ljb_stack_text - the text of the stack EV (frames innermost first, one
 * per line, each ending in '\n'; "[truncated]" last when cut at depth),
 * appended to OUT.  Reads the target's memory now.  A stack in a trace
 * shows the frames the trace inlined, from the snapshot the sample found
 * (bpf/snapshot.h), above its base frame, within the depth; the pages
 * read are kept while it runs (ljb_read_keep()).  Fills *RES
 * (unless NULL).  Returns 0, or
 * -1 when the target's memory could not be read (OUT is then undefined).
 */
int ljb_stack_text(const struct ljb_event *ev, const struct ljb_layout *ly,
		   const struct ljb_symtab *st, const struct ljb_textopts *o,
		   struct buf *out, struct ljb_textres *res);

/* Appends S (N bytes) as a frame text: ';' as ',', control bytes as \t,
 * \n, \r or \xHH; bytes >= 0x80 unchanged. */
void ljb_escape(struct buf *out, const char *s, size_t n);

#endif
