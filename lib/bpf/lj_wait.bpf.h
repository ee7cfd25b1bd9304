/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lj_wait.bpf.h - what the eBPF programs of the waiting-time samples on
 * struct ljb_wait share (lj_offcpu.bpf.c, lj_yield.bpf.c; included once,
 * after lj_walk.bpf.h's frame walk): the waits shorter than min_us, the
 * microseconds per stack id (weights) and per process (pus), the
 * counters (wstats, LJB_W_*), and how a wait ends (ljb_wait_add).  The
 * program opens its waits in its own map, keyed as it needs.
 */
#ifndef STAPXX_LJ_WAIT_BPF_H
#define STAPXX_LJ_WAIT_BPF_H

#include "lj_walk.bpf.h"

const volatile __u64 min_us;	/* waits shorter than this are counted apart */

/* Microseconds per stack id (max_entries set to maxstacks). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} weights SEC(".maps");

/* Microseconds per process (every kind but the short waits). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} pus SEC(".maps");

LJB_COUNTERS(wstats, LJB_W_MAX);

static __always_inline void wcount(__u32 k, __u64 v)
{
	ljb_pcpu_add(&wstats, k, v);
}

/* Opens the wait W of KEY in the program's map WAITS, its kind from
 * ljb_take()'s result R, at the end of the probe that began at T0 (ns):
 * a wait of KEY still open (its end not seen) is counted (LJB_W_UNSEEN)
 * and replaced; the probe's cost is counted. */
static __always_inline void ljb_wait_open(void *waits, void *key, struct ljb_wait *w, int r,
					  __u64 t0)
{
	w->kind = r == LJB_R_DROPPED ? LJB_K_SKIPPED : r;
	if (bpf_map_lookup_elem(waits, key))
		wcount(LJB_W_UNSEEN, 1);
	w->since = bpf_ktime_get_ns();
	bpf_map_update_elem(waits, key, w, BPF_ANY);
	wcount(LJB_W_COST, w->since - t0);
	wcount(LJB_W_COSTN, 1);
	ljb_cost(w->since - t0);	/* (its percentiles) */
}

/* A wait W (a copy: the caller deletes the map's entry) that lasted US
 * microseconds ended (the samples' __offcpu_end, __yield_end): counted by
 * its kind (shorter than min_us as LJB_K_SHORT), its microseconds added
 * to its process (but a short one's) and, with a Lua stack, to its stack
 * id (LJB_W_LOST when weights is full). */
static __always_inline void ljb_wait_add(const struct ljb_wait *w, __u64 us)
{
	__u32 kind = w->kind, pid = w->pid;
	__u64 id = w->id;

	if (us < min_us)
		kind = LJB_K_SHORT;
	else
		ljb_hadd(&pus, &pid, us);
	if (kind >= LJB_K_MAX)
		return;
	wcount(LJB_W_N(kind), 1);
	wcount(LJB_W_US(kind), us);
	if (kind == LJB_K_LUA && ljb_hadd(&weights, &id, us) < 0)
		wcount(LJB_W_LOST, us);
}

#endif
