// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lj_stacks.bpf.c - the eBPF side of lj-lua-stacks, lj-lua-bt and
 * lj-vm-states (--runtime=bpf).
 *
 * A perf cpu-clock event per CPU runs lj_sample() in the interrupted
 * task's context.  For a target process it takes the Lua stack from the
 * interrupted user registers (ljb_take, lj_walk.bpf.h): counted per stack
 * id in the stacks map, a new id's raw frames sent to user space, which
 * names them while the prototypes are alive.  With cfg.nowalk
 * (lj-vm-states) only the VM state is counted.  The samples of each
 * process are counted in psamples.
 */
#include "lj_walk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Samples per process: apart from pids, whose entries user space rewrites
   (setting g), which would undo an increment made in between. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} psamples SEC(".maps");

SEC("perf_event")
int lj_sample(void *ctx)
{
	__u64 t0 = bpf_ktime_get_ns(), id;
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct ljb_proc *proc = bpf_map_lookup_elem(&pids, &pid);

	if (!proc)
		return 0;
	count(LJB_N_SAMPLES, 1);
	ljb_hadd(&psamples, &pid, 1);
	ljb_take(pid, proc, &id);
	ljb_cost(bpf_ktime_get_ns() - t0);
	return 0;
}
