/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/vmexit.h - where LuaJIT's x86-64 interpreter is between a trace
 * and itself, found in its machine code alone (a stripped binary has it
 * too).
 *
 * A trace that ends in the interpreter (a stitch around a C function the
 * JIT does not compile, a return it does not follow, a link to nothing)
 * writes the frames it inlined to the Lua stack, loads the interpreter's
 * BASE (rdx) and PC (rbx) and jumps to lj_vm_exit_interp.  Until that code
 * clears g->jit_base and sets g->vmstate to the interpreter's, vmstate
 * still holds the trace's number while jit_base is the base the trace was
 * entered with (then 0): a walk from it would miss the frames the trace
 * just wrote, or read stale ones.  The stack there is the interpreter's,
 * from rdx.
 *
 * The window is found from two stores every LuaJIT 2.1 x86-64 VM (GC64
 * or not) has, through DISPATCH (r14):
 *  - vm_exit_handler's "set_vmstate EXIT", the only store of ~LJ_VMST_EXIT:
 *    mov dword [r14+VMSTATE], 0xfffffffc;
 *  - vm_exit_interp's "mov [r14+JIT_BASE], 0" directly followed by
 *    "set_vmstate INTERP": mov dword [r14+VMSTATE], 0xffffffff.
 * From the first to the end of the second pair, vmstate is EXIT on the
 * exit handler's path; so a sample there with vmstate > 0 is in
 * lj_vm_exit_interp, entered from a trace, before it set vmstate.
 */
#ifndef STAPXX_DWARF_VMEXIT_H
#define STAPXX_DWARF_VMEXIT_H

#include <stddef.h>

/*
 * lj_vm_exit_window - the window in CODE (the interpreter's machine code,
 * N bytes from the start of its .eh_frame entry): [*LO, *HI) as offsets
 * from CODE, from the end of the EXIT store to the end of the INTERP
 * store after the jit_base one.  Returns 0, or -1 when the code has not
 * exactly one EXIT store, or no such pair within 1 KB after it (not an
 * x86-64 LuaJIT 2.1 interpreter with the JIT): no message.
 */
int lj_vm_exit_window(const unsigned char *code, size_t n, size_t *lo, size_t *hi);

#endif
