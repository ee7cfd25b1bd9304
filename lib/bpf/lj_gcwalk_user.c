/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/lj_gcwalk_user.c - see bpf/lj_gcwalk_user.h. */
#include "bpf/lj_gcwalk_user.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "bpf/alloc_chunks.h"
#include "bpf/symbolize.h"

#include "bpf/lj_gcwalk.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOP 64
#define MAX_SEGS 256
#define MAX_PIDS 1024

/* A big table or string kept for the report. */
struct big {
	uint64_t o, size;
	uint32_t asize, hslots;
	char s[4 * LJB_GC_PREVIEW + 1];	/* a string's preview, escaped */
};

struct gcw {
	struct ljb_core *c;
	struct lj_gcwalk *skel;
	const struct ljb_opts *o;
	struct ring_buffer *rb;
	struct ljb_gcl gcl;
	struct big top[2][MAX_TOP];	/* tables, strings: biggest first */
	int ntop[2];
	uint32_t gen;			/* the walk the lists are of */
	pid_t walked[MAX_PIDS];		/* censuses printed, and how */
	int complete[MAX_PIDS], ndone;
	double lastact;			/* ljb_now() at the last change */
	pid_t pid;			/* the walk under way, 0 none */
	unsigned long long nseen;
	int multi;
};

/* Keeps the big object E among the biggest of its kind. */
static int on_big(void *ctx, void *data, size_t size)
{
	struct gcw *w = ctx;
	const struct ljb_gcbig *e = data;
	struct big *top, *b;
	int k, n, top_n = (int)w->o->top;

	if (size < sizeof(*e) || e->kind > 1 || top_n <= 0)
		return 0;
	if (e->gen != w->gen) {
		/* the walk started over: a new census */
		if (e->gen < w->gen)
			return 0;
		w->gen = e->gen;
		w->ntop[0] = w->ntop[1] = 0;
	}
	top = w->top[e->kind];
	n = w->ntop[e->kind];
	if (n == top_n && e->size <= top[n - 1].size)
		return 0;
	for (k = n < top_n ? n : top_n - 1; k > 0 && top[k - 1].size < e->size; k--)
		top[k] = top[k - 1];
	b = &top[k];
	memset(b, 0, sizeof(*b));
	b->o = e->o;
	b->size = e->size;
	b->asize = e->asize;
	b->hslots = e->hslots;
	if (e->kind == 1) {
		struct buf sb = {0};
		ljb_escape(&sb, e->s, strnlen(e->s, e->len < LJB_GC_PREVIEW ? e->len : LJB_GC_PREVIEW));
		snprintf(b->s, sizeof(b->s), "%s", sb.s ? sb.s : "");
		buf_free(&sb);
	}
	if (n < top_n)
		w->ntop[e->kind] = ++n;
	/* the walk sends only what may still be among them */
	if (n == top_n && w->skel->bss->gw.gen == w->gen)
		w->skel->bss->gw.big_min[e->kind] = top[n - 1].size + 1;
	return 0;
}

/* "P%" of PART in WHOLE, tenths of a percent, as the SystemTap sample. */
static const char *pct(char *b, size_t n, long long part, long long whole)
{
	long long m;

	if (whole <= 0)
		return "?";
	m = part * 1000 / whole;
	snprintf(b, n, "%s%lld.%lld%%", m < 0 ? "-" : "", (m < 0 ? -m : m) / 10, (m < 0 ? -m : m) % 10);
	return b;
}

static const char *type_name(int k)
{
	static const char *const names[LJB_GC_NT] = {
		[4] = "string", [5] = "upvalue", [6] = "thread", [7] = "proto",
		[8] = "Lua function", [9] = "trace", [10] = "cdata", [11] = "table",
		[12] = "userdata", [LJB_GC_CFUNC] = "C function", [14] = "string table",
		[15] = "VM state",
	};
	return k >= 0 && k < LJB_GC_NT && names[k] ? names[k] : "?";
}

/* The census of the walk in gw (process PID) on stdout. */
static void report(struct gcw *w, pid_t pid)
{
	const struct ljb_gcwalk *g = &w->skel->bss->gw;
	const struct ljb_layout *ly = &w->c->ly;
	long long total = g->total, sum, rest, vm = 0;
	uint64_t mcode = 0;
	unsigned long long faults = 0, bytes[LJB_GC_NT], cnt[LJB_GC_NT];
	int order[LJB_GC_NT], n = 0, complete = g->phase == 3 && !g->cut;
	char p1[32];

	if (g->phase == 0 || total == 0) {
		printf("lj-gc-objs: process %d: no walk: %llu firings found no VM, %llu met the "
		       "collector sweeping\n", (int)pid, (unsigned long long)g->novm,
		       (unsigned long long)g->skipped);
	} else {
		printf("lj-gc-objs: process %d, %s in %llu slices over %llu ms\n", (int)pid,
		       complete ? "walk complete" : "walk cut short", (unsigned long long)g->slices,
		       (ljb_now_ns() - g->first) / 1000000);
		if (!complete && g->phase == 1)
			printf("walk cut short: covered part of the root list, no strings (%llu "
			       "objects; stopped in the root list)\n", (unsigned long long)g->objs);
		else if (!complete)
			printf("walk cut short: covered the root list and %u of %u string table slots "
			       "(%llu objects; stopped in the string table)\n", g->slot, g->slots,
			       (unsigned long long)g->objs);
		vm = w->gcl.gg_size;
		printf("GC-managed total: %lld bytes\n", total);
		printf("GC-managed total at the start of the walk: %llu bytes\n",
		       (unsigned long long)g->total0);
		memcpy(bytes, g->bytes, sizeof(bytes));
		memcpy(cnt, g->cnt, sizeof(cnt));
		bytes[14] = g->strtab;
		cnt[14] = 1;
		bytes[15] = vm;
		cnt[15] = 1;
		sum = g->walked + g->strtab + vm;
		printf("walked: %llu objects, %llu bytes, with the string table and the VM state "
		       "%lld bytes (%s of the GC-managed total)\n", (unsigned long long)g->objs,
		       (unsigned long long)g->walked, sum, pct(p1, sizeof(p1), sum, total));
		for (int k = 0; k < LJB_GC_NT; k++)
			if (cnt[k])
				order[n++] = k;
		for (int i = 1; i < n; i++)
			for (int j = i; j > 0 && bytes[order[j]] > bytes[order[j - 1]]; j--) {
				int t = order[j];
				order[j] = order[j - 1];
				order[j - 1] = t;
			}
		for (int i = 0; i < n; i++)
			printf("%s: %llu objects, %llu bytes (%s)\n", type_name(order[i]), cnt[order[i]],
			       bytes[order[i]], pct(p1, sizeof(p1), bytes[order[i]], total));
		printf("table parts: headers %llu bytes, array parts %llu bytes, hash parts %llu bytes\n",
		       (unsigned long long)g->tparts[0], (unsigned long long)g->tparts[1],
		       (unsigned long long)g->tparts[2]);
		rest = total - sum;
		printf("rest of the GC-managed total (buffers, JIT and C type state, changes during "
		       "the walk): %lld bytes (%s)\n", rest, pct(p1, sizeof(p1), rest, total));
		/* (jit_State is in GG_State beside global_State) */
		if (ljb_read(pid, g->g + ly->k.J_from_g + ly->J_szallmcarea, &mcode, sizeof(mcode)) == 0)
			printf("JIT machine code: %llu bytes (not GC-managed)\n", (unsigned long long)mcode);
		else
			printf("JIT machine code: unknown (unreadable)\n");
		struct ljb_range segs[MAX_SEGS];
		int ns = ljb_alloc_segments(pid, ly, w->c->st, g->g, segs, MAX_SEGS);
		if (ns >= 0) {
			unsigned long long arena = 0;
			for (int i = 0; i < ns; i++)
				arena += segs[i].hi - segs[i].lo;
			printf("LuaJIT allocator: %llu bytes mapped in %d segments (in use or free; "
			       "blocks of 128 KB or more are mapped one by one, not counted)\n", arena, ns);
		} else if (ns == -1) {
			printf("LuaJIT allocator: not LuaJIT's own (the application's allocator): its "
			       "memory is not read\n");
		} else {
			printf("LuaJIT allocator: unknown (unreadable)\n");
		}
		printf("biggest tables:\n");
		for (int i = 0; i < w->ntop[0]; i++)
			printf("  table 0x%llx: %llu bytes (array %u slots, hash %u slots)\n",
			       (unsigned long long)w->top[0][i].o, (unsigned long long)w->top[0][i].size,
			       w->top[0][i].asize, w->top[0][i].hslots);
		printf("biggest strings:\n");
		for (int i = 0; i < w->ntop[1]; i++)
			printf("  string 0x%llx: %llu bytes \"%s\"\n", (unsigned long long)w->top[1][i].o,
			       (unsigned long long)w->top[1][i].size, w->top[1][i].s);
	}
	printf("cost: %llu slices of at most %ld objects, longest stall %llu us, mean %llu us; "
	       "%llu firings skipped (collector sweeping), %llu found no VM, %llu restarts (the "
	       "collector freed the object the walk was to resume at)\n",
	       (unsigned long long)g->slices, w->o->objs, (unsigned long long)g->stall / 1000,
	       g->slices ? (unsigned long long)(g->stalls / g->slices / 1000) : 0,
	       (unsigned long long)g->skipped, (unsigned long long)g->novm,
	       (unsigned long long)g->restarts);
	for (int f = 0; f < LJB_GW_F_MAX; f++)
		faults += g->faults[f] + (f == LJB_GW_F_UNREAD ? g->faults[f] : 0);
	printf("faults: %llu\n", faults);
	if (g->faults[LJB_GW_F_UNREAD]) {
		printf("  %llu: a read of the target's memory failed (the last at 0x%llx)\n",
		       (unsigned long long)g->faults[LJB_GW_F_UNREAD], (unsigned long long)g->bad_at);
		printf("  %llu: walk cut short: an object unreadable for 5 s (or read again %llu "
		       "times)\n", (unsigned long long)g->faults[LJB_GW_F_UNREAD],
		       (unsigned long long)g->retries);
	}
	if (g->faults[LJB_GW_F_ROOT])
		printf("  %llu: not a GC object in the root list (walk cut short)\n",
		       (unsigned long long)g->faults[LJB_GW_F_ROOT]);
	if (g->faults[LJB_GW_F_STR])
		printf("  %llu: not a string in the string table (walk cut short)\n",
		       (unsigned long long)g->faults[LJB_GW_F_STR]);
	if (g->faults[LJB_GW_F_RESTARTS])
		printf("  %llu: walk cut short: restarted too often\n",
		       (unsigned long long)g->faults[LJB_GW_F_RESTARTS]);
	if (g->retries && !g->faults[LJB_GW_F_UNREAD])
		printf("read again: %llu slices met an unreadable object, which a later slice read "
		       "(longest wait %llu ms)\n", (unsigned long long)g->retries,
		       (unsigned long long)g->wait / 1000000);
	if (g->lost)
		printf("biggest objects not seen: %llu (no room in the ring buffer): the lists above "
		       "may miss some\n", (unsigned long long)g->lost);
	fflush(stdout);
}

/* Frees the walk for the next process, after PID's census. */
static void next_walk(struct gcw *w, pid_t pid, int complete)
{
	struct ljb_gcwalk *g = &w->skel->bss->gw;
	__u32 one = 1;

	if (w->ndone < MAX_PIDS) {
		w->walked[w->ndone] = pid;
		w->complete[w->ndone] = complete;
	}
	w->ndone++;
	bpf_map_update_elem(bpf_map__fd(w->skel->maps.done), &pid, &one, BPF_ANY);
	bpf_map_delete_elem(bpf_map__fd(w->skel->maps.seen), &pid);
	/* (no slice runs: the walk is over, or its probe detached) */
	__atomic_store_n(&g->busy, 1, __ATOMIC_SEQ_CST);
	memset((char *)g + offsetof(struct ljb_gcwalk, phase), 0,
	       sizeof(*g) - offsetof(struct ljb_gcwalk, phase));
	w->ntop[0] = w->ntop[1] = 0;
	w->gen = 0;
	w->pid = 0;
	w->lastact = ljb_now();
	__atomic_store_n(&g->pid, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&g->busy, 0, __ATOMIC_SEQ_CST);
}

/* Processes at the walk point that wait for their turn. */
static unsigned long long waiting(struct gcw *w)
{
	int fd = bpf_map__fd(w->skel->maps.seen);
	__u32 k, next, *prev = NULL;
	unsigned long long n = 0;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		n++;
		k = next;
		prev = &k;
	}
	return n;
}

/* Every 50 ms: the census of a walk that is over; the session's end. */
static int tick(struct ljb_core *c)
{
	struct gcw *w = c->ctx;
	struct ljb_gcwalk *g = &w->skel->bss->gw;
	pid_t pid = (pid_t)__atomic_load_n(&g->pid, __ATOMIC_SEQ_CST);
	unsigned long long n;

	ring_buffer__poll(w->rb, 0);
	if (pid && pid != w->pid) {
		w->pid = pid;
		w->lastact = ljb_now();
	}
	if (pid && __atomic_load_n(&g->phase, __ATOMIC_SEQ_CST) == 3 &&
	    !__atomic_load_n(&g->busy, __ATOMIC_SEQ_CST)) {
		ring_buffer__consume(w->rb);
		report(w, pid);
		next_walk(w, pid, !g->cut);
		if (!w->multi || (w->o->workers > 0 && w->ndone >= w->o->workers))
			return 1;
	}
	n = waiting(w);
	if (n != w->nseen) {
		w->nseen = n;
		w->lastact = ljb_now();
	}
	/* several processes: over when each one seen was walked and no other
	   came for wait seconds */
	return w->multi && w->ndone > 0 && !w->pid && n == 0 &&
	       ljb_now() - w->lastact >= w->o->wait;
}

static int by_pid(const void *a, const void *b)
{
	return *(const pid_t *)a - *(const pid_t *)b;
}

/* "lj-gc-objs: processes walked: PIDS; cut short: PIDS; seen at the walk
 * point, not walked: PIDS" on stderr. */
static void processes(struct gcw *w)
{
	int fd = bpf_map__fd(w->skel->maps.seen), nd = w->ndone < MAX_PIDS ? w->ndone : MAX_PIDS;
	pid_t v[MAX_PIDS], s[MAX_PIDS];
	__u32 k, next, *prev = NULL;
	int ns = 0;
	struct buf b = {0};

	memcpy(v, w->walked, nd * sizeof(*v));
	qsort(v, nd, sizeof(*v), by_pid);
	while (ns < MAX_PIDS && bpf_map_get_next_key(fd, prev, &next) == 0) {
		s[ns++] = next;
		k = next;
		prev = &k;
	}
	qsort(s, ns, sizeof(*s), by_pid);
	buf_addf(&b, "WARNING: lj-gc-objs: processes walked:");
	for (int pass = 1; pass >= 0; pass--) {
		int any = 0;
		for (int i = 0; i < nd; i++)
			for (int j = 0; j < nd; j++)
				if (w->walked[j] == v[i] && w->complete[j] == pass) {
					buf_addf(&b, " %d", (int)v[i]);
					any = 1;
				}
		buf_addf(&b, "%s%s", any ? "" : " none", pass ? "; cut short:" : "");
	}
	buf_addf(&b, "; seen at the walk point, not walked:");
	for (int i = 0; i < ns; i++)
		buf_addf(&b, " %d", (int)s[i]);
	fprintf(stderr, "%s%s\n", b.s, ns ? "" : " none");
	buf_free(&b);
}

/* The walk point: where the target runs no Lua code and its heap is
 * consistent (samples/lj-gc-objs.sxx says why there). */
static const char *walk_point(const struct ljb_core *c)
{
	if (c->ly.nginx && ljb_symtab_addr(c->st, "ngx_epoll_process_events"))
		return "ngx_epoll_process_events";
	if (ljb_symtab_addr(c->st, "ngx_process_events_and_timers"))
		return "ngx_process_events_and_timers";
	return "lj_gc_step";
}

int ljb_gcobjs_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw)
{
	static const char *const why[] = {
		"in the luajit CLI the walk point is the collector's lj_gc_step, an internal "
		"function that a stripped binary has no symbol for; nginx's is its event loop "
		"(ngx_process_events_and_timers)", NULL };
	struct ljb_textopts to = { 0, 0, -1 };
	struct ljb_core c;
	struct gcw w = { .c = &c, .o = o };
	struct bpf_link *l = NULL;
	const char *point;
	double traced;
	int rc = EXIT_FAIL, gone;

	if (ljb_core_open(&c, t, &to, dw, 1) < 0 || ljb_gc_layout_load(dw, &w.gcl) < 0)
		goto out;
	if (!(w.skel = lj_gcwalk__open())) {
		error("cannot open the eBPF program: %s", strerror(errno));
		goto out;
	}
	memcpy((void *)&w.skel->rodata->cfg, &c.ly.k, sizeof(c.ly.k));
	memcpy((void *)&w.skel->rodata->gcl, &w.gcl, sizeof(w.gcl));
	w.skel->rodata->objs = o->objs;
	w.skel->rodata->gap_ns = o->gap * 1000000ULL;
	bpf_map__set_max_entries(w.skel->maps.stacks, 1);
	if (lj_gcwalk__load(w.skel) < 0) {
		ljb_core_load_error();
		goto out;
	}
	LJB_CORE_MAPS(&c, w.skel);
	if (ljb_core_start(&c) < 0)
		goto out;
	w.rb = ring_buffer__new(bpf_map__fd(w.skel->maps.bigs), on_big, &w, NULL);
	if (!w.rb) {
		error("cannot set up the ring buffer: %s", strerror(errno));
		goto out;
	}
	point = walk_point(&c);
	if (!(l = ljb_core_uprobe(&c, w.skel->progs.gc_point, point, why)))
		goto out;
	w.multi = !t->pid;
	w.lastact = ljb_now();
	{
		char who[64], when[64];
		snprintf(who, sizeof(who), "process %d", (int)t->pid);
		snprintf(when, sizeof(when), "for at most %ld s", o->time);
		fprintf(stderr, "WARNING: lj-gc-objs: walking the heap of %s in slices of %ld "
			"objects %s\n", w.multi ? "each process (one after another)" : who, o->objs,
			o->time > 0 ? when : "until the walk is complete");
	}
	c.tick = tick;
	c.ctx = &w;
	gone = ljb_core_loop(&c, o->time, NULL, NULL, &traced);
	if (gone < 0)
		goto out;
	bpf_link__destroy(l);
	l = NULL;
	ljb_core_end(&c, gone);
	ring_buffer__consume(w.rb);
	if (w.skel->bss->gw.pid) {
		pid_t pid = (pid_t)w.skel->bss->gw.pid;
		w.pid = pid;
		report(&w, pid);
		next_walk(&w, pid, w.skel->bss->gw.phase == 3 && !w.skel->bss->gw.cut);
	} else if (w.ndone == 0) {
		printf("lj-gc-objs: no walk: no process reached the walk point (%s)\n", point);
	}
	if (w.multi)
		processes(&w);
	rc = 0;
out:
	bpf_link__destroy(l);
	ring_buffer__free(w.rb);
	lj_gcwalk__destroy(w.skel);
	ljb_core_free(&c);
	return rc;
}
