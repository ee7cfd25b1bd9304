/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/stats.h - the statistics lines the eBPF samples print after their
 * stacks, from the program's counters (LJB_N_*, lib/bpf/lj_bpf.h) and
 * what user space tallied (struct ljb_tally, bpf/core.h): per process,
 * the limits, the snapshots, the probe's time, its reads, the faults.
 * Included by bpf/core.h.
 */
#ifndef STAPXX_BPF_STATS_H
#define STAPXX_BPF_STATS_H

#include <stddef.h>

struct ljb_core;
struct ljb_tally;

/* The per-CPU array FD's NK counters summed over the CPUs into N. */
void ljb_sum_percpu(int fd, unsigned long long *n, size_t nk);

/* Prints, when the tally T has any, the line of the weight (in UNIT)
 * left out of the graph or cut, as the SystemTap samples' ljw_limits, and
 * the one of stacks not named because the target's memory was gone. */
void ljb_print_limits(const struct ljb_core *c, const struct ljb_tally *t, const char *unit,
		      long depth, long maxstacks);

/* Prints, for each reason (LJB_SNAP_*) that T counts, the UNITs in
 * traces whose stacks show no frames the trace inlined, and why (part of
 * ljb_print_limits). */
void ljb_print_snaps(const struct ljb_core *c, const struct ljb_tally *t, const char *unit);

/* Prints the median and 99th percentile of the time in PROBE (e.g.
 * "sampling probe") of the EVENTS counted in N's LJB_N_TH0 buckets
 * (ljb_cost), each as its bucket's upper end (within 25%), "(over)" past
 * the last. */
void ljb_print_cost(const struct ljb_core *c, const unsigned long long *n, const char *events,
		    const char *probe);

/* Prints what the stacks taken cost in reads of the target's memory,
 * from the statistics N (LJB_N_READS, LJB_N_RBYTES, the LJB_RH buckets):
 * "NAME: X.Y reads of the target's memory per EVENT on average (B bytes),
 * 99% of the EVENTS at most K" (counts that do not depend on the
 * machine, unlike time); nothing when no stack was taken. */
void ljb_print_reads(const struct ljb_core *c, const unsigned long long *n, const char *event,
		     const char *events);

/* Prints "NAME: N EVENTS skipped: WHY" for each fault reason of the
 * statistics N (LJB_N_*) and the UNNAMED stacks. */
void ljb_print_faults(const struct ljb_core *c, const unsigned long long *n,
		      unsigned long long unnamed, const char *events);

#endif
