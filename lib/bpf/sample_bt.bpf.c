// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sample_bt.bpf.c - the eBPF side of sample-bt (--runtime=bpf): the
 * C-level stacks of a process, user space and kernel.
 *
 * A perf cpu-clock event per CPU runs bt_sample() in the interrupted
 * task's context.  For a target process (the core's pids map) it takes
 * the kernel stack when the CPU was in kernel mode (bpf_get_stackid: the
 * kernel's own unwinder), and the task's user registers with a copy of
 * its user stack, which user space unwinds by the binaries' CFI
 * (.eh_frame), as SystemTap's ubacktrace() does: the kernel's user
 * stack walk follows frame pointers, which distribution builds of nginx
 * and LuaJIT do not keep, and would print wrong stacks.  The copy goes
 * from the stack pointer to the top of what the stack holds (map
 * stacktop, by thread: just above the stack pointer the main thread
 * started with, which user space reads from /proc/PID/stat; higher, the
 * kernel may leave pages untouched, which a read in this context cannot
 * fault in, and it fails whole), at most
 * LJB_BT_STACK bytes; for a thread whose top is not known, the largest
 * of 16, 8, 4, 2 and 1 KB that reads.  No Lua stack is taken: the frame
 * walk of lj_walk.bpf.h is here for the maps the core shares (pids).
 */
#include "lj_walk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 bt_kernel = 1;	/* --arg kernel */
const volatile __u32 bt_user = 1;	/* --arg user */

/* the registers a sample copies (CO-RE: the kernel's struct pt_regs) */
struct pt_regs___bt {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, ip, sp;
} __attribute__((preserve_access_index));

/* a perf event program's context: struct bpf_perf_event_data, whose
   regs (x86-64's struct pt_regs, 21 words) come first */
struct bt_ctx {
	__u64 regs[21];
};

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 127 * sizeof(__u64));
} kstacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} btevents SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ljb_btev);
} btscratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LJB_B_MAX);
	__type(key, __u32);
	__type(value, __u64);
} btstats SEC(".maps");

/* the top of what each thread's stack holds, by thread id */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u64);
} stacktop SEC(".maps");

static __always_inline void bt_count(__u32 k, __u64 v)
{
	ljb_pcpu_add(&btstats, k, v);
}

/* Copies LEN bytes (at most LJB_BT_STACK) of the user stack at SP into
 * E; 0, or -1. */
static __always_inline int copy(struct ljb_btev *e, __u64 sp, __u64 len)
{
	if (len > LJB_BT_STACK)
		len = LJB_BT_STACK;
	if (len < 8)
		return -1;
	if (bpf_probe_read_user(e->stack, len, (const void *)sp) < 0)
		return -1;
	e->len = len;
	return 0;
}

SEC("perf_event")
int bt_sample(void *ctx)
{
	__u64 t0 = bpf_ktime_get_ns(), pt = bpf_get_current_pid_tgid(), *top, sp, cs;
	__u32 pid = pt >> 32, tid = (__u32)pt, zero = 0;
	struct pt_regs___bt *r;
	struct ljb_btev *e;
	__u64 size;

	if (!bpf_map_lookup_elem(&pids, &pid))
		return 0;
	e = bpf_map_lookup_elem(&btscratch, &zero);
	if (!e)
		return 0;
	bt_count(LJB_B_SAMPLES, 1);
	/* (the interrupted registers' cs: word 17 of x86-64's struct
	   pt_regs, the context's first member, which the verifier reads) */
	cs = ((struct bt_ctx *)ctx)->regs[17];
	e->pid = pid;
	e->tid = tid;
	e->kernel = (cs & 3) != 3;
	e->len = 0;
	e->kstack = -1;
	bt_count(e->kernel ? LJB_B_KERNEL : LJB_B_USER, 1);
	if (e->kernel && bt_kernel) {
		long id = bpf_get_stackid(ctx, &kstacks, 0);
		e->kstack = id >= 0 ? id : id - 1;
		if (id < 0)
			bt_count(LJB_B_NOKSTACK, 1);
	}
	if (bt_user) {
		r = (struct pt_regs___bt *)bpf_task_pt_regs(bpf_get_current_task_btf());
		if (!r)
			goto send;
		e->regs[0] = r->ax; e->regs[1] = r->dx; e->regs[2] = r->cx; e->regs[3] = r->bx;
		e->regs[4] = r->si; e->regs[5] = r->di; e->regs[6] = r->bp; e->regs[7] = r->sp;
		e->regs[8] = r->r8; e->regs[9] = r->r9; e->regs[10] = r->r10; e->regs[11] = r->r11;
		e->regs[12] = r->r12; e->regs[13] = r->r13; e->regs[14] = r->r14; e->regs[15] = r->r15;
		e->regs[16] = r->ip;
		sp = r->sp;
		top = bpf_map_lookup_elem(&stacktop, &tid);
		if (top && *top > sp) {
			copy(e, sp, *top - sp);
		} else if (copy(e, sp, 16384) < 0 && copy(e, sp, 8192) < 0 && copy(e, sp, 4096) < 0 &&
			   copy(e, sp, 2048) < 0) {
			copy(e, sp, 1024);
		}
		if (!e->len)
			bt_count(LJB_B_NOSTACK, 1);
	}
send:
	size = e->len;
	if (size > LJB_BT_STACK)
		size = LJB_BT_STACK;
	bt_count(LJB_B_BYTES, size);
	if (bpf_ringbuf_output(&btevents, e, __builtin_offsetof(struct ljb_btev, stack) + size, 0) < 0)
		bt_count(LJB_B_LOSTRB, 1);
	bt_count(LJB_B_COST, bpf_ktime_get_ns() - t0);
	return 0;
}
