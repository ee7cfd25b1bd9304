/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/lj_offcpu_user.h - lj-lua-off-cpu on eBPF: loads lj_offcpu.bpf.c
 * (sched_switch) on the core of bpf/core.h and prints what
 * samples/lj-lua-off-cpu.sxx prints: "# stap++ type=us", the stacks
 * weighted by microseconds off CPU on stdout, the statistics lines on
 * stderr.  Returns 0, or EXIT_FAIL after error().  DW: the target's
 * binaries.
 */
#ifndef STAPXX_BPF_LJ_OFFCPU_USER_H
#define STAPXX_BPF_LJ_OFFCPU_USER_H

#include "bpf/core.h"
#include "dwarf/dwarf.h"

int ljb_offcpu_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw);

#endif
