/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/ngx_pool.h - nginx's cycle pool (ngx_cycle->pool), read from a
 * running worker's memory (resty-memory): the memory nginx keeps for the
 * life of its configuration (the modules' configurations, hash tables,
 * what a module allocates from the cycle's pool).
 *
 * A pool is a chain of blocks of one size (ngx_pool_t's d.next; each
 * block's d.end - block is that size, d.last the end of what is used in
 * it) and a list of large allocations (d.large: ngx_pool_large_t's next
 * and alloc), each a glibc malloc chunk whose size its header gives.  The
 * offsets come from nginx's debug info; an nginx without it is read with
 * those of nginx's module ABI on x86-64 (ngx_cycle_t's pool is its second
 * pointer; ngx_pool_t: d.last 0, d.end 8, d.next 16, max 32, large 56,
 * 80 bytes), accepted only when the pool's own fields agree: a first
 * block of NGX_CYCLE_POOL_SIZE (16 KB) whose max is what ngx_create_pool
 * sets for it.
 */
#ifndef STAPXX_BPF_NGX_POOL_H
#define STAPXX_BPF_NGX_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/alloc_chunks.h"
#include "dwarf/dwarf.h"

struct ljb_ngx_pool {
	struct ljb_range *r;	/* the blocks, then the large allocations'
				   chunks: malloc'd */
	size_t n, nblocks;
	uint64_t block;		/* each block's bytes */
	uint64_t used;		/* bytes used in the blocks (d.last - block) */
	uint64_t large;		/* bytes of the large allocations' chunks */
	int abi;		/* 1: read by nginx's module ABI (no debug info) */
};

/*
 * ljb_ngx_pool - reads the cycle pool of the nginx process PID, whose
 * ngx_cycle variable is at CYCLEP and ngx_pagesize at PAGESIZEP (0: not
 * known), with the layouts of DW (nginx's debug info, when it has some).
 * Reads only pages the process has present (ljb_read).  Returns 0 with
 * *OUT filled (free it with ljb_ngx_pool_free()), or -1 with *WHY set to
 * a static sentence that says why not (no message printed, nothing to
 * free).
 */
int ljb_ngx_pool(pid_t pid, struct dw_set *dw, uint64_t cyclep, uint64_t pagesizep,
		 struct ljb_ngx_pool *out, const char **why);

/* ljb_ngx_pool_free - frees what ljb_ngx_pool() allocated in P. */
void ljb_ngx_pool_free(struct ljb_ngx_pool *p);

#endif
