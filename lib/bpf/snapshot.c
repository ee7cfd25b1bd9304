/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/snapshot.c - see bpf/snapshot.h. */
#include "bpf/snapshot.h"
#include "bpf/symbolize.h"

#include <string.h>

/* LuaJIT's own constants, the same in every 2.1 (lj_jit.h, lj_ir.h,
 * lj_frame.h): a snapshot entry is slot << 24 | flags | IR reference. */
#define SNAP_FRAME 0x010000u
#define SNAP_CONT 0x020000u
#define snap_slot(sn) ((sn) >> 24)
#define snap_ref(sn) ((sn) & 0xffffu)
#define REF_BIAS 0x8000u	/* references below it are constants */
#define FRAME_TYPE 3
#define LJB_MAX_SNAPMAP 1024	/* a snapshot's entries: at most 255 slots,
				   the PC and the frame links */

struct rd {
	pid_t pid;
	int bad;
};

static uint64_t rd(struct rd *r, uint64_t a, size_t n)
{
	uint64_t v = 0;

	if (r->bad || ljb_read(r->pid, a, &v, n) < 0)
		r->bad = 1;
	return r->bad ? 0 : v;
}

/* The value of the trace constant REF (IR instructions at IR) of opcode
 * OP: a KGC's object or a KNUM's 64 bits; 0 (and r->bad) when REF is no
 * such constant. */
static uint64_t kconst(struct rd *r, const struct ljb_layout *ly, uint64_t ir, uint32_t ref,
		       long long op)
{
	uint64_t ins = ir + (uint64_t)ref * ly->ir_size;

	if (ref >= REF_BIAS || rd(r, ins + 5, 1) != (uint64_t)op) {	/* IRIns o */
		r->bad = 1;
		return 0;
	}
	/* a 64-bit constant, and a GC64 build's GCRef, take the next slot
	   (ir_knum, ir_kgc); else the GCRef overlaps op1 and op2 */
	if (op == ly->ir_knum || ly->k.gc64)
		return rd(r, ins + ly->ir_size, 8);
	return rd(r, ins, 4);
}

struct sframe {
	uint64_t fn, link;
};

#define LJB_MAX_REGION 4096	/* IR instructions read between two snapshots */
#define LJB_MAX_SFRAMES 256	/* frames a snapshot holds (< 256 slots) */

/* Whether the trace's call at machine-code offset ev->tofs may be the
 * one snapshot IDX + 1 follows (ljb_snap_restore): the IR between
 * snapshots IDX (at SA, of NSNAP) and IDX + 1 holds one call, an FFI call
 * or one with side effects, and the machine code's call does not go
 * into LuaJIT (ST). */
static int call_snap(struct rd *r, const struct ljb_event *ev, const struct ljb_layout *ly,
		     const struct ljb_symtab *st, uint64_t sa, uint32_t idx, uint32_t nsnap,
		     uint64_t ir)
{
	const struct ljb_cfg *k = &ly->k;
	uint64_t ra = ev->mcode + ev->tofs + 1, sb = sa + k->snap_size;
	uint32_t ref0, ref1, nref, calls = 0, sidefx = 0;
	uint8_t b[5], ins[LJB_MAX_REGION * 8];
	const struct ljb_file *lj, *to;

	if (idx + 1 >= nsnap || ly->ir_size != 8)
		return 0;
	ref0 = (uint32_t)rd(r, sa + ly->snap_ref, 2);
	ref1 = (uint32_t)rd(r, sb + ly->snap_ref, 2);
	nref = ref1 - ref0;
	if (r->bad || ref1 <= ref0 || nref > LJB_MAX_REGION ||
	    ljb_read(r->pid, ir + 8ULL * ref0, ins, 8ULL * nref) < 0)
		return 0;
	for (uint32_t i = 0; i < nref; i++)
		for (int c = 0; c < 5; c++)
			if (ins[8 * i + 5] == ly->ir_call[c]) {
				calls++;
				sidefx += c >= 3;	/* CALLS, CALLXS */
			}
	if (calls != 1 || sidefx != 1)
		return 0;
	/* the call: through a register (41) ff d0+r, which LuaJIT emits
	   for a target out of a rel32's reach, or e8 rel32, whose target
	   must not be LuaJIT's own code (its helpers, called for IR that
	   is no call: TNEW, SNEW...) */
	if (ljb_read(r->pid, ra - 5, b, 5) < 0)
		return 0;
	if (!(b[3] == 0xff && (b[4] & 0xf8) == 0xd0)) {
		uint64_t dispatch = rd(r, ev->g + ly->gg_g2disp, 8);
		int32_t rel;
		if (b[0] != 0xe8 || r->bad)
			return 0;
		memcpy(&rel, b + 1, 4);
		lj = ljb_symtab_file(st, dispatch);
		to = ljb_symtab_file(st, ra + (int64_t)rel);
		if (!lj || to == lj)
			return 0;
	}
	return !r->bad;
}

static long op_at(struct rd *r, uint64_t ins)
{
	return (long)(rd(r, ins, 4) & 0xff);
}

static int is_call(const struct ljb_layout *ly, long op)
{
	return op == ly->bc_call || op == ly->bc_callm;
}

/* A comparison or test, which a JMP follows (BC_ISLT..BC_ISF). */
static int is_cond(const struct ljb_layout *ly, long op)
{
	const char *n = op >= 0 && op < ly->bc_max ? ly->bc_name[op] : NULL;
	return n && n[0] == 'I' && n[1] == 'S' && strcmp(n, "ISNEXT") != 0 &&
	       strcmp(n, "ISTYPE") != 0 && strcmp(n, "ISNUM") != 0;
}

/* An instruction that only loads a constant, an upvalue or a slot:
 * no side effect, so LuaJIT takes no snapshot after it. */
static int is_load(const struct ljb_layout *ly, long op)
{
	static const char *const loads[] = { "MOV", "KSTR", "KCDATA", "KSHORT", "KNUM",
					     "KPRI", "KNIL", "UGET" };
	const char *n = op >= 0 && op < ly->bc_max ? ly->bc_name[op] : NULL;

	for (size_t i = 0; n && i < sizeof(loads) / sizeof(*loads); i++)
		if (strcmp(n, loads[i]) == 0)
			return 1;
	return 0;
}

/* The call before the comparison at K, with only loads between (those
 * of its other operand), or 0. */
static uint64_t call_before_cond(struct rd *r, const struct ljb_layout *ly, uint64_t k)
{
	for (int n = 0; n < 8 && !r->bad; n++) {
		long op = op_at(r, k -= 4);
		if (is_call(ly, op))
			return r->bad ? 0 : k;
		if (!is_load(ly, op))
			return 0;
	}
	return 0;
}

/* The call instruction whose snapshot, taken at the instruction after
 * it, has PC now, or 0: LuaJIT takes the snapshot after a call there;
 * when a comparison or test that a guard checks follows (after loads of
 * its other operand, which take no snapshot), LuaJIT sets that
 * snapshot's PC to the branch the guard does not take (lj_record.c,
 * rec_comp_fixup): past the comparison's JMP, or the JMP's target. */
static uint64_t call_before(struct rd *r, const struct ljb_layout *ly, uint64_t pc)
{
	long jmp = -1;

	for (long i = 0; i < ly->bc_max; i++)
		if (ly->bc_name[i] && strcmp(ly->bc_name[i], "JMP") == 0)
			jmp = i;
	if (is_call(ly, op_at(r, pc - 4)))
		return r->bad ? 0 : pc - 4;
	if (op_at(r, pc - 4) == jmp && is_cond(ly, op_at(r, pc - 8)))
		return call_before_cond(r, ly, pc - 8);
	for (uint64_t k = pc - 4, n = 0; n < 256 && !r->bad; k -= 4, n++) {
		uint32_t ins = (uint32_t)rd(r, k, 4);
		if ((long)(ins & 0xff) != jmp ||
		    k + 4 + 4 * ((int64_t)(ins >> 16) - 0x8000) != pc)
			continue;
		return is_cond(ly, op_at(r, k - 4)) ? call_before_cond(r, ly, k - 4) : 0;
	}
	return 0;
}


/* The trace's snapshot state (ljb_snap_restore). */
struct tsnap {
	uint64_t snap, snapmap, ir;
	uint32_t nsnap, nsnapmap;
};

/* The frames above the base frame of snapshot IDX of TS, outermost
 * first, into FR (*N), and its PC (*PC, the instruction not yet run).
 * 0, or -1 with *WHY. */
static int snap_frames(struct rd *r, const struct ljb_layout *ly, const struct tsnap *ts,
		       uint32_t idx, struct sframe *fr, int *n, uint64_t *pc, int *why)
{
	const struct ljb_cfg *k = &ly->k;
	uint64_t sa = ts->snap + (uint64_t)idx * k->snap_size;
	uint32_t mapofs, nent, next, nmap, map[LJB_MAX_SNAPMAP];

	*n = 0;
	*why = LJB_SNAP_UNREAD;
	mapofs = (uint32_t)rd(r, sa + ly->snap_mapofs, 4);
	nent = (uint32_t)rd(r, sa + ly->snap_nent, 1);
	next = idx + 1 < ts->nsnap ? (uint32_t)rd(r, sa + k->snap_size + ly->snap_mapofs, 4)
				   : ts->nsnapmap;
	if (r->bad)
		return -1;
	nmap = next - mapofs;
	if (next < mapofs || nmap > LJB_MAX_SNAPMAP || nmap < nent + 1 + k->fr2 ||
	    ljb_read(r->pid, ts->snapmap + 4ULL * mapofs, map, 4ULL * nmap) < 0)
		return -1;
	/* the PC the innermost frame executes: FR2 stores it shifted
	   left by 8 over two entries, else it is the first of the links */
	*pc = k->fr2 ? ((uint64_t)map[nent] | (uint64_t)map[nent + 1] << 32) >> 8 : map[nent];

	/* a frame entry (FR2: the link's slot, whose function is the slot
	   below; else the function's slot, whose link is the next one from
	   the end) */
	*why = LJB_SNAP_KIND;
	for (uint32_t i = 0, li = nmap; i < nent && !r->bad; i++) {
		uint32_t sn = map[i], slot = snap_slot(sn);
		struct sframe f;
		if (!(sn & (SNAP_FRAME | SNAP_CONT)) || slot < (k->fr2 ? 2u : 1u))
			continue;
		if (sn & SNAP_CONT)
			return -1;	/* a metamethod's continuation */
		if (k->fr2) {
			if (!i || snap_slot(map[i - 1]) != slot - 1)
				return -1;
			f.fn = kconst(r, ly, ts->ir, snap_ref(map[i - 1]), ly->ir_kgc);
			f.link = kconst(r, ly, ts->ir, snap_ref(sn), ly->ir_knum);
		} else {
			if (li <= nent + 1)
				return -1;
			f.fn = kconst(r, ly, ts->ir, snap_ref(sn), ly->ir_kgc);
			f.link = (uint64_t)(int64_t)(int32_t)map[--li];
		}
		if (r->bad)
			return -1;
		if ((f.link & FRAME_TYPE) == k->frame_varg) {
			/* a vararg call's second frame: the same function,
			   whose first frame holds the link to its caller */
			if (!*n || fr[*n - 1].fn != f.fn)
				return -1;
			continue;
		}
		if ((f.link & FRAME_TYPE) != k->frame_lua || *n == LJB_MAX_SFRAMES)
			return -1;
		if (!k->fr2)
			f.link &= 0xffffffffULL;
		fr[(*n)++] = f;
	}
	if (r->bad) {
		*why = LJB_SNAP_UNREAD;
		return -1;
	}
	return 0;
}

/* Whether a frame of FR (N) returns to PC: the call before PC called a
 * Lua function that the trace inlined, not the C function. */
static int returns_to(const struct sframe *fr, int n, uint64_t pc)
{
	for (int i = 0; i < n; i++)
		if (fr[i].link == pc)
			return 1;
	return 0;
}

int ljb_snap_restore(const struct ljb_event *ev, const struct ljb_layout *ly,
		     const struct ljb_symtab *st, int (*ffi_call)(void *, uint64_t, uint64_t),
		     void *ctx, struct ljb_frame *out, int max, uint64_t *basepc, int *why)
{
	const struct ljb_cfg *k = &ly->k;
	struct rd r = { (pid_t)ev->pid, 0 };
	uint64_t T = ev->T, pc, apc, cins = 0, top = 0;
	uint32_t idx = ev->snap - 1;
	struct tsnap ts;
	static struct sframe fr[LJB_MAX_SFRAMES], afr[LJB_MAX_SFRAMES];
	int n = 0, an, awhy, nout = 0, after = 0;

	*why = LJB_SNAP_UNREAD;
	if (!T || !ev->snap)
		return -1;
	ts.nsnap = (uint32_t)rd(&r, T + k->T_nsnap, 2);
	ts.snap = rd(&r, T + k->T_snap, 8);
	ts.snapmap = rd(&r, T + ly->T_snapmap, 8);
	ts.ir = rd(&r, T + ly->T_ir, 8);
	ts.nsnapmap = (uint32_t)rd(&r, T + ly->T_nsnapmap, 4);
	if (r.bad)
		return -1;
	/* (after a flush, trace numbers and machine code start again: the
	   start PC tells another trace there) */
	if (rd(&r, T + ly->T_traceno, 2) != (uint64_t)ev->vmstate ||
	    rd(&r, T + k->T_mcode, 8) != ev->mcode ||
	    (k->gc64 ? rd(&r, T + k->T_startpc, 8) : rd(&r, T + k->T_startpc, 4)) != ev->startpc ||
	    idx >= ts.nsnap || !ts.snap || !ts.snapmap) {
		*why = r.bad ? LJB_SNAP_UNREAD : LJB_SNAP_STALE;
		return -1;
	}
	if (snap_frames(&r, ly, &ts, idx, fr, &n, &pc, why) < 0)
		return -1;
	/* the snapshot after the position, read once for both uses below
	   (a fault there only leaves it unknown) */
	struct rd r2 = r;
	int next = idx + 1 < ts.nsnap &&
		   snap_frames(&r2, ly, &ts, idx + 1, afr, &an, &apc, &awhy) == 0;
	if (next && ev->sflags == LJB_SNAP_CALL &&
	    call_snap(&r2, ev, ly, st, ts.snap + (uint64_t)idx * k->snap_size, idx, ts.nsnap,
		      ts.ir) &&
	    !returns_to(fr, n, apc) && (cins = call_before(&r2, ly, apc)) &&
	    ffi_call(ctx, an ? afr[an - 1].fn : ev->f[0].fn, cins)) {
		after = 1;
		memcpy(fr, afr, an * sizeof(*fr));
		n = an;
		top = cins + 4;	/* at the call (as after the interpreter's fetch) */
	} else {
		/* Between two snapshots: only the frames both hold, which the
		   trace cannot have left and entered again in between (its
		   code has no loop but the root trace's, whose body's
		   snapshots are copies within one iteration); the innermost
		   of them at the call of the next frame where both agree on
		   it, else at no known position.  After the last snapshot,
		   where the trace may still return: none. */
		int m = 0;
		if (next) {
			while (m < n && m < an && fr[m].fn == afr[m].fn && fr[m].link == afr[m].link)
				m++;
			if (m < n && m < an && fr[m].link == afr[m].link)
				top = fr[m].link;
			else if (m == n && m == an && pc == apc)
				top = pc + 4;
		}
		n = m;
	}
	/* innermost first: each frame executes at the link of the frame
	   above it (the instruction after its call), the innermost at TOP
	   (0: not known, no line) */
	for (int i = n - 1; i >= 0 && nout < max; i--) {
		uint64_t fn = fr[i].fn;
		uint64_t fpc = k->gc64 ? rd(&r, fn + k->fl_pc, 8) : rd(&r, fn + k->fl_pc, 4);
		uint32_t gf = (uint32_t)rd(&r, fn + k->gct, 2);
		uint64_t at = i == n - 1 ? top : fr[i + 1].link;
		if (r.bad || (gf & 0xff) != 8 || (gf >> 8) != 0 || !fpc) {
			*why = r.bad ? LJB_SNAP_UNREAD : LJB_SNAP_KIND;
			return -1;	/* (a Lua function: ~LJ_TFUNC, ffid 0) */
		}
		out[nout++] = (struct ljb_frame){
			.fn = fn, .key = fpc - k->proto_size, .pc = at, .ffid = 0,
			.flags = (at ? LJB_PC_INS : LJB_PC_NONE) | LJB_F_CALLER,
		};
	}
	*basepc = n ? fr[0].link : top;
	*why = after ? LJB_SNAP_OK : LJB_SNAP_APPROX;
	return nout;
}
