/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lj_read.bpf.h - the eBPF walk's reads of the target's memory (included
 * by lj_walk.bpf.h, after its maps and struct walk): each read counted
 * (ljb_reads_begin/_end) with its bytes, a sample's time in the probe
 * (ljb_cost), the readers of words and references, and the reads that
 * take several fields at once: a frame's two slots (frame_pair), a
 * function's header (func_head), a prototype's identity (proto_id), a
 * lua_State's fields (read_lstate), into the walk's buffer (read_head).
 * Each routine mirrors a tapset/luajit.sxx routine, named in its comment
 * (lib/bpf/README.md).
 */
#ifndef STAPXX_LJ_READ_BPF_H
#define STAPXX_LJ_READ_BPF_H

/* The reads of the target's memory made on each CPU, and their bytes: a
 * sample's are the difference around it (ljb_reads_begin/_end).  A
 * program runs on one CPU at a time, never nested. */
#define LJB_MAX_CPUS 1024
static __u64 ljb_nreads[LJB_MAX_CPUS], ljb_nrbytes[LJB_MAX_CPUS];

static __always_inline void tally(__u32 n)
{
	__u32 c = bpf_get_smp_processor_id() & (LJB_MAX_CPUS - 1);

	ljb_nreads[c]++;
	ljb_nrbytes[c] += n;
}

/* The reads so far on this CPU (ljb_reads_end's start). */
static __always_inline __u64 ljb_reads_begin(void)
{
	return ljb_nreads[bpf_get_smp_processor_id() & (LJB_MAX_CPUS - 1)];
}

/* Counts the reads (and bytes) a sample made since ljb_reads_begin()
 * returned R0 (and B0 bytes): LJB_N_READS, LJB_N_RBYTES, its bucket. */
static __always_inline void ljb_reads_end(__u64 r0, __u64 b0)
{
	__u32 c = bpf_get_smp_processor_id() & (LJB_MAX_CPUS - 1);
	__u64 n = ljb_nreads[c] - r0, b = ljb_nrbytes[c] - b0;
	__u64 k = n / 4 < LJB_RH - 1 ? n / 4 : LJB_RH - 1;

	ljb_pcpu_add(&stats, LJB_N_READS, n);
	ljb_pcpu_add(&stats, LJB_N_RBYTES, b);
	ljb_pcpu_add(&stats, LJB_N_RH0 + (__u32)k, 1);
}

/* Counts a sample's time in the probe, NS: LJB_N_COST and its bucket
 * (LJB_N_TH0 + 0 below 256 ns, else 1 + 4 * octave + the next two bits
 * below the top one, octave 0 for 256-511 ns). */
static __always_inline void ljb_cost(__u64 ns)
{
	__u64 v = ns >> 8;
	__u32 o = 0, k = 0;

	ljb_pcpu_add(&stats, LJB_N_COST, ns);
	if (v) {
		if (v >> 16) {
			o += 16;
			v >>= 16;
		}
		if (v >> 8) {
			o += 8;
			v >>= 8;
		}
		if (v >> 4) {
			o += 4;
			v >>= 4;
		}
		if (v >> 2) {
			o += 2;
			v >>= 2;
		}
		if (v >> 1)
			o += 1;
		k = 1 + 4 * o + (__u32)((ns >> (o + 6)) & 3);
	}
	ljb_pcpu_add(&stats, LJB_N_TH0 + (k < LJB_TH - 1 ? k : LJB_TH - 1), 1);
}

static __always_inline __u64 ljb_rbytes_begin(void)
{
	return ljb_nrbytes[bpf_get_smp_processor_id() & (LJB_MAX_CPUS - 1)];
}

/* Readers: a fault sets *f (the sample is skipped).  The N (1 to 8)
 * bytes at a, little-endian. */
static __always_inline __u64 rdn(__u64 a, __u32 n, __u32 *f)
{
	__u64 v = 0;

	tally(n);
	if (bpf_probe_read_user(&v, n, (void *)a))
		*f = 1;
	return v;
}

#define rd64(a, f) rdn((a), 8, (f))
#define rd32(a, f) ((__u32)rdn((a), 4, (f)))
#define rd16(a, f) ((__u32)rdn((a), 2, (f)))

/* The N bytes at a into w's hbuf (reads that take several fields at
 * once); 0, or -1 with *f set when N is more than it holds or a fault. */
static __always_inline int read_head(struct walk *w, __u64 a, __u32 n, __u32 *f)
{
	if (n > LJB_HEAD) {
		*f = 1;
		return -1;
	}
	tally(n);
	if (bpf_probe_read_user(w->hbuf, n, (void *)a)) {
		*f = 1;
		return -1;
	}
	return 0;
}

/* A GCRef/MRef: 64 or 32 bits. */
static __always_inline __u64 rdref(__u64 a, __u32 *f)
{
	return cfg.gc64 ? rd64(a, f) : rd32(a, f);
}

/* The GCfunc of frame (frame_func). */
static __always_inline __u64 frame_func(__u64 frame, __u32 *f)
{
	if (cfg.fr2)
		return rd64(frame - cfg.tv, f) & 0x7fffffffffffULL;
	return rd32(frame + cfg.fr_func, f);
}

/* The link as a PC (frame_pc). */
static __always_inline __u64 frame_pc(__u64 frame, __u32 *f)
{
	if (cfg.fr2)
		return rd64(frame, f);
	return rd32(frame + cfg.fr_tp, f);
}

/* gct | ffid << 8 of a GC object. */
static __always_inline __u32 gct_ffid(__u64 o, __u32 *f)
{
	return rd16(o + cfg.gct, f);
}

/* frame_func and frame_ftsz (the frame link, signed, in *FTSZ) of
 * frame, in one read: FR2's two slots below and at the frame, or the
 * TValue's two halves. */
static __always_inline __u64 frame_pair(__u64 frame, __s64 *ftsz, __u32 *f)
{
	__u64 v[2] = { 0, 0 };

	if (cfg.fr2) {
		tally(16);
		if (bpf_probe_read_user(v, 16, (void *)(frame - cfg.tv)))
			*f = 1;
		*ftsz = (__s64)v[1];
		return v[0] & 0x7fffffffffffULL;
	}
	tally(8);
	if (bpf_probe_read_user(v, 8, (void *)frame))
		*f = 1;
	*ftsz = (__s32)(v[0] >> (8 * (cfg.fr_tp & 4)));
	return (__u32)(v[0] >> (8 * (cfg.fr_func & 4)));
}

/* The bytes of a GCfunc's header that func_head reads: through its gct
 * and ffid and its pc (GCfuncL; a GCfuncC has them at the same
 * offsets). */
#define FN_HEAD_N (cfg.fl_pc + cfg.gcref > cfg.gct + 2 ? cfg.fl_pc + cfg.gcref : cfg.gct + 2)

/* gct | ffid << 8 of function fn (gct_ffid), and its pc (GCfuncL pc, an
 * MRef) in *PC, in one read. */
static __always_inline __u32 func_head(struct walk *w, __u64 fn, __u64 *pc, __u32 *f)
{
	__u8 *b = w->hbuf;
	__u32 g = cfg.gct & (LJB_HEAD - 1), o = cfg.fl_pc & (LJB_HEAD - 1);
	__u64 v = 0;

	if (read_head(w, fn, FN_HEAD_N, f))
		return 0;
	__builtin_memcpy(&v, b + o, 8);
	*pc = cfg.gc64 ? v : (__u32)v;
	return b[g] | (__u32)b[g + 1] << 8;
}

/* A GCRef or MRef (cfg.gcref bytes) at offset OFF of B. */
static __always_inline __u64 ref_at(const __u8 *b, __u32 off)
{
	__u64 v = 0;

	__builtin_memcpy(&v, b + (off & (LJB_HEAD - 1)), 8);
	return cfg.gc64 ? v : (__u32)v;
}

#define MAX2(a, b) ((a) > (b) ? (a) : (b))

/* The bytes of a GCproto that proto_id reads: its chunkname and
 * firstline, and with lines=1 its sizebc, numline and lineinfo too (a
 * sent stack's lines: frame_line); PID_LO: the first of them. */
#define MIN2(a, b) ((a) < (b) ? (a) : (b))
#define PID_ID_LO MIN2(cfg.pt_chunkname, cfg.pt_firstline)
#define PID_ID_HI MAX2(cfg.pt_chunkname + cfg.gcref, cfg.pt_firstline + 4)
#define PID_LO (cfg.lines ? MIN2(MIN2(PID_ID_LO, cfg.pt_sizebc), \
				 MIN2(cfg.pt_numline, cfg.pt_lineinfo)) : PID_ID_LO)
#define PID_N ((cfg.lines ? MAX2(MAX2(PID_ID_HI, cfg.pt_sizebc + 4), \
				 MAX2(cfg.pt_numline + 4, cfg.pt_lineinfo + cfg.gcref)) \
			  : PID_ID_HI) - PID_LO)

/* The identity of GCproto pt into frame R (its chunkname and firstline:
 * with the name's hash what identifies the function when user space
 * names it) and, with lines=1, what gives a position's line (sizebc,
 * lineinfo and numline), in one read. */
static __always_inline void proto_id(struct walk *w, __u64 pt, struct ljb_frame *r, __u32 *f)
{
	__u8 *b = w->hbuf;
	__u32 lo = PID_LO, nl = 0;

	if (read_head(w, pt + lo, PID_N, f))
		return;
	r->chunk = ref_at(b, cfg.pt_chunkname - lo);
	__builtin_memcpy(&r->first, b + ((cfg.pt_firstline - lo) & (LJB_HEAD - 1)), 4);
	if (!cfg.lines)
		return;
	__builtin_memcpy(&r->sizebc, b + ((cfg.pt_sizebc - lo) & (LJB_HEAD - 1)), 4);
	__builtin_memcpy(&nl, b + ((cfg.pt_numline - lo) & (LJB_HEAD - 1)), 4);
	r->li = ref_at(b, cfg.pt_lineinfo - lo) | (__u64)(nl < 256 ? 1 : nl < 65536 ? 2 : 4) << 48;
}

/* The fields of a lua_State the walk reads, in one read (read_lstate). */
struct lstate {
	__u64 cframe, base, stack;
	__u32 size;
};

#define L_HEAD_N MAX2(MAX2(cfg.L_cframe + 8, cfg.L_stacksize + 4), \
		      MAX2(cfg.L_base, cfg.L_stack) + cfg.gcref)


/* L's cframe, base, stack and stacksize into *LS; a fault sets *f. */
static __always_inline void read_lstate(struct walk *w, __u64 L, struct lstate *ls, __u32 *f)
{
	__u8 *b = w->hbuf;

	if (read_head(w, L, L_HEAD_N, f))
		return;
	__builtin_memcpy(&ls->cframe, b + (cfg.L_cframe & (LJB_HEAD - 1)), 8);
	ls->base = ref_at(b, cfg.L_base);
	ls->stack = ref_at(b, cfg.L_stack);
	ls->size = (__u32)ref_at(b, cfg.L_stacksize);
}

/* Whether base is a frame of the stack of a lua_State (LS: its fields)
 * holding a function (the tapset's __lj_base_ok). */
static __always_inline int base_ok(const struct lstate *ls, __u64 base, __u32 *f)
{
	__u64 fn;

	if (base <= ls->stack + cfg.fr2 * cfg.tv || base > ls->stack + (__u64)ls->size * cfg.tv)
		return 0;
	if (base & 7)
		return 0;
	fn = frame_func(base - cfg.tv, f);
	return fn && (gct_ffid(fn, f) & 0xff) == 8 && !*f;
}

#endif
