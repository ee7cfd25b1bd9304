/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/lj_offcpu_user.c - see bpf/lj_offcpu_user.h. */
#include "bpf/lj_offcpu_user.h"
#include "base/error.h"
#include "base/wrapper.h"

#include "bpf/lj_offcpu.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Closes the waits still open at NOW (ns, CLOCK_MONOTONIC) as the kernel
 * closes one at switch-in (lj_offcpu.bpf.c's wait_end): into W (the
 * wstats sums) and the weights of their stacks (core's tally T); OPEN:
 * their number and microseconds. */
static void close_open(struct ljb_core *c, struct lj_offcpu *skel, unsigned long long now,
		       const struct ljb_opts *o, unsigned long long *w, struct ljb_tally *t,
		       unsigned long long *open)
{
	int fd = bpf_map__fd(skel->maps.waits), pfd = bpf_map__fd(skel->maps.pus);
	__u32 key, next;
	int more;

	for (more = bpf_map_get_next_key(fd, NULL, &next) == 0; more;
	     more = bpf_map_get_next_key(fd, &key, &next) == 0) {
		struct ljb_wait v;
		unsigned long long us;
		__u64 pu = 0;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &v) < 0 || v.since > now)
			continue;
		us = (now - v.since) / 1000;
		if ((long)us < o->min_us) {
			w[LJB_W_N(LJB_K_SHORT)]++;
			w[LJB_W_US(LJB_K_SHORT)] += us;
			continue;
		}
		bpf_map_lookup_elem(pfd, &v.pid, &pu);
		pu += us;
		bpf_map_update_elem(pfd, &v.pid, &pu, BPF_ANY);
		open[0]++;
		open[1] += us;
		if (v.kind >= LJB_K_MAX)
			continue;
		w[LJB_W_N(v.kind)]++;
		w[LJB_W_US(v.kind)] += us;
		if (v.kind == LJB_K_LUA)
			ljb_core_add(c, v.id, us, t);
	}
}

static void report(struct ljb_core *c, struct lj_offcpu *skel, const struct ljb_opts *o,
		   double traced, unsigned long long now)
{
	const char *name = c->t.name;
	unsigned long long n[LJB_N_MAX], w[LJB_W_MAX], open[2] = {0}, printed;
	struct ljb_tally t = {0};
	int wfd = bpf_map__fd(skel->maps.weights);
	__u64 key, next, us;
	int more;

	ljb_sum_percpu(bpf_map__fd(skel->maps.stats), n, LJB_N_MAX);
	ljb_sum_percpu(bpf_map__fd(skel->maps.wstats), w, LJB_W_MAX);
	for (more = bpf_map_get_next_key(wfd, NULL, &next) == 0; more;
	     more = bpf_map_get_next_key(wfd, &key, &next) == 0) {
		key = next;
		if (bpf_map_lookup_elem(wfd, &key, &us) == 0)
			ljb_core_add(c, key, us, &t);
	}
	close_open(c, skel, now, o, w, &t, open);
	t.lost += w[LJB_W_LOST];
	printed = ljb_core_print(c, o->limit);
#define US(k) w[LJB_W_US(k)]
#define N(k) w[LJB_W_N(k)]
	fprintf(stderr, "WARNING: %s: traced for %llu us; %llu us off CPU in %llu waits with a "
		"Lua stack (%llu us printed)\n", name, (unsigned long long)(traced * 1e6),
		US(LJB_K_LUA), N(LJB_K_LUA), printed);
	fprintf(stderr, "WARNING: %s: not in the graph: %llu us in %llu waits without a Lua "
		"stack, %llu us in %llu waits before the VM was found, %llu us in %llu waits "
		"skipped (faults), %llu waits shorter than min_us=%ld us (%llu us)\n", name,
		US(LJB_K_NOLUA), N(LJB_K_NOLUA), US(LJB_K_NOVM), N(LJB_K_NOVM),
		US(LJB_K_SKIPPED), N(LJB_K_SKIPPED), N(LJB_K_SHORT), o->min_us, US(LJB_K_SHORT));
	if (open[0])
		fprintf(stderr, "WARNING: %s: %llu waits still open at the end, counted up to "
			"it: %llu us\n", name, open[0], open[1]);
	ljb_print_limits(c, &t, "us", o->depth, o->maxstacks);
	if (w[LJB_W_UNSEEN])
		fprintf(stderr, "WARNING: %s: %llu waits dropped: the thread was not seen switched "
			"in before it blocked again (their time is not known)\n", name, w[LJB_W_UNSEEN]);
	if (w[LJB_W_COSTN]) {
		unsigned long long avg = w[LJB_W_COST] / w[LJB_W_COSTN];
		fprintf(stderr, "WARNING: %s: %llu.%llu us per wait in the switch-out probe on "
			"average (%llu waits)\n", name, avg / 1000, avg % 1000 / 100, w[LJB_W_COSTN]);
	}
	ljb_print_per_pid(c, bpf_map__fd(skel->maps.pus), "us off CPU per process (pid:us)");
	ljb_print_faults(c, n, 0, "waits");
#undef US
#undef N
}

int ljb_offcpu_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw)
{
	struct ljb_textopts to = { o->lines, o->fullpath };
	struct ljb_core c;
	struct lj_offcpu *skel = NULL;
	struct bpf_link *link = NULL;
	int rc = EXIT_FAIL, gone;
	double traced;

	if (ljb_core_open(&c, t, &to, dw, o->maxstacks) < 0)
		goto out;
	skel = lj_offcpu__open();
	if (!skel) {
		error("cannot open the eBPF program: %s", strerror(errno));
		goto out;
	}
	c.ly.k.depth = o->depth;
	c.ly.k.lines = o->lines;
	memcpy((void *)&skel->rodata->cfg, &c.ly.k, sizeof(c.ly.k));
	skel->rodata->min_us = o->min_us;
	bpf_map__set_max_entries(skel->maps.stacks, o->maxstacks);
	bpf_map__set_max_entries(skel->maps.weights, o->maxstacks);
	if (lj_offcpu__load(skel)) {
		ljb_core_load_error();
		goto out;
	}
	LJB_CORE_MAPS(&c, skel);
	if (ljb_core_start(&c) < 0)
		goto out;
	link = bpf_program__attach(skel->progs.lj_switch);
	if (!link) {
		error("cannot attach the eBPF program to sched_switch: %s", strerror(errno));
		goto out;
	}
	printf("# stap++ type=us\n");
	fflush(stdout);
	gone = ljb_core_loop(&c, o->time, "tracing", "", &traced);
	if (gone < 0)
		goto out;
	/* the end: waits still open are counted up to it */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	unsigned long long now = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	bpf_link__destroy(link);
	link = NULL;
	if (gone && t->pid)
		fprintf(stderr, "WARNING: %s: process %d exited; stopping\n", t->name, (int)t->pid);
	ljb_core_drain(&c);
	report(&c, skel, o, traced, now);
	rc = 0;
out:
	bpf_link__destroy(link);
	lj_offcpu__destroy(skel);
	ljb_core_free(&c);
	return rc;
}
