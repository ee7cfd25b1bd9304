/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/lj_fio_user.h - lj-lua-fio on eBPF: loads lj_fio.bpf.c (sys_enter,
 * sys_exit) on the core of bpf/core.h and prints what
 * samples/lj-lua-fio.sxx prints: "# stap++ type=us" (or type=bytes), the
 * stacks weighted by the latency or the bytes of their file I/O on
 * stdout, the statistics lines on stderr.  Returns 0, or EXIT_FAIL after
 * error().  DW: the target's binaries.
 */
#ifndef STAPXX_BPF_LJ_FIO_USER_H
#define STAPXX_BPF_LJ_FIO_USER_H

#include "bpf/core.h"
#include "dwarf/dwarf.h"

int ljb_fio_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw);

#endif
