/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/run.h - --runtime=bpf: run a sample's native eBPF implementation
 * instead of building a SystemTap module.
 *
 * A sample declares that it has one with a comment line of its own in its
 * header,
 *     # stap++ native: bpf NAME
 * where NAME names the implementation (lj-lua-stacks, lj-lua-bt,
 * lj-vm-states, lj-lua-off-cpu, lj-lua-fio, ngx-lua-yield, lj-lua-alloc;
 * see docs/bpf.md).  Any other script under
 * --runtime=bpf is an error that lists the samples with one.  The options
 * are the sample's own (its $^arg_* and their defaults, read by the
 * expander's scan_only mode); one the implementation does not honour is
 * refused when given a value other than the sample's default.
 */
#ifndef STAPXX_BPF_RUN_H
#define STAPXX_BPF_RUN_H

#include <stddef.h>
#include <sys/types.h>

#include "base/strbuf.h"
#include "expand/expand.h"	/* struct expand_arg: the --arg list */
#include "target/target.h"

/* What the eBPF run needs from the command line. */
struct bpf_run_opts {
	const char *script;		/* the sample's path */
	pid_t pid;			/* -x PID, or 0 */
	pid_t master;			/* --master PID, or 0 */
	struct expand_arg *args;	/* --arg NAME=VALUE */
	size_t nargs;
	const struct strv *incdirs;	/* module search path (its @use) */
};

/* Root, or CAP_BPF and CAP_PERFMON: 0, or -1 after error() and a hint
 * (call it before inspecting the target). */
int bpf_check_privilege(void);

/*
 * bpf_native_user - 1 when SCRIPT's header names a native implementation
 * without a kernel part ("# stap++ native: user NAME"): bpf_run() runs it
 * under both runtimes, with no eBPF privileges; else 0 (also when SCRIPT
 * cannot be read: the caller's own read says why).
 */
int bpf_native_user(const char *script);

/*
 * bpf_run - the native implementation the script declares, against the
 * resolved target T (its executable and libraries give the DWARF).
 * Returns the exit status: 0, EXIT_FAIL after error(), EXIT_USAGE after
 * a usage error.
 */
int bpf_run(const struct bpf_run_opts *o, const struct target *t);

#endif
