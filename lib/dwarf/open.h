/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/open.h - private to lib/dwarf/: opening a binary of the set with
 * libdwfl (build-id, .gnu_debuglink, /usr/lib/debug, dwz alternate files)
 * and indexing it, and the hints that say how to get debug info.
 */
#ifndef STAPXX_DWARF_OPEN_H
#define STAPXX_DWARF_OPEN_H

#include "dwarf/index.h"

/* Open and index B once; afterwards b->state says what we got
 * (B_UNUSABLE with b->why set, B_NODEBUG, or B_READY).  No message. */
void bin_open(struct dw_bin *b);

/* Open B's ELF file only (b->dwfl, b->mod: its symbols), for a question
 * that needs no DWARF; B_UNUSABLE with b->why set when it cannot be
 * read.  Loading DWARF costs more: a separate debug file may have to be
 * decompressed (libc6-dbg's are), for each run.  No message. */
void bin_open_elf(struct dw_bin *b);

/* Open B for a query naming it explicitly: 0 if it has usable DWARF,
 * else -1 after error() (and the debug-info hints). */
int bin_require(struct dw_bin *b);

/* The hints printed after "no debug info in ...": how to get it, and
 * where libdwfl looked for a separate debug file: the build-id and
 * .gnu_debuglink paths, and the debuginfod servers of DEBUGINFOD_URLS
 * (or how to set it).  Once per binary. */
void hint_debuginfo(struct dw_bin *b);

#endif
