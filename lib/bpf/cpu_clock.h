/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/cpu_clock.h - the sampling clock of the samplers (lj-lua-stacks,
 * lj-lua-bt, lj-vm-states, sample-bt): a cpu-clock perf event on each
 * CPU, with a SEC("perf_event") program attached.
 */
#ifndef STAPXX_BPF_CPU_CLOCK_H
#define STAPXX_BPF_CPU_CLOCK_H

struct bpf_program;
struct bpf_link;

/* A program attached to a cpu-clock perf event on each CPU: its links. */
struct ljb_links {
	struct bpf_link **l;
	int n;
};

/*
 * ljb_cpu_clock_attach - opens a cpu-clock perf event per online CPU at
 * HZ samples a second and attaches PROG (a SEC("perf_event") program) to
 * each, into L (zeroed by the caller; ljb_links_destroy() frees it).
 * Returns 0, or -1 after error().
 */
int ljb_cpu_clock_attach(struct bpf_program *prog, long hz, struct ljb_links *l);

/* Detaches and frees the links of L (any number of times). */
void ljb_links_destroy(struct ljb_links *l);

#endif
