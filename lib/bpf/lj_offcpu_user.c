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

static void report(struct ljb_core *c, struct lj_offcpu *skel, const struct ljb_opts *o,
		   double traced, unsigned long long now)
{
	const char *name = c->t.name;
	unsigned long long n[LJB_N_MAX], w[LJB_W_MAX], open[2] = {0};
	struct ljb_tally t = {0};
	struct ljb_waits m = LJB_WAITS(skel, __u32);

	ljb_waits_report(c, &m, now, o->min_us, o->limit, traced, "off CPU", "waits", n, w, &t,
			 open);
#define US(k) w[LJB_W_US(k)]
#define N(k) w[LJB_W_N(k)]
	fprintf(stderr, "WARNING: %s: not in the graph: %llu us in %llu waits without a Lua "
		"stack, %llu us in %llu waits before the VM was found, %llu us in %llu waits "
		"skipped (faults), %llu waits shorter than min_us=%ld us (%llu us)\n", name,
		US(LJB_K_NOLUA), N(LJB_K_NOLUA), US(LJB_K_NOVM), N(LJB_K_NOVM),
		US(LJB_K_SKIPPED), N(LJB_K_SKIPPED), N(LJB_K_SHORT), o->min_us, US(LJB_K_SHORT));
	ljb_waits_open_limits(c, open, "waits", &t, o->depth, o->maxstacks);
	if (w[LJB_W_UNSEEN])
		fprintf(stderr, "WARNING: %s: %llu waits dropped: the thread was not seen switched "
			"in before it blocked again (their time is not known)\n", name, w[LJB_W_UNSEEN]);
	if (w[LJB_W_COSTN]) {
		unsigned long long avg = w[LJB_W_COST] / w[LJB_W_COSTN];
		fprintf(stderr, "WARNING: %s: %llu.%llu us per wait in the switch-out probe on "
			"average (%llu waits)\n", name, avg / 1000, avg % 1000 / 100, w[LJB_W_COSTN]);
	}
	ljb_print_cost(c, n, "waits", "switch-out probe");
	ljb_print_reads(c, n, "wait", "waits");
	ljb_print_per_pid(c, bpf_map__fd(skel->maps.pus), "us off CPU per process (pid:us)");
	ljb_print_faults(c, n, 0, "waits");
#undef US
#undef N
}

int ljb_offcpu_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw)
{
	struct ljb_core c;
	struct lj_offcpu *skel = NULL;
	struct bpf_link *link = NULL;
	int rc = EXIT_FAIL, gone;
	double traced;

	if (LJB_CORE_OPEN(&c, t, o, dw, skel, lj_offcpu) < 0)
		goto out;
	skel->rodata->min_us = o->min_us;
	if (LJB_CORE_LOAD(&c, skel, lj_offcpu, o->maxstacks) < 0)
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
	unsigned long long now = ljb_now_ns();
	bpf_link__destroy(link);
	link = NULL;
	ljb_core_end(&c, gone);
	report(&c, skel, o, traced, now);
	rc = 0;
out:
	bpf_link__destroy(link);
	lj_offcpu__destroy(skel);
	ljb_core_free(&c);
	return rc;
}
