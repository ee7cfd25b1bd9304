// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lj_offcpu.bpf.c - the eBPF side of lj-lua-off-cpu (--runtime=bpf).
 *
 * sched_switch (tp_btf) runs on every context switch of the machine in the
 * context of the task switched out.  When it is a thread of a target
 * process and blocks (its state is not runnable), its Lua stack is taken
 * from the user registers the kernel saved at the system call (ljb_take,
 * lj_walk.bpf.h) and the wait opened (waits map).  When a thread with an
 * open wait is switched in, the wait's microseconds are added to its
 * stack (weights), its kind and its process.  User space closes the
 * waits still open at the end.  The same rules as the SystemTap sample
 * (samples/lj-lua-off-cpu.sxx).
 */
#include "lj_wait.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* The fields of the kernel's task_struct read here (CO-RE). */
struct task_struct {
	int pid;
} __attribute__((preserve_access_index));

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct ljb_wait);
} waits SEC(".maps");

/* Ends the wait W of thread TID at NOW (the sample's __offcpu_end). */
static __always_inline void wait_end(__u32 tid, struct ljb_wait *w, __u64 now)
{
	struct ljb_wait v = *w;

	bpf_map_delete_elem(&waits, &tid);
	ljb_wait_add(&v, (now - v.since) / 1000);
}

SEC("tp_btf/sched_switch")
int lj_switch(__u64 *ctx)
{
	struct task_struct *next = (struct task_struct *)ctx[2];
	__u32 prev_state = (__u32)ctx[3];
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 pid = pt >> 32, tid = (__u32)pt, ntid;
	struct ljb_proc *proc;
	struct ljb_wait *o;

	/* (a thread that exits is not waiting: TASK_DEAD, EXIT_ZOMBIE,
	   EXIT_DEAD, <linux/sched.h>) */
	if (prev_state != 0 && !(prev_state & (0x80 | 0x10 | 0x20)) &&
	    (proc = bpf_map_lookup_elem(&pids, &pid))) {
		__u64 t0 = bpf_ktime_get_ns();
		struct ljb_wait w = { .pid = pid };
		int r = ljb_take(pid, proc, &w.id);

		/* (a wait still open: the program did not see the thread
		   switched in; it happens under load, 1 in 1,000-10,000
		   waits on this host's kernel, cause unknown) */
		ljb_wait_open(&waits, &tid, &w, r, t0);
	}
	ntid = next->pid;
	o = bpf_map_lookup_elem(&waits, &ntid);
	if (o)
		wait_end(ntid, o, bpf_ktime_get_ns());
	return 0;
}
