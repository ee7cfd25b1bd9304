/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/alloc_chunks.c - see bpf/alloc_chunks.h.  The constants are
 * lj_alloc.c's for a 64-bit process (GC64 or not): MALLOC_ALIGNMENT 8,
 * MIN_CHUNK_SIZE 32, TOP_FOOT_SIZE 64. */
#include "bpf/alloc_chunks.h"
#include "base/wrapper.h"
#include "bpf/symbolize.h"

#include <stdlib.h>
#include <string.h>

#define PAGE 4096ULL
#define WINDOW 65536ULL
#define PINUSE 1ULL
#define CINUSE 2ULL
#define MIN_CHUNK 32ULL
#define TOP_FOOT 64ULL
#define FENCEPOST (8ULL | PINUSE | CINUSE)
/* a free chunk's own fields: prev_foot, head, fd, bk, and in a tree bin
   child[2], parent, index */
#define FREE_FIELDS 64ULL

static uint64_t rd64(pid_t pid, uint64_t a, int *bad)
{
	uint64_t v = 0;

	if (ljb_read(pid, a, &v, sizeof(v)) < 0)
		*bad = 1;
	return v;
}

int ljb_alloc_segments(pid_t pid, const struct ljb_layout *ly, const struct ljb_symtab *st,
		       uint64_t g, struct ljb_range *segs, int max)
{
	uint64_t fn, h, s;
	const struct ljb_file *fa, *fv;
	int bad = 0, k;

	fn = rd64(pid, g + ly->G_allocf, &bad);
	h = rd64(pid, g + ly->gg_g2disp, &bad);
	if (bad)
		return -2;
	fa = ljb_symtab_file(st, fn);
	fv = ljb_symtab_file(st, h);
	if (!fa || !fv || strcmp(fa->path, fv->path) != 0)
		return -1;
	s = rd64(pid, g + ly->G_allocd, &bad) + ly->ms_seg;
	for (k = 0; s && !bad && k < max; k++) {
		uint64_t base = rd64(pid, s + ly->seg_base, &bad), size = rd64(pid, s + ly->seg_size, &bad);
		if (bad || size == 0 || size > (1ULL << 40) || base % PAGE)
			break;
		segs[k] = (struct ljb_range){ base, base + size };
		s = rd64(pid, s + ly->seg_next, &bad);
	}
	return bad && k == 0 ? -2 : k;
}

/* A window of the target's memory: [lo, lo + n). */
struct win {
	pid_t pid;
	uint64_t lo, n;
	unsigned char buf[WINDOW];
};

/* The two words at A (prev_foot, head), A + 16 <= END; -1 if unreadable. */
static int words(struct win *w, uint64_t a, uint64_t end, uint64_t v[2])
{
	if (a < w->lo || a + 16 > w->lo + w->n) {
		uint64_t lo = a & ~(PAGE - 1), n = end - lo < WINDOW ? end - lo : WINDOW;
		/* (a window with a page the target does not have: just the
		   pages of these two words) */
		if (ljb_read(w->pid, lo, w->buf, n) < 0) {
			n = ((a + 16 + PAGE - 1) & ~(PAGE - 1)) - lo;
			if (ljb_read(w->pid, lo, w->buf, n) < 0) {
				w->n = 0;
				return -1;
			}
		}
		w->lo = lo;
		w->n = n;
	}
	memcpy(v, w->buf + (a - w->lo), 16);
	return 0;
}

static void add_pages(struct ljb_chunks *c, uint64_t lo, uint64_t hi)
{
	lo = (lo + PAGE - 1) & ~(PAGE - 1);
	hi &= ~(PAGE - 1);
	if (hi <= lo)
		return;
	c->pages = xrealloc(c->pages, (c->npages + 1) * sizeof(*c->pages));
	c->pages[c->npages++] = (struct ljb_range){ lo, hi };
}

/* The chunks of one segment [lo, end).  0, or -1: not a consistent heap. */
static int segment(struct win *w, uint64_t lo, uint64_t end, struct ljb_chunks *c)
{
	/* (align_as_chunk: the first chunk's data 8-aligned) */
	uint64_t p = lo + ((8 - ((lo + 16) & 7)) & 7), prev_size = 0;
	int prev_used = 1;

	while (p + 16 <= end) {
		uint64_t v[2], size;
		int used, top;
		if (words(w, p, end, v) < 0)
			return -1;
		if (v[1] == FENCEPOST) {
			/* a former top segment's end: its record, then fenceposts */
			c->used += end - p;
			return 0;
		}
		size = v[1] & ~(PINUSE | CINUSE);
		used = (v[1] & CINUSE) != 0;
		if (!used && !prev_used && size == TOP_FOOT && p + size == end) {
			/* the top segment's trailing bookkeeping, after the top
			   (which writes no foot) */
			c->used += size;
			return 0;
		}
		/* (the top may be smaller than a chunk: what an allocation
		   left of it) */
		top = !used && p + size + TOP_FOOT == end;
		if (size < (top ? 8 : MIN_CHUNK) || size % 8 || p + size > end ||
		    !(v[1] & PINUSE) != !prev_used || (!prev_used && (!used || v[0] != prev_size)))
			return -1;	/* (no two free chunks are neighbours) */
		if (used) {
			c->used += size;
			c->nused++;
		} else {
			c->free += size;
			c->nfree++;
			if (size > c->largest)
				c->largest = size;
			add_pages(c, p + FREE_FIELDS, p + size);
		}
		prev_used = used;
		prev_size = size;
		p += size;
	}
	return p == end ? 0 : -1;
}

int ljb_alloc_chunks(pid_t pid, const struct ljb_range *segs, size_t n, struct ljb_chunks *out)
{
	struct win *w = xcalloc(1, sizeof(*w));
	int rc = 0;

	memset(out, 0, sizeof(*out));
	w->pid = pid;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = segment(w, segs[i].lo, segs[i].hi, out);
	free(w);
	if (rc < 0)
		ljb_chunks_free(out);
	return rc;
}

void ljb_chunks_free(struct ljb_chunks *c)
{
	free(c->pages);
	memset(c, 0, sizeof(*c));
}
