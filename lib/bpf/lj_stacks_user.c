/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/lj_stacks_user.c - see bpf/lj_stacks_user.h. */
#include "bpf/lj_stacks_user.h"
#include "bpf/cpu_clock.h"
#include "base/error.h"
#include "base/wrapper.h"

#include "bpf/lj_stacks.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A session of lj_stacks.bpf.c. */
struct session {
	struct ljb_core c;
	const struct ljb_opts *o;
	struct lj_stacks *skel;
	struct ljb_links links;
	int found;		/* lj-lua-bt: printed its stack */
};

/* Opens the core, loads the program with the layouts and options (NOWALK:
 * VM states only), starts sampling.  0, or -1 after error(). */
static int start(struct session *s, const struct ljb_target *t, struct dw_set *dw, int nowalk)
{
	const struct ljb_opts *o = s->o;
	struct ljb_textopts to = { o->lines, o->fullpath, -1 };
	long maxstacks = o->maxstacks ? o->maxstacks : 16384;

	if (ljb_core_open(&s->c, t, &to, dw, maxstacks) < 0)
		return -1;
	s->skel = lj_stacks__open();
	if (!s->skel)
		return error("cannot open the eBPF program: %s", strerror(errno));
	s->c.ly.k.depth = o->depth;
	s->c.ly.k.lines = o->lines;
	s->c.ly.k.nojit = o->nojit;
	s->c.ly.k.nointerp = o->nointerp;
	s->c.ly.k.nowalk = nowalk;
	memcpy((void *)&s->skel->rodata->cfg, &s->c.ly.k, sizeof(s->c.ly.k));
	bpf_map__set_max_entries(s->skel->maps.stacks, maxstacks);
	if (lj_stacks__load(s->skel))
		return ljb_core_load_error();
	LJB_CORE_MAPS(&s->c, s->skel);
	if (ljb_core_start(&s->c) < 0)
		return -1;
	return ljb_cpu_clock_attach(s->skel->progs.lj_sample, o->hz, &s->links);
}

/* ljb_core.tick with --arg samples: the samples with a Lua stack are
 * there. */
static int enough(struct ljb_core *c)
{
	struct session *s = c->ctx;
	unsigned long long n[LJB_N_MAX];

	ljb_sum_percpu(bpf_map__fd(s->skel->maps.stats), n, LJB_N_MAX);
	return n[LJB_N_LUA] >= (unsigned long long)s->o->samples;
}

/* Samples until the session ends (VERB: the start line's, see
 * ljb_core_loop()); the program detached, the ring
 * buffer drained.  0, or -1 after error(). */
static int sample(struct session *s, const char *verb)
{
	char more[64] = "";
	double dt;

	if (s->o->samples > 0) {
		snprintf(more, sizeof(more), " or %ld samples", s->o->samples);
		s->c.ctx = s;
		s->c.tick = enough;
	}
	if (ljb_core_loop(&s->c, s->o->time, verb, more, &dt) < 0)
		return -1;
	ljb_links_destroy(&s->links);
	ljb_core_drain(&s->c);
	return 0;
}

static void finish(struct session *s)
{
	ljb_links_destroy(&s->links);
	lj_stacks__destroy(s->skel);
	ljb_core_free(&s->c);
}

/* Prints the stacks and the statistics, as the SystemTap sample does. */
static void report(struct session *s)
{
	const char *name = s->c.t.name;
	unsigned long long n[LJB_N_MAX];
	struct ljb_tally t = {0};
	int sfd = bpf_map__fd(s->skel->maps.stacks);
	__u64 key, next, cnt;
	int more;

	ljb_sum_percpu(bpf_map__fd(s->skel->maps.stats), n, LJB_N_MAX);
	for (more = bpf_map_get_next_key(sfd, NULL, &next) == 0; more;
	     more = bpf_map_get_next_key(sfd, &key, &next) == 0) {
		key = next;
		if (bpf_map_lookup_elem(sfd, &key, &cnt) == 0)
			ljb_core_add(&s->c, key, cnt, &t);
	}
	ljb_core_print(&s->c, s->o->limit);

	unsigned long long skipped = n[LJB_N_SKIPPED] + t.unnamed;
	fprintf(stderr, "WARNING: %s: %llu samples taken, %llu with a Lua stack "
		"(%llu in JIT code, %llu interpreted, %llu in C functions, %llu in GC, "
		"%llu in other VM states)\n", name, n[LJB_N_SAMPLES], n[LJB_N_LUA] - t.unnamed,
		n[LJB_N_JIT], n[LJB_N_INTERP], n[LJB_N_C], n[LJB_N_GC], n[LJB_N_VMOTHER]);
	fprintf(stderr, "WARNING: %s: %llu not running Lua, %llu before the VM "
		"was found, %llu skipped (faults), %llu dropped (nojit/nointerp), %llu "
		"truncated at depth %ld, %llu inconsistent stacks (dropped)\n", name,
		n[LJB_N_NOLUA], n[LJB_N_NOVM], skipped, n[LJB_N_DROPPED], t.truncated,
		s->o->depth, t.broken);
	if (n[LJB_N_JIT])
		fprintf(stderr, "WARNING: %s: of the %llu samples in JIT code, %llu in a C "
			"function the trace called, %llu in the trace's own code, %llu in a "
			"loop's body before its first snapshot and %llu elsewhere (the last two "
			"show the trace and its base frame only)\n", name, n[LJB_N_JIT],
			n[LJB_N_SNAP_CALL], n[LJB_N_SNAP_NEAR], n[LJB_N_SNAP_LOOP],
			n[LJB_N_SNAP_NONE]);
	ljb_print_snaps(&s->c, &t, "samples");
	t.lost += n[LJB_N_LOSTMAP] + n[LJB_N_LOSTRB];
	if (t.lost)
		fprintf(stderr, "WARNING: %s: %llu samples lost: more than %ld "
			"distinct stacks\n", name, t.lost, s->o->maxstacks);
	if (n[LJB_N_SAMPLES]) {
		unsigned long long avg = n[LJB_N_COST] / n[LJB_N_SAMPLES], hz = s->o->hz;
		fprintf(stderr, "WARNING: %s: %llu.%llu us per sample in the sampling "
			"probe on average (%llu.%02llu%% of a CPU at %llu samples/s)\n", name,
			avg / 1000, avg % 1000 / 100, avg * hz / 10000000,
			avg * hz / 100000 % 100, hz);
		ljb_print_cost(&s->c, n, "samples", "sampling probe");
		ljb_print_reads(&s->c, n, "sample", "samples");
	}
	ljb_print_per_pid(&s->c, bpf_map__fd(s->skel->maps.psamples),
			  "samples per process (pid:samples)");
	ljb_print_faults(&s->c, n, t.unnamed, "samples");
}

int ljb_stacks_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw)
{
	struct session s = { .o = o };
	int rc = EXIT_FAIL;

	if (start(&s, t, dw, 0) == 0 && sample(&s, "sampling") == 0) {
		report(&s);
		rc = 0;
	}
	finish(&s);
	return rc;
}

/* The tapset's luajit_vm_state_name. */
static const char *state_name(const struct ljb_cfg *k, __s32 st)
{
	if (st > 0)
		return "trace";
	if (st == k->vmst_interp)
		return "interp";
	if (st == k->vmst_c)
		return "c";
	if (st == k->vmst_gc)
		return "gc";
	if (st == k->vmst_exit)
		return "exit";
	if (st == k->vmst_record)
		return "record";
	if (st == k->vmst_opt)
		return "opt";
	if (st == k->vmst_asm)
		return "asm";
	return "unknown";
}

/* lj-lua-bt: the first stack named ends the session. */
static void on_bt(struct ljb_core *c, const struct ljb_event *ev, long text)
{
	struct session *s = c->ctx;
	char path[64], comm[64] = "?";
	FILE *f;

	if (s->found || text < 0 || ev->end == LJB_END_BROKEN)
		return;
	snprintf(path, sizeof(path), "/proc/%u/comm", ev->pid);
	if ((f = fopen(path, "re"))) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	printf("Lua backtrace of process %u (%s), VM state %s:\n%s", ev->pid, comm,
	       state_name(&c->ly.k, ev->vmstate), c->texts[text].s);
	fflush(stdout);
	s->found = 1;
	c->stop = 1;
}

int ljb_bt_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw)
{
	struct ljb_opts bo = *o;
	struct session s = { .o = &bo };
	unsigned long long n[LJB_N_MAX];
	int rc = EXIT_FAIL;

	bo.hz = 1000;	/* timer.profile's rate */
	if (start(&s, t, dw, 0) == 0) {
		/* (set after ljb_core_open, which clears the core) */
		s.c.on_stack = on_bt;
		s.c.ctx = &s;
		if (sample(&s, "waiting for a sample in Lua") == 0) {
			ljb_sum_percpu(bpf_map__fd(s.skel->maps.stats), n, LJB_N_MAX);
			if (s.found)
				rc = 0;
			else if (!n[LJB_N_SAMPLES])
				error("no sample of the process in %ld s: it did not run on a CPU "
				      "(blocked or idle?)", o->time);
			else
				error("the process ran (%llu samples, %llu unreadable) but never in "
				      "Lua code in %ld s", n[LJB_N_SAMPLES], n[LJB_N_SKIPPED], o->time);
		}
	}
	finish(&s);
	return rc;
}

/* lj-vm-states: a state's line. */
struct state {
	const char *st, *label;
	unsigned long long n;
};

static int by_n(const void *a, const void *b)
{
	const struct state *x = a, *y = b;

	return x->n != y->n ? (x->n < y->n ? 1 : -1) : strcmp(x->st, y->st);
}

int ljb_states_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw)
{
	struct ljb_opts so = *o;
	struct session s = { .o = &so };
	unsigned long long n[LJB_N_MAX], total;
	int rc = EXIT_FAIL;

	so.hz = 1000;	/* timer.profile's rate */
	so.depth = 1;
	if (start(&s, t, dw, 1) == 0 && sample(&s, "sampling") == 0) {
		ljb_sum_percpu(bpf_map__fd(s.skel->maps.stats), n, LJB_N_MAX);
		struct state v[] = {
			{ "trace", "JIT-compiled code (traces)", n[LJB_N_JIT] },
			{ "interp", "interpreted", n[LJB_N_INTERP] },
			{ "c", "C functions", n[LJB_N_C] },
			{ "gc", "garbage collector", n[LJB_N_GC] },
			{ "exit", "trace exits", n[LJB_N_EXIT] },
			{ "record", "JIT compiler: recording", n[LJB_N_RECORD] },
			{ "opt", "JIT compiler: optimizing", n[LJB_N_OPT] },
			{ "asm", "JIT compiler: assembling", n[LJB_N_ASM] },
			{ "unknown", "unknown", n[LJB_N_VMOTHER] - n[LJB_N_EXIT] - n[LJB_N_RECORD] -
			  n[LJB_N_OPT] - n[LJB_N_ASM] },
		};
		size_t nv = sizeof(v) / sizeof(*v);
		total = n[LJB_N_LUA];
		qsort(v, nv, sizeof(*v), by_n);
		printf("%llu samples of the process, %llu running Lua:\n", n[LJB_N_SAMPLES], total);
		for (size_t i = 0; i < nv && v[i].n; i++)
			printf("%6llu.%llu%%  %-8s %s (%llu samples)\n", v[i].n * 100 / total,
			       v[i].n * 1000 / total % 10, v[i].st, v[i].label, v[i].n);
		printf("not running Lua: %llu, VM not found: %llu, unreadable (skipped): %llu\n",
		       n[LJB_N_NOLUA], n[LJB_N_NOVM], n[LJB_N_SKIPPED]);
		fflush(stdout);
		ljb_print_faults(&s.c, n, 0, "samples");
		rc = 0;
	}
	finish(&s);
	return rc;
}
