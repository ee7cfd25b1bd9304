/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/lj_stacks_user.h - lj-lua-stacks on eBPF: load lj_stacks.bpf.c with
 * the target's layouts, sample, name new stacks as they come, and print
 * the same output as samples/lj-lua-stacks.sxx (stdout: stacks; stderr:
 * the statistics lines, as stap's warn() prints them).
 */
#ifndef STAPXX_BPF_LJ_STACKS_H
#define STAPXX_BPF_LJ_STACKS_H

#include <sys/types.h>

#include "dwarf/dwarf.h"

struct ljb_opts {
	pid_t pid;		/* -x PID, or 0 */
	pid_t master;		/* --master PID, or 0 */
	const char *exec;	/* the target executable (for errors) */
	long time, depth, hz, limit, maxstacks;
	int lines, fullpath, nojit, nointerp;
};

/* Runs the session.  DW: the target's binaries.  Returns 0 or EXIT_FAIL
 * after error(). */
int ljb_run(const struct ljb_opts *o, struct dw_set *dw);

#endif
