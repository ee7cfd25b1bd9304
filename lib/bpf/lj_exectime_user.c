/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/lj_exectime_user.c - see bpf/lj_exectime_user.h. */
#include "bpf/lj_exectime_user.h"
#include "base/error.h"
#include "base/wrapper.h"

#include "bpf/lj_exectime.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIST_WIDTH 50	/* SystemTap's @hist_log: the bars' width */
#define HIST_EDGE 2	/* ... the empty rows shown around the data */

static const char *const handler_fn[LJB_X_NH] = {
	"ngx_http_lua_content_handler", "ngx_http_lua_rewrite_handler",
	"ngx_http_lua_access_handler",
};
static const char *const handler_name[LJB_X_NH] = { "content", "rewrite", "access" };

/* Digits of V (1 for 0). */
static int digits(unsigned long long v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* The microseconds a row of the histogram starts at: bucket B. */
static unsigned long long bucket_us(int b)
{
	return b ? 1ULL << (b - 1) : 0;
}

/* Prints histogram H (LJB_X_BUCKETS counts) as SystemTap prints a
 * @hist_log: a header, a row per bucket from two empty ones below the
 * first count to two above the last, the runs of empty rows between
 * elided with a "~" row, and an empty line. */
static void print_hist(const __u64 *h)
{
	int lo = -1, hi = -1, vs, cs;
	unsigned long long most = 0, scale = 1;
	int eliding = 0;

	for (int b = 0; b < LJB_X_BUCKETS; b++) {
		if (!h[b])
			continue;
		if (lo < 0)
			lo = b;
		hi = b;
		if (h[b] > most)
			most = h[b];
	}
	if (lo < 0)
		return;
	lo = lo > HIST_EDGE ? lo - HIST_EDGE : 0;
	hi = hi + HIST_EDGE < LJB_X_BUCKETS ? hi + HIST_EDGE : LJB_X_BUCKETS - 1;
	if (most > HIST_WIDTH)
		scale = (most + HIST_WIDTH - 1) / HIST_WIDTH;
	cs = digits(most);
	vs = digits(bucket_us(hi));
	if (digits(bucket_us(lo)) > vs)
		vs = digits(bucket_us(lo));
	if (vs < 5)
		vs = 5;	/* "value" */
	printf("%*s |", vs, "value");
	for (int j = 0; j < HIST_WIDTH; j++)
		putchar('-');
	printf(" count\n");
	for (int b = lo; b <= hi; b++) {
		int from = b - HIST_EDGE > lo ? b - HIST_EDGE : lo;
		int to = b + HIST_EDGE < hi ? b + HIST_EDGE : hi, empty = 1;
		for (int k = from; k <= to; k++)
			if (h[k])
				empty = 0;
		if (empty) {
			eliding = 1;
			continue;
		}
		if (eliding)
			printf("%*s ~\n", vs, "");
		eliding = 0;
		unsigned long long bar = h[b] / scale;
		printf("%*llu |", vs, bucket_us(b));
		for (unsigned long long j = 0; j < bar; j++)
			putchar('@');
		printf("%*llu\n", (int)(HIST_WIDTH - bar + 1 + cs), h[b]);
	}
	putchar('\n');
}

/* Sums the per-CPU struct ljb_exec of handler H (map FD) into *X. */
static int sum_exec(int fd, __u32 h, struct ljb_exec *x)
{
	int ncpu = libbpf_num_possible_cpus();
	struct ljb_exec *v;

	memset(x, 0, sizeof(*x));
	if (ncpu <= 0)
		return error("cannot count the CPUs: %s", strerror(-ncpu));
	v = xcalloc(ncpu, sizeof(*v));
	if (bpf_map_lookup_elem(fd, &h, v) < 0) {
		free(v);
		return error("cannot read the counts of the %s handler: %s", handler_name[h],
			     strerror(errno));
	}
	for (int i = 0; i < ncpu; i++) {
		const struct ljb_exec *c = &v[i];
		if (c->calls && (!x->calls || c->min_us < x->min_us))
			x->min_us = c->min_us;
		if (c->max_us > x->max_us)
			x->max_us = c->max_us;
		x->calls += c->calls;
		x->sum_us += c->sum_us;
		for (int k = 0; k < LJB_X_NKIND; k++)
			x->kind[k] += c->kind[k];
		for (int b = 0; b < LJB_X_BUCKETS; b++)
			x->hist[b] += c->hist[b];
		x->cost_ns += c->cost_ns;
		x->cost_n += c->cost_n;
		x->unseen += c->unseen;
	}
	free(v);
	return 0;
}

/* The report of a session whose probes are detached: per handler timed
 * that was called, its calls and histogram (stdout); the probes' cost
 * and the calls not timed (stderr).  TRAP: a uprobe's cost.  0, or -1
 * after error(). */
static int report(struct ljb_core *c, struct lj_exectime *skel, const int *on, double trap)
{
	int fd = bpf_map__fd(skel->maps.xstats), shown = 0;
	unsigned long long cost = 0, costn = 0, unseen = 0;
	char b[64];

	for (__u32 h = 0; h < LJB_X_NH; h++) {
		struct ljb_exec x;
		if (!on[h])
			continue;
		if (sum_exec(fd, h, &x) < 0)
			return -1;
		cost += x.cost_ns;
		costn += x.cost_n;
		unseen += x.unseen;
		if (!x.calls)
			continue;
		shown++;
		printf("%s handler: %llu calls: %llu ran to the end, %llu yielded, %llu declined, "
		       "%llu errors\n", handler_name[h], (unsigned long long)x.calls,
		       (unsigned long long)x.kind[LJB_X_DONE], (unsigned long long)x.kind[LJB_X_YIELDED],
		       (unsigned long long)x.kind[LJB_X_DECLINED], (unsigned long long)x.kind[LJB_X_ERROR]);
		printf("min/avg/max: %llu/%llu/%llu us\n", (unsigned long long)x.min_us,
		       (unsigned long long)(x.sum_us / x.calls), (unsigned long long)x.max_us);
		print_hist(x.hist);
	}
	if (!shown)
		printf("no Lua handler calls measured\n");
	fflush(stdout);
	fprintf(stderr, "WARNING: %s: %llu.%llu us per call in the return probe on average "
		"(%llu calls), besides two uprobe traps a call%s\n", c->t.name,
		costn ? cost / costn / 1000 : 0, costn ? cost / costn % 1000 / 100 : 0, costn,
		ljb_uprobe_cost_text(b, sizeof(b), trap));
	if (unseen)
		fprintf(stderr, "WARNING: %s: %llu calls not timed: they began before the "
			"probes were placed\n", c->t.name, unseen);
	return 0;
}

int ljb_exectime_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw)
{
	static const char *const why[] = {
		"ngx-lua-exec-time times the Lua handlers that lua-nginx-module exports: is the "
		"target an nginx worker with the lua module (built in, or ngx_http_lua_module.so "
		"loaded)?", NULL };
	struct ljb_core c;
	struct lj_exectime *skel = NULL;
	struct bpf_link *l[2 * LJB_X_NH] = { NULL };
	struct bpf_program *in[LJB_X_NH], *out[LJB_X_NH];
	int on[LJB_X_NH], rc = EXIT_FAIL, gone;
	double traced, trap;
	char verb[128];

	(void)dw;		/* (no layouts: no stack is taken) */
	if (ljb_core_open_novm(&c, t) < 0)
		goto out;
	if (!(skel = lj_exectime__open())) {
		error("cannot open the eBPF program: %s", strerror(errno));
		goto out;
	}
	bpf_map__set_max_entries(skel->maps.stacks, 1);
	if (lj_exectime__load(skel) < 0) {
		ljb_core_load_error();
		goto out;
	}
	LJB_CORE_MAPS(&c, skel);
	if (ljb_core_start(&c) < 0)
		goto out;
	in[0] = skel->progs.content_in, out[0] = skel->progs.content_out;
	in[1] = skel->progs.rewrite_in, out[1] = skel->progs.rewrite_out;
	in[2] = skel->progs.access_in, out[2] = skel->progs.access_out;
	/* (handler: all, or the one of LJB_X_* after it; the returns first:
	   a call whose entry is probed then always has its return probed) */
	for (int h = 0; h < LJB_X_NH; h++) {
		on[h] = o->handler == 0 || o->handler == h + 1;
		if (on[h] && (!(l[2 * h] = ljb_core_uretprobe(&c, out[h], handler_fn[h], why)) ||
			      !(l[2 * h + 1] = ljb_core_uprobe(&c, in[h], handler_fn[h], why))))
			goto out;
	}
	trap = ljb_uprobe_cost(in[0]);
	if (o->handler)
		snprintf(verb, sizeof(verb), "timing the Lua %s handler", handler_name[o->handler - 1]);
	else
		snprintf(verb, sizeof(verb), "timing the Lua content, rewrite and access handlers");
	gone = ljb_core_loop(&c, o->time, verb, "", &traced);
	if (gone < 0)
		goto out;
	/* the entries first: no call starts after the end */
	for (int k = 0; k < 2 * LJB_X_NH; k++) {
		int e = k < LJB_X_NH ? 2 * k + 1 : 2 * (k - LJB_X_NH);
		bpf_link__destroy(l[e]);
		l[e] = NULL;
	}
	ljb_core_end(&c, gone);
	if (report(&c, skel, on, trap) == 0)
		rc = 0;
out:
	for (int k = 2 * LJB_X_NH - 1; k >= 0; k--)
		bpf_link__destroy(l[k]);
	lj_exectime__destroy(skel);
	ljb_core_free(&c);
	return rc;
}
