/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/lj_exectime_user.h - ngx-lua-exec-time on eBPF: loads
 * lj_exectime.bpf.c (a uprobe and a uretprobe on each Lua handler of
 * lua-nginx-module timed) on the core of bpf/core.h and prints what
 * samples/ngx-lua-exec-time.sxx prints: per handler called, its calls by
 * how they returned, min/avg/max and a @hist_log histogram in
 * microseconds on stdout; the start line and the probes' cost on stderr.
 * Returns 0, or EXIT_FAIL after error().  DW: the target's binaries.
 */
#ifndef STAPXX_BPF_LJ_EXECTIME_USER_H
#define STAPXX_BPF_LJ_EXECTIME_USER_H

#include "bpf/core.h"
#include "dwarf/dwarf.h"

int ljb_exectime_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw);

#endif
