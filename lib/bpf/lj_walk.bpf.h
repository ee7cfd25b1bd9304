/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lj_walk.bpf.h - the LuaJIT frame walk every eBPF program of stap++
 * shares (included by each lib/bpf/NAME.bpf.c, once): the layout
 * configuration (cfg, read-only data filled from the target's DWARF
 * before loading), the maps user space fills (pids, syms, files), the
 * stack ids (stacks), the raw frames of a new id (ring buffer events),
 * the statistics (stats) and ljb_take(), which takes the Lua stack of the
 * current task from its user registers.  The program defines the
 * attachment and what a stack id weighs (a sample, a wait's time).
 *
 * Each routine mirrors a tapset/luajit.sxx routine, named in its comment
 * (the rule table in lib/bpf/README.md lists them).
 */
#ifndef STAPXX_LJ_WALK_BPF_H
#define STAPXX_LJ_WALK_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "lj_bpf.h"

/* x86-64 user registers (struct pt_regs; di, si, dx, cx, r8: a
 * function's or a system call's first arguments, sp: at a function's
 * entry, where its return address is, ax: at its return, the value);
 * CO-RE relocates the fields against the running kernel's BTF. */
struct pt_regs {
	unsigned long ax, bx, cx, dx, si, di, ip, sp, r8, r14;
} __attribute__((preserve_access_index));

const volatile struct ljb_cfg cfg;
__u32 nsyms;	/* entries in syms, set before sampling starts */
__u32 nfiles;	/* entries in files */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct ljb_proc);
} pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u64);
} stacks SEC(".maps");

/* Stack ids whose raw frames user space asks for again (a name it could
 * not check when they first came: lib/bpf/core.c): the next sample of
 * one sends them.  nresend: the entries, so that a sample looks there
 * only while there are some. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u8);
} resend SEC(".maps");
__u32 nresend;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LJB_MAX_SYMS);
	__type(key, __u32);
	__type(value, struct ljb_sym);
} syms SEC(".maps");

/* The target's executable file mappings: a PC there without a symbol is
 * native code all the same (a stripped binary's internal function). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LJB_MAX_FILES);
	__type(key, __u32);
	__type(value, struct ljb_sym);
} files SEC(".maps");

/* A per-CPU array NAME of N __u64 counters. */
#define LJB_COUNTERS(name, n)						\
	struct {							\
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);		\
		__uint(max_entries, n);					\
		__type(key, __u32);					\
		__type(value, __u64);					\
	} name SEC(".maps")

LJB_COUNTERS(stats, LJB_N_MAX);

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");

#define LJB_HEAD 128

/* The walk's state and the event being built (per CPU: too big for the
 * BPF stack). */
struct walk {
	__u64 L, bot, frame, nextframe, cf, h;
	__s64 nextftsz;
	__u64 g, mainL;		/* mainL: ljb_proc's */
	__u32 n, skip, end, fault, dummy, done, resumes, ngxfault;
	__u32 topflags;
	__u64 toppc;
	/* a lua_State's fields, or a function's header, read at once
	   (read_lstate, func_head): at most LJB_HEAD bytes */
	__u8 hbuf[LJB_HEAD + 8];
	struct ljb_event ev;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk);
} scratch SEC(".maps");

/* Adds V to entry K of the per-CPU array MAP. */
static __always_inline void ljb_pcpu_add(void *map, __u32 k, __u64 v)
{
	__u64 *p = bpf_map_lookup_elem(map, &k);

	if (p)
		*p += v;
}

/* Adds V to KEY's value in the hash map MAP (created if new); 0, or -1
 * when MAP is full. */
static __always_inline int ljb_hadd(void *map, void *key, __u64 v)
{
	__u64 *p = bpf_map_lookup_elem(map, key);

	if (!p && bpf_map_update_elem(map, key, &v, BPF_NOEXIST) == 0)
		return 0;
	if (!p)
		p = bpf_map_lookup_elem(map, key);	/* another CPU made it */
	if (!p)
		return -1;
	__sync_fetch_and_add(p, v);
	return 0;
}

static __always_inline void count(__u32 k, __u64 v)
{
	ljb_pcpu_add(&stats, k, v);
}

#define MIX(h, v) (((h) ^ (__u64)(v)) * 0x100000001b3ULL)

#include "lj_read.bpf.h"

/* Binary search state over the syms map. */
struct symsearch {
	__u64 pc;
	__u32 lo, hi;
};

static long sym_step(__u64 i, void *ctx)
{
	struct symsearch *q = ctx;
	__u32 mid;
	struct ljb_sym *s;

	if (q->lo >= q->hi)
		return 1;
	mid = (q->lo + q->hi) / 2;
	s = bpf_map_lookup_elem(&syms, &mid);
	if (!s)
		return 1;
	if (q->pc < s->start)
		q->hi = mid;
	else
		q->lo = mid + 1;
	return 0;
}

/* The symbol range pc lies in: its index + 1, or 0. */
static __always_inline __u32 sym_find(__u64 pc, __u64 *start, int *vm)
{
	struct symsearch q = { pc, 0, nsyms };
	struct ljb_sym *s;
	__u32 k;

	if (q.hi > LJB_MAX_SYMS)
		q.hi = LJB_MAX_SYMS;
	bpf_loop(20, sym_step, &q, 0);
	if (q.lo == 0)
		return 0;
	k = q.lo - 1;
	s = bpf_map_lookup_elem(&syms, &k);
	if (!s || pc >= (s->end & ~LJB_SYM_VM))
		return 0;
	*start = s->start;
	*vm = (s->end & LJB_SYM_VM) != 0;
	return k + 1;
}

struct filesearch {
	__u64 pc;
	int found;
};

static long file_step(__u64 i, void *ctx)
{
	struct filesearch *q = ctx;
	__u32 k = i;
	struct ljb_sym *s;

	if (k >= nfiles || !(s = bpf_map_lookup_elem(&files, &k)))
		return 1;
	if (q->pc >= s->start && q->pc < s->end) {
		q->found = 1;
		return 1;
	}
	return 0;
}

/* Whether pc lies in an executable file mapping. */
static __always_inline int in_file(__u64 pc)
{
	struct filesearch q = { pc, 0 };

	bpf_loop(LJB_MAX_FILES, file_step, &q, 0);
	return q.found;
}

/* The thread that resumed coroutine L through coroutine.resume or a
 * coroutine.wrap function (the fast functions call lj_vm_resume, whose C
 * frame, the outermost of L's chain, lies CFRAME_SIZE below the
 * resumer's own C frame, in which the interpreter saved the resumer's
 * lua_State).  0 when L was not resumed that way (the main thread, lua_resume
 * from C), checked by the candidate's C frame being that address. */
/* The lua_State (cf_L) of C frame cf and its link to the previous C
 * frame (cf_prev, without its flags) in *UP, in one read (into w's
 * hbuf: the BPF stack is short). */
static __always_inline __u64 cframe_L(struct walk *w, __u64 cf, __u64 *up, __u32 *f)
{
	__u8 *b = w->hbuf;
	__u32 lo = MIN2(cfg.cf_L, cfg.cf_prev);

	if (read_head(w, cf + lo, MAX2(cfg.cf_L, cfg.cf_prev) + 8 - lo, f))
		return 0;
	__builtin_memcpy(up, b + ((cfg.cf_prev - lo) & (LJB_HEAD - 1)), 8);
	*up &= ~3ULL;
	return ref_at(b, cfg.cf_L - lo);
}

static __always_inline __u64 resumer(struct walk *w, __u64 L, __u32 *f)
{
	__u64 cf = rd64(L + cfg.L_cframe, f) & ~3ULL, prev;

	for (int i = 0; i < 8 && cf; i++) {
		prev = rd64(cf + cfg.cf_prev, f) & ~3ULL;
		if (!prev)
			break;
		cf = prev;
	}
	if (!cf || *f)
		return 0;
	for (int i = 0; i < 2; i++) {
		__u64 rcf = cf + cfg.cf_size[i & 1], rL, up;
		__u32 e = 0;
		rL = cframe_L(w, rcf, &up, &e);
		/* a C frame of the VM's links to 0 or to one above it on the
		   same stack; else this is a C caller's stack (lua_resume from
		   C: an OpenResty request), whose words are not read through
		   (a fault costs 10 us where the VM is not GC64: its 32-bit
		   references of 64-bit stack words point anywhere) */
		if (e || !rL || (rL & 7) || rL == L || (up && (up <= rcf || up - rcf > (1 << 20))) ||
		    rdref(rL + cfg.L_glref, &e) != w->g)
			continue;
		if ((rd64(rL + cfg.L_cframe, &e) & ~3ULL) == rcf && !e)
			return rL;
	}
	return 0;
}

/* The coroutine that resumed L in OpenResty, 0 when none can be proven.
 * ngx_lua resumes every request coroutine from C (lua_resume in
 * ngx_http_lua_run_thread): coroutine.resume, a coroutine.wrap function
 * and ngx.thread.spawn yield the parent to that scheduler, which then
 * resumes the child.  L's co ctx (L->exdata2, set before ngx_lua first
 * resumes L) must name L, and its parent's coroutine be a thread of this
 * VM, suspended (yielded, no C frame) in the C function that resumed L:
 * ngx.thread.spawn for a light thread (co_ref set) whose first value on
 * the parent's stack is L itself (the value spawn returns),
 * coroutine.resume or a wrap function for a user coroutine.  A light thread resumed later by the event loop fails that
 * check: its parent is elsewhere.  A fault sets *f (the sample is
 * skipped: a stale pointer in the chain). */
static __always_inline __u64 ngx_parent(struct walk *w, __u64 L, __u32 *f)
{
	__u64 co, pco, P, base, fn, cfn;
	struct lstate ps = {};
	__u32 gf;

	if (!cfg.ngx)
		return 0;
	co = rd64(L + cfg.L_exdata2, f);
	if (!co || *f || rd64(co + cfg.co_co, f) != L || *f)
		return 0;
	pco = rd64(co + cfg.co_parent, f);
	if (*f || !pco)
		return 0;
	P = rd64(pco + cfg.co_co, f);
	if (*f || !P || P == L || (gct_ffid(P, f) & 0xff) != 6 || *f)
		return 0;
	read_lstate(w, P, &ps, f);
	if (*f || rdref(P + cfg.L_glref, f) != w->g || ps.cframe ||
	    (rd32(P + cfg.L_status, f) & 0xff) != 1 || *f)
		return 0;
	base = ps.base;
	if (!base_ok(&ps, base, f) || *f)
		return 0;
	fn = frame_func(base - cfg.tv, f);
	gf = gct_ffid(fn, f);
	if (*f || (gf >> 8) != 1)
		return 0;
	cfn = rd64(fn + cfg.cf_f, f);
	if ((__s32)rd32(co + cfg.co_ref, f) != -2) {	/* not LUA_NOREF: a light thread */
		if (cfn != cfg.ngx_spawn)
			return 0;
		if ((cfg.gc64 ? (rd64(base, f) & 0x7fffffffffffULL) : rd32(base, f)) != L)
			return 0;
	} else if (cfn != cfg.ngx_resume && cfn != cfg.ngx_wrap_runner) {
		return 0;
	}
	return *f ? 0 : P;
}

/* At the bottom of a coroutine's stack: continue with its resumer's,
 * after a [resume] pseudo frame.  1 if the walk goes on. */
static __always_inline int resume_walk(struct walk *w)
{
	__u32 f = 0, n = w->n;
	__u64 rL;
	struct lstate ls = {};
	struct ljb_frame *r;

	if (n == 0 || n >= cfg.depth || n >= LJB_MAX_FRAMES || w->resumes >= LJB_MAX_RESUME)
		return 0;
	if (w->mainL && w->L == w->mainL)
		return 0;	/* (the main thread: never resumed) */
	/* OpenResty's parent first (the tapset's order): a coroutine it
	   proves was resumed from C saves resumer()'s reads of the C stack */
	rL = ngx_parent(w, w->L, &f);
	if (f) {
		w->ngxfault = 1;
		return 0;
	}
	if (!rL)
		rL = resumer(w, w->L, &f);
	if (!rL || f)
		return 0;
	r = &w->ev.f[n & (LJB_MAX_FRAMES - 1)];
	r->fn = r->key = r->pc = r->base = 0;
	r->ffid = LJB_FFID_RESUME;
	r->flags = LJB_PC_NONE;
	w->h = MIX(w->h, LJB_FFID_RESUME);
	w->n = n + 1;
	w->resumes++;
	w->L = rL;
	read_lstate(w, rL, &ls, &f);
	w->bot = ls.stack + cfg.fr2 * cfg.tv;
	w->frame = ls.base - cfg.tv;
	w->nextframe = 0;
	w->nextftsz = 0;
	w->topflags = LJB_PC_NONE;
	w->toppc = 0;
	w->skip = 0;
	w->cf = ls.cframe & ~3ULL;
	w->dummy = 1;	/* the coroutine's function has no caller here */
	return !f;
}

/* One step of the frame walk (the tapset's __lj_dumpstack loop body). */
struct loopctx {
	struct walk *w;
};

/* The chunknames of the stacks sent, by GCstr and hash (ljb_namekey):
 * what names a function freed before user space named its stack. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct ljb_namekey);
	__type(value, struct ljb_name);
} names SEC(".maps");

/* The line that frame R's pc executes (lj_debug_line), -1 if none or
 * not shown (lines=0). */
static __always_inline __s32 frame_line(const struct ljb_frame *r, __u32 *f)
{
	__u64 li = r->li & ((1ULL << 48) - 1), sz = r->li >> 48;
	__u64 bc = r->key + cfg.proto_size, pos;

	if (!cfg.lines || (r->flags & 3) != LJB_PC_INS || !li || r->pc < bc + 4)
		return -1;
	pos = (r->pc - bc) / 4 - 1;
	if (pos >= r->sizebc)
		return -1;	/* (a JLOOP's trace, the end: user space knows) */
	if (pos == 0)
		return (__s32)r->first;
	li += (pos - 1) * sz;
	return (__s32)r->first + (__s32)(sz == 1 ? (rd16(li, f) & 0xff) :
					  sz == 2 ? rd16(li, f) : rd32(li, f));
}

/* bpf_loop's step over the frames of a stack sent to user space: frame
 * i's line and chunkname hash, and the chunkname's bytes in names (read
 * only for the stacks sent, the bytes once per name). */
static long name_step(__u64 i, void *ctx)
{
	struct walk *w = ((struct loopctx *)ctx)->w;
	struct ljb_frame *r = &w->ev.f[i & (LJB_MAX_FRAMES - 1)];
	struct ljb_namekey k = { 0, 0, 0 };
	struct ljb_name v = { 0, 0 };
	__u8 *b = w->hbuf;
	__u32 f = 0, lo = MIN2(cfg.str_hash, cfg.str_len), n, len, at;

	r->strid = 0;
	r->line = -1;
	if (!r->chunk)
		return 0;
	r->line = frame_line(r, &f);
	if (read_head(w, r->chunk + lo, cfg.str_size + 1 - lo, &f))
		return 1;	/* (a fault leaves the rest 0: refused if gone) */
	__builtin_memcpy(&r->strid, b + ((cfg.str_hash - lo) & (LJB_HEAD - 1)), 4);
	k.chunk = r->chunk;
	k.strid = r->strid;
	if (bpf_map_lookup_elem(&names, &k))
		return 0;
	__builtin_memcpy(&len, b + ((cfg.str_len - lo) & (LJB_HEAD - 1)), 4);
	v.len = len;
	at = 0;
	if (len > LJB_NAME_MAX && b[(cfg.str_size - lo) & (LJB_HEAD - 1)] == '@') {
		v.tail = 1;
		at = len - LJB_NAME_MAX;
	}
	n = len < LJB_NAME_MAX ? len : LJB_NAME_MAX;
	tally(n);
	if (n && bpf_probe_read_user(v.b, n & (2 * LJB_NAME_MAX - 1), (void *)(r->chunk + cfg.str_size + at)))
		return 0;
	bpf_map_update_elem(&names, &k, &v, BPF_ANY);
	return 0;
}

static long walk_step(__u64 i, void *ctx)
{
	struct walk *w = ((struct loopctx *)ctx)->w;
	__u32 f = 0;
	__s64 ftsz;
	__u64 fn, prev, fpc = 0;
	__u32 gf;

	if (w->frame <= w->bot) {
		if (resume_walk(w))
			return 0;
		if (w->ngxfault) {
			w->fault = 1;
			w->done = 1;
			return 1;
		}
		w->end = w->n == 0 ? LJB_END_BROKEN : LJB_END_OK;
		w->done = 1;
		return 1;
	}
	fn = frame_pair(w->frame, &ftsz, &f);
	if (f)
		goto fault;
	if (fn == w->L) {
		w->dummy = 1;	/* lj_err_optype_call's dummy frame */
	} else if (((gf = func_head(w, fn, &fpc, &f)) & 0xff) != 8) {
		if (f)
			goto fault;
		w->end = LJB_END_BROKEN;
		w->done = 1;
		return 1;
	} else if (w->skip) {
		w->skip = 0;	/* the original slot of a vararg function */
	} else {
		__u32 n = w->n;
		struct ljb_frame *r;
		__u64 key = 0, pc = 0;
		__u32 ffid = gf >> 8, flags = LJB_PC_NONE;

		if (n >= LJB_MAX_FRAMES) {
			w->end = LJB_END_TRUNC;
			w->done = 1;
			return 1;
		}
		r = &w->ev.f[n & (LJB_MAX_FRAMES - 1)];
		r->chunk = r->li = 0;
		r->first = r->sizebc = 0;
		if (ffid == 1) {
			key = rd64(fn + cfg.cf_f, &f);
		} else if (ffid == 0) {
			key = fpc - cfg.proto_size;
			if (!w->nextframe) {
				flags = w->topflags;
				pc = w->toppc;
			} else if ((w->nextftsz & 3) == cfg.frame_lua) {
				flags = LJB_PC_INS;
				pc = (__u64)w->nextftsz;
				if (!cfg.gc64)
					pc &= 0xffffffffULL;
			} else if ((w->nextftsz & 7) == cfg.frame_cont) {
				flags = LJB_PC_INS;
				pc = frame_pc(w->nextframe - (1 + cfg.fr2) * cfg.tv, &f);
			} else if (w->cf) {
				/* below errfunc/gc/hook: the PC saved in the C
				   frame the walk has reached (debug_framepc) */
				flags = LJB_PC_INS;
				pc = rdref(w->cf + cfg.cf_pc, &f);
			}
			proto_id(w, key, r, &f);
			w->h = MIX(MIX(w->h, r->chunk), r->first);
			if (!cfg.lines && !w->nextframe)
				pc = 0;	/* the top position shows only as a line */
		}
		if (f)
			goto fault;
		r->fn = fn;
		r->key = key;
		r->pc = pc;
		r->base = w->frame + cfg.tv;
		r->ffid = ffid;
		r->flags = flags;
		if (n > 0 && !w->dummy)
			w->ev.f[(n - 1) & (LJB_MAX_FRAMES - 1)].flags |= LJB_F_CALLER;
		if (n >= cfg.depth) {
			/* cut: this frame, one past the last, only names it */
			w->h = MIX(w->h, key);
			w->end = LJB_END_TRUNC;
			w->done = 1;
			return 1;
		}
		w->h = MIX(MIX(MIX(w->h, key), pc), ffid);
		w->dummy = 0;
		w->n = n + 1;
	}
	if ((ftsz & 7) == cfg.frame_varg)
		w->skip = 1;
	if ((ftsz & 3) == cfg.frame_c && w->cf)
		w->cf = rd64(w->cf + cfg.cf_prev, &f) & ~3ULL;	/* passed its C frame */
	w->nextframe = w->frame;
	w->nextftsz = ftsz;
	if ((ftsz & 3) == cfg.frame_lua) {
		__u32 ins = rd32((__u64)ftsz - 4, &f);
		if (!cfg.gc64)
			ins = rd32((__u64)(__u32)ftsz - 4, &f);
		prev = w->frame - (1 + cfg.fr2 + ((ins >> 8) & 0xff)) * cfg.tv;
	} else {
		prev = w->frame - (ftsz & ~7LL);
	}
	if (f)
		goto fault;
	if (prev >= w->frame) {
		w->end = LJB_END_BROKEN;
		w->done = 1;
		return 1;
	}
	w->frame = prev;
	return 0;
fault:
	w->fault = 1;
	w->done = 1;
	return 1;
}


/*
 * trace_snap - the snapshot of trace T that covers the machine-code
 * offset OFS: the last one whose mcofs is at most OFS, the search
 * lj_trace_unwind (lj_trace.c) makes to unwind a C function that a trace
 * called.  Returns its index + 1 (its mcofs in *MCOFS), or 0; a fault
 * sets *f.  At most 17 reads (nsnap < 65536).
 */
struct snapsearch {
	__u64 snap, ofs;
	__u32 lo, hi, mcofs, f;
};

static long snap_step(__u64 i, void *ctx)
{
	struct snapsearch *q = ctx;
	__u32 mid, m;

	if (q->lo >= q->hi || q->f)
		return 1;
	mid = (q->lo + q->hi) / 2;
	m = rd16(q->snap + (__u64)mid * cfg.snap_size + cfg.snap_mcofs, &q->f);
	if (q->ofs < m) {
		q->hi = mid;
	} else {
		q->lo = mid + 1;
		q->mcofs = m;	/* (of the answer: the last mid taken) */
	}
	return 0;
}

static __always_inline __u32 trace_snap(__u64 T, __u64 ofs, __u32 *mcofs, __u32 *f)
{
	struct snapsearch q = { rd64(T + cfg.T_snap, f), ofs, 0, rd16(T + cfg.T_nsnap, f), 0, 0 };

	if (*f || !q.snap)
		return 0;
	bpf_loop(17, snap_step, &q, 0);
	if (q.f) {
		*f = 1;
		return 0;
	}
	*mcofs = q.mcofs;
	return q.lo;
}

/* What ljb_take() found (the program counts its events by it). */
enum { LJB_R_LUA, LJB_R_NOLUA, LJB_R_NOVM, LJB_R_SKIPPED, LJB_R_DROPPED };

/* Counts a Lua event by VM state (the tapset's luajit_vm_state_name). */
static __always_inline void count_state(__s32 vmstate)
{
	count(LJB_N_LUA, 1);
	if (vmstate > 0)
		count(LJB_N_JIT, 1);
	else if (vmstate == cfg.vmst_interp)
		count(LJB_N_INTERP, 1);
	else if (vmstate == cfg.vmst_c)
		count(LJB_N_C, 1);
	else if (vmstate == cfg.vmst_gc)
		count(LJB_N_GC, 1);
	else {
		count(LJB_N_VMOTHER, 1);
		if (vmstate == cfg.vmst_exit)
			count(LJB_N_EXIT, 1);
		else if (vmstate == cfg.vmst_record)
			count(LJB_N_RECORD, 1);
		else if (vmstate == cfg.vmst_opt)
			count(LJB_N_OPT, 1);
		else if (vmstate == cfg.vmst_asm)
			count(LJB_N_ASM, 1);
	}
}

/*
 * ljb_take - the Lua stack of the current task, a thread of the target
 * process PID whose pids entry is PROC, from the user registers the
 * kernel saved (an interrupt, a system call): the tapset's
 * luajit_find_G, luajit_cur_thread and __lj_dumpstack.  A Lua stack is
 * counted in stacks under its id (*ID), and a new id's raw frames go to
 * the ring buffer; with cfg.nowalk only the VM state is counted; with
 * cfg.noleaf (a uprobe at a C function's entry) the PC gives no leaf
 * frame (the tapset's ljw_stack drop).  Every
 * outcome is counted in stats (LJB_N_*), and so are the reads of the
 * target's memory it made (ljb_reads_end).  Returns LJB_R_*.
 */
static __always_inline int ljb_take_walk(__u32 pid, struct ljb_proc *proc, __u64 *id);

static __always_inline int ljb_take(__u32 pid, struct ljb_proc *proc, __u64 *id)
{
	__u64 r0 = ljb_reads_begin(), b0 = ljb_rbytes_begin();
	int r = ljb_take_walk(pid, proc, id);

	ljb_reads_end(r0, b0);
	return r;
}

static __always_inline int ljb_take_walk(__u32 pid, struct ljb_proc *proc, __u64 *id)
{
	__u32 zero = 0, f = 0, sf = 0, sz = 0;
	struct pt_regs *regs;
	struct lstate ls = {};
	struct walk *w;
	__u64 g, L, pc, T = 0, leaf = 0, base = 0, mc = 0, tofs = 0, spc = 0;
	__s32 vmstate, shown;
	__u32 snap = 0, sflags = 0;
	int vm = 0, nosym = 0;

	*id = 0;
	w = bpf_map_lookup_elem(&scratch, &zero);
	if (!w)
		goto skipped;
	g = proc->g;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	if (!g) {
		/* r14 is DISPATCH while the interpreter runs, else anything:
		   a value whose G's main thread has G as its global state is
		   kept for user space, which checks more before it trusts it */
		if (regs && cfg.g2disp) {
			__u64 cand = regs->r14 - cfg.g2disp, mL;
			mL = rdref(cand + cfg.G_mainthref, &f);
			if (!f && mL && rdref(mL + cfg.L_glref, &f) == cand && !f)
				proc->r14 = regs->r14;
		}
		count(LJB_N_NOVM, 1);
		return LJB_R_NOVM;
	}
	if (!regs)
		goto skip_base;
	L = rdref(g + cfg.G_cur_L, &f);
	if (f)
		goto skip_read;
	if (L)
		read_lstate(w, L, &ls, &f);
	if (!L || !ls.cframe) {
		if (f)
			goto skip_read;
		count(LJB_N_NOLUA, 1);
		return LJB_R_NOLUA;
	}
	vmstate = (__s32)rd32(g + cfg.G_vmstate, &f);
	if (f)
		goto skip_read;
	if ((cfg.nojit && vmstate > 0) ||
	    (cfg.nointerp && vmstate == cfg.vmst_interp)) {
		count(LJB_N_DROPPED, 1);
		return LJB_R_DROPPED;
	}
	if (cfg.nowalk) {
		count_state(vmstate);
		return LJB_R_LUA;
	}
	pc = regs->ip;
	if (vmstate > 0) {
		__u64 J = g + cfg.J_from_g;
		if ((__u32)vmstate < rd32(J + cfg.J_sizetrace, &f)) {
			T = rdref(rd64(J + cfg.J_trace, &f) + (__u64)vmstate * cfg.gcref, &f);
			if (T && (gct_ffid(T, &f) & 0xff) != 9)
				T = 0;
		}
		if (f)
			goto skip_read;
	}
	w->h = cfg.lines;
	if (T) {
		mc = rd64(T + cfg.T_mcode, &f);
		sz = rd32(T + cfg.T_szmcode, &f);
		if (f)
			goto skip_read;
		if (pc >= mc && pc < mc + sz) {
			tofs = pc - mc;	/* in the trace's own machine code */
			sflags = LJB_SNAP_NEAR;
			pc = 0;
		}
	}
	/* (cfg.noleaf: the PC is a C function's entry, not the VM's) */
	if (pc && !cfg.noleaf) {
		if (!sym_find(pc, &leaf, &vm))
			nosym = !in_file(pc);	/* e.g. machine code of a trace exit */
		w->h = MIX(w->h, leaf);
	}
	if (vmstate == cfg.vmst_interp && nosym) {
		count(LJB_N_F_NOSYM, 1);
		goto skipped;
	}
	w->topflags = LJB_PC_NONE;
	w->toppc = 0;
	shown = vmstate;
	if (vmstate > 0 && pc >= proc->exit_lo && pc < proc->exit_hi) {
		/* lj_vm_exit_interp before it sets vmstate
		   (dwarf/vmexit.h): the trace has ended and written the
		   frames it inlined; jit_base is the base it was entered
		   with, cleared just before vmstate is set.  The stack is
		   the interpreter's, from BASE (rdx), with PC (rbx) the
		   bytecode it runs next, and is named as the
		   interpreter's: no trace frame. */
		__u64 bx = regs->bx;
		base = regs->dx;
		if (!cfg.gc64) {
			base &= 0xffffffffULL;
			bx &= 0xffffffffULL;
		}
		if (!base_ok(&ls, base, &f)) {
			if (f)
				goto skip_read;
			goto skip_base;
		}
		T = 0;
		shown = cfg.vmst_interp;
		w->topflags = LJB_PC_INS;
		w->toppc = bx + 4;	/* as after the interpreter's fetch */
		goto walk;
	}
	if (vmstate > 0 && vm && !proc->exit_hi) {
		/* the VM's code with a trace's vmstate: a helper a trace
		   calls, or the exit above, which is not known */
		count(LJB_N_F_EXIT, 1);
		goto skipped;
	}
	if (vmstate > 0) {
		w->h = MIX(MIX(w->h, T), vmstate);
		if (T) {
			spc = rdref(T + cfg.T_startpc, &f);
			w->h = MIX(w->h, spc);
			if (!sflags && (cfg.noleaf || (pc && !vm && (leaf || !nosym)))) {
				/* a C function the trace called (through
				   others): the trace's call pushed its
				   return address just below the trace's
				   stack frame, which lies spadjust bytes
				   below the 16 in which BC_JLOOP saved r12
				   and r13 (vm_x64.dasc, POSIX), below the
				   interpreter's C frame (L->cframe) */
				__u64 cf = ls.cframe & ~3ULL;
				__u64 ra = rd64(cf - 16 - rd16(T + cfg.T_spadjust, &sf) - 8, &sf);
				if (!sf && ra > mc && ra <= mc + sz) {
					tofs = ra - 1 - mc;	/* the call */
					sflags = LJB_SNAP_CALL;
				}
			}
			if (sflags) {
				__u32 smc = 0, loop = rd32(T + cfg.T_mcloop, &sf);
				snap = trace_snap(T, tofs, &smc, &sf);
				if (snap && loop && tofs >= loop && smc < loop) {
					/* in a loop's body, before its first
					   snapshot (LuaJIT keeps one there only
					   where a guard needs it): its frames
					   are the loop's, not restorable */
					snap = 0;
					sflags = LJB_SNAP_LOOP;
				}
			}
			if (!snap && sflags != LJB_SNAP_LOOP)
				sflags = 0;
			/* a call is named by its own site (user space
			   picks the snapshot it returns to, when it can
			   tell: lib/bpf/snapshot.c) */
			w->h = MIX(MIX(w->h, snap), sflags == LJB_SNAP_CALL ? tofs + 1 : 0);
		}
		base = rdref(g + cfg.G_jit_base, &f);
		if (!base || !base_ok(&ls, base, &f))
			base = ls.base;
	} else {
		__u64 cf;
		if (vmstate == cfg.vmst_interp && vm) {
			__u64 bx = regs->bx;
			base = regs->dx;
			if (!cfg.gc64) {
				base &= 0xffffffffULL;
				bx &= 0xffffffffULL;
			}
			if (base_ok(&ls, base, &f)) {
				w->topflags = LJB_PC_INS;
				w->toppc = bx;
				goto walk;
			}
			if (f)
				goto skip_read;
			/* BASE is no frame of cur_L: the VM is between two
			 * threads (resume and yield set cur_L before they
			 * load BASE); the thread's saved L->base is its
			 * consistent state, as for C code (the tapset does
			 * the same) */
		}
		cf = ls.cframe & ~3ULL;
		base = ls.base;
		if (cf) {
			__u64 ins = rdref(cf + cfg.cf_pc, &f);
			if (ins != rdref(cf + cfg.cf_L, &f)) {
				w->topflags = LJB_PC_INS;
				w->toppc = ins;
			}
		}
	}
walk:
	if (f)
		goto skip_read;
	w->L = L;
	w->bot = ls.stack + cfg.fr2 * cfg.tv;
	if (f)
		goto skip_read;
	w->frame = base - cfg.tv;
	w->cf = ls.cframe & ~3ULL;
	w->nextframe = 0;
	w->nextftsz = 0;
	w->g = g;
	w->mainL = proc->mainL;
	w->n = w->skip = w->end = w->fault = w->dummy = w->done = w->resumes = 0;
	w->ngxfault = 0;
	{
		struct loopctx lc = { w };	/* bpf_loop wants a stack pointer */
		bpf_loop(LJB_MAX_ITER, walk_step, &lc, 0);
	}
	if (w->fault && w->ngxfault) {
		count(LJB_N_F_NGX, 1);
		goto skipped;
	}
	if (w->fault)
		goto skip_read;
	if (!w->done)
		w->end = w->n == 0 ? LJB_END_BROKEN : LJB_END_OK;
	w->h = MIX(w->h, w->end);
	if (!w->h)
		w->h = 1;
	{
		__u64 one = 1, *c = bpf_map_lookup_elem(&stacks, &w->h);
		int send = 0;
		if (c) {
			__sync_fetch_and_add(c, 1);
			if (nresend && bpf_map_delete_elem(&resend, &w->h) == 0) {
				__sync_fetch_and_add(&nresend, -1);	/* (no atomic sub in BPF) */
				send = 1;
			}
		} else if (bpf_map_update_elem(&stacks, &w->h, &one, BPF_NOEXIST) == 0) {
			send = 1;
		} else if ((c = bpf_map_lookup_elem(&stacks, &w->h))) {
			__sync_fetch_and_add(c, 1);
		} else {
			count(LJB_N_LOSTMAP, 1);
		}
		if (send) {
			__u32 n = w->n;
			__u64 size;
			if (n > LJB_MAX_FRAMES)
				n = LJB_MAX_FRAMES;
			w->ev.id = w->h;
			w->ev.g = g;
			w->ev.L = L;
			w->ev.T = T;
			w->ev.leaf = leaf;
			w->ev.mcode = mc;
			w->ev.snap = snap;
			w->ev.sflags = sflags;
			w->ev.tofs = (__u32)tofs;
			w->ev.startpc = spc;
			w->ev.vmstate = shown;
			w->ev.pid = pid;
			w->ev.nframes = n;
			w->ev.end = w->end;
			if (w->end == LJB_END_TRUNC && n < LJB_MAX_FRAMES)
				n++;	/* the caller of the last frame, for its name */
			{
				struct loopctx lc = { w };
				bpf_loop(n, name_step, &lc, 0);
			}
			size = sizeof(w->ev) - sizeof(w->ev.f) + n * sizeof(struct ljb_frame);
			if (size > sizeof(w->ev))
				size = sizeof(w->ev);
			if (bpf_ringbuf_output(&events, &w->ev, size, 0))
				count(LJB_N_LOSTRB, 1);
		}
	}
	*id = w->h;
	count_state(vmstate);
	if (vmstate > 0)	/* (T is 0 in a trace's exit: "elsewhere") */
		count(sflags == LJB_SNAP_CALL ? LJB_N_SNAP_CALL :
		      sflags == LJB_SNAP_NEAR ? LJB_N_SNAP_NEAR :
		      sflags == LJB_SNAP_LOOP ? LJB_N_SNAP_LOOP : LJB_N_SNAP_NONE, 1);
	return LJB_R_LUA;
skip_base:
	count(LJB_N_F_BASE, 1);
	goto skipped;
skip_read:
	count(LJB_N_F_READ, 1);
skipped:
	count(LJB_N_SKIPPED, 1);
	return LJB_R_SKIPPED;
}

#endif
