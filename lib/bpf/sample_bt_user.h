/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/sample_bt_user.h - sample-bt on eBPF: loads sample_bt.bpf.c (a
 * cpu-clock perf event per CPU) on the core of bpf/core.h, unwinds each
 * sample's user stack by the CFI of the target's binaries (elfutils
 * libdwfl, from the registers and the stack copy the program sends),
 * names its kernel stack from /proc/kallsyms, and prints what
 * samples/sample-bt.sxx prints: each distinct stack, most frequent first,
 * its frames as " 0xADDR : SYMBOL+0xOFF/0xLEN [MODULE]" lines (kernel
 * frames first), a tab and its count, an empty line; on stderr the start
 * line, the statistics line of the SystemTap sample, and what a sample
 * cost.  Returns 0, or EXIT_FAIL after error().
 */
#ifndef STAPXX_BPF_SAMPLE_BT_USER_H
#define STAPXX_BPF_SAMPLE_BT_USER_H

#include "bpf/core.h"
#include "dwarf/dwarf.h"

int ljb_samplebt_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw);

#endif
