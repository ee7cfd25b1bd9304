/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/stats.c - see bpf/stats.h. */
#include "bpf/stats.h"
#include "bpf/core.h"
#include "base/wrapper.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <stdio.h>
#include <stdlib.h>

void ljb_sum_percpu(int fd, unsigned long long *n, size_t nk)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *v = xcalloc(ncpu > 0 ? ncpu : 1, sizeof(*v));

	for (__u32 k = 0; k < nk; k++) {
		n[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, v) == 0)
			for (int i = 0; i < ncpu; i++)
				n[k] += v[i];
	}
	free(v);
}

void ljb_print_limits(const struct ljb_core *c, const struct ljb_tally *t, const char *unit,
		      long depth, long maxstacks)
{
	if (t->truncated || t->broken || t->lost)
		fprintf(stderr, "WARNING: %s: %llu %s in stacks truncated at depth %ld (printed), "
			"%llu %s in inconsistent stacks (dropped), %llu %s in stacks beyond the "
			"first %ld distinct ones (dropped; --arg maxstacks=N raises it)\n",
			c->t.name, t->truncated, unit, depth, t->broken, unit, t->lost, unit,
			maxstacks);
	if (t->unnamed)
		fprintf(stderr, "WARNING: %s: %llu %s in stacks not named: the target's memory was "
			"gone before (dropped)\n", c->t.name, t->unnamed, unit);
	ljb_print_snaps(c, t, unit);
}

void ljb_print_snaps(const struct ljb_core *c, const struct ljb_tally *t, const char *unit)
{
	static const char *const why[LJB_SNAP_NWHY] = {
		[LJB_SNAP_APPROX] = "",
		[LJB_SNAP_STALE] = "their trace was flushed before its snapshot was read",
		[LJB_SNAP_UNREAD] = "their trace's snapshot could not be read",
		[LJB_SNAP_KIND] = "their snapshot holds a frame stap++ does not restore (a "
				  "metamethod's continuation, a function that is not a "
				  "constant of the trace)",
	};
	if (t->nosnap[LJB_SNAP_APPROX])
		fprintf(stderr, "WARNING: %s: %llu %s in traces show only the frames that the "
			"snapshots around their position both hold: LuaJIT keeps a trace's frames "
			"only at its snapshots, so the frames it inlined in between are not known "
			"(docs/lj-lua-stacks.md, \"Inside traces\")\n", c->t.name,
			t->nosnap[LJB_SNAP_APPROX], unit);
	for (int i = LJB_SNAP_APPROX + 1; i < LJB_SNAP_NWHY; i++)
		if (t->nosnap[i])
			fprintf(stderr, "WARNING: %s: %llu %s in traces show no frames the trace "
				"inlined: %s (printed with the trace and its base frame)\n",
				c->t.name, t->nosnap[i], unit, why[i]);
	if (t->unsure)
		fprintf(stderr, "WARNING: %s: %llu %s in stacks with a function shown by its first "
			"line, not by the name its caller called it by: that value did not hold "
			"it when read (a tail call reached it, or the value changed since the "
			"sample), at every sample of the stack (printed)\n", c->t.name, t->unsure,
			unit);
	if (t->gone)
		fprintf(stderr, "WARNING: %s: %llu %s in stacks with a function the target freed "
			"before the stack was named (a function that load() made, say): shown by "
			"its file and first line, from what the sample read (printed)\n",
			c->t.name, t->gone, unit);
}

void ljb_print_reads(const struct ljb_core *c, const unsigned long long *n, const char *event,
		     const char *events)
{
	unsigned long long taken = 0, k = 0, seen = 0;

	for (int i = 0; i < LJB_RH; i++)
		taken += n[LJB_N_RH0 + i];
	if (!taken)
		return;
	while (k < LJB_RH - 1 && (seen += n[LJB_N_RH0 + k]) * 100 < taken * 99)
		k++;
	fprintf(stderr, "WARNING: %s: %llu.%llu reads of the target's memory per %s on average "
		"(%llu bytes), 99%% of the %s at most %s%llu\n", c->t.name,
		n[LJB_N_READS] / taken, n[LJB_N_READS] * 10 / taken % 10, event,
		n[LJB_N_RBYTES] / taken, events, k == LJB_RH - 1 ? "(over) " : "", 4 * k + 3);
}

/* The upper end, in ns, of LJB_N_TH0 bucket K (see ljb_cost). */
static unsigned long long cost_top(int k)
{
	if (k == 0)
		return 256;
	return (256ULL << ((k - 1) / 4)) * (5 + (k - 1) % 4) / 4;
}

void ljb_print_cost(const struct ljb_core *c, const unsigned long long *n, const char *events,
		    const char *probe)
{
	unsigned long long taken = 0, seen = 0, top[2];
	int k = 0, over[2];

	for (int i = 0; i < LJB_TH; i++)
		taken += n[LJB_N_TH0 + i];
	if (!taken)
		return;
	for (int q = 0; q < 2; q++) {
		unsigned long long want = q ? 99 : 50;
		while (k < LJB_TH - 1 && (seen + n[LJB_N_TH0 + k]) * 100 < taken * want)
			seen += n[LJB_N_TH0 + k++];
		over[q] = k == LJB_TH - 1;
		/* (in tenths of a us, rounded up: "at most" holds) */
		top[q] = (cost_top(over[q] ? k - 1 : k) + 99) / 100;
	}
	fprintf(stderr, "WARNING: %s: half of the %s at most %s%llu.%llu us in the %s, "
		"99%% at most %s%llu.%llu us\n", c->t.name, events, over[0] ? "(over) " : "",
		top[0] / 10, top[0] % 10, probe, over[1] ? "(over) " : "", top[1] / 10, top[1] % 10);
}

void ljb_print_faults(const struct ljb_core *c, const unsigned long long *n,
		      unsigned long long unnamed, const char *events)
{
	struct { const char *why; unsigned long long n; } f[] = {
		{ "user memory read fault in the frame walk", n[LJB_N_F_READ] },
		{ "no symbol for the interpreter's PC", n[LJB_N_F_NOSYM] },
		{ "interpreter BASE register is not a frame of the running thread", n[LJB_N_F_BASE] },
		{ "in a trace's exit to the interpreter (the VM's lj_vm_exit_interp code "
		  "was not found)", n[LJB_N_F_EXIT] },
		{ "user memory read fault in ngx_lua's coroutine contexts (the parent of a "
		  "coroutine)", n[LJB_N_F_NGX] },
		{ "the target's memory was gone before the stack was named", unnamed },
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(*f); i++)
		if (f[i].n)
			fprintf(stderr, "WARNING: %s: %llu %s skipped: %s\n",
				c->t.name, f[i].n, events, f[i].why);
}
