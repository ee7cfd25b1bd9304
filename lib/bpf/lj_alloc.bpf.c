// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lj_alloc.bpf.c - the eBPF side of lj-lua-alloc (--runtime=bpf).
 *
 * Uprobes on LuaJIT's allocator, internal functions that only a symbol
 * table names: lj_mem_newgco(L, size) (a new GC object) and
 * lj_mem_realloc(L, p, osz, nsz) (strings, table parts, stacks, buffers
 * and their growth; only growth counts), and lj_mem_grow(L, p, szp, lim,
 * esz) where the compiler inlined lj_mem_realloc into it (user space
 * attaches that one only then).  Without those symbols (a stripped
 * LuaJIT): the allocator both call, g->allocf(ud, p, osize, nsize),
 * whose address user space reads in the process.  Allocations are
 * sampled by bytes, as in the SystemTap sample (samples/lj-lua-alloc.sxx):
 * one sample per rate bytes on average, the gap to the next uniform in
 * [rate/2, 3*rate/2), each weighted rate bytes; here the budget is per
 * CPU.  Only a sample takes the Lua stack (ljb_take, lj_walk.bpf.h, with
 * cfg.noleaf) and the probe's return address (what allocates: its type,
 * named in user space; not at g->allocf); its bytes go to the key of both
 * (weights).  User space arms the probes in windows (attaching and
 * detaching them).
 */
#include "lj_walk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u64 rate;	/* bytes per sample */
const volatile __u32 multi;	/* --master: the process in each key */

/* Bytes per key (max_entries set to maxstacks). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ljb_akey);
	__type(value, __u64);
} weights SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ljb_budget);
} budget SEC(".maps");

LJB_COUNTERS(astats, LJB_A_MAX);

static __always_inline void acount(__u32 k, __u64 v)
{
	ljb_pcpu_add(&astats, k, v);
}

/* A gap to the next sample: uniform in [rate/2, 3*rate/2). */
static __always_inline __s64 gap(void)
{
	return rate / 2 + bpf_get_prandom_u32() % rate;
}

static long draw(__u64 i, void *ctx)
{
	struct ljb_budget *b = ctx;

	if (b->left > 0)
		return 1;
	b->left += gap();
	b->n++;		/* (here: the samples drawn) */
	return 0;
}

/* An allocation of BYTES bytes by the current task, whose registers at
 * the probed function's entry are CTX; RA: the key holds the probe's
 * return address (what allocates). */
static __always_inline int alloc(struct pt_regs *ctx, __u64 bytes, int ra)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32, zero = 0;
	struct ljb_proc *proc = bpf_map_lookup_elem(&pids, &pid);
	struct ljb_budget *b, d = {0};
	struct ljb_akey key = {0};
	__u64 t0, k;
	int r, timed;

	if (!proc || !(b = bpf_map_lookup_elem(&budget, &zero)))
		return 0;
	if (!b->n)
		b->left = gap();
	/* (timing costs as much as the common path: 1 in 64 timed) */
	timed = (++b->n & 63) == 0;
	t0 = timed ? bpf_ktime_get_ns() : 0;
	acount(LJB_A_ALLOCS, 1);
	acount(LJB_A_BYTES, bytes);
	b->left -= bytes;
	if (b->left > 0) {
		if (timed) {
			acount(LJB_A_FAST, bpf_ktime_get_ns() - t0);
			acount(LJB_A_FASTN, 1);
		}
		return 0;
	}
	if (!timed)
		t0 = bpf_ktime_get_ns();
	/* the samples this allocation spans, one per gap drawn (a large
	   allocation spans several) */
	d.left = b->left;
	bpf_loop(100000, draw, &d, 0);
	b->left = d.left;
	k = d.n;
	acount(LJB_A_SAMPLES, k);
	if (ra && bpf_probe_read_user(&key.ra, sizeof(key.ra), (void *)ctx->sp)) {
		acount(LJB_A_FAULTS, k);
		acount(LJB_A_NORA, 1);
		goto out;
	}
	key.pid = multi ? pid : 0;
	r = ljb_take(pid, proc, &key.id);
	if (r == LJB_R_NOLUA) {
		acount(LJB_A_NOLUA, k);
		key.id = 0;
	} else if (r == LJB_R_NOVM) {
		acount(LJB_A_NOVM, k);
		goto out;
	} else if (r != LJB_R_LUA) {
		acount(LJB_A_FAULTS, k);
		goto out;
	}
	if (ljb_hadd(&weights, &key, k * rate) < 0)
		acount(LJB_A_LOST, k * rate);
out:
	t0 = bpf_ktime_get_ns() - t0;
	acount(LJB_A_SLOW, t0);
	acount(LJB_A_SLOWN, 1);
	ljb_cost(t0);	/* (the sampled allocations' percentiles) */
	return 0;
}

/* GCSize: 64 bits with GC64, else 32. */
static __always_inline __u64 gcsize(unsigned long v)
{
	return cfg.gc64 ? v : (__u32)v;
}

SEC("uprobe")
int lj_newgco(struct pt_regs *ctx)
{
	return alloc(ctx, gcsize(ctx->si), 1);
}

SEC("uprobe")
int lj_realloc(struct pt_regs *ctx)
{
	__u64 osz = gcsize(ctx->dx), nsz = gcsize(ctx->cx);

	return nsz > osz ? alloc(ctx, nsz - osz, 1) : 0;
}

/* g->allocf(ud, p, osize, nsize) (lj_alloc_f, or the allocator given to
 * lua_newstate): sizes in size_t; its caller is lj_mem_newgco or
 * lj_mem_realloc, which tells no type (no return address kept). */
SEC("uprobe")
int lj_allocf(struct pt_regs *ctx)
{
	return ctx->cx > ctx->dx ? alloc(ctx, ctx->cx - ctx->dx, 0) : 0;
}

/* lj_mem_grow(L, p, szp, lim, esz): the growth of *szp elements of esz
 * bytes to twice as many, at least LJ_MIN_VECSZ (8), at most lim (lj_gc.c),
 * reallocated by the lj_mem_realloc inlined there. */
SEC("uprobe")
int lj_grow(struct pt_regs *ctx)
{
	__u32 sz = 0, lim = (__u32)ctx->cx, esz = (__u32)ctx->r8, nsz;

	if (bpf_probe_read_user(&sz, sizeof(sz), (void *)ctx->dx))
		return 0;
	nsz = sz << 1;
	if (nsz < 8)
		nsz = 8;
	if (nsz > lim)
		nsz = lim;
	return nsz > sz ? alloc(ctx, (__u64)(nsz - sz) * esz, 1) : 0;
}
