/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/lj_yield_user.h - ngx-lua-yield on eBPF: loads lj_yield.bpf.c
 * (uprobes on lua_yield and lua_resume) on the core of bpf/core.h and
 * prints what samples/ngx-lua-yield.sxx prints: "# stap++ type=us", the
 * stacks weighted by microseconds yielded on stdout, the statistics
 * lines on stderr.  Returns 0, or EXIT_FAIL after error().  DW: the
 * target's binaries.
 */
#ifndef STAPXX_BPF_LJ_YIELD_USER_H
#define STAPXX_BPF_LJ_YIELD_USER_H

#include "bpf/core.h"
#include "dwarf/dwarf.h"

int ljb_yield_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw);

#endif
