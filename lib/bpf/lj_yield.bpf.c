// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lj_yield.bpf.c - the eBPF side of ngx-lua-yield (--runtime=bpf).
 *
 * Two uprobes on LuaJIT's API, in the target's libluajit (or the
 * executable that links LuaJIT in): lua_yield(L, n), where
 * lua-nginx-module's C function that waits (ngx_http_lua_ngx_sleep, a
 * cosocket's receive...) yields the request's coroutine L, and
 * lua_resume(L, n), where it resumes it.  At lua_yield the Lua stack of
 * the coroutine is taken (ljb_take, lj_walk.bpf.h, with cfg.noleaf: its
 * innermost frame is the C function that yields, what it waited on) and
 * the yield opened (waits map, by process and coroutine); at the same
 * coroutine's next lua_resume its microseconds go to that stack
 * (weights), its kind and its process.  User space closes the yields
 * still open at the end.  The same rules as the SystemTap sample
 * (samples/ngx-lua-yield.sxx).
 */
#include "lj_wait.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ljb_ykey);
	__type(value, struct ljb_wait);
} waits SEC(".maps");

SEC("uprobe")
int lj_yield(struct pt_regs *ctx)
{
	__u64 pt = bpf_get_current_pid_tgid(), t0;
	__u32 pid = pt >> 32;
	struct ljb_ykey k = { .L = ctx->di, .pid = pid };
	struct ljb_wait w = { .pid = pid };
	struct ljb_proc *proc;
	int r;

	if (!(proc = bpf_map_lookup_elem(&pids, &pid)))
		return 0;
	t0 = bpf_ktime_get_ns();
	r = ljb_take(pid, proc, &w.id);
	/* (a coroutine that yields again before its resume was seen: the
	   sample overwrites it too) */
	ljb_wait_open(&waits, &k, &w, r, t0);
	return 0;
}

/* The first run of a request's coroutine is a lua_resume too: it has no
 * yield to end. */
SEC("uprobe")
int lj_resume(struct pt_regs *ctx)
{
	__u64 t0 = bpf_ktime_get_ns();
	struct ljb_ykey k = { .L = ctx->di, .pid = bpf_get_current_pid_tgid() >> 32 };
	struct ljb_wait *w = bpf_map_lookup_elem(&waits, &k), v;

	if (!w)
		return 0;
	v = *w;
	bpf_map_delete_elem(&waits, &k);
	ljb_wait_add(&v, t0 > v.since ? (t0 - v.since) / 1000 : 0);
	wcount(LJB_W_COST2, bpf_ktime_get_ns() - t0);
	wcount(LJB_W_COST2N, 1);
	return 0;
}
