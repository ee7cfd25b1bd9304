/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * driver/allocf.h - LuaJIT's allocator in a target without its symbols,
 * for the SystemTap backend ($^vm_allocf*, lj-lua-alloc).
 *
 * A stripped LuaJIT keeps no symbol for the functions every allocation
 * goes through (lj_mem_newgco, lj_mem_realloc, lj_alloc_f), and stap
 * places uprobes only at symbols.  The allocator they all call is
 * g->allocf, which the running process names: stap++ finds its VM in its
 * memory (as the eBPF backend does, lib/bpf/vm.h), reads g->allocf, and
 * gives stap a copy of the file that holds it, under --sysroot, with a
 * symbol table: the file's exported symbols plus one at the allocator
 * (driver/symbols.h).
 * The uprobe then lands in the target's own file (same path, same
 * build-id); the target is not touched.
 */
#ifndef STAPXX_DRIVER_ALLOCF_H
#define STAPXX_DRIVER_ALLOCF_H

#include <stdint.h>
#include <sys/types.h>

#include "expand/expand.h"
#include "target/target.h"

struct dw_set;

/* The symbol stap++ adds where the allocator has none of its own. */
#define ALLOCF_SYM "stapxx_lj_allocf"

/* What the search found (owned: allocf_free()). */
struct allocf {
	const struct target *t;	/* the target (its root, exec, libs) */
	struct dw_set *dw;	/* its DWARF or layout database */
	pid_t pid;		/* a running process of it, 0: none */
	char *file;		/* the file as read (under t->root) */
	char *path;		/* the file as the target names it */
	uint64_t vaddr;		/* the allocator's ELF address there */
	int add_sym;		/* it has no symbol: ALLOCF_SYM is added */
	char *sym;
};

/*
 * allocf_find - expand_opts.vm_allocf with CTX a struct allocf whose t,
 * dw and pid are set: finds the VM of process pid, its g->allocf and
 * g->allocd, and fills *A (strings owned by CTX).  Returns 0, or -1
 * after error() and hints (no process, no VM found, an allocator outside
 * the target's files).
 */
int allocf_find(void *ctx, struct expand_allocf *a);

void allocf_free(struct allocf *a);

#endif
