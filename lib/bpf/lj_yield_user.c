/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/lj_yield_user.c - see bpf/lj_yield_user.h. */
#include "bpf/lj_yield_user.h"
#include "base/error.h"
#include "base/wrapper.h"

#include "bpf/lj_yield.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "N.N us" of NS nanoseconds over N events (0 without any), in B. */
static const char *per(char *b, size_t size, unsigned long long ns, unsigned long long n)
{
	unsigned long long avg = n ? ns / n : 0;

	snprintf(b, size, "%llu.%llu us", avg / 1000, avg % 1000 / 100);
	return b;
}

/* Detaches the probe *L. */
static void detach(struct bpf_link **l)
{
	bpf_link__destroy(*l);
	*l = NULL;
}

/* The end of a session that traced for TRACED seconds: the probes L
 * detached (the yields still open then counted up to it), the end said
 * (GONE: ljb_core_loop's), the report; TRAP: a uprobe's cost
 * (ljb_uprobe_cost).  Returns 0. */
static int report(struct ljb_core *c, struct lj_yield *skel, const struct ljb_opts *o,
		   double traced, double trap, struct bpf_link **l, int gone)
{
	const char *name = c->t.name;
	unsigned long long n[LJB_N_MAX], w[LJB_W_MAX], open[2] = {0};
	struct ljb_tally t = {0};
	char b1[32], b2[32], b3[64];
	struct ljb_waits m = LJB_WAITS(skel, struct ljb_ykey);
	unsigned long long now;

	/* lua_yield's probe first: a detach takes milliseconds, in which a
	   yield whose resume is not probed any more would look like one
	   whose resume was missed; and no yield opens after the end */
	detach(l + 1);
	now = ljb_now_ns();
	detach(l);
	ljb_core_end(c, gone);
	ljb_waits_report(c, &m, now, o->min_us, o->limit, traced, "yielded", "yields", n, w, &t,
			 open);
#define US(k) w[LJB_W_US(k)]
#define N(k) w[LJB_W_N(k)]
	/* (the sample's "skipped": every yield without a stack) */
	fprintf(stderr, "WARNING: %s: not in the graph: %llu us in %llu yields skipped (faults), "
		"%llu yields shorter than min_us=%ld us (%llu us)\n", name,
		US(LJB_K_NOLUA) + US(LJB_K_NOVM) + US(LJB_K_SKIPPED),
		N(LJB_K_NOLUA) + N(LJB_K_NOVM) + N(LJB_K_SKIPPED), N(LJB_K_SHORT), o->min_us,
		US(LJB_K_SHORT));
	ljb_waits_open_limits(c, open, "yields", &t, o->depth, o->maxstacks);
	if (w[LJB_W_UNSEEN])
		fprintf(stderr, "WARNING: %s: %llu yields dropped: the coroutine yielded again "
			"before a lua_resume of it was seen (their time is not known)\n", name,
			w[LJB_W_UNSEEN]);
	fprintf(stderr, "WARNING: %s: %s per yield in the lua_yield probe, %s per resume in "
		"the lua_resume probe on average (%llu yields, %llu resumes), besides the "
		"uprobe traps%s\n", name, per(b1, sizeof(b1), w[LJB_W_COST], w[LJB_W_COSTN]),
		per(b2, sizeof(b2), w[LJB_W_COST2], w[LJB_W_COST2N]), w[LJB_W_COSTN],
		w[LJB_W_COST2N], ljb_uprobe_cost_text(b3, sizeof(b3), trap));
	ljb_print_cost(c, n, "yields", "lua_yield probe");
	ljb_print_reads(c, n, "yield", "yields");
	ljb_print_per_pid(c, bpf_map__fd(skel->maps.pus), "us yielded per process (pid:us)");
	if (N(LJB_K_NOLUA))
		fprintf(stderr, "WARNING: %s: %llu yields skipped: no Lua stack at the yield\n",
			name, N(LJB_K_NOLUA));
	if (N(LJB_K_NOVM))
		fprintf(stderr, "WARNING: %s: %llu yields skipped: before the VM was found\n",
			name, N(LJB_K_NOVM));
	ljb_print_faults(c, n, 0, "yields");
#undef US
#undef N
	return 0;
}

int ljb_yield_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw)
{
	static const char *const why[] = {
		"ngx-lua-yield probes LuaJIT's API (lua_yield, lua_resume), which a LuaJIT "
		"exports: is the target nginx with the lua module, or a LuaJIT process?", NULL };
	struct ljb_core c;
	struct lj_yield *skel = NULL;
	struct bpf_link *l[2] = { NULL, NULL };
	int rc = EXIT_FAIL, gone;
	double traced, trap;

	if (LJB_CORE_OPEN(&c, t, o, dw, skel, lj_yield) < 0)
		goto out;
	c.ly.k.noleaf = 1;	/* the sample's "C:lua_yield" dropped */
	skel->rodata->min_us = o->min_us;
	if (LJB_CORE_LOAD(&c, skel, lj_yield, o->maxstacks) < 0)
		goto out;
	/* (lua_resume first: a yield then always finds its resume probed) */
	if (!(l[0] = ljb_core_uprobe(&c, skel->progs.lj_resume, "lua_resume", why)) ||
	    !(l[1] = ljb_core_uprobe(&c, skel->progs.lj_yield, "lua_yield", why)))
		goto out;
	trap = ljb_uprobe_cost(skel->progs.lj_resume);
	printf("# stap++ type=us\n");
	fflush(stdout);
	gone = ljb_core_loop(&c, o->time, "tracing", "", &traced);
	if (gone < 0)
		goto out;
	rc = report(&c, skel, o, traced, trap, l, gone);
out:
	detach(l + 1);
	detach(l);
	lj_yield__destroy(skel);
	ljb_core_free(&c);
	return rc;
}
