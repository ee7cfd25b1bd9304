/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/resty_memory.h - resty-memory: where a process's resident memory
 * goes, part by part (samples/resty-memory.sxx).  No kernel part: what the
 * kernel knows comes from /proc/PID/smaps and pagemap, what only the
 * target knows (LuaJIT's allocator and collector, nginx's shared zones,
 * glibc's block headers) from its memory (/proc/PID/mem), read while it
 * runs, never stopped.  Both runtimes run it.
 */
#ifndef STAPXX_BPF_RESTY_MEMORY_H
#define STAPXX_BPF_RESTY_MEMORY_H

#include "bpf/core.h"

/*
 * ljb_memory_run - prints the breakdown of process t->pid, or of each
 * worker of t->master (o->folded: folded lines for util/flamegraph and
 * util/pprof instead; o->diff: a file of an earlier run's output, whose
 * parts are compared).  Returns 0, or EXIT_FAIL after error().
 */
int ljb_memory_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw);

#endif
