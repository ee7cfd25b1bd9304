// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lj_fio.bpf.c - the eBPF side of lj-lua-fio (--runtime=bpf).
 *
 * sys_enter and sys_exit (tp_btf) run on every system call of the
 * machine.  For read, write, pread64 and pwrite64 (x86-64 numbers 0, 1,
 * 17, 18) of a target process on a regular file (the descriptor's file
 * in the task's file table; sockets, pipes, terminals and devices are not
 * file I/O), the Lua stack is taken at the call from the user registers
 * (ljb_take, lj_walk.bpf.h) and the call opened (calls map); at its
 * return its microseconds and bytes go to its stack (weights, by stack
 * id and, with files=1, the file's name).  The same rules as the
 * SystemTap sample (samples/lj-lua-fio.sxx).
 */
#include "lj_walk.bpf.h"
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

/* The fields of the kernel's types read here (CO-RE). */
struct qstr {
	const unsigned char *name;
} __attribute__((preserve_access_index));

struct dentry {
	struct qstr d_name;
} __attribute__((preserve_access_index));

struct path {
	struct dentry *dentry;
} __attribute__((preserve_access_index));

struct inode {
	unsigned short i_mode;
} __attribute__((preserve_access_index));

struct file {
	struct inode *f_inode;
	struct path f_path;
} __attribute__((preserve_access_index));

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));

struct task_struct {
	struct files_struct *files;
} __attribute__((preserve_access_index));

const volatile __u32 by_bytes;		/* weight=bytes (else us) */
const volatile __u32 with_files;	/* files=1: the file's name as leaf */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct ljb_call);
} calls SEC(".maps");

/* The weight per stack id and file name (max_entries set to maxstacks). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ljb_fkey);
	__type(value, __u64);
} weights SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LJB_F_MAX);
	__type(key, __u32);
	__type(value, __u64);
} fstats SEC(".maps");

/* The call being built (per CPU: too big for the BPF stack with the walk). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ljb_call);
} cscratch SEC(".maps");

static __always_inline void fcount(__u32 k, __u64 v)
{
	ljb_pcpu_add(&fstats, k, v);
}

/* The regular file of descriptor FD of the current task, 0 if it is none
 * (the sample's __fio_file and its S_IFREG check). */
static __always_inline struct file *reg_file(long fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file *file = 0, **fds;
	unsigned short mode;

	if (!fdt || fd < 0 || fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&file, sizeof(file), fds + fd) || !file)
		return 0;
	mode = BPF_CORE_READ(file, f_inode, i_mode);
	return (mode & 0170000) == 0100000 ? file : 0;
}

SEC("tp_btf/sys_enter")
int lj_enter(__u64 *ctx)
{
	struct pt_regs *regs = (struct pt_regs *)ctx[0];
	long nr = (long)ctx[1];
	__u64 pt, t0;
	__u32 pid, tid, zero = 0;
	struct ljb_proc *proc;
	struct ljb_call *c;
	struct file *file;

	if (nr != 0 && nr != 1 && nr != 17 && nr != 18)
		return 0;
	pt = bpf_get_current_pid_tgid();
	pid = pt >> 32;
	tid = (__u32)pt;
	if (!(proc = bpf_map_lookup_elem(&pids, &pid)))
		return 0;
	t0 = bpf_ktime_get_ns();
	file = reg_file((long)regs->di);
	if (!file) {
		fcount(LJB_F_OTHER, 1);
		return 0;
	}
	c = bpf_map_lookup_elem(&cscratch, &zero);
	if (!c)
		return 0;
	c->pid = pid;
	c->kind = ljb_take(pid, proc, &c->id);
	if (c->kind == LJB_R_DROPPED)
		c->kind = LJB_K_SKIPPED;
	c->name[0] = 0;
	if (with_files)
		bpf_probe_read_kernel_str(c->name, sizeof(c->name),
					  BPF_CORE_READ(file, f_path.dentry, d_name.name));
	c->since = bpf_ktime_get_ns();
	bpf_map_update_elem(&calls, &tid, c, BPF_ANY);
	fcount(LJB_F_COST, c->since - t0);
	fcount(LJB_F_COSTN, 1);
	ljb_cost(c->since - t0);	/* (its percentiles) */
	return 0;
}

SEC("tp_btf/sys_exit")
int lj_exit(__u64 *ctx)
{
	long ret = (long)ctx[1];
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), kind;
	struct ljb_call *c = bpf_map_lookup_elem(&calls, &tid);
	struct ljb_fkey k = {0};
	__u64 us, bytes, w;

	if (!c)
		return 0;
	us = (bpf_ktime_get_ns() - c->since) / 1000;
	bytes = ret > 0 ? ret : 0;
	kind = c->kind;
	k.id = c->id;
	__builtin_memcpy(k.name, c->name, sizeof(k.name));
	bpf_map_delete_elem(&calls, &tid);
	if (kind >= LJB_K_SHORT)
		return 0;
	fcount(LJB_F_N(kind), 1);
	fcount(LJB_F_US(kind), us);
	fcount(LJB_F_BYTES(kind), bytes);
	if (kind != LJB_K_LUA || (by_bytes && !bytes))
		return 0;
	w = by_bytes ? bytes : us;
	if (ljb_hadd(&weights, &k, w) < 0)
		fcount(LJB_F_LOST, w);
	return 0;
}
