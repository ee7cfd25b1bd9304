/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/ngx_pool.c - see bpf/ngx_pool.h. */
#include "bpf/ngx_pool.h"
#include "base/wrapper.h"
#include "bpf/symbolize.h"

#include <stdlib.h>
#include <string.h>

#define CYCLE_POOL_SIZE 16384ULL	/* NGX_CYCLE_POOL_SIZE */
#define POOL_DATA 32ULL			/* sizeof(ngx_pool_data_t) */
#define MAX_BLOCKS (1U << 20)		/* 16 GB of 16 KB blocks */
#define MAX_LARGE (1U << 20)
#define MAX_CHUNK (1ULL << 40)

/* Where the pool's fields are. */
struct pool_ly {
	long long cycle_pool, last, end, next, max, large, size, l_next, l_alloc;
};

/* nginx's module ABI on x86-64: the layout every nginx since 0.7 has. */
static const struct pool_ly abi = { 8, 0, 8, 16, 32, 56, 80, 0, 8 };

/* The layout from nginx's debug info: 0, or -1 (none: no message). */
static int dwarf_layout(struct dw_set *dw, struct pool_ly *ly)
{
	int has = 0;

	if (dw_nodebug_nginx(dw) || dw_has_type(dw, "ngx_pool_t", NULL, &has) < 0 || !has)
		return -1;
	if (dw_offsetof(dw, "ngx_cycle_t", "pool", NULL, &ly->cycle_pool) < 0 ||
	    dw_offsetof(dw, "ngx_pool_t", "d.last", NULL, &ly->last) < 0 ||
	    dw_offsetof(dw, "ngx_pool_t", "d.end", NULL, &ly->end) < 0 ||
	    dw_offsetof(dw, "ngx_pool_t", "d.next", NULL, &ly->next) < 0 ||
	    dw_offsetof(dw, "ngx_pool_t", "max", NULL, &ly->max) < 0 ||
	    dw_offsetof(dw, "ngx_pool_t", "large", NULL, &ly->large) < 0 ||
	    dw_sizeof(dw, "ngx_pool_t", NULL, &ly->size) < 0 ||
	    dw_offsetof(dw, "ngx_pool_large_t", "next", NULL, &ly->l_next) < 0 ||
	    dw_offsetof(dw, "ngx_pool_large_t", "alloc", NULL, &ly->l_alloc) < 0)
		return -1;
	return 0;
}

static uint64_t rd(pid_t pid, uint64_t a, int *bad)
{
	uint64_t v = 0;

	if (!*bad && ljb_read(pid, a, &v, sizeof(v)) < 0)
		*bad = 1;
	return v;
}

static void add(struct ljb_ngx_pool *p, uint64_t lo, uint64_t hi)
{
	p->r = xrealloc(p->r, (p->n + 1) * sizeof(*p->r));
	p->r[p->n++] = (struct ljb_range){ lo, hi };
}

int ljb_ngx_pool(pid_t pid, struct dw_set *dw, uint64_t cyclep, uint64_t pagesizep,
		 struct ljb_ngx_pool *out, const char **why)
{
	struct ljb_ngx_pool p = { 0 };
	struct pool_ly ly = abi;
	uint64_t cycle, pool, b, l, max, want;
	int bad = 0;
	unsigned k;

	p.abi = dwarf_layout(dw, &ly) < 0;
	cycle = rd(pid, cyclep, &bad);
	pool = cycle ? rd(pid, cycle + (uint64_t)ly.cycle_pool, &bad) : 0;
	if (bad || !pool) {
		*why = "ngx_cycle's pool could not be read";
		return -1;
	}
	p.block = rd(pid, pool + (uint64_t)ly.end, &bad) - pool;
	max = rd(pid, pool + (uint64_t)ly.max, &bad);
	/* ngx_create_pool: max = min(size - sizeof(ngx_pool_t), ngx_pagesize - 1) */
	want = (pagesizep ? rd(pid, pagesizep, &bad) : 4096) - 1;
	if (p.block - (uint64_t)ly.size < want)
		want = p.block - (uint64_t)ly.size;
	if (bad || p.block <= (uint64_t)ly.size || p.block > MAX_CHUNK || max != want ||
	    (p.abi && p.block != CYCLE_POOL_SIZE)) {
		*why = p.abi ? "its fields are not those of nginx's module ABI as stap++ knows it, "
			       "and nginx has no debug info to say where they are"
			     : "its fields do not hold a pool as ngx_create_pool makes one";
		return -1;
	}
	/* the blocks: each of the first one's size, d.last inside it */
	for (b = pool, k = 0; b && k < MAX_BLOCKS; k++) {
		uint64_t last = rd(pid, b + (uint64_t)ly.last, &bad),
			 end = rd(pid, b + (uint64_t)ly.end, &bad);
		if (bad || end - b != p.block || last < b + POOL_DATA || last > end)
			break;
		add(&p, b, end);
		p.used += last - b;
		b = rd(pid, b + (uint64_t)ly.next, &bad);
	}
	p.nblocks = p.n;
	/* the large allocations: glibc chunks (size | flags at alloc - 8);
	   one freed by ngx_pfree leaves its entry with alloc NULL */
	for (l = rd(pid, pool + (uint64_t)ly.large, &bad), k = 0; b == 0 && l && !bad && k < MAX_LARGE; k++) {
		uint64_t a = rd(pid, l + (uint64_t)ly.l_alloc, &bad);
		if (a && !bad) {
			uint64_t head = rd(pid, a - 8, &bad), size = head & ~7ULL;
			if (bad || size < 32 || size > MAX_CHUNK)
				break;
			/* (a chunk starts 16 bytes before its memory; an
			   mmapped one's size counts from there too) */
			add(&p, a - 16, a - 16 + size);
			p.large += size;
		}
		l = rd(pid, l + (uint64_t)ly.l_next, &bad);
	}
	if (b || bad || l) {
		free(p.r);
		*why = "its blocks or large allocations changed while they were read, or were not resident";
		return -1;
	}
	*out = p;
	return 0;
}

void ljb_ngx_pool_free(struct ljb_ngx_pool *p)
{
	free(p->r);
	p->r = NULL;
	p->n = 0;
}
