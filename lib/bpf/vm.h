/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/vm.h - finding LuaJIT's VM in a target without its internal
 * symbols (a stripped binary keeps only its exported dynsym: lua_*,
 * luaL_*, luaJIT_*, nginx's own), with the layouts (bpf/layout.h):
 *
 * - its global_State from the interpreter's DISPATCH register (r14 on
 *   x86-64, DISPATCH = (char *)G + GG_G2DISP), checked on the live
 *   process before it is trusted;
 * - the interpreter's PCs named from GG_State's dispatch tables, which
 *   hold every bytecode handler's address ("lj_BC_<NAME>", as the
 *   symbols name them), and the VM's whole code from its .eh_frame entry;
 * - lj_bc_mode[], the bytecode modes that name functions.
 */
#ifndef STAPXX_BPF_VM_H
#define STAPXX_BPF_VM_H

#include <stdint.h>
#include <sys/types.h>

#include "bpf/layout.h"
#include "bpf/symbolize.h"

/* The name of the VM's code that no handler address bounds (the
 * subroutines, fast functions and the last handler): no LuaJIT symbol
 * has it. */
#define LJB_VM_UNNAMED "lj_vm_unnamed"

/*
 * ljb_vm_check_G - whether G is the global_State of a LuaJIT VM in PID:
 * its main thread is a thread whose glref is G, cur_L is 0 or a thread
 * of G, and the bytecode handlers of its static dispatch table lie in an
 * executable mapping of one file of ST, in increasing order.  1 or 0.
 */
int ljb_vm_check_G(pid_t pid, const struct ljb_layout *ly, const struct ljb_symtab *st,
		   uint64_t g);

/* Handlers whose name disagrees with the target's symbol there. */
struct ljb_vm_check {
	size_t n;
	char first[128];	/* "NAME at SYMBOL" of the first */
};

/*
 * ljb_vm_scan - the global_State of PID's VM found by its dispatch table
 * in the anonymous writable memory (at most 256 MB read), where the
 * samples' DISPATCH register gave none: a process that never leaves JIT
 * code without GC64, whose traces use r14 for anything.  Each candidate
 * passes ljb_vm_check_G().  0 when none.
 */
uint64_t ljb_vm_scan(pid_t pid, const struct ljb_layout *ly, const struct ljb_symtab *st);

/*
 * ljb_vm_name - adds to ST the ranges of the bytecode handlers of the VM
 * whose global_State is G ("lj_BC_<NAME>"), and the rest of the VM's
 * code (LJB_VM_UNNAMED), where ST has no symbols: nothing on a target
 * with its symbols, where each name is checked against the symbol
 * instead (*BAD).  A handler whose start the tables do not give (the
 * hot-counting ones while the JIT is off, the call ones under call hooks)
 * joins the range before it, which is then LJB_VM_UNNAMED.  Returns the
 * number of ranges added.
 */
size_t ljb_vm_name(pid_t pid, const struct ljb_layout *ly, struct ljb_symtab *st, uint64_t g,
		   struct ljb_vm_check *bad);

/*
 * ljb_vm_exit - the window of lj_vm_exit_interp (dwarf/vmexit.h) in the
 * code of the VM whose global_State is G, as run-time addresses [*LO,
 * *HI), found in its machine code (symbols or not).  0, or -1 when the
 * code is unreadable or has no such window: no message.
 */
int ljb_vm_exit(pid_t pid, const struct ljb_layout *ly, const struct ljb_symtab *st,
		uint64_t g, uint64_t *lo, uint64_t *hi);

#endif
