/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/lj_alloc_user.c - see bpf/lj_alloc_user.h. */
#include "bpf/lj_alloc_user.h"
#include "base/error.h"
#include "base/wrapper.h"

#include "bpf/lj_alloc.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The leaf of every stack when the allocator is probed at g->allocf: its
 * caller, lj_mem_newgco or lj_mem_realloc, tells no type. */
#define TYPE_UNKNOWN "(type unknown)"

/* A session of lj_alloc.bpf.c. */
struct session {
	struct ljb_core c;
	const struct ljb_opts *o;
	struct lj_alloc *skel;
	struct bpf_link *links[3];
	int grow;		/* lj_mem_grow probed too */
	uint64_t allocf;	/* without the allocator's symbols: g->allocf
				   (the leaf: TYPE_UNKNOWN), else 0 */
	int armed, failed;
	double trap;		/* ns a uprobe costs (ljb_uprobe_cost) */
	long windows;
	double t0;		/* the windows' start (ljb_now()) */
};

/* The type an allocating C function SYM (NULL: no symbol) makes (the
 * sample's __type). */
static const char *type_of(const char *sym, char *b, size_t size)
{
	static const struct { const char *prefix, *type; } pre[] = {
		/* (the sample's rules, in its order: "=NAME" a name, else
		   a prefix) */
		{ "=str_alloc", "string" }, { "lj_str_", "string" }, { "lj_strf", "string" },
		{ "lj_strs", "string" },
		{ "lj_tab_", "table" }, { "=newtab", "table" }, { "=newhpart", "table" },
		{ "=lj_func_newC", "function" }, { "=lj_func_newL", "function" },
		{ "=func_newL", "function" }, { "=lj_func_newL_empty", "function" },
		{ "=lj_func_newL_gc", "function" }, { "lj_func", "upvalue" },
		{ "lj_stat", "thread" },
		{ "lj_pars", "proto" }, { "lj_bcre", "proto" }, { "lj_lex_", "proto" },
		{ "=fs_fini", "proto" },
		{ "lj_cdat", "cdata" }, { "lj_carit", "cdata" }, { "lj_ccal", "cdata" },
		{ "lj_cconv", "cdata" }, { "lj_crec", "cdata" },
		{ "lj_udat", "userdata" },
		{ "lj_buf_", "buffer" }, { "=buf_grow", "buffer" },
		{ "lj_trac", "jit" }, { "lj_ir_", "jit" }, { "lj_snap", "jit" }, { "lj_asm_", "jit" },
		{ "lj_mcod", "jit" }, { "lj_reco", "jit" }, { "lj_opt_", "jit" },
	};

	if (!sym || !*sym)
		return "C:?";
	for (size_t i = 0; i < sizeof(pre) / sizeof(*pre); i++) {
		const char *p = pre[i].prefix;
		if (*p == '=' ? strcmp(sym, p + 1) == 0 : strncmp(sym, p, strlen(p)) == 0)
			return pre[i].type;
	}
	snprintf(b, size, "C:%s", sym);
	return b;
}

/* Whether the code of the symbol at FROM in process PID calls TO (a
 * direct call, e8 rel32): lj_mem_grow calls lj_mem_realloc unless the
 * compiler inlined it there.  -1 when the code cannot be read. */
static int calls(struct ljb_core *c, pid_t pid, uint64_t from, uint64_t to)
{
	size_t n;
	const struct ljb_sym *r = ljb_symtab_ranges(c->st, &n);
	unsigned char code[4096];
	uint64_t end = 0;

	for (size_t i = 0; i < n && !end; i++)
		if (r[i].start == from)
			end = r[i].end & ~LJB_SYM_VM;
	if (!end || end - from > sizeof(code) || ljb_read(pid, from, code, end - from) < 0)
		return -1;
	for (uint64_t i = 0; i + 5 <= end - from; i++) {
		int32_t rel;
		memcpy(&rel, code + i + 1, 4);
		if (code[i] == 0xe8 && from + i + 5 + rel == to)
			return 1;
	}
	return 0;
}

/* Where the symbols lack lj_mem_newgco (a stripped LuaJIT): the
 * allocator that it and lj_mem_realloc call, g->allocf, read from the
 * first target process, whose VM is found as the other samples find it
 * (bpf/vm.h).  All the processes of a --master session share it (forked
 * from one).  0, or -1 after error(). */
static int find_allocf(struct session *s)
{
	struct ljb_core *c = &s->c;
	uint64_t g = ljb_core_G(c, c->pid0), f = 0;

	if (!g) {
		error("no LuaJIT VM found in process %d: its symbols name neither lj_mem_newgco "
		      "nor its global_State, and no global_State in its memory passes the checks",
		      (int)c->pid0);
		hint("lj-lua-alloc probes LuaJIT's allocator: lj_mem_newgco and lj_mem_realloc by "
		     "their symbols, or without them (a stripped LuaJIT) the allocator their "
		     "global_State names (g->allocf)");
		return -1;
	}
	if (ljb_read(c->pid0, g + c->ly.G_allocf, &f, sizeof(f)) < 0 || !f)
		return error("process %d: its global_State at 0x%llx names no allocator "
			     "(g->allocf unreadable or NULL)", (int)c->pid0, (unsigned long long)g);
	s->allocf = f;
	fprintf(stderr, "WARNING: %s: no symbols for LuaJIT's lj_mem_newgco and lj_mem_realloc: "
		"probing the allocator they call, g->allocf (0x%llx), which tells no object type "
		"(the leaf is \"" TYPE_UNKNOWN "\")\n", c->t.name, (unsigned long long)f);
	return 0;
}

/* Attaches the allocator's probes (a window begins).  0, or -1 after
 * error(). */
static int arm(struct session *s)
{
	struct lj_alloc *k = s->skel;

	if (s->allocf) {
		if (!(s->links[0] = ljb_core_uprobe_at(&s->c, k->progs.lj_allocf, s->allocf,
						       "LuaJIT's allocator (g->allocf)")))
			return -1;
	} else if (!(s->links[0] = ljb_core_uprobe(&s->c, k->progs.lj_newgco, "lj_mem_newgco", NULL)) ||
		   !(s->links[1] = ljb_core_uprobe(&s->c, k->progs.lj_realloc, "lj_mem_realloc", NULL)) ||
		   (s->grow && !(s->links[2] = ljb_core_uprobe(&s->c, k->progs.lj_grow, "lj_mem_grow",
								NULL)))) {
		return -1;
	}
	s->armed = 1;
	return 0;
}

static void disarm(struct session *s)
{
	for (int i = 0; i < 3; i++) {
		bpf_link__destroy(s->links[i]);
		s->links[i] = NULL;
	}
	s->armed = 0;
}

/* Every 50 ms: armed for the first ON ms of every PERIOD ms. */
static int tick(struct ljb_core *c)
{
	struct session *s = c->ctx;
	long ms = (long)((ljb_now() - s->t0) * 1000) % s->o->period;
	int on = ms < s->o->on;

	if (on && !s->armed) {
		if (arm(s) < 0) {
			s->failed = 1;
			return 1;
		}
		s->windows++;
	} else if (!on && s->armed) {
		disarm(s);
	}
	return 0;
}

/* The stacks of the weights map into the core's texts (type as leaf,
 * "worker PID" as root with --master); *T: what was left out; returns the
 * number of keys. */
static long add_weights(struct session *s, struct ljb_tally *t)
{
	int fd = bpf_map__fd(s->skel->maps.weights);
	struct ljb_akey key, next;
	long nkeys = 0;
	int more;

	for (more = bpf_map_get_next_key(fd, NULL, &next) == 0; more;
	     more = bpf_map_get_next_key(fd, &key, &next) == 0) {
		char tb[300], root[32] = "";
		const char *type;
		__u64 bytes;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &bytes) < 0)
			continue;
		nkeys++;
		type = s->allocf ? TYPE_UNKNOWN : type_of(ljb_symtab_name(s->c.st, key.ra), tb, sizeof(tb));
		if (key.pid)
			snprintf(root, sizeof(root), "worker %u", key.pid);
		if (key.id) {
			ljb_core_add_framed(&s->c, key.id, type, root, bytes, t);
		} else {
			const char *f[] = { type, "(no Lua stack)", root, NULL };
			ljb_core_add_frames(&s->c, f, bytes);
		}
	}
	return nkeys;
}

static void report(struct session *s)
{
	const char *name = s->c.t.name;
	const struct ljb_opts *o = s->o;
	unsigned long long n[LJB_N_MAX], a[LJB_A_MAX], faults, fast, slow, avg;
	struct ljb_tally t = {0};
	char b[64];
	long nkeys;

	ljb_sum_percpu(bpf_map__fd(s->skel->maps.stats), n, LJB_N_MAX);
	ljb_sum_percpu(bpf_map__fd(s->skel->maps.astats), a, LJB_A_MAX);
	nkeys = add_weights(s, &t);
	ljb_core_print(&s->c, 0);
	/* (inconsistent stacks and those not named: faults, as the bytes
	   of a sample the tapset could not walk) */
	faults = a[LJB_A_NOVM] + a[LJB_A_FAULTS] + (t.broken + t.unnamed) / o->rate;
	fprintf(stderr, "WARNING: %s: %llu allocations, %llu bytes; %llu samples of %ld bytes, "
		"%llu without a Lua stack, %llu faults\n", name, a[LJB_A_ALLOCS], a[LJB_A_BYTES],
		a[LJB_A_SAMPLES], o->rate, a[LJB_A_NOLUA], faults);
	fprintf(stderr, "WARNING: %s: armed %ld ms of every %ld ms (%ld%%): %ld windows; the bytes "
		"are those allocated while armed\n", name, o->on, o->period, 100 * o->on / o->period,
		s->windows);
	t.lost += a[LJB_A_LOST];
	if (t.lost)
		fprintf(stderr, "WARNING: %s: limit hit: %llu bytes of stacks beyond the first %ld "
			"distinct ones are not printed; --arg maxstacks=N raises it\n", name, t.lost,
			nkeys);
	ljb_print_snaps(&s->c, &t, "bytes");
	{
		struct { const char *why; unsigned long long n; } f[] = {
			{ "before the VM was found", n[LJB_N_NOVM] },
			{ "user memory read fault in the frame walk", n[LJB_N_F_READ] },
			{ "no symbol for the interpreter's PC", n[LJB_N_F_NOSYM] },
			{ "interpreter BASE register is not a frame of the running thread",
			  n[LJB_N_F_BASE] },
			{ "in a trace's exit to the interpreter (the VM's lj_vm_exit_interp code "
			  "was not found)", n[LJB_N_F_EXIT] },
			{ "user memory read fault in ngx_lua's coroutine contexts", n[LJB_N_F_NGX] },
			{ "the allocator's return address could not be read", a[LJB_A_NORA] },
			{ "inconsistent stack (dropped)", t.broken / o->rate },
			{ "the target's memory was gone before the stack was named",
			  t.unnamed / o->rate },
		};
		for (size_t i = 0; i < sizeof(f) / sizeof(*f); i++)
			if (f[i].n)
				fprintf(stderr, "WARNING: %s: fault (%llu): %s\n", name, f[i].n, f[i].why);
	}
	fast = a[LJB_A_FASTN] ? a[LJB_A_FAST] / a[LJB_A_FASTN] : 0;
	slow = a[LJB_A_SLOWN] ? a[LJB_A_SLOW] / a[LJB_A_SLOWN] : 0;
	avg = a[LJB_A_ALLOCS] ? (fast * (a[LJB_A_ALLOCS] - a[LJB_A_SLOWN]) + a[LJB_A_SLOW]) /
		a[LJB_A_ALLOCS] : 0;
	fprintf(stderr, "WARNING: %s: %llu ns per allocation in the probes on average (%llu ns not "
		"sampled, %llu ns sampled), besides the uprobe trap%s\n", name, avg, fast, slow,
		ljb_uprobe_cost_text(b, sizeof(b), s->trap));
	ljb_print_cost(&s->c, n, "sampled allocations", "probes");
	ljb_print_reads(&s->c, n, "sampled allocation", "sampled allocations");
}

int ljb_alloc_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw)
{
	struct session s = { .o = o };
	struct ljb_core *c = &s.c;
	uint64_t grow, realloc_;
	int rc = EXIT_FAIL, gone;
	char verb[200], who[32] = "each process";
	double traced;

	if (o->on < 100 || o->on % 100 || o->period % 100 || o->period < o->on) {
		/* (the sample's own check) */
		error("--arg on=%ld and period=%ld must be multiples of 100 ms, on at most period",
		      o->on, o->period);
		return EXIT_USAGE;
	}
	if (LJB_CORE_OPEN(c, t, o, dw, s.skel, lj_alloc) < 0)
		goto out;
	c->ly.k.noleaf = 1;	/* the sample's "C:lj_mem_*" dropped */
	s.skel->rodata->rate = o->rate;
	s.skel->rodata->multi = !t->pid;
	if (LJB_CORE_LOAD(c, s.skel, lj_alloc, o->maxstacks) < 0)
		goto out;
	/* lj_mem_grow only where lj_mem_realloc is inlined into it (else its
	   growth passes through lj_mem_realloc's probe) */
	grow = ljb_symtab_addr(c->st, "lj_mem_grow");
	realloc_ = ljb_symtab_addr(c->st, "lj_mem_realloc");
	s.grow = grow && realloc_ && calls(c, c->pid0, grow, realloc_) == 0;
	if (!ljb_symtab_addr(c->st, "lj_mem_newgco") && find_allocf(&s) < 0)
		goto out;
	s.trap = ljb_uprobe_cost(s.skel->progs.lj_newgco);
	if (arm(&s) < 0)
		goto out;
	s.windows = 1;
	c->tick = tick;
	c->ctx = &s;
	printf("# stap++ type=bytes\n");
	fflush(stdout);
	if (t->pid)
		snprintf(who, sizeof(who), "process %d", (int)t->pid);
	snprintf(verb, sizeof(verb), "sampling the allocations of %s, one per %ld bytes, armed "
		 "%ld ms of every %ld ms,", who, o->rate, o->on, o->period);
	s.t0 = ljb_now();
	gone = ljb_core_loop(c, o->time, verb, "", &traced);
	if (gone < 0 || s.failed)
		goto out;
	disarm(&s);
	ljb_core_end(c, gone);
	report(&s);
	rc = 0;
out:
	disarm(&s);
	lj_alloc__destroy(s.skel);
	ljb_core_free(c);
	return rc;
}
