/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/symbolize.c - see bpf/symbolize.h. */
#include "bpf/symbolize.h"
#include "bpf/snapshot.h"
#include "base/error.h"
#include "base/wrapper.h"
#include "target/proc.h"

#include <bpf/bpf.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* The target's memory.                                                */

static pid_t mem_pid;
static int mem_fd = -1, map_fd = -1;

enum { PAGE = 4096, NKEPT = 16 };

/* The pages ljb_read() keeps while ljb_read_keep(1) holds (NKEPT; the
 * next to replace: next_kept). */
static struct kept {
	pid_t pid;	/* 0: empty */
	uint64_t page;
	unsigned char b[PAGE];
} kept[NKEPT];
static int keeping;
static unsigned next_kept;

int ljb_present(pid_t pid, uint64_t addr, size_t n)
{
	enum { MAXP = 64 };
	uint64_t e[MAXP], first = addr / PAGE, last = (addr + (n ? n : 1) - 1) / PAGE;

	if (ljb_read_open(pid) < 0)
		return 0;
	for (uint64_t p = first; p <= last;) {
		size_t k = last - p + 1 < MAXP ? (size_t)(last - p + 1) : MAXP;
		if (pread(map_fd, e, k * 8, (off_t)(p * 8)) != (ssize_t)(k * 8))
			return 0;
		for (size_t i = 0; i < k; i++)
			if (!(e[i] >> 63))
				return 0;
		p += k;
	}
	return 1;
}

int ljb_read_open(pid_t pid)
{
	if (pid != mem_pid || mem_fd < 0 || map_fd < 0) {
		char path[64];
		if (mem_fd >= 0)
			close(mem_fd);
		if (map_fd >= 0)
			close(map_fd);
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		mem_fd = open(path, O_RDONLY | O_CLOEXEC);
		snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
		map_fd = open(path, O_RDONLY | O_CLOEXEC);
		mem_pid = pid;
		if (mem_fd < 0 || map_fd < 0)
			return -1;
	}
	return 0;
}

void ljb_read_keep(int on)
{
	for (unsigned i = 0; i < NKEPT; i++)
		kept[i].pid = 0;
	keeping = on;
}

/* The kept copy of page P of PID, read now if it is not kept; NULL when
 * the page is not present or cannot be read. */
static const unsigned char *kept_page(pid_t pid, uint64_t p)
{
	struct kept *k;

	for (unsigned i = 0; i < NKEPT; i++)
		if (kept[i].pid == pid && kept[i].page == p)
			return kept[i].b;
	k = &kept[next_kept++ % NKEPT];
	k->pid = 0;
	if (!ljb_present(pid, p * PAGE, PAGE) ||
	    pread(mem_fd, k->b, PAGE, (off_t)(p * PAGE)) != PAGE)
		return NULL;
	k->pid = pid;
	k->page = p;
	return k->b;
}

int ljb_read(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	/* (a page the target never touched, or swapped out, is not read:
	   reading it would map or swap one in; kept_page checks too) */
	if (keeping && n <= 2 * PAGE) {
		for (size_t done = 0; done < n;) {
			uint64_t a = addr + done, off = a % PAGE;
			size_t k = n - done < PAGE - off ? n - done : (size_t)(PAGE - off);
			const unsigned char *b = kept_page(pid, a / PAGE);
			if (!b)
				return -1;
			memcpy((char *)buf + done, b + off, k);
			done += k;
		}
		return 0;
	}
	if (!ljb_present(pid, addr, n))
		return -1;
	return pread(mem_fd, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

/* A reading context: a fault sets bad; later reads return 0. */
struct rctx {
	pid_t pid;
	const struct ljb_layout *ly;
	const struct ljb_symtab *st;
	int bad;
	int unsure;	/* a name left out on a value read now (ljb_stack_text) */
	int gone;	/* a function named from the sample's copy (ljb_textres) */
};

static uint64_t rdn(struct rctx *c, uint64_t a, size_t n)
{
	uint64_t v = 0;

	if (c->bad || ljb_read(c->pid, a, &v, n) < 0) {
		c->bad = 1;
		return 0;
	}
	return v;
}
#define R8(c, a) ((uint8_t)rdn(c, a, 1))
#define R16(c, a) ((uint16_t)rdn(c, a, 2))
#define R32(c, a) ((uint32_t)rdn(c, a, 4))
#define R64(c, a) rdn(c, a, 8)
#define REF(c, a) ((c)->ly->k.gc64 ? R64(c, a) : R32(c, a))
#define GCV(c, a) ((c)->ly->k.gc64 ? (R64(c, a) & 0x7fffffffffffULL) : R32(c, a))

uint64_t ljb_find_G(pid_t pid, const struct ljb_layout *ly, const struct ljb_symtab *st)
{
	struct rctx c = { pid, ly, st, 0, 0, 0 };
	uint64_t L;

	if (ly->nginx) {
		uint64_t cyclep = ljb_symtab_addr(st, "ngx_cycle"),
			 httpm = ljb_symtab_addr(st, "ngx_http_module"),
			 luam = ljb_symtab_addr(st, "ngx_http_lua_module");
		if (!cyclep || !httpm || !luam)
			return 0;
		uint64_t cycle = R64(&c, cyclep);
		uint64_t conf = cycle ? R64(&c, cycle + ly->cycle_conf_ctx) : 0;
		if (!conf || c.bad)
			return 0;
		uint64_t ctx = R64(&c, conf + R64(&c, httpm + ly->mod_index) * ly->ngx_uint);
		uint64_t main = ctx ? R64(&c, ctx + ly->ctx_main_conf) : 0;
		if (!main || c.bad)
			return 0;
		uint64_t lmcf = R64(&c, main + R64(&c, luam + ly->mod_ctx_index) * ly->ngx_uint);
		L = lmcf ? R64(&c, lmcf + ly->lmcf_lua) : 0;
	} else {
		uint64_t a = ljb_symtab_addr(st, "globalL");
		L = a ? R64(&c, a) : 0;
	}
	if (!L || c.bad)
		return 0;
	L = REF(&c, L + ly->k.L_glref);
	return c.bad ? 0 : L;
}

/* ------------------------------------------------------------------ */
/* Names (the tapset's rules: lj_debug.c).                             */

void ljb_escape(struct buf *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = s[i];
		if (ch == ';')
			buf_addc(out, ',');
		else if (ch == '\t')
			buf_adds(out, "\\t");
		else if (ch == '\n')
			buf_adds(out, "\\n");
		else if (ch == '\r')
			buf_adds(out, "\\r");
		else if (ch < 0x20 || ch == 0x7f)
			buf_addf(out, "\\x%02x", ch);
		else
			buf_addc(out, ch);
	}
}

/* The contents of GCstr s, at most max bytes, into b (NUL-terminated);
 * returns the length. */
static size_t str_of(struct rctx *c, uint64_t s, char *b, size_t max)
{
	uint32_t len = R32(c, s + c->ly->str_len);

	if (len > max)
		len = max;
	if (c->bad || (len && ljb_read(c->pid, s + c->ly->str_size, b, len) < 0)) {
		c->bad = 1;
		len = 0;
	}
	b[len] = 0;
	return len;
}

/* The last '/' of the N bytes at S (not NUL-terminated), or NULL. */
static const char *last_slash(const char *s, size_t n)
{
	while (n > 0)
		if (s[--n] == '/')
			return s + n;
	return NULL;
}

/* The chunkname S (N bytes, not NUL-terminated; its last ones when TAIL,
 * of an "@path"), as luajit_proto_chunkname shows it, escaped, appended
 * to out. */
static void chunk_text(const char *s, size_t n, int tail, int fullpath, struct buf *out)
{
	if (tail) {
		const char *slash = fullpath ? NULL : last_slash(s, n);
		if (slash) {
			ljb_escape(out, slash + 1, n - (size_t)(slash + 1 - s));
		} else {
			buf_adds(out, "...");
			ljb_escape(out, s, n);
		}
	} else if (n && s[0] == '@') {
		const char *p = s + 1, *slash = fullpath ? NULL : last_slash(p, n - 1);
		if (slash)
			p = slash + 1;
		ljb_escape(out, p, n - (size_t)(p - s));
	} else if (n && s[0] == '=') {
		ljb_escape(out, s + 1, n - 1);
	} else {
		size_t i;
		for (i = 0; i < n && i < 40; i++)
			if ((unsigned char)s[i] < 32)
				break;
		buf_adds(out, "[string \"");
		ljb_escape(out, s, i);
		if (i < n)
			buf_adds(out, "...");
		buf_adds(out, "\"]");
	}
}

/* luajit_proto_chunkname, escaped, appended to out. */
static void chunkname(struct rctx *c, uint64_t pt, int fullpath, struct buf *out)
{
	char s[256];
	size_t n = str_of(c, REF(c, pt + c->ly->k.pt_chunkname), s, 250);

	chunk_text(s, n, 0, fullpath, out);
}

#define LJB_GCT_STR 4	/* ~LJ_TSTR (lj_obj.h) */
#define LJB_GCT_PROTO 7	/* ~LJ_TPROTO */

/* Whether Lua frame f's function is still the one sampled: its GCproto
 * and chunkname still have the type, chunkname, firstline and name's
 * hash (or sid) the kernel read at the sample.  The target may have
 * freed it since (a function that load() made, say) and reused its
 * memory, so naming it would print another function's name.  A frame
 * without that identity (one a trace's snapshot restored: the trace
 * holds its functions, and ev->mcode checks the trace) passes. */
static int frame_alive(const struct rctx *c0, const struct ljb_frame *f)
{
	struct rctx cc = *c0, *c = &cc;	/* (a read that fails: not alive) */
	const struct ljb_layout *ly = c->ly;
	uint64_t pt = f->key;

	if (f->ffid != 0 || !f->chunk)
		return 1;
	return R8(c, pt + ly->k.gct) == LJB_GCT_PROTO &&
	       REF(c, pt + ly->k.pt_chunkname) == f->chunk &&
	       R32(c, pt + ly->pt_firstline) == f->first &&
	       R8(c, f->chunk + ly->k.gct) == LJB_GCT_STR &&
	       R32(c, f->chunk + ly->str_hash) == f->strid && !c->bad;
}

static uint64_t proto_bc(struct rctx *c, uint64_t pt)
{
	return pt + c->ly->k.proto_size;
}

/* luajit_debug_line */
static long debug_line(struct rctx *c, uint64_t pt, long pos)
{
	const struct ljb_layout *ly = c->ly;
	uint64_t li = REF(c, pt + ly->pt_lineinfo);
	long sizebc = R32(c, pt + ly->k.pt_sizebc);
	long first = (int32_t)R32(c, pt + ly->pt_firstline);
	long numline = (int32_t)R32(c, pt + ly->pt_numline);

	if (c->bad || pos < 0 || pos > sizebc || !li)
		return -1;
	if (pos == sizebc)
		return first + numline;
	if (pos == 0)
		return first;
	pos--;
	if (numline < 256)
		return first + R8(c, li + pos);
	if (numline < 65536)
		return first + R16(c, li + 2 * pos);
	return first + R32(c, li + 4 * pos);
}

/* __lj_pc2pos: bytecode position of ins in pt, undoing a JLOOP patch;
 * -1 when not in pt. */
static long pc2pos(struct rctx *c, uint64_t pt, uint64_t ins)
{
	const struct ljb_layout *ly = c->ly;
	long sizebc, pos;

	if (!ins)
		return -1;
	pos = ((long)(ins - proto_bc(c, pt))) / 4 - 1;
	sizebc = R32(c, pt + ly->k.pt_sizebc);
	if (pos > sizebc || pos < -1) {
		long op = R32(c, ins - 4) & 0xff;
		if (op == ly->bc_retm || op == ly->bc_ret || op == ly->bc_ret0 || op == ly->bc_ret1) {
			uint64_t T = ins - 4 - ly->T_startins;
			uint64_t spc = REF(c, T + ly->k.T_startpc);
			pos = ((long)(spc - proto_bc(c, pt))) / 4;
			return pos < 0 || pos > sizebc ? -1 : pos;
		}
		return -1;
	}
	return pos < 0 || c->bad ? -1 : pos;
}

/* The position a raw frame executes, -1 if none. */
static long frame_pos(struct rctx *c, const struct ljb_frame *f)
{
	if (f->ffid != 0 || (f->flags & 3) != LJB_PC_INS)
		return -1;
	return pc2pos(c, f->key, f->pc);
}

/* Reads the unsigned LEB128 at *p, advancing it. */
static uint64_t uleb128(struct rctx *c, uint64_t *p)
{
	uint64_t v = 0;
	int sh = 0;

	for (int n = 0; n < 6; n++) {
		uint8_t b = R8(c, (*p)++);
		v |= (uint64_t)(b & 0x7f) << sh;
		sh += 7;
		if (b < 0x80)
			break;
	}
	return v;
}

/* Skips a NUL-terminated name at *p. */
static void skip_name(struct rctx *c, uint64_t *p)
{
	for (int n = 0; n < 1024 && !c->bad; n++)
		if (R8(c, (*p)++) == 0)
			return;
}

/* Reads the NUL-terminated name at p into b (at most max bytes). */
static void name_at(struct rctx *c, uint64_t p, char *b, size_t max)
{
	size_t i;

	for (i = 0; i < max && !c->bad; i++)
		if ((b[i] = R8(c, p + i)) == 0)
			return;
	b[i < max ? i : max] = 0;
}

/* debug_varname: the name of the slot-th live local at pos into b, 0 if
 * found. */
static int varname(struct rctx *c, uint64_t pt, long pos, long slot, char *b, size_t max)
{
	const struct ljb_layout *ly = c->ly;
	uint64_t p = REF(c, pt + ly->pt_varinfo), lastpc = 0;

	if (!p)
		return -1;
	for (int k = 0; k < 2000 && !c->bad; k++) {
		uint64_t name = p, startpc, endpc;
		long vn = R8(c, p);
		if (vn < ly->vn_max) {
			if (vn == ly->vn_end)
				break;
			p++;
		} else {
			skip_name(c, &p);
		}
		startpc = lastpc + uleb128(c, &p);
		lastpc = startpc;
		if ((long)startpc > pos)
			break;
		endpc = startpc + uleb128(c, &p);
		if (pos < (long)endpc) {
			if (slot == 0) {
				if (vn >= ly->vn_max)
					name_at(c, name, b, max);
				else
					snprintf(b, max, "(for)");
				return c->bad ? -1 : 0;
			}
			slot--;
		}
	}
	return -1;
}

/* lj_debug_uvname into b. */
static int uvname(struct rctx *c, uint64_t pt, long idx, char *b, size_t max)
{
	const struct ljb_layout *ly = c->ly;
	uint64_t p = REF(c, pt + ly->pt_uvinfo);

	if (!p || idx >= R8(c, pt + ly->pt_sizeuv))
		return -1;
	for (; idx > 0; idx--)
		skip_name(c, &p);
	name_at(c, p, b, max);
	return c->bad ? -1 : 0;
}

/* lj_tab_getstr: the address of t[str], 0 if absent. */
static uint64_t tab_getstr(struct rctx *c, uint64_t t, uint64_t str)
{
	const struct ljb_layout *ly = c->ly;
	uint32_t hmask = R32(c, t + ly->tab_hmask);
	uint64_t node = REF(c, t + ly->tab_node);
	uint64_t n = node + (uint64_t)(R32(c, str + ly->str_hash) & hmask) * ly->node_size;

	for (int k = 0; n && k < 64 && !c->bad; k++) {
		if (GCV(c, n + ly->node_key) == str)
			return n + ly->node_val;
		n = REF(c, n + ly->node_next);
	}
	return 0;
}

/* Constant string ~idx of pt, 0 if not a string. */
static uint64_t kgc_str(struct rctx *c, uint64_t pt, long idx)
{
	uint64_t k = REF(c, pt + c->ly->pt_k);
	uint64_t s = REF(c, k - (idx + 1) * c->ly->k.gcref);

	if (!s || R8(c, s + c->ly->k.gct) != 4)
		return 0;
	return s;
}

/* The internal type tag of the TValue at tv (itype: ~LJ_Txxx, signed;
 * the tapset's __lj_tv_itype). */
static long tv_itype(struct rctx *c, uint64_t tv)
{
	if (c->ly->k.gc64)
		return (long)((int64_t)R64(c, tv) >> 47);
	return (long)(int32_t)R32(c, tv + 4);
}

#define LJB_GCT_TAB 11	/* ~LJ_TTAB (lj_obj.h; the tapset's __LJ_GCT_TAB) */

/* Whether the TValue at tv, read now, is the function fn; else marks the
 * name unsure (the value may have changed since the sample). */
static int still_holds(struct rctx *c, uint64_t tv, uint64_t fn)
{
	if (tv && GCV(c, tv) == fn && !c->bad)
		return 1;
	c->unsure = 1;
	return 0;
}

/* lj_bc_mode[op], 0 past its end */
static unsigned bcmode_of(const struct ljb_layout *ly, long op)
{
	return op >= 0 && op < ly->nbc_mode ? ly->bc_mode[op] : 0;
}

/* The instruction before *IP that set SLOT, going back linearly (the
 * tapset's rule), *IP moved to it; 0 when there is none or an
 * instruction that sets a range of slots (a call's results, KNIL) set
 * it.  (A setter is never 0: op 0, ISLT, sets no slot.) */
static uint32_t slot_setter(struct rctx *c, uint64_t bc, uint64_t *ip, long slot)
{
	const struct ljb_layout *ly = c->ly;

	for (int n = 0; n < 2000 && !c->bad; n++) {
		*ip -= 4;
		if (*ip <= bc)
			return 0;
		uint32_t ins = R32(c, *ip);
		long op = ins & 0xff, ra = (ins >> 8) & 0xff, ma = bcmode_of(ly, op) & 7;
		if (ma == ly->bcm_base) {
			if (slot >= ra && (op != ly->bc_knil || slot <= (long)(ins >> 16)))
				return 0;
		} else if (ma == ly->bcm_dst && ra == slot) {
			return ins;
		}
	}
	return 0;
}

/* The TValue of upvalue IDX of closure FN (read now), or 0. */
static uint64_t uv_tv(struct rctx *c, uint64_t fn, long idx)
{
	uint64_t uv = REF(c, fn + c->ly->fl_uvptr + idx * c->ly->k.gcref);

	return uv ? REF(c, uv + c->ly->uv_v) : 0;
}

/* __lj_slotname: the name the caller (prototype pt, function cfn, frame
 * base cbase) gave the function in slot at ip, checked against the
 * function called (fn) where the named value can be read now (a local, a
 * global, a field of a table in a local, an upvalue): a tail call
 * replaced the function its caller named; into b. */
static int slotname(struct rctx *c, uint64_t pt, uint64_t ip, long slot, uint64_t cbase,
		    uint64_t cfn, uint64_t fn, char *b, size_t max)
{
	const struct ljb_layout *ly = c->ly;
	uint64_t bc = proto_bc(c, pt), str, tv;

	for (int restarts = 0; restarts < 16; restarts++) {
		if (varname(c, pt, (long)(ip - bc) / 4, slot, b, max) == 0)
			return cbase && still_holds(c, cbase + slot * ly->k.tv, fn) ? 0 : -1;
		uint32_t ins = slot_setter(c, bc, &ip, slot);
		long op = ins & 0xff;
		if (!ins)
			return -1;
		if (op == ly->bc_mov) {
			slot = ins >> 16;
			continue;
		}
		/* a global or upvalue that holds another function now: no
		   name, an unsure one (it may have changed since the sample,
		   or the caller's closure be freed and its memory reused:
		   pcall's anonymous functions) */
		if (op == ly->bc_gget) {
			if (!(str = kgc_str(c, pt, ins >> 16)))
				return -1;
			if (!still_holds(c, tab_getstr(c, REF(c, cfn + ly->fl_env), str), fn))
				return -1;
			str_of(c, str, b, max - 1);
			return c->bad ? -1 : 0;
		}
		if (op == ly->bc_tgets) {
			if (!(str = kgc_str(c, pt, (ins >> 16) & 0xff)))
				return -1;
			tv = cbase + (ins >> 24) * ly->k.tv;
			if (cbase && tv_itype(c, tv) == -1 - LJB_GCT_TAB &&
			    !still_holds(c, tab_getstr(c, GCV(c, tv), str), fn))
				return -1;
			str_of(c, str, b, max - 1);
			return c->bad ? -1 : 0;
		}
		if (op == ly->bc_uget) {
			if (!still_holds(c, uv_tv(c, cfn, ins >> 16), fn))
				return -1;
			return uvname(c, pt, ins >> 16, b, max);
		}
		return -1;
	}
	return -1;
}

#define LJB_GCT_CDATA 10	/* ~LJ_TCDATA */
#define LJB_GCT_UDATA 12	/* ~LJ_TUDATA */

/* The TValue (its address; read now) that function FN (prototype PT)
 * loaded into SLOT before the instruction at IP, going back through
 * MOVs: an upvalue (UGET), a global (GGET), or a string-keyed field
 * (TGETS) of such a table; *UD is set, and 0 returned, for a field of a
 * userdata (an FFI namespace: ffi.C, ffi.load's library).  0 when not
 * known. */
static uint64_t loaded(struct rctx *c, uint64_t fn, uint64_t pt, uint64_t ip, long slot,
		       int depth, int *ud)
{
	const struct ljb_layout *ly = c->ly;
	uint64_t bc = proto_bc(c, pt), str, tv;
	uint32_t ins;

	while ((ins = slot_setter(c, bc, &ip, slot))) {
		long op = ins & 0xff;
		if (op == ly->bc_mov) {
			slot = ins >> 16;
			continue;
		}
		if (op == ly->bc_uget)
			return uv_tv(c, fn, ins >> 16);
		if (op == ly->bc_gget) {
			str = kgc_str(c, pt, ins >> 16);
			return str ? tab_getstr(c, REF(c, fn + ly->fl_env), str) : 0;
		}
		if (op != ly->bc_tgets || depth >= 4)
			return 0;
		str = kgc_str(c, pt, (ins >> 16) & 0xff);
		tv = loaded(c, fn, pt, ip, ins >> 24, depth + 1, ud);
		if (!str || !tv)
			return 0;
		if (tv_itype(c, tv) == -1 - LJB_GCT_UDATA) {
			*ud = 1;
			return 0;
		}
		return tv_itype(c, tv) == -1 - LJB_GCT_TAB ? tab_getstr(c, GCV(c, tv), str) : 0;
	}
	return 0;
}

/* Whether the call instruction at IP of Lua function FN calls a C
 * function through the FFI: the value it calls is a cdata, or a field of
 * an FFI namespace (bpf/snapshot.h's ljb_ffi_call). */
static int ffi_call(void *ctx, uint64_t fn, uint64_t ip)
{
	struct rctx cc = *(struct rctx *)ctx, *c = &cc;
	uint64_t pt = REF(c, fn + c->ly->k.fl_pc) - c->ly->k.proto_size, tv;
	int ud = 0;

	if (c->bad)
		return 0;
	tv = loaded(c, fn, pt, ip, (R32(c, ip) >> 8) & 0xff, 0, &ud);
	return !c->bad && (ud || (tv && tv_itype(c, tv) == -1 - LJB_GCT_CDATA));
}

/* luajit_debug_funcname of frame f (callee) whose caller is frame cf. */
static int funcname(struct rctx *c0, const struct ljb_event *ev, const struct ljb_frame *f,
		    const struct ljb_frame *cf, char *b, size_t max)
{
	struct rctx cc = *c0, *c = &cc;	/* no name is no fault of the stack */
	const struct ljb_layout *ly = c->ly;
	long pos, sizebc, op, mm;
	uint64_t pt, ip;
	uint32_t ins;

	if (!cf || !(f->flags & LJB_F_CALLER) || cf->ffid != 0 || !ly->nbc_mode)
		return -1;
	pt = cf->key;
	if ((pos = frame_pos(c, cf)) < 0)
		return -1;
	sizebc = R32(c, pt + ly->k.pt_sizebc);
	if (pos >= sizebc)
		return -1;
	ip = proto_bc(c, pt) + 4 * pos;
	ins = R32(c, ip);
	op = ins & 0xff;
	mm = bcmode_of(ly, op) >> 11;
	if (c->bad)
		return -1;
	if (mm == ly->mm_call) {
		long slot = (ins >> 8) & 0xff;
		int rc;
		if (op == ly->bc_iterc)
			slot -= 3;
		rc = slotname(c, pt, ip, slot, cf->base, cf->fn, f->fn, b, max);
		c0->unsure |= c->unsure;
		return rc;
	} else if (mm != ly->mm_max) {
		uint64_t s = REF(c, ev->g + ly->G_gcroot + (ly->gcroot_mmname + mm) * ly->k.gcref);
		str_of(c, s, b, max - 1);
		return c->bad ? -1 : 0;
	}
	return -1;
}

/* "C:SYMBOL" (escaped) or "C:0xADDR" */
static void csym(struct rctx *c, uint64_t addr, struct buf *out)
{
	const char *s = ljb_symtab_name(c->st, addr);

	buf_adds(out, "C:");
	if (s)
		ljb_escape(out, s, strlen(s));
	else
		buf_addf(out, "0x%" PRIx64, addr);
}

/* The frames of EV to print, innermost first, into *FS (N; the cut
 * frame's caller at index N when EV was cut at depth): with a trace's
 * snapshot, the frames it inlined (bpf/snapshot.h) above its base frame
 * (at index *BASE), which gets the snapshot's position where it is
 * known; *FS is EV's own frames when there is none.  *WHY: LJB_SNAP_*,
 * or -1 without a snapshot. */
static uint32_t frames_of(const struct ljb_event *ev, struct rctx *c, struct ljb_frame *buf,
			  const struct ljb_frame **fs, uint32_t *base, int *why)
{
	uint32_t n = ev->nframes > LJB_MAX_FRAMES ? LJB_MAX_FRAMES : ev->nframes;
	uint32_t m = n + (ev->end == LJB_END_TRUNC && n < LJB_MAX_FRAMES);
	uint64_t basepc;
	int k;

	*fs = ev->f;
	*base = 0;
	*why = -1;
	if (ev->vmstate <= 0 || !ev->snap || !n)
		return n;
	k = ljb_snap_restore(ev, c->ly, c->st, ffi_call, c, buf, LJB_MAX_FRAMES, &basepc, why);
	if (k < 0)
		return n;
	memcpy(buf + k, ev->f, m * sizeof(*buf));
	if (basepc) {
		buf[k].pc = basepc;
		buf[k].flags = (buf[k].flags & ~3u) | LJB_PC_INS;
	}
	*fs = buf;
	*base = k;
	return n + k;
}

/* Lua frame F, whose function was freed before its stack was named, as
 * the sample read it: its chunkname from the names map, its first line
 * and the line the kernel read, appended to OUT; 0, or -1 when the map
 * does not have its name. */
static int gone_frame(struct rctx *c, const struct ljb_frame *f, const struct ljb_textopts *o,
		      struct buf *out)
{
	struct ljb_namekey k = { f->chunk, f->strid, 0 };
	struct ljb_name v;
	size_t n;

	if (o->names_fd < 0 || !f->strid || bpf_map_lookup_elem(o->names_fd, &k, &v) < 0)
		return -1;
	n = v.len < LJB_NAME_MAX ? v.len : LJB_NAME_MAX;
	if (o->lines && f->line >= 0) {
		chunk_text(v.b, n, (int)v.tail, o->fullpath, out);
		buf_addf(out, ":%d\n", f->line);
	}
	chunk_text(v.b, n, (int)v.tail, o->fullpath, out);
	if (f->first != 0)
		buf_addf(out, ":%u", f->first);
	c->gone = 1;
	return 0;
}

static int stack_text(const struct ljb_event *ev, const struct ljb_layout *ly,
		      const struct ljb_symtab *st, const struct ljb_textopts *o,
		      struct buf *out, struct ljb_textres *res)
{
	struct rctx c = { ev->pid, ly, st, 0, 0, 0 };
	char name[256];
	static struct ljb_frame buf[2 * LJB_MAX_FRAMES + 1];
	const struct ljb_frame *fs;
	int why;
	uint32_t kb, n = frames_of(ev, &c, buf, &fs, &kb, &why), all = n;
	int cut = ev->end == LJB_END_TRUNC;
	long toppos = -1;

	if (ly->k.depth && n > ly->k.depth) {
		n = ly->k.depth;	/* (frames a trace inlined made it deeper) */
		cut = 1;
	}

	if (ev->leaf) {
		const char *s = ljb_symtab_name(st, ev->leaf);
		/* a C function on top of the Lua stack is the leaf itself */
		if (!(ev->vmstate <= 0 && n && fs[0].ffid == 1 &&
		      ljb_symtab_name(st, fs[0].key) == s && s)) {
			csym(&c, ev->leaf, out);
			buf_addc(out, '\n');
		}
	}
	if (ev->vmstate > 0) {
		buf_addf(out, "trace#%d", ev->vmstate);
		if (ev->T) {
			uint64_t pt = REF(&c, ev->T + ly->T_startpt);
			uint64_t spc = REF(&c, ev->T + ly->k.T_startpc);
			long pos = ((long)(spc - proto_bc(&c, pt))) / 4;
			buf_addc(out, ':');
			chunkname(&c, pt, o->fullpath, out);
			buf_addf(out, ":%ld", debug_line(&c, pt, pos));
			if (kb < n && fs[kb].ffid == 0 && fs[kb].key == pt &&
			    (fs[kb].flags & 3) != LJB_PC_INS)
				toppos = pos;	/* its base frame's position is not
						   known: the trace's start */
		}
		buf_addc(out, '\n');
	}
	/* (alive: frame_alive of f, carried from the last frame's caller) */
	for (uint32_t i = 0, alive = n ? frame_alive(&c, &fs[0]) : 1; i < n && !c.bad; i++) {
		const struct ljb_frame *f = &fs[i], *cf = i + 1 < n ? &fs[i + 1] : NULL;
		int f_alive = alive;
		if (i + 1 == n && cut && (n < all || ev->nframes < LJB_MAX_FRAMES))
			cf = &fs[n];	/* the cut frame's caller */
		alive = cf ? frame_alive(&c, cf) : 1;
		if (!alive) {
			cf = NULL;	/* (its code is gone: f by its first line) */
			c.gone = 1;
		}
		if (!f_alive) {
			if (gone_frame(&c, f, o, out) < 0)
				c.bad = 1;	/* (refused: counted as memory gone) */
		} else if (f->ffid == LJB_FFID_RESUME) {
			buf_adds(out, "[resume]");
		} else if (f->ffid == 1) {
			csym(&c, f->key, out);
		} else if (f->ffid > 1) {
			if (funcname(&c, ev, f, cf, name, sizeof(name)) == 0) {
				buf_adds(out, "builtin:");
				ljb_escape(out, name, strlen(name));
			} else {
				buf_addf(out, "builtin#%u", f->ffid);
			}
		} else {
			uint64_t pt = f->key;
			long first = (int32_t)R32(&c, pt + ly->pt_firstline);
			if (o->lines) {
				long pos = i == kb && ev->vmstate > 0 && (f->flags & 3) != LJB_PC_INS
						   ? toppos : frame_pos(&c, f);
				long line = pos >= 0 ? debug_line(&c, pt, pos) : -1;
				if (line >= 0) {
					chunkname(&c, pt, o->fullpath, out);
					buf_addf(out, ":%ld\n", line);
				}
			}
			chunkname(&c, pt, o->fullpath, out);
			if (first != 0) {
				if (funcname(&c, ev, f, cf, name, sizeof(name)) == 0) {
					buf_addc(out, ':');
					ljb_escape(out, name, strlen(name));
				} else {
					buf_addf(out, ":%ld", first);
				}
			}
		}
		buf_addc(out, '\n');
	}
	if (cut)
		buf_adds(out, "[truncated]\n");
	if (res)
		*res = (struct ljb_textres){ c.unsure, why, cut, c.gone };
	return c.bad ? -1 : 0;
}

int ljb_stack_text(const struct ljb_event *ev, const struct ljb_layout *ly,
		   const struct ljb_symtab *st, const struct ljb_textopts *o,
		   struct buf *out, struct ljb_textres *res)
{
	int rc;

	ljb_read_keep(1);
	rc = stack_text(ev, ly, st, o, out, res);
	ljb_read_keep(0);
	return rc;
}
