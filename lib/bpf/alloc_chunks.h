/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/alloc_chunks.h - the chunks of LuaJIT's own allocator (lj_alloc.c,
 * a dlmalloc), read from a running process's memory: how much of its
 * segments is in use and how much is free (resty-memory).
 *
 * Every LuaJIT 2.1 source of the layout database has the same chunk
 * format: a chunk is a size_t prev_foot and a size_t head (its size,
 * 8-aligned, with PINUSE_BIT 1: the chunk before is in use, and
 * CINUSE_BIT 2: this one is), then its data.  A segment's chunks follow
 * each other from its base; the top chunk (free) ends TOP_FOOT_SIZE
 * before the segment's end, where a trailing chunk of bookkeeping starts;
 * a segment that is no longer the top one ends in its own record (in use)
 * and fenceposts (head 8 | INUSE_BITS).
 */
#ifndef STAPXX_BPF_ALLOC_CHUNKS_H
#define STAPXX_BPF_ALLOC_CHUNKS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/layout.h"
#include "bpf/symtab.h"

struct ljb_range {
	uint64_t lo, hi;
};

struct ljb_chunks {
	uint64_t used, nused;	/* bytes and chunks in use (bookkeeping included) */
	uint64_t free, nfree;	/* bytes and chunks free (the top chunk included) */
	uint64_t largest;	/* the largest free chunk's bytes */
	struct ljb_range *pages;	/* the whole pages inside free chunks
					   (past their links): malloc'd */
	size_t npages;
};

/*
 * ljb_alloc_segments - the segments of LuaJIT's own allocator in process
 * PID whose VM is G (its layouts LY, its symbols ST): g->allocd's list of
 * segments (struct malloc_state's seg), at most MAX of them into SEGS.
 * Returns their number; -1 when the VM does not allocate with LuaJIT's
 * allocator (g->allocf is not in the file of the interpreter, whose first
 * handler the dispatch table names: an allocator given to lua_newstate,
 * which has no segments to read); -2 when its memory cannot be read.
 */
int ljb_alloc_segments(pid_t pid, const struct ljb_layout *ly, const struct ljb_symtab *st,
		       uint64_t g, struct ljb_range *segs, int max);

/*
 * ljb_alloc_chunks - walks the chunks of the N segments SEGS of process
 * PID (each [lo, hi): g->allocd's segment list).  Reads only pages the
 * process has present (ljb_read), a 64 KB window at a time where it can.
 * The process runs on: a chunk whose size or neighbour does not fit the
 * allocator's rules (it changed under the walk, or a header's page is not
 * present) ends the walk.  Returns 0 with *OUT filled (free OUT->pages
 * with ljb_chunks_free()), or -1 with nothing to free (no message).
 */
int ljb_alloc_chunks(pid_t pid, const struct ljb_range *segs, size_t n, struct ljb_chunks *out);

/* ljb_chunks_free - frees what ljb_alloc_chunks() allocated in C. */
void ljb_chunks_free(struct ljb_chunks *c);

#endif
