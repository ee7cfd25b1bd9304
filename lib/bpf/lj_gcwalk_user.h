/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/lj_gcwalk_user.h - lj-gc-objs on eBPF: the loader of lj_gcwalk.bpf.c
 * and the census it prints, line for line as the SystemTap sample
 * (samples/lj-gc-objs.sxx) prints it.
 */
#ifndef STAPXX_BPF_LJ_GCWALK_USER_H
#define STAPXX_BPF_LJ_GCWALK_USER_H

#include "bpf/core.h"

/*
 * ljb_gcobjs_run - walks the heap of the target T (-x: its process; else
 * each target process in turn, at most O->workers of them, until none
 * came for O->wait seconds) in slices of O->objs objects at least O->gap
 * ms apart, for at most O->time seconds (0: until the walks are over),
 * and prints each census (O->top biggest tables and strings).  DW: the
 * target's binaries.  Returns 0, or EXIT_FAIL after error().
 */
int ljb_gcobjs_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw);

#endif
