// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lj_exectime.bpf.c - the eBPF side of ngx-lua-exec-time (--runtime=bpf).
 *
 * A uprobe and a uretprobe on each Lua handler of lua-nginx-module that
 * the session times (ngx_http_lua_content_handler, _rewrite_handler,
 * _access_handler: exported functions, in nginx or in its dynamic
 * ngx_http_lua_module.so).  The entry keeps the time by thread (map
 * starts); the return measures the call, from the same clock, and files
 * it under its handler (per-CPU array xstats, a struct ljb_exec) by its
 * return value: NGX_DECLINED (-5) declined, NGX_DONE (-4) or NGX_AGAIN
 * (-2) yielded, NGX_ERROR (-1) an error, anything else (NGX_OK, an HTTP
 * status) ran to the end.  The same rules as the SystemTap sample
 * (samples/ngx-lua-exec-time.sxx).  No Lua stack is taken: the frame walk
 * of lj_walk.bpf.h is here for the maps the core shares (pids).
 */
#include "lj_walk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct ljb_xstart);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LJB_X_NH);
	__type(key, __u32);
	__type(value, struct ljb_exec);
} xstats SEC(".maps");

/* The bucket of US microseconds in struct ljb_exec's hist. */
static __always_inline __u32 bucket(__u64 us)
{
	__u32 b = 1;

	if (!us)
		return 0;
	if (us >> 32) { b += 32; us >>= 32; }
	if (us >> 16) { b += 16; us >>= 16; }
	if (us >> 8) { b += 8; us >>= 8; }
	if (us >> 4) { b += 4; us >>= 4; }
	if (us >> 2) { b += 2; us >>= 2; }
	if (us >> 1) b += 1;
	return b;
}

static __always_inline int enter(__u32 h)
{
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 pid = pt >> 32;
	struct ljb_xstart s = { .h = h };

	if (!bpf_map_lookup_elem(&pids, &pid))
		return 0;
	s.t0 = bpf_ktime_get_ns();
	bpf_map_update_elem(&starts, &pt, &s, BPF_ANY);
	return 0;
}

static __always_inline int leave(__u32 h, long rc)
{
	__u64 now = bpf_ktime_get_ns(), pt = bpf_get_current_pid_tgid(), us;
	struct ljb_xstart *s = bpf_map_lookup_elem(&starts, &pt);
	struct ljb_exec *x = bpf_map_lookup_elem(&xstats, &h);
	__u32 k, b;

	if (!x)
		return 0;
	if (!s || s->h != h) {
		__u32 pid = pt >> 32;
		if (bpf_map_lookup_elem(&pids, &pid))
			x->unseen++;
		return 0;
	}
	us = now > s->t0 ? (now - s->t0) / 1000 : 0;
	bpf_map_delete_elem(&starts, &pt);
	k = rc == -5 ? LJB_X_DECLINED : rc == -4 || rc == -2 ? LJB_X_YIELDED :
	    rc == -1 ? LJB_X_ERROR : LJB_X_DONE;
	if (!x->calls || us < x->min_us)
		x->min_us = us;
	if (us > x->max_us)
		x->max_us = us;
	x->calls++;
	x->sum_us += us;
	x->kind[k & (LJB_X_NKIND - 1)]++;
	b = bucket(us);
	if (b < LJB_X_BUCKETS)
		x->hist[b]++;
	x->cost_ns += bpf_ktime_get_ns() - now;
	x->cost_n++;
	return 0;
}

SEC("uprobe")
int content_in(struct pt_regs *ctx) { return enter(LJB_X_CONTENT); }
SEC("uretprobe")
int content_out(struct pt_regs *ctx) { return leave(LJB_X_CONTENT, (long)ctx->ax); }
SEC("uprobe")
int rewrite_in(struct pt_regs *ctx) { return enter(LJB_X_REWRITE); }
SEC("uretprobe")
int rewrite_out(struct pt_regs *ctx) { return leave(LJB_X_REWRITE, (long)ctx->ax); }
SEC("uprobe")
int access_in(struct pt_regs *ctx) { return enter(LJB_X_ACCESS); }
SEC("uretprobe")
int access_out(struct pt_regs *ctx) { return leave(LJB_X_ACCESS, (long)ctx->ax); }
