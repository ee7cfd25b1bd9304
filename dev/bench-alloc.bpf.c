// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-alloc.bpf.c - the least a uprobe can do: count its hits.  One
 * program, attached to each probed function with its index as the attach
 * cookie; hits[cookie] counts the traps.  dev/bench-alloc builds it and
 * times a workload with and without it, to price one uprobe trap natively.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

SEC("uprobe")
int count_hit(void *ctx)
{
	__u32 k = (__u32)bpf_get_attach_cookie(ctx);
	__u64 *v = bpf_map_lookup_elem(&hits, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
