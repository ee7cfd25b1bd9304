/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/lj_stacks_user.h - the samples on lj_stacks.bpf.c (a cpu-clock perf
 * event per CPU), on the core of bpf/core.h: lj-lua-stacks (stacks on
 * stdout, the statistics lines on stderr, as samples/lj-lua-stacks.sxx),
 * lj-lua-bt (the first Lua stack seen, as samples/lj-lua-bt.sxx) and
 * lj-vm-states (samples by VM state, as samples/lj-vm-states.sxx).
 * Each returns 0, or EXIT_FAIL after error().  DW: the target's binaries.
 */
#ifndef STAPXX_BPF_LJ_STACKS_H
#define STAPXX_BPF_LJ_STACKS_H

#include "bpf/core.h"
#include "dwarf/dwarf.h"

int ljb_stacks_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw);
int ljb_bt_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw);
int ljb_states_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw);

#endif
