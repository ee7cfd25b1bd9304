/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/lj_alloc_user.h - lj-lua-alloc on eBPF: loads lj_alloc.bpf.c
 * (uprobes on LuaJIT's allocator, armed in windows) on the core of
 * bpf/core.h and prints what samples/lj-lua-alloc.sxx prints: "# stap++
 * type=bytes", the stacks weighted by sampled bytes with the type as the
 * leaf (and "worker PID" as the root with --master) on stdout, the
 * statistics lines on stderr.  Returns 0, EXIT_FAIL after error() (a
 * target whose allocator has no symbols), or EXIT_USAGE (windows that are
 * not multiples of 100 ms).  DW: the target's binaries.
 */
#ifndef STAPXX_BPF_LJ_ALLOC_USER_H
#define STAPXX_BPF_LJ_ALLOC_USER_H

#include "bpf/core.h"
#include "dwarf/dwarf.h"

int ljb_alloc_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw);

#endif
