/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/resty_memory.c - see bpf/resty_memory.h.
 *
 * Each mapping of /proc/PID/smaps belongs to a part by what it is (a
 * file's code and data, [heap], [stack], shared memory, anonymous).
 * Ranges that the target's own bookkeeping names (claims) override that:
 * LuaJIT's allocator segments (g->allocd's seg list), blocks mapped one
 * by one with a LuaJIT or glibc chunk header at their start, glibc's
 * other arenas (a heap_info at a 64 MB boundary), nginx's shared zones
 * (the slab pool's log_ctx names them), thread stacks (a thread's stack
 * pointer).  A mapping wholly one part takes its Rss from smaps; one
 * split by claims is counted page by page from pagemap.  LuaJIT's
 * segments are then split by their chunks (bpf/alloc_chunks.h): the
 * resident pages wholly inside free chunks are the allocator's free part.
 * Last, nginx's cycle pool (bpf/ngx_pool.h) takes its bytes in resident
 * pages from the parts that held them (glibc's, mostly). */
#include "bpf/resty_memory.h"
#include "base/error.h"
#include "bpf/alloc_chunks.h"
#include "bpf/ngx_pool.h"
#include "bpf/symtab.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "bpf/vm.h"
#include "target/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096ULL
#define MAX_PARTS 256
#define MAX_CLAIMS 4096
#define MAX_SCAN (1L << 18)	/* pages read for chunk headers in one mapping */
#define GLIBC_HEAP_MAX (64ULL << 20)	/* HEAP_MAX_SIZE on 64-bit */
#define LJ_FOOT_PAD 32		/* LuaJIT's DIRECT_FOOT_PAD: four size_t */
#define MAX_SEGS 256
#define CHUNK_TRIES 3		/* walks of the chunks of a process that allocates */
#define SEGS_PART "LuaJIT: allocator segments"
#define POOL_PART "nginx: cycle pool"

struct vma {
	uint64_t lo, hi, rss_kb;
	char perms[8];
	char *path;		/* "" for anonymous */
};

struct part {
	char *name;
	uint64_t rss, vsz;	/* bytes */
};

struct claim {
	uint64_t lo, hi;
	int part;
};

struct mem {
	pid_t pid;
	struct vma *v;
	size_t nv;
	struct part p[MAX_PARTS];
	size_t np;
	struct claim c[MAX_CLAIMS];
	size_t nc;
	int pagemap;		/* fd */
	uint64_t gc_total, mcode, segs;	/* LuaJIT's counts, 0: none */
	struct ljb_range seg[MAX_SEGS];	/* LuaJIT's allocator segments */
	size_t nseg;
	struct ljb_chunks ch;	/* their chunks */
	int chunks;		/* walks of them: 1..CHUNK_TRIES when one read a
				   consistent heap, else CHUNK_TRIES + 1 */
	double chunk_ms;	/* the time the walks took */
	int layouts;		/* LuaJIT's layouts are known */
	int own_alloc;		/* its VM allocates with LuaJIT's allocator */
	int lj;			/* its VM was found */
	struct ljb_symtab *st;	/* its symbols, NULL if they could not be read */
	int ngx;		/* 1: nginx (ngx_cycle); 2: its cycle pool was read */
	struct ljb_ngx_pool pool;
	const char *no_pool;	/* why not, when ngx == 1 */
};

static int part_of(struct mem *m, const char *name)
{
	for (size_t i = 0; i < m->np; i++)
		if (strcmp(m->p[i].name, name) == 0)
			return (int)i;
	if (m->np == MAX_PARTS)
		return (int)m->np - 1;	/* (the last one takes the rest) */
	m->p[m->np].name = xstrdup(name);
	return (int)m->np++;
}

static void claim(struct mem *m, uint64_t lo, uint64_t hi, const char *name)
{
	if (m->nc < MAX_CLAIMS && hi > lo)
		m->c[m->nc++] = (struct claim){ lo, hi, part_of(m, name) };
}

static int read_smaps(struct mem *m)
{
	char path[64], line[4096], file[4096];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)m->pid);
	if (!(f = fopen(path, "re")))
		return error("cannot read '%s': %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, kb;
		char perms[8];
		file[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %4095[^\n]", &lo, &hi, perms, file) >= 3) {
			m->v = xrealloc(m->v, (m->nv + 1) * sizeof(*m->v));
			m->v[m->nv++] = (struct vma){ lo, hi, 0, "", xstrdup(file) };
			memcpy(m->v[m->nv - 1].perms, perms, sizeof(perms));
		} else if (m->nv && sscanf(line, "Rss: %llu kB", &kb) == 1) {
			m->v[m->nv - 1].rss_kb = kb;
		}
	}
	fclose(f);
	if (!m->nv)
		return error("process %d has no mappings (a kernel thread, or it exited)", (int)m->pid);
	return 0;
}

static uint64_t rd64(struct mem *m, uint64_t a, int *bad)
{
	uint64_t v = 0;

	if (ljb_read(m->pid, a, &v, sizeof(v)) < 0)
		*bad = 1;
	return v;
}

/* LuaJIT: its VM (G), the segments of its own allocator, the JIT's code. */
static void luajit_claims(struct mem *m, struct dw_set *dw, const char *exec)
{
	struct ljb_layout ly;
	struct ljb_symtab *st = m->st;
	uint64_t g;
	int bad = 0, k, has = 0;

	/* (a process without LuaJIT has a breakdown too) */
	if (dw_has_type(dw, "lua_State", NULL, &has) < 0 || !has)
		return;
	m->layouts = 1;
	if (ljb_layout_load(dw, exec, &ly) < 0 || !st)
		return;
	g = ljb_find_G(m->pid, &ly, st);
	if (!g || !ljb_vm_check_G(m->pid, &ly, st, g))
		g = ljb_vm_scan(m->pid, &ly, st);
	if (!g)
		return;
	/* (GCSize: 64 bits with GC64, else 32) */
	m->gc_total = ly.k.gc64 ? rd64(m, g + ly.G_gc_total, &bad)
				: (uint32_t)rd64(m, g + ly.G_gc_total, &bad);
	/* (jit_State is in GG_State beside global_State) */
	m->mcode = rd64(m, g + ly.k.J_from_g + ly.J_szallmcarea, &bad);
	k = ljb_alloc_segments(m->pid, &ly, st, g, m->seg, MAX_SEGS);
	m->own_alloc = k >= 0;
	if (k == -2)
		bad = 1;
	for (int i = 0; i < k; i++)
		claim(m, m->seg[i].lo, m->seg[i].hi, SEGS_PART);
	m->nseg = k > 0 ? k : 0;
	m->segs = m->nseg;
	m->lj = !bad || k > 0;
}

static int anonymous(const struct vma *v)
{
	return v->path[0] == 0;
}

/* The end of the claim that holds address A, or 0. */
static uint64_t claimed(const struct mem *m, uint64_t a)
{
	for (size_t i = 0; i < m->nc; i++)
		if (m->c[i].lo <= a && m->c[i].hi > a)
			return m->c[i].hi;
	return 0;
}

/* Blocks mapped one by one in an anonymous private mapping V (which the
 * kernel may have merged with its neighbours), each starting with its
 * allocator's chunk header: LuaJIT's (lj_alloc.c direct_alloc:
 * prev_foot = offset | IS_DIRECT_BIT, head = size | CINUSE_BIT) and
 * glibc's (prev_size 0, size | IS_MMAPPED).  Page by page, over what is
 * claimed already and over each block found; at most MAX_SCAN pages. */
static void block_claims(struct mem *m, const struct vma *v)
{
	uint64_t a = v->lo, end;

	for (long n = 0; n < MAX_SCAN && a + PAGE <= v->hi; n++) {
		uint64_t h[2], size, len = PAGE;
		if ((end = claimed(m, a))) {
			a = end;
			continue;
		}
		if (ljb_read(m->pid, a, h, sizeof(h)) < 0) {
			a += PAGE;	/* (not present: a block's header page is written) */
			continue;
		}
		size = h[1] & ~7ULL;
		if (h[0] == 1 && (h[1] & 7) == 2 && size && (size + LJ_FOOT_PAD) % PAGE == 0 &&
		    a + size + LJ_FOOT_PAD <= v->hi) {
			/* LuaJIT: psize = mapped - offset (0) - DIRECT_FOOT_PAD */
			len = size + LJ_FOOT_PAD;
			claim(m, a, a + len, "LuaJIT: large blocks (mapped one by one)");
		} else if (h[0] == 0 && (h[1] & 7) == 2 && size && size % PAGE == 0 && a + size <= v->hi) {
			len = size;
			claim(m, a, a + len, "glibc malloc: large blocks (mmap)");
		}
		a += len;
	}
}

/* A glibc arena other than the main one: its heaps start at a multiple
 * of HEAP_MAX_SIZE with a heap_info whose size is the readable part. */
static void arena_claims(struct mem *m, const struct vma *v)
{
	uint64_t h[3];

	if (v->lo % GLIBC_HEAP_MAX || ljb_read(m->pid, v->lo, h, sizeof(h)) < 0)
		return;
	/* heap_info: ar_ptr, prev, size.  An arena's first heap holds the
	   arena right after its heap_info; a later one names the heap
	   before it, at another boundary. */
	if (h[2] < PAGE || h[2] > GLIBC_HEAP_MAX || h[2] > v->hi - v->lo)
		return;
	if ((h[0] > v->lo && h[0] < v->lo + 128 && !h[1]) ||
	    (h[0] && h[0] % 8 == 0 && h[1] && h[1] % GLIBC_HEAP_MAX == 0))
		claim(m, v->lo, v->hi, "glibc malloc: other arenas");
}

/* The parent of process PID, 0 if unknown. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int pp = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return 0;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		sscanf(p + 1, " %*c %d", &pp);
	fclose(f);
	return pp;
}

/* An nginx shared zone in a shared mapping: its slab pool's log_ctx
 * (within the first 256 bytes) points at the zone's description, e.g.
 * " in lua_shared_dict zone \"dogs\"", inside the zone.  The name, or
 * NULL.  The master made the zone and wrote it before it forked the
 * worker, which may never have touched that page: the parent is read
 * where the process has it not (ljb_read reads only present pages). */
static char *zone_name(struct mem *m, const struct vma *v)
{
	pid_t who[2] = { m->pid, parent_of(m->pid) };
	uint64_t w[32];
	char s[160];

	for (int k = 0; k < 2; k++) {
		if (!who[k] || ljb_read(who[k], v->lo, w, sizeof(w)) < 0)
			continue;
		for (int i = 0; i < 32; i++) {
			size_t n;
			char *q;
			if (w[i] < v->lo || w[i] + sizeof(s) > v->hi ||
			    ljb_read(who[k], w[i], s, sizeof(s)) < 0)
				continue;
			s[sizeof(s) - 1] = 0;
			n = strnlen(s, sizeof(s));
			if (strncmp(s, " in ", 4) != 0 || n < 8 || s[n - 1] != '"' ||
			    !(q = strstr(s, " zone \"")))
				continue;
			return xasprintf("nginx shm: %.*s %s", (int)(q - s - 4), s + 4, q + 1);
		}
	}
	return NULL;
}

/* The stacks of the threads other than the main one: the mapping that
 * holds the stack pointer a thread blocked in a system call shows
 * (/proc/PID/task/TID/syscall). */
static void stack_claims(struct mem *m)
{
	char path[64];
	DIR *d;
	struct dirent *e;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)m->pid);
	if (!(d = opendir(path)))
		return;
	while ((e = readdir(d))) {
		char p2[128], line[512];
		unsigned long long sp = 0;
		long tid = strtol(e->d_name, NULL, 10);
		FILE *f;
		if (tid <= 0 || tid == m->pid)
			continue;
		snprintf(p2, sizeof(p2), "/proc/%d/task/%ld/syscall", (int)m->pid, tid);
		if (!(f = fopen(p2, "re")))
			continue;
		if (fgets(line, sizeof(line), f)) {
			char *last = strrchr(line, ' '), *prev;
			if (last) {
				*last = 0;
				if ((prev = strrchr(line, ' ')))
					sp = strtoull(prev + 1, NULL, 16);
			}
		}
		fclose(f);
		for (size_t i = 0; sp && i < m->nv; i++)
			if (sp >= m->v[i].lo && sp < m->v[i].hi && anonymous(&m->v[i])) {
				claim(m, m->v[i].lo, m->v[i].hi, "stack: other threads");
				break;
			}
	}
	closedir(d);
}

/* The part of a mapping that no claim covers. */
static char *default_part(const struct vma *v)
{
	const char *p = v->path;

	if (strcmp(p, "[heap]") == 0)
		return xstrdup("glibc malloc: main arena ([heap])");
	if (strcmp(p, "[stack]") == 0)
		return xstrdup("stack: main thread");
	if (p[0] == '[')
		return xasprintf("kernel: %s", p);
	if (v->perms[3] == 's')
		return xasprintf("shared memory: %s", p[0] ? p : "anonymous");
	if (p[0] == '/')
		return xasprintf("code and data: %s", p);
	if (p[0])
		return xasprintf("other: %s", p);	/* memfd:..., anon_inode:... */
	if (v->perms[2] == 'x')
		return xstrdup("LuaJIT: JIT machine code");
	return xstrdup("other anonymous");
}

/* Resident pages of [lo, hi) by pagemap (bit 63: present); -1 unreadable. */
static long long resident(struct mem *m, uint64_t lo, uint64_t hi)
{
	uint64_t buf[512];
	long long n = 0;

	for (uint64_t a = lo; a < hi;) {
		size_t k = (size_t)((hi - a) / PAGE);
		if (k > 512)
			k = 512;
		if (pread(m->pagemap, buf, k * 8, (off_t)(a / PAGE * 8)) != (ssize_t)(k * 8))
			return -1;
		for (size_t i = 0; i < k; i++)
			n += buf[i] >> 63;
		a += k * PAGE;
	}
	return n * (long long)PAGE;
}

/* Adds mapping V to the parts: wholly one part (smaps' Rss), or split by
 * the claims in it (pagemap, range by range).  0, or -1 after error(). */
static int account(struct mem *m, const struct vma *v)
{
	char *def = default_part(v);
	int dp = part_of(m, def);
	uint64_t a = v->lo;
	int split = 0;

	free(def);
	for (size_t i = 0; i < m->nc; i++)
		if (m->c[i].lo < v->hi && m->c[i].hi > v->lo &&
		    (m->c[i].lo > v->lo || m->c[i].hi < v->hi || m->c[i].part != dp))
			split = 1;
	if (!split || v->rss_kb == 0) {
		int p = dp;
		for (size_t i = 0; i < m->nc && v->rss_kb == 0; i++)
			if (m->c[i].lo <= v->lo && m->c[i].hi >= v->hi)
				p = m->c[i].part;	/* (nothing resident: its own part) */
		m->p[p].rss += v->rss_kb * 1024;
		m->p[p].vsz += v->hi - v->lo;
		return 0;
	}
	while (a < v->hi) {
		/* the claim at a, else up to the next claim */
		uint64_t end = v->hi;
		int p = dp;
		for (size_t i = 0; i < m->nc; i++) {
			const struct claim *c = &m->c[i];
			if (c->lo <= a && c->hi > a) {
				p = c->part;
				end = c->hi < v->hi ? c->hi : v->hi;
				break;
			}
			if (c->lo > a && c->lo < end)
				end = c->lo;
		}
		long long r = resident(m, a, end);
		if (r < 0)
			return error("cannot read /proc/%d/pagemap at 0x%llx: %s", (int)m->pid,
				     (unsigned long long)a, strerror(errno));
		m->p[p].rss += (uint64_t)r;
		m->p[p].vsz += end - a;
		a = end;
	}
	return 0;
}

/* The allocator's segments split into the part in use and the free part
 * (the resident pages wholly inside free chunks), when a walk of their
 * chunks read a consistent heap.  0, or -1 after error(). */
static int split_segments(struct mem *m)
{
	uint64_t rss = 0, vsz = 0;
	int s, f;

	struct timespec t0, t1;

	if (!m->nseg)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (m->chunks = 1; m->chunks <= CHUNK_TRIES; m->chunks++)
		if (ljb_alloc_chunks(m->pid, m->seg, m->nseg, &m->ch) == 0)
			break;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	m->chunk_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (m->chunks > CHUNK_TRIES)
		return 0;
	for (size_t i = 0; i < m->ch.npages; i++) {
		long long r = resident(m, m->ch.pages[i].lo, m->ch.pages[i].hi);
		if (r < 0)
			return error("cannot read /proc/%d/pagemap at 0x%llx: %s", (int)m->pid,
				     (unsigned long long)m->ch.pages[i].lo, strerror(errno));
		rss += (uint64_t)r;
		vsz += m->ch.pages[i].hi - m->ch.pages[i].lo;
	}
	s = part_of(m, SEGS_PART);
	f = part_of(m, SEGS_PART ", free");
	/* (pages the process touched since its mappings were read) */
	if (rss > m->p[s].rss)
		rss = m->p[s].rss;
	if (vsz > m->p[s].vsz)
		vsz = m->p[s].vsz;
	m->p[s].rss -= rss;
	m->p[s].vsz -= vsz;
	m->p[f].rss += rss;
	m->p[f].vsz += vsz;
	free(m->p[s].name);
	m->p[s].name = xstrdup(SEGS_PART ", in use");
	return 0;
}

/* The part that holds address A as account() counted it (its claim, else
 * its mapping's own part) and, in *END, where that ends; -1 outside every
 * mapping. */
static int part_at(struct mem *m, uint64_t a, uint64_t *end)
{
	for (size_t i = 0; i < m->nc; i++)
		if (m->c[i].lo <= a && m->c[i].hi > a) {
			*end = m->c[i].hi;
			return m->c[i].part;
		}
	for (size_t i = 0; i < m->nv; i++)
		if (m->v[i].lo <= a && m->v[i].hi > a) {
			char *def = default_part(&m->v[i]);
			int p = part_of(m, def);
			free(def);
			*end = m->v[i].hi;
			for (size_t j = 0; j < m->nc; j++)	/* (up to the next claim) */
				if (m->c[j].lo > a && m->c[j].lo < *end)
					*end = m->c[j].lo;
			return p;
		}
	return -1;
}

/* Moves [LO, HI) from the parts that hold it to part P: its bytes in
 * resident pages (pagemap), and all of them as virtual size.  A page that
 * the range shares with others moves only the range's bytes of it.  0,
 * or -1 after error(). */
static int carve(struct mem *m, uint64_t lo, uint64_t hi, int p)
{
	while (lo < hi) {
		uint64_t pg = lo & ~(PAGE - 1), end = hi, lim, e;
		int from = part_at(m, lo, &end), whole;
		long long r;

		/* whole pages at once, else up to the page's end (and never
		   past the part's end) */
		lim = end < hi ? end : hi;
		whole = lo == pg && lim - lo >= PAGE;
		e = whole ? lo + (lim - lo) / PAGE * PAGE : (pg + PAGE < lim ? pg + PAGE : lim);
		if (from < 0 || from == p) {
			lo = e;
			continue;
		}
		r = resident(m, pg, whole ? e : pg + PAGE);
		if (r < 0)
			return error("cannot read /proc/%d/pagemap at 0x%llx: %s", (int)m->pid,
				     (unsigned long long)pg, strerror(errno));
		uint64_t rss = whole ? (uint64_t)r : r ? e - lo : 0, vsz = e - lo;
		if (rss > m->p[from].rss)
			rss = m->p[from].rss;
		if (vsz > m->p[from].vsz)
			vsz = m->p[from].vsz;
		m->p[from].rss -= rss;
		m->p[from].vsz -= vsz;
		m->p[p].rss += rss;
		m->p[p].vsz += vsz;
		lo = e;
	}
	return 0;
}

/* nginx's cycle pool as a part of its own, in a process that has
 * ngx_cycle.  0, or -1 after error(). */
static int pool_part(struct mem *m, struct dw_set *dw)
{
	uint64_t cyclep = m->st ? ljb_symtab_addr(m->st, "ngx_cycle") : 0;
	int p;

	if (!cyclep)
		return 0;
	m->ngx = 1;
	if (ljb_ngx_pool(m->pid, dw, cyclep, ljb_symtab_addr(m->st, "ngx_pagesize"), &m->pool,
			 &m->no_pool) < 0)
		return 0;
	m->ngx = 2;
	p = part_of(m, POOL_PART);
	for (size_t i = 0; i < m->pool.n; i++)
		if (carve(m, m->pool.r[i].lo, m->pool.r[i].hi, p) < 0)
			return -1;
	return 0;
}

static int by_rss(const void *a, const void *b)
{
	const struct part *x = a, *y = b;

	if (x->rss != y->rss)
		return x->rss < y->rss ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* A part of an earlier run's table (diff). */
struct old {
	char *name;
	unsigned long long kb;
};

static int read_old(const char *path, struct old **out, size_t *n)
{
	FILE *f = fopen(path, "re");
	char line[4096];

	*out = NULL;
	*n = 0;
	if (!f)
		return error("cannot read '%s' (--arg diff): %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *tab = strchr(line, '\t');
		unsigned long long kb;
		if (!tab || line[0] == '#' || sscanf(tab + 1, "%llu", &kb) != 1 ||
		    strncmp(line, "part\t", 5) == 0 || strncmp(line, "total\t", 6) == 0)
			continue;
		*out = xrealloc(*out, (*n + 1) * sizeof(**out));
		(*out)[(*n)++] = (struct old){ xstrndup(line, (size_t)(tab - line)), kb };
	}
	fclose(f);
	if (!*n)
		return error("'%s' (--arg diff) holds no resty-memory table", path);
	return 0;
}

struct growth {
	const char *name;
	long long before, now;
};

static int by_growth(const void *a, const void *b)
{
	const struct growth *x = a, *y = b;
	long long gx = x->now - x->before, gy = y->now - y->before;

	if (gx != gy)
		return gx < gy ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* What grew since the earlier run's table in PATH, most first. */
static int print_diff(const struct mem *m, const char *path)
{
	struct old *o;
	size_t n, ng = 0;
	struct growth *g;

	if (read_old(path, &o, &n) < 0)
		return -1;
	g = xcalloc(n + m->np, sizeof(*g));
	for (size_t i = 0; i < m->np; i++)
		g[ng++] = (struct growth){ m->p[i].name, 0, (long long)(m->p[i].rss / 1024) };
	for (size_t i = 0; i < n; i++) {
		size_t k;
		for (k = 0; k < ng && strcmp(g[k].name, o[i].name) != 0; k++)
			;
		if (k == ng)
			g[ng++] = (struct growth){ o[i].name, 0, 0 };
		g[k].before = (long long)o[i].kb;
	}
	qsort(g, ng, sizeof(*g), by_growth);
	printf("# since %s: growth\tbefore_kb\tnow_kb\n", path);
	for (size_t i = 0; i < ng; i++)
		if (g[i].now != g[i].before)
			printf("%s\t%+lld\t%lld\t%lld\n", g[i].name, g[i].now - g[i].before, g[i].before, g[i].now);
	free(g);
	for (size_t i = 0; i < n; i++)
		free(o[i].name);
	free(o);
	return 0;
}

/* The kernel's own count of PID's resident memory (smaps_rollup), KB. */
static long long rollup_rss(pid_t pid)
{
	char path[64], line[256];
	long long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Rss: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void print(struct mem *m, const struct ljb_opts *o, pid_t worker)
{
	uint64_t rss = 0, vsz = 0;
	char *comm = proc_comm(m->pid);

	qsort(m->p, m->np, sizeof(*m->p), by_rss);
	/* (in whole KB, as printed: the cycle pool's part and the parts it
	   takes from hold parts of pages, and the table adds up) */
	for (size_t i = 0; i < m->np; i++) {
		rss += m->p[i].rss / 1024 * 1024;
		vsz += m->p[i].vsz / 1024 * 1024;
	}
	if (o->stacks) {
		for (size_t i = 0; i < m->np; i++) {
			const char *c = strstr(m->p[i].name, ": ");
			if (!m->p[i].rss)
				continue;
			/* (a frame holds no ';': util/fold's separator) */
			char *f = xstrdup(m->p[i].name);
			for (char *q = f; *q; q++)
				if (*q == ';' || *q == '\t' || *q == '\n')
					*q = ',';
			if (c)
				printf("%s\n%.*s\n", f + (c - m->p[i].name) + 2, (int)(c - m->p[i].name), f);
			else
				printf("%s\n", f);
			free(f);
			if (worker)
				printf("worker %d\n", (int)worker);
			printf("\t%llu\n\n", (unsigned long long)m->p[i].rss);
		}
		free(comm);
		return;
	}
	printf("# stap++ resty-memory: process %d (%s): %llu KB resident, %llu KB virtual\n",
	       (int)m->pid, comm ? comm : "?", (unsigned long long)(rss / 1024),
	       (unsigned long long)(vsz / 1024));
	printf("part\tresident_kb\tshare\tvirtual_kb\n");
	for (size_t i = 0; i < m->np; i++)
		printf("%s\t%llu\t%.1f%%\t%llu\n", m->p[i].name, (unsigned long long)(m->p[i].rss / 1024),
		       rss ? 100.0 * (double)m->p[i].rss / (double)rss : 0.0,
		       (unsigned long long)(m->p[i].vsz / 1024));
	printf("total\t%llu\t100.0%%\t%llu\n", (unsigned long long)(rss / 1024),
	       (unsigned long long)(vsz / 1024));
	if (m->lj && m->own_alloc)
		printf("# LuaJIT: %llu KB GC-managed (g->gc.total), in the allocator's %llu segments "
		       "and its blocks mapped one by one; %llu KB of JIT machine code allocated\n",
		       (unsigned long long)(m->gc_total / 1024), (unsigned long long)m->segs,
		       (unsigned long long)(m->mcode / 1024));
	else if (m->lj)
		printf("# LuaJIT: %llu KB GC-managed (g->gc.total), allocated by an allocator of "
		       "the application's (lua_newstate), counted where it puts them; %llu KB of "
		       "JIT machine code allocated\n", (unsigned long long)(m->gc_total / 1024),
		       (unsigned long long)(m->mcode / 1024));
	else if (m->layouts)
		printf("# LuaJIT: its VM was not found in the process's memory\n");
	else
		printf("# LuaJIT: none known in this process (no lua_State in its binaries' "
		       "debug info or in the layout database)\n");
	if (m->nseg && m->chunks > CHUNK_TRIES)
		printf("# LuaJIT's allocator: its chunks changed under each of %d walks (the process "
		       "allocates): the part of its segments in use and the free part are not told apart\n",
		       CHUNK_TRIES);
	else if (m->nseg)
		printf("# LuaJIT's allocator: %llu KB in its segments: %llu chunks in use (%llu KB), "
		       "%llu free (%llu KB, the largest %llu KB); its free part is the resident pages "
		       "wholly inside free chunks (read in %.0f ms, %d %s; the process ran on)\n",
		       (unsigned long long)((m->ch.used + m->ch.free) / 1024),
		       (unsigned long long)m->ch.nused, (unsigned long long)(m->ch.used / 1024),
		       (unsigned long long)m->ch.nfree, (unsigned long long)(m->ch.free / 1024),
		       (unsigned long long)(m->ch.largest / 1024), m->chunk_ms, m->chunks,
		       m->chunks == 1 ? "walk" : "walks");
	if (m->ngx == 2)
		printf("# nginx: its cycle pool (ngx_cycle->pool, %s): %zu blocks of %llu KB, "
		       "%llu KB used in them, and %zu large allocations, %llu KB; the pools of "
		       "requests and connections are glibc malloc's, not told apart (they live "
		       "while a request does)\n",
		       m->pool.abi ? "nginx has no debug info: read by nginx's module ABI, "
				     "which the pool's own fields confirm"
				   : "by nginx's debug info",
		       m->pool.nblocks, (unsigned long long)(m->pool.block / 1024),
		       (unsigned long long)(m->pool.used / 1024), m->pool.n - m->pool.nblocks,
		       (unsigned long long)(m->pool.large / 1024));
	else if (m->ngx)
		printf("# nginx: its cycle pool is not counted apart: %s\n", m->no_pool);
	free(comm);
}

/* The breakdown of process PID.  0, or -1 after error(). */
static int one(pid_t pid, const struct ljb_target *t, const struct ljb_opts *o,
	       struct dw_set *dw, pid_t worker)
{
	struct mem *m = xcalloc(1, sizeof(*m));
	char path[64];
	int rc = -1;

	m->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	if ((m->pagemap = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		error("cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (read_smaps(m) < 0)
		goto out;
	m->st = ljb_symtab_load(pid);
	luajit_claims(m, dw, t->exec);
	for (size_t i = 0; i < m->nv; i++) {
		const struct vma *v = &m->v[i];
		char *z;
		if (anonymous(v) && v->perms[3] == 'p' && v->perms[0] == 'r') {
			block_claims(m, v);
			arena_claims(m, v);
		} else if (v->perms[3] == 's' && v->perms[0] == 'r' && (z = zone_name(m, v))) {
			claim(m, v->lo, v->hi, z);
			free(z);
		}
	}
	stack_claims(m);
	for (size_t i = 0; i < m->nv; i++)
		if (account(m, &m->v[i]) < 0)
			goto out;
	if (split_segments(m) < 0 || pool_part(m, dw) < 0)
		goto out;
	print(m, o, worker);
	if (!o->stacks) {
		long long k = rollup_rss(pid);
		if (k >= 0)
			printf("# the kernel's count (smaps_rollup): %lld KB resident\n", k);
		if (o->diff && print_diff(m, o->diff) < 0)
			goto out;
	}
	rc = 0;
out:
	if (m->pagemap > 0)
		close(m->pagemap);
	for (size_t i = 0; i < m->nv; i++)
		free(m->v[i].path);
	free(m->v);
	for (size_t i = 0; i < m->np; i++)
		free(m->p[i].name);
	ljb_chunks_free(&m->ch);
	ljb_ngx_pool_free(&m->pool);
	if (m->st)
		ljb_symtab_free(m->st);
	free(m);
	return rc;
}

int ljb_memory_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw)
{
	pid_t *kids = NULL;
	size_t n = 0;
	int rc = 0;

	if (o->stacks)
		printf("# stap++ type=bytes\n");
	if (t->pid)
		rc = one(t->pid, t, o, dw, 0);
	else if (proc_children(t->master, &kids, &n) < 0 || !n)
		rc = error("master process %d has no workers to read", (int)t->master);
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (i && !o->stacks)
			printf("\n");
		rc = one(kids[i], t, o, dw, kids[i]);
	}
	free(kids);
	fflush(stdout);
	return rc < 0 ? EXIT_FAIL : 0;
}
