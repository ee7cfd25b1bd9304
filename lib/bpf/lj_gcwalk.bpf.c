// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lj_gcwalk.bpf.c - the eBPF side of lj-gc-objs (--runtime=bpf): a census
 * of a LuaJIT heap by object type, walked in slices.
 *
 * The same rules as the SystemTap sample (samples/lj-gc-objs.sxx, tapsets
 * luajit_gc and luajit_gcwalk), which say why each holds:
 * - a slice runs only at the walk point, a uprobe that user space places
 *   where the target runs no Lua code and the heap is consistent (the
 *   luajit CLI: lj_gc_step; nginx: its event loop), at most objs objects
 *   or string table slots a slice (bpf_loop), at least gap_ns after the
 *   end of the last one, one slice at a time;
 * - the root list g->gc.root, then the string table's chains; each
 *   object counted with the bytes LuaJIT frees with it;
 * - no slice while the collector sweeps or finalizes (its phase 3 and
 *   up); a sweep between two slices (the phase went back, or the white
 *   flipped) makes the walk check that the object it resumes at is not
 *   dead, else it starts over, at most MAX_RESTARTS times;
 * - an object that is no GC object ends the walk (a fault); a read that
 *   fails leaves the cursor where it was, and later slices read it again
 *   for at most 5 s (a page not present for a while), then a fault.
 * Big tables and strings go to user space (ring buffer bigs), which keeps
 * the biggest; everything else is counted here, in the global gw, which
 * user space reads when the walk is over.  The pids map of the shared
 * walk (lj_walk.bpf.h) gives each target process and its global_State;
 * no Lua stack is taken.
 */
#include "lj_walk.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define MAX_RESTARTS 10
#define RETRY_NS 5000000000ULL
#define MAX_RETRIES 2000

const volatile struct ljb_gcl gcl;
const volatile __u32 objs = 2000;	/* objects or slots a slice */
const volatile __u64 gap_ns = 20000000;

struct ljb_gcwalk gw;

/* Processes at the walk point while another one is walked (pid -> 1):
 * the next walks (user space). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} seen SEC(".maps");

/* Processes walked already (user space adds each). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} done SEC(".maps");

/* (4 MB: 40,000 objects, the slices of a few polls before user space has
 * raised big_min) */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} bigs SEC(".maps");

/* One object's first bytes (per CPU: the slice's callback). */
struct win {
	__u8 b[LJB_GC_WIN + 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct win);
} wins SEC(".maps");

/* The fields of the window W at offset OFF (within LJB_GC_WIN: user
 * space checked every offset of gcl). */
static __always_inline __u64 w64(const struct win *w, __u32 off)
{
	__u64 v;

	__builtin_memcpy(&v, &w->b[off & (LJB_GC_WIN - 1)], 8);
	return v;
}

static __always_inline __u32 w32(const struct win *w, __u32 off)
{
	__u32 v;

	__builtin_memcpy(&v, &w->b[off & (LJB_GC_WIN - 1)], 4);
	return v;
}

static __always_inline __u16 w16(const struct win *w, __u32 off)
{
	__u16 v;

	__builtin_memcpy(&v, &w->b[off & (LJB_GC_WIN - 1)], 2);
	return v;
}

static __always_inline __u8 w8(const struct win *w, __u32 off)
{
	return w->b[off & (LJB_GC_WIN - 1)];
}

/* A GCRef at A (32 bits without GC64). */
static __always_inline int gcref_at(__u64 a, __u64 *v)
{
	*v = 0;
	return bpf_probe_read_user(v, gcl.gcref == 8 ? 8 : 4, (void *)a);
}

/* Reads object O's window into W: the whole window, else (the object
 * ends a mapping) its first 64 bytes.  0, or -1. */
static __always_inline int window_at(struct win *w, __u64 o)
{
	if (bpf_probe_read_user(w->b, LJB_GC_WIN, (void *)o) == 0)
		return 0;
	return bpf_probe_read_user(w->b, 64, (void *)o) ? -1 : 0;
}

/* A failed read at A: 1 when later slices may read it again (the cursor
 * stays), 0 when it is a fault (reads failed for RETRY_NS since the last
 * slice where none did, or MAX_RETRIES times this walk). */
static __always_inline int retry(__u64 a, __u64 now)
{
	gw.bad_at = a;
	if (!gw.fail_t0)
		gw.fail_t0 = now;
	if (now - gw.fail_t0 > gw.wait)
		gw.wait = now - gw.fail_t0;
	return now - gw.fail_t0 < RETRY_NS && ++gw.retries <= MAX_RETRIES;
}

/* The bytes of the C type ID of a cdata (lj_cdata_free): ctype_raw,
 * then its size when it has one, else a pointer's.  -1 unreadable. */
static __always_inline __s64 ctype_size(__u32 id)
{
	__u32 info = 0, size = 0;
	__u64 ct = 0;

	for (int i = 0; i < 16; i++) {
		ct = gw.cts_tab + (__u64)id * gcl.ct_sizeof;
		if (bpf_probe_read_user(&info, 4, (void *)(ct + gcl.ct_info)))
			return -1;
		if ((info >> 28) != gcl.ct_attrib)
			break;
		id = info & 0xffff;
	}
	if ((info >> 28) <= gcl.ct_hassize) {
		if (bpf_probe_read_user(&size, 4, (void *)(ct + gcl.ct_size)))
			return -1;
		return size;
	}
	return 8;
}

/* A big object to user space, when it may be among the biggest. */
static __always_inline void big(__u64 o, const struct win *w, __u32 kind, __u64 size,
				 __u32 asize, __u32 hslots)
{
	struct ljb_gcbig *e;
	__u32 len;

	if (size < gw.big_min[kind & 1])
		return;
	e = bpf_ringbuf_reserve(&bigs, sizeof(*e), 0);
	if (!e) {
		gw.lost++;
		return;
	}
	e->o = o;
	e->size = size;
	e->kind = kind;
	e->gen = gw.gen;
	e->asize = asize;
	e->hslots = hslots;
	e->len = 0;
	e->pad = 0;
	__builtin_memset(e->s, 0, sizeof(e->s));
	if (kind == 1) {
		len = w32(w, gcl.str_len);
		e->len = len;
		if (len > LJB_GC_PREVIEW)
			len = LJB_GC_PREVIEW;
		if (len && bpf_probe_read_user(e->s, len, (void *)(o + gcl.str_size)))
			e->len = 0;
	}
	bpf_ringbuf_submit(e, 0);
}

/* Counts object O of type tag GCT, whose window is W (tapset luajit_gc's
 * luajit_gco_size).  1, 0 when O is no GC object, -1 when a read failed. */
static __always_inline int count_obj(__u64 o, __u32 gct, const struct win *w)
{
	__s64 size;
	__u32 k = gct, n;

	switch (gct) {
	case 4:		/* string: lj_str_size */
		size = gcl.str_size + ((w32(w, gcl.str_len) + 4) & ~3U);
		break;
	case 11: {	/* table: header (with a colocated array), array, hash */
		__s8 colo = (__s8)w8(w, gcl.tab_colo);
		__u32 asize = w32(w, gcl.tab_asize), hmask = w32(w, gcl.tab_hmask);
		__u64 h = colo ? (__u64)(colo & 0x7f) * gcl.tv + gcl.tab_size : gcl.tab_size;
		__u64 a = asize > 0 && colo <= 0 ? (__u64)asize * gcl.tv : 0;
		__u64 hs = hmask > 0 ? ((__u64)hmask + 1) * gcl.node_size : 0;
		size = h + a + hs;
		gw.tparts[0] += h;
		gw.tparts[1] += a;
		gw.tparts[2] += hs;
		big(o, w, 0, size, asize, hmask > 0 ? hmask + 1 : 0);
		break;
	}
	case 8:		/* function: Lua or C, with its upvalues */
		n = w8(w, gcl.fn_nupvalues);
		if (w8(w, gcl.fn_ffid) == 0) {
			size = gcl.fnl_size - gcl.gcref + n * gcl.gcref;
		} else {
			size = gcl.fnc_size - gcl.tv + n * gcl.tv;
			k = LJB_GC_CFUNC;
		}
		break;
	case 5:		/* upvalue */
		size = gcl.uv_size;
		break;
	case 7:		/* prototype: its whole block */
		size = w32(w, gcl.pt_sizept);
		break;
	case 6:		/* thread and its stack; the main one's lua_State is
			   the VM state's */
		size = (__u64)w32(w, gcl.L_stacksize) * gcl.tv;
		if (o != gw.mainL)
			size += gcl.L_size;
		break;
	case 12:	/* userdata */
		size = gcl.ud_size + w32(w, gcl.ud_len);
		break;
	case 10:	/* cdata: a variable-length one, else its C type's size */
		if (w8(w, gcl.h_marked) & 0x80) {
			__u32 len = 0;
			__u16 extra = 0;
			__u64 v = o - gcl.cdv_size;
			if (bpf_probe_read_user(&len, 4, (void *)(v + gcl.cdv_len)) ||
			    bpf_probe_read_user(&extra, 2, (void *)(v + gcl.cdv_extra)))
				return -1;
			size = (__u64)len + extra;
		} else {
			__s64 cs = ctype_size(w16(w, gcl.cd_ctypeid));
			if (cs < 0)
				return -1;
			size = gcl.cd_size + cs;
		}
		break;
	case 9: {	/* trace, without its machine code */
		__u32 nins = w32(w, gcl.tr_nins), nk = w32(w, gcl.tr_nk);
		size = ((gcl.tr_size + 7) & ~7U) + (__u64)(nins - nk) * gcl.ir_size +
		       (__u64)w16(w, gcl.tr_nsnap) * gcl.snap_size +
		       (__u64)w32(w, gcl.tr_nsnapmap) * gcl.snapent_size;
		break;
	}
	default:
		return 0;
	}
	if (gct == 4)
		big(o, w, 1, size, 0, 0);
	k &= LJB_GC_NT - 1;
	gw.cnt[k]++;
	gw.bytes[k] += size;
	gw.objs++;
	gw.walked += size;
	return 1;
}

/* Ends the walk on fault F. */
static __always_inline void fault(__u32 f)
{
	if (f < LJB_GW_F_MAX)
		gw.faults[f]++;
	gw.cut = 1;
	gw.phase = 3;
}

struct slice {
	__u64 now;
	int failed;	/* a read failed: the slice stops, the cursor stays */
};

/* A read at A failed in slice X: it stops; a fault when it may not be
 * read again later.  Returns 1 (bpf_loop's stop). */
static __always_inline long unread(__u64 a, struct slice *x)
{
	x->failed = 1;
	if (!retry(a, x->now))
		fault(LJB_GW_F_UNREAD);
	return 1;
}

/* One step of a slice: an object, or a string table slot. */
static long step(__u64 i, struct slice *x)
{
	__u32 zero = 0, gct;
	struct win *w = bpf_map_lookup_elem(&wins, &zero);
	__u64 o = gw.cur, next = 0;
	int r;

	if (!w || gw.phase == 0 || gw.phase == 3)
		return 1;
	if (gw.phase == 2 && o == 0) {
		/* the next chain of the string table (its hash bit off) */
		if (gw.slot >= gw.slots) {
			gw.phase = 3;
			return 1;
		}
		if (gcref_at(gw.strtab_at + (__u64)gw.slot * gcl.gcref, &next))
			return unread(gw.strtab_at + (__u64)gw.slot * gcl.gcref, x);
		gw.cur = next & ~1ULL;
		gw.slot++;
		return 0;
	}
	if (o == 0) {
		/* the root list's end: the string table next */
		__u32 mask = 0;
		if (bpf_probe_read_user(&mask, 4, (void *)(gw.g + gcl.G_strmask)) ||
		    gcref_at(gw.g + gcl.G_strtab, &next))
			return unread(gw.g, x);
		gw.phase = 2;
		gw.slot = 0;
		gw.slots = mask + 1;
		gw.strtab_at = next;
		gw.strtab = (__u64)gw.slots * gcl.gcref;
		return 0;
	}
	if (window_at(w, o))
		return unread(o, x);
	gct = w8(w, gcl.h_gct);
	if (gw.phase == 2 && gct != 4) {
		fault(LJB_GW_F_STR);
		return 1;
	}
	r = count_obj(o, gct, w);
	if (r < 0)
		return unread(o, x);
	if (r == 0) {
		fault(gw.phase == 2 ? LJB_GW_F_STR : LJB_GW_F_ROOT);
		return 1;
	}
	gw.cur = gcl.gcref == 8 ? w64(w, gcl.h_next) : w32(w, gcl.h_next);
	return 0;
}

/* Starts (or starts over) the walk of global_State G. */
static __always_inline int start(__u64 g)
{
	__u64 total = 0, root = 0, mainL = 0;
	__u8 gct = 0;

	if (bpf_probe_read_user(&total, gcl.G_total8 ? 8 : 4, (void *)(g + gcl.G_total)) ||
	    gcref_at(g + gcl.G_root, &root) || gcref_at(g + gcl.G_mainthref, &mainL))
		return -1;
	if (root && bpf_probe_read_user(&gct, 1, (void *)(root + gcl.h_gct)))
		return -1;
	__builtin_memset(gw.cnt, 0, sizeof(gw.cnt));
	__builtin_memset(gw.bytes, 0, sizeof(gw.bytes));
	__builtin_memset(gw.tparts, 0, sizeof(gw.tparts));
	gw.objs = gw.walked = gw.strtab = 0;
	gw.g = g;
	gw.total0 = total;
	gw.cur = root;
	gw.curgct = gct;
	gw.mainL = mainL;
	gw.phase = 1;
	gw.slot = gw.slots = 0;
	gw.swept = 0;
	gw.gen++;
	return 0;
}

/* The tables a slice reads, again at each slice (they move when they
 * grow): the C types' (cdata sizes), and in the string table phase the
 * string table and its size.  0, or -1 when unreadable. */
static __always_inline int tables(__u64 g)
{
	__u64 cts = 0, tab = 0;
	__u32 mask = 0;

	if (gcref_at(g + gcl.G_ctstate, &cts))
		return -1;
	if (cts && bpf_probe_read_user(&tab, 8, (void *)(cts + gcl.cts_tab)))
		return -1;
	gw.cts_tab = tab;
	if (gw.phase != 2)
		return 0;
	if (bpf_probe_read_user(&mask, 4, (void *)(g + gcl.G_strmask)) ||
	    gcref_at(g + gcl.G_strtab, &tab))
		return -1;
	gw.slots = mask + 1;
	gw.strtab_at = tab;
	return 0;
}

/* Whether the object the walk resumes at was freed (luajit_gco_dead):
 * its type tag changed, it carries the other white, or it is unreadable. */
static __always_inline int dead(__u32 white)
{
	__u8 gct = 0, marked = 0;

	if (bpf_probe_read_user(&gct, 1, (void *)(gw.cur + gcl.h_gct)) ||
	    bpf_probe_read_user(&marked, 1, (void *)(gw.cur + gcl.h_marked)))
		return 1;
	return gct != gw.curgct || (marked & 3 & ~white & 3) != 0;
}

/* The slice at this firing, if one may run (the walk point's body). */
static __always_inline void walk(struct ljb_proc *proc, __u64 t0)
{
	struct slice x = { .now = t0 };
	__u8 st = 0, white = 0;
	__u64 g, now, ns, total = 0;

	if (gw.phase == 3 || (gw.last && t0 - gw.last < gap_ns))
		return;
	g = gw.g ? gw.g : proc->g;
	if (!g) {
		gw.novm++;
		return;
	}
	if (bpf_probe_read_user(&st, 1, (void *)(g + gcl.G_state)) ||
	    bpf_probe_read_user(&white, 1, (void *)(g + gcl.G_white))) {
		if (!retry(g, t0))
			fault(LJB_GW_F_UNREAD);
		return;
	}
	if (st >= 3) {
		/* the collector frees objects now: wait */
		gw.swept = 1;
		gw.skipped++;
		return;
	}
	white &= 3;
	/* a whole sweep can run between two slices: then the phase went
	   back, or the white flipped */
	if (gw.phase != 0 && (st < gw.lastst || white != gw.lastwhite))
		gw.swept = 1;
	if (gw.phase == 0) {
		if (start(g)) {
			if (!retry(g, t0))
				fault(LJB_GW_F_UNREAD);
			return;
		}
		gw.first = t0;
	} else if (gw.swept && gw.cur && dead(white)) {
		if (++gw.restarts > MAX_RESTARTS) {
			fault(LJB_GW_F_RESTARTS);
		} else if (start(g)) {
			if (!retry(g, t0))
				fault(LJB_GW_F_UNREAD);
			return;
		}
	}
	if (gw.phase != 3 && tables(g)) {
		if (!retry(g, t0))
			fault(LJB_GW_F_UNREAD);
		return;
	}
	if (gw.phase != 3) {
		gw.swept = 0;
		gw.lastst = st;
		gw.lastwhite = white;
		bpf_loop(objs, step, &x, 0);
		if (!x.failed)
			gw.fail_t0 = 0;
		if (gw.cur && bpf_probe_read_user(&gw.curgct, 1, (void *)(gw.cur + gcl.h_gct)))
			gw.curgct = 0;
		if (bpf_probe_read_user(&total, gcl.G_total8 ? 8 : 4, (void *)(g + gcl.G_total)) == 0)
			gw.total = total;
		gw.slices++;
	}
	now = bpf_ktime_get_ns();
	ns = now - t0;
	if (ns > gw.stall)
		gw.stall = ns;
	gw.stalls += ns;
	gw.last = now;
}

SEC("uprobe")
int gc_point(struct pt_regs *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32, one = 1;
	struct ljb_proc *proc = bpf_map_lookup_elem(&pids, &pid);
	__u64 t0;

	if (!proc || bpf_map_lookup_elem(&done, &pid))
		return 0;
	if (gw.pid != pid) {
		/* the first process here takes the walk; the others wait */
		if (gw.pid != 0 || __sync_val_compare_and_swap(&gw.pid, 0, (__u64)pid) != 0) {
			bpf_map_update_elem(&seen, &pid, &one, BPF_ANY);
			return 0;
		}
	}
	if (__sync_val_compare_and_swap(&gw.busy, 0, 1) != 0)
		return 0;
	t0 = bpf_ktime_get_ns();
	walk(proc, t0);
	gw.busy = 0;
	return 0;
}
