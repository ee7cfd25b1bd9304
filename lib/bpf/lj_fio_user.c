/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/lj_fio_user.c - see bpf/lj_fio_user.h. */
#include "bpf/lj_fio_user.h"
#include "base/error.h"
#include "base/wrapper.h"

#include "bpf/lj_fio.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report(struct ljb_core *c, struct lj_fio *skel, const struct ljb_opts *o,
		   double traced)
{
	const char *name = c->t.name, *unit = o->weight ? "bytes" : "us";
	unsigned long long n[LJB_N_MAX], f[LJB_F_MAX], printed;
	struct ljb_tally t = {0};
	int wfd = bpf_map__fd(skel->maps.weights);
	struct ljb_fkey key, next;
	__u64 w;
	int more;

	ljb_sum_percpu(bpf_map__fd(skel->maps.stats), n, LJB_N_MAX);
	ljb_sum_percpu(bpf_map__fd(skel->maps.fstats), f, LJB_F_MAX);
	for (more = bpf_map_get_next_key(wfd, NULL, &next) == 0; more;
	     more = bpf_map_get_next_key(wfd, &key, &next) == 0) {
		char leaf[LJB_FNAME + 8] = "";
		key = next;
		if (bpf_map_lookup_elem(wfd, &key, &w) < 0)
			continue;
		if (o->files)
			snprintf(leaf, sizeof(leaf), "file:%.*s", LJB_FNAME, key.name);
		ljb_core_add_leaf(c, key.id, leaf, w, &t);
	}
	t.lost += f[LJB_F_LOST];
	printed = ljb_core_print(c, o->limit);
	fprintf(stderr, "WARNING: %s: traced for %llu us; %llu us in %llu calls with a Lua "
		"stack, %llu bytes (%llu %s printed)\n", name, (unsigned long long)(traced * 1e6),
		f[LJB_F_US(LJB_K_LUA)], f[LJB_F_N(LJB_K_LUA)], f[LJB_F_BYTES(LJB_K_LUA)],
		printed, unit);
	fprintf(stderr, "WARNING: %s: not in the graph: %llu calls without a Lua stack (%llu "
		"us, %llu bytes), %llu before the VM was found, %llu calls skipped (faults); "
		"%llu calls on files that are not regular (not counted)\n", name,
		f[LJB_F_N(LJB_K_NOLUA)], f[LJB_F_US(LJB_K_NOLUA)], f[LJB_F_BYTES(LJB_K_NOLUA)],
		f[LJB_F_N(LJB_K_NOVM)], f[LJB_F_N(LJB_K_SKIPPED)], f[LJB_F_OTHER]);
	ljb_print_limits(c, &t, unit, o->depth, o->maxstacks);
	if (f[LJB_F_COSTN]) {
		unsigned long long avg = f[LJB_F_COST] / f[LJB_F_COSTN];
		fprintf(stderr, "WARNING: %s: %llu.%llu us per call in the system call entry "
			"probe on average (%llu calls)\n", name, avg / 1000, avg % 1000 / 100,
			f[LJB_F_COSTN]);
	}
	ljb_print_cost(c, n, "calls", "system call entry probe");
	ljb_print_reads(c, n, "call", "calls");
	ljb_print_faults(c, n, 0, "calls");
}

int ljb_fio_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw)
{
	struct ljb_core c;
	struct lj_fio *skel = NULL;
	struct bpf_link *in = NULL, *out = NULL;
	int rc = EXIT_FAIL, gone;
	double traced;

	if (LJB_CORE_OPEN(&c, t, o, dw, skel, lj_fio) < 0)
		goto done;
	skel->rodata->by_bytes = o->weight;
	skel->rodata->with_files = o->files;
	if (LJB_CORE_LOAD(&c, skel, lj_fio, o->maxstacks) < 0)
		goto done;
	in = bpf_program__attach(skel->progs.lj_enter);
	out = in ? bpf_program__attach(skel->progs.lj_exit) : NULL;
	if (!out) {
		error("cannot attach the eBPF program to sys_enter and sys_exit: %s",
		      strerror(errno));
		goto done;
	}
	printf("# stap++ type=%s\n", o->weight ? "bytes" : "us");
	fflush(stdout);
	gone = ljb_core_loop(&c, o->time, "tracing",
			     o->weight ? ", weighted by bytes" : ", weighted by microseconds",
			     &traced);
	if (gone < 0)
		goto done;
	bpf_link__destroy(in);
	bpf_link__destroy(out);
	in = out = NULL;
	ljb_core_end(&c, gone);
	report(&c, skel, o, traced);
	rc = 0;
done:
	bpf_link__destroy(in);
	bpf_link__destroy(out);
	lj_fio__destroy(skel);
	ljb_core_free(&c);
	return rc;
}
