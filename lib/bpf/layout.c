/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/layout.c - see bpf/layout.h. */
#include "bpf/layout.h"
#include "base/error.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct off { const char *type, *member; long long *out; };
struct en { const char *name; long long *out; };

static int offsets(struct dw_set *dw, const struct off *o, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int rc = o[i].member ? dw_offsetof(dw, o[i].type, o[i].member, NULL, o[i].out)
				     : dw_sizeof(dw, o[i].type, NULL, o[i].out);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int enums(struct dw_set *dw, const struct en *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (dw_enum(dw, e[i].name, NULL, e[i].out) < 0)
			return -1;
	return 0;
}

#define N(a) (sizeof(a) / sizeof(*(a)))

/* LuaJIT 2.1's bytecodes (lj_bc.h, BCDEF): only the names; their values,
 * and that they are all of BCOp, come from the layouts. */
static const char *const bc_names[] = {
	"ISLT", "ISGE", "ISLE", "ISGT", "ISEQV", "ISNEV", "ISEQS", "ISNES",
	"ISEQN", "ISNEN", "ISEQP", "ISNEP", "ISTC", "ISFC", "IST", "ISF",
	"ISTYPE", "ISNUM", "MOV", "NOT", "UNM", "LEN", "ADDVN", "SUBVN",
	"MULVN", "DIVVN", "MODVN", "ADDNV", "SUBNV", "MULNV", "DIVNV", "MODNV",
	"ADDVV", "SUBVV", "MULVV", "DIVVV", "MODVV", "POW", "CAT", "KSTR",
	"KCDATA", "KSHORT", "KNUM", "KPRI", "KNIL", "UGET", "USETV", "USETS",
	"USETN", "USETP", "UCLO", "FNEW", "TNEW", "TDUP", "GGET", "GSET",
	"TGETV", "TGETS", "TGETB", "TGETR", "TSETV", "TSETS", "TSETB", "TSETM",
	"TSETR", "CALLM", "CALL", "CALLMT", "CALLT", "ITERC", "ITERN", "VARG",
	"ISNEXT", "RETM", "RET", "RET0", "RET1", "FORI", "JFORI", "FORL",
	"IFORL", "JFORL", "ITERL", "IITERL", "JITERL", "LOOP", "ILOOP", "JLOOP",
	"JMP", "FUNCF", "IFUNCF", "JFUNCF", "FUNCV", "IFUNCV", "JFUNCV", "FUNCC",
	"FUNCCW",
};

/* The bytecode names by value, and what finding the VM without symbols
 * needs (lib/bpf/vm.c).  A LuaJIT whose BCOp is not exactly bc_names
 * gets no names (ly->bc_max 0): its interpreter PCs stay unnamed without
 * symbols, never misnamed.  0, or -1 after error(). */
static int vm_layout(struct dw_set *dw, struct ljb_layout *ly)
{
	long long disp, bcff, g, v;
	char name[32];

	const struct off o[] = {
		{ "global_State", "mainthref", &ly->G_mainthref },
		{ "global_State", "allocf", &ly->G_allocf },
		{ "global_State", "allocd", &ly->G_allocd },
		{ "global_State", "gc.total", &ly->G_gc_total },
		{ "jit_State", "szallmcarea", &ly->J_szallmcarea },
		{ "struct malloc_state", "seg", &ly->ms_seg },
		{ "struct malloc_segment", "base", &ly->seg_base },
		{ "struct malloc_segment", "size", &ly->seg_size },
		{ "struct malloc_segment", "next", &ly->seg_next },
		{ "GG_State", "dispatch", &disp }, { "GG_State", "bcff", &bcff },
		{ "GG_State", "g", &g },
	};
	if (offsets(dw, o, N(o)) < 0 || dw_enum(dw, "BC__MAX", NULL, &ly->bc_max) < 0)
		return -1;
	ly->gg_g2disp = disp - g;
	ly->gg_ndisp = (bcff - disp) / 8;
	ly->k.g2disp = ly->gg_g2disp;
	ly->k.G_mainthref = ly->G_mainthref;
	if (ly->bc_max != (long long)N(bc_names)) {
		ly->bc_max = 0;
		return 0;
	}
	for (size_t i = 0; i < N(bc_names); i++) {
		snprintf(name, sizeof(name), "BC_%s", bc_names[i]);
		if (dw_enum(dw, name, NULL, &v) < 0)
			return -1;
		if (v < 0 || v >= ly->bc_max || ly->bc_name[v]) {
			memset(ly->bc_name, 0, sizeof(ly->bc_name));
			ly->bc_max = 0;
			return 0;
		}
		ly->bc_name[v] = bc_names[i];
	}
	return 0;
}

/* The ngx_lua fields that find the coroutine that resumed another (the
 * kernel's ngx_parent): with OpenResty's LuaJIT (lua_State exdata2)
 * only; k.ngx stays 0 without them.  0, or -1 after error(). */
static int ngx_coroutines(struct dw_set *dw, struct ljb_layout *ly)
{
	long long L_exdata2, L_status, co_co, co_parent, co_ref;
	int has = 0, cot = 0;

	if (dw_has_member(dw, "lua_State", "exdata2", NULL, &has) < 0 ||
	    dw_has_type(dw, "ngx_http_lua_co_ctx_t", NULL, &cot) < 0)
		return -1;
	if (!has || !cot)
		return 0;
	const struct off o[] = {
		{ "lua_State", "exdata2", &L_exdata2 }, { "lua_State", "status", &L_status },
		{ "ngx_http_lua_co_ctx_t", "co", &co_co },
		{ "ngx_http_lua_co_ctx_t", "parent_co_ctx", &co_parent },
		{ "ngx_http_lua_co_ctx_t", "co_ref", &co_ref },
	};
	if (offsets(dw, o, N(o)) < 0)
		return -1;
	struct ljb_cfg *k = &ly->k;
	k->L_exdata2 = L_exdata2; k->L_status = L_status;
	k->co_co = co_co; k->co_parent = co_parent; k->co_ref = co_ref;
	k->ngx = 1;	/* the addresses follow from the symbols (lj_stacks_user.c) */
	return 0;
}

/* The traces' snapshots (lj_jit.h GCtrace, SnapShot; lj_ir.h IRIns and
 * the constants IR_KGC, IR_KNUM): what restores the frames a trace
 * inlined (ljb_take's snapshot, lib/bpf/snapshot.c).  0, or -1 after
 * error(). */
static int snapshots(struct dw_set *dw, struct ljb_layout *ly)
{
	long long T_snap, T_nsnap, T_spadjust, T_mcloop, snap_size, snap_mcofs;
	const struct off o[] = {
		{ "GCtrace", "snap", &T_snap }, { "GCtrace", "nsnap", &T_nsnap },
		{ "GCtrace", "spadjust", &T_spadjust }, { "GCtrace", "mcloop", &T_mcloop },
		{ "SnapShot", NULL, &snap_size },
		{ "SnapShot", "mcofs", &snap_mcofs },
		{ "GCtrace", "snapmap", &ly->T_snapmap }, { "GCtrace", "nsnapmap", &ly->T_nsnapmap },
		{ "GCtrace", "ir", &ly->T_ir }, { "GCtrace", "traceno", &ly->T_traceno },
		{ "SnapShot", "mapofs", &ly->snap_mapofs }, { "SnapShot", "nent", &ly->snap_nent },
		{ "SnapShot", "ref", &ly->snap_ref }, { "IRIns", NULL, &ly->ir_size },
	};
	const struct en e[] = {
		{ "IR_KGC", &ly->ir_kgc }, { "IR_KNUM", &ly->ir_knum },
		{ "IR_CALLN", &ly->ir_call[0] }, { "IR_CALLA", &ly->ir_call[1] },
		{ "IR_CALLL", &ly->ir_call[2] }, { "IR_CALLS", &ly->ir_call[3] },
		{ "IR_CALLXS", &ly->ir_call[4] },
		{ "BC_CALL", &ly->bc_call }, { "BC_CALLM", &ly->bc_callm },
	};
	if (offsets(dw, o, N(o)) < 0 || enums(dw, e, N(e)) < 0)
		return -1;
	ly->k.T_snap = T_snap; ly->k.T_nsnap = T_nsnap; ly->k.T_spadjust = T_spadjust;
	ly->k.T_mcloop = T_mcloop;
	ly->k.snap_size = snap_size; ly->k.snap_mcofs = snap_mcofs;
	return 0;
}

int ljb_layout_load(struct dw_set *dw, const char *exec, struct ljb_layout *ly)
{
	long long L_glref, L_cframe, L_base, L_stack, L_stacksize, G_cur_L,
		  G_vmstate, G_jit_base, gct, ffid, cf_f, fl_pc, proto, chunk,
		  sizebc, fr_func = 0, fr_tp = 0, T_gct, T_startpc, T_mcode,
		  T_szmcode, gg_g, gg_J, J_sizetrace, J_trace, gcref, tv,
		  f_lua, f_c, f_cont, f_varg, st_interp, st_c, st_gc,
		  st_exit, st_record, st_opt, st_asm;
	int has = 0, gc64 = 0, fr2 = 0;

	memset(ly, 0, sizeof(*ly));
	if (dw_has_type(dw, "lua_State", NULL, &has) < 0)
		return -1;
	if (!has) {
		error("no LuaJIT VM in '%s': no type 'lua_State' in the DWARF "
		      "of it or its libraries", exec ? exec : "?");
		dw_hint_nodebug(dw);
		hint("lj-lua-stacks samples LuaJIT processes: the luajit CLI or "
		     "nginx with the lua module; is '%s' one?", exec ? exec : "?");
		return -1;
	}
	if (dw_has_member(dw, "TValue", "it64", NULL, &gc64) < 0 ||
	    dw_has_member(dw, "TValue", "ftsz", NULL, &fr2) < 0 ||
	    dw_has_member(dw, "GCstr", "sid", NULL, &ly->str_sid) < 0)
		return -1;
	const char *ngx = dw_database_binary(dw) ? dw_nodebug_nginx(dw) : NULL;
	if (ngx) {
		/* a stock nginx: its own layouts and the lua module's are
		   unknown, but its VM is found as in the luajit CLI (vm.c) */
		warning("no debug info in '%s': the lua module's layouts are "
			"unknown, so its Lua VM is found as in the luajit CLI (from "
			"the interpreter's DISPATCH register), and coroutines that "
			"ngx_lua resumes end at their own frames", ngx);
		ly->nginx = 0;
	} else if (dw_has_type(dw, "ngx_http_lua_main_conf_t", NULL, &ly->nginx) < 0) {
		return -1;
	}
	const struct off o[] = {
		{ "lua_State", "glref", &L_glref }, { "lua_State", "cframe", &L_cframe },
		{ "lua_State", "base", &L_base }, { "lua_State", "stack", &L_stack },
		{ "lua_State", "stacksize", &L_stacksize },
		{ "global_State", "cur_L", &G_cur_L }, { "global_State", "vmstate", &G_vmstate },
		{ "global_State", "jit_base", &G_jit_base },
		{ "global_State", "gcroot", &ly->G_gcroot },
		{ "GChead", "gct", &gct }, { "GCfuncC", "ffid", &ffid }, { "GCfuncC", "f", &cf_f },
		{ "GCfuncL", "pc", &fl_pc }, { "GCfuncL", "env", &ly->fl_env },
		{ "GCfuncL", "uvptr", &ly->fl_uvptr }, { "GCupval", "v", &ly->uv_v },
		{ "GCproto", NULL, &proto }, { "GCproto", "chunkname", &chunk },
		{ "GCproto", "sizebc", &sizebc }, { "GCproto", "firstline", &ly->pt_firstline },
		{ "GCproto", "numline", &ly->pt_numline }, { "GCproto", "lineinfo", &ly->pt_lineinfo },
		{ "GCproto", "varinfo", &ly->pt_varinfo }, { "GCproto", "uvinfo", &ly->pt_uvinfo },
		{ "GCproto", "sizeuv", &ly->pt_sizeuv }, { "GCproto", "k", &ly->pt_k },
		{ "GCtrace", "gct", &T_gct }, { "GCtrace", "startpc", &T_startpc },
		{ "GCtrace", "startpt", &ly->T_startpt }, { "GCtrace", "startins", &ly->T_startins },
		{ "GCtrace", "mcode", &T_mcode }, { "GCtrace", "szmcode", &T_szmcode },
		{ "GG_State", "g", &gg_g }, { "GG_State", "J", &gg_J },
		{ "jit_State", "sizetrace", &J_sizetrace }, { "jit_State", "trace", &J_trace },
		{ "GCRef", NULL, &gcref }, { "TValue", NULL, &tv },
		{ "GCstr", "len", &ly->str_len }, { "GCstr", NULL, &ly->str_size },
		{ "GCtab", "hmask", &ly->tab_hmask }, { "GCtab", "node", &ly->tab_node },
		{ "Node", "key", &ly->node_key }, { "Node", "val", &ly->node_val },
		{ "Node", "next", &ly->node_next }, { "Node", NULL, &ly->node_size },
		{ "GCstr", ly->str_sid ? "sid" : "hash", &ly->str_hash },
	};
	const struct en e[] = {
		{ "FRAME_LUA", &f_lua }, { "FRAME_C", &f_c }, { "FRAME_CONT", &f_cont },
		{ "FRAME_VARG", &f_varg }, { "LJ_VMST_INTERP", &st_interp },
		{ "LJ_VMST_C", &st_c }, { "LJ_VMST_GC", &st_gc },
		{ "LJ_VMST_EXIT", &st_exit }, { "LJ_VMST_RECORD", &st_record },
		{ "LJ_VMST_OPT", &st_opt }, { "LJ_VMST_ASM", &st_asm },
		{ "BC_MOV", &ly->bc_mov }, { "BC_GGET", &ly->bc_gget },
		{ "BC_TGETS", &ly->bc_tgets }, { "BC_UGET", &ly->bc_uget },
		{ "BC_KNIL", &ly->bc_knil }, { "BC_ITERC", &ly->bc_iterc },
		{ "BC_RET", &ly->bc_ret }, { "BC_RETM", &ly->bc_retm },
		{ "BC_RET0", &ly->bc_ret0 }, { "BC_RET1", &ly->bc_ret1 },
		{ "BCMbase", &ly->bcm_base }, { "BCMdst", &ly->bcm_dst },
		{ "MM_call", &ly->mm_call }, { "MM__MAX", &ly->mm_max },
		{ "GCROOT_MMNAME", &ly->gcroot_mmname },
		{ "VARNAME_END", &ly->vn_end }, { "VARNAME__MAX", &ly->vn_max },
		{ "VARNAME_FOR_IDX", &ly->vn_for[0] }, { "VARNAME_FOR_STOP", &ly->vn_for[1] },
		{ "VARNAME_FOR_STEP", &ly->vn_for[2] }, { "VARNAME_FOR_GEN", &ly->vn_for[3] },
		{ "VARNAME_FOR_STATE", &ly->vn_for[4] }, { "VARNAME_FOR_CTL", &ly->vn_for[5] },
	};
	if (offsets(dw, o, N(o)) < 0 || enums(dw, e, N(e)) < 0 || vm_layout(dw, ly) < 0 ||
	    snapshots(dw, ly) < 0)
		return -1;
	if (!fr2 && (dw_offsetof(dw, "TValue", "fr.func", NULL, &fr_func) < 0 ||
		     dw_offsetof(dw, "TValue", "fr.tp", NULL, &fr_tp) < 0))
		return -1;
	if (ly->nginx) {
		const struct off x[] = {
			{ "ngx_cycle_t", "conf_ctx", &ly->cycle_conf_ctx },
			{ "ngx_module_t", "index", &ly->mod_index },
			{ "ngx_module_t", "ctx_index", &ly->mod_ctx_index },
			{ "ngx_http_conf_ctx_t", "main_conf", &ly->ctx_main_conf },
			{ "ngx_http_lua_main_conf_t", "lua", &ly->lmcf_lua },
			{ "ngx_uint_t", NULL, &ly->ngx_uint },
		};
		if (offsets(dw, x, N(x)) < 0 || ngx_coroutines(dw, ly) < 0)
			return -1;
	}
	struct ljb_cfg *k = &ly->k;
	k->gc64 = gc64;
	k->fr2 = fr2;
	k->tv = tv;
	k->L_glref = L_glref; k->L_cframe = L_cframe; k->L_base = L_base;
	k->L_stack = L_stack; k->L_stacksize = L_stacksize;
	k->G_cur_L = G_cur_L; k->G_vmstate = G_vmstate; k->G_jit_base = G_jit_base;
	k->gct = gct; k->ffid = ffid; k->cf_f = cf_f; k->fl_pc = fl_pc;
	k->proto_size = proto; k->pt_chunkname = chunk; k->pt_sizebc = sizebc;
	k->pt_firstline = ly->pt_firstline; k->pt_numline = ly->pt_numline;
	k->pt_lineinfo = ly->pt_lineinfo;
	k->str_hash = ly->str_hash; k->str_len = ly->str_len; k->str_size = ly->str_size;
	k->fr_func = fr_func; k->fr_tp = fr_tp;
	k->T_gct = T_gct; k->T_startpc = T_startpc; k->T_mcode = T_mcode;
	k->T_szmcode = T_szmcode;
	k->J_from_g = gg_J - gg_g;
	k->J_sizetrace = J_sizetrace; k->J_trace = J_trace; k->gcref = gcref;
	k->frame_lua = f_lua; k->frame_c = f_c; k->frame_cont = f_cont;
	k->frame_varg = f_varg;
	k->vmst_interp = -1 - st_interp; k->vmst_c = -1 - st_c; k->vmst_gc = -1 - st_gc;
	k->vmst_exit = -1 - st_exit; k->vmst_record = -1 - st_record;
	k->vmst_opt = -1 - st_opt; k->vmst_asm = -1 - st_asm;
	/* lj_frame.h, CFRAME_OFS_PC / CFRAME_OFS_L, x86-64 POSIX */
	k->cf_pc = gc64 ? 24 : 28;
	k->cf_L = gc64 ? 16 : 24;
	k->cf_prev = 32;
	k->cf_size[0] = 80;	/* CFRAME_SIZE */
	k->cf_size[1] = 96;	/* with LJ_NO_UNWIND */
	/* lj_bc_mode[]: from the binary's symbols, its DWARF or the
	   layout database (dw_table_u16), never from the process */
	unsigned short *bcm;
	size_t nbcm;
	if (dw_table_u16(dw, "lj_bc_mode", NULL, &bcm, &nbcm) < 0)
		return -1;
	ly->nbc_mode = nbcm < LJB_MAX_BC ? (int)nbcm : LJB_MAX_BC;
	memcpy(ly->bc_mode, bcm, ly->nbc_mode * sizeof(*bcm));
	free(bcm);
	if (gct != ffid - 1)
		return error("unexpected GCfuncC layout in '%s': ffid does not "
			     "follow gct", exec ? exec : "?");
	return 0;
}

/* A field of struct ljb_gcl: the offset or size it holds, and for a
 * field the walk reads from an object's window, its width (else 0). */
struct gcoff { const char *type, *member; __u32 *out; int width; };

int ljb_gc_layout_load(struct dw_set *dw, struct ljb_gcl *l)
{
	long long v, attrib, hassize, gcsize;

	memset(l, 0, sizeof(*l));
	const struct gcoff o[] = {
		{ "GCRef", NULL, &l->gcref, 0 }, { "TValue", NULL, &l->tv, 0 },
		{ "GChead", "nextgc", &l->h_next, 8 }, { "GChead", "marked", &l->h_marked, 1 },
		{ "GChead", "gct", &l->h_gct, 1 },
		{ "global_State", "gc.root", &l->G_root, 0 },
		{ "global_State", "gc.total", &l->G_total, 0 },
		{ "global_State", "gc.state", &l->G_state, 0 },
		{ "global_State", "gc.currentwhite", &l->G_white, 0 },
		{ "global_State", "str.mask", &l->G_strmask, 0 },
		{ "global_State", "str.tab", &l->G_strtab, 0 },
		{ "global_State", "mainthref", &l->G_mainthref, 0 },
		{ "GCstr", "len", &l->str_len, 4 }, { "GCstr", NULL, &l->str_size, 0 },
		{ "GCtab", "colo", &l->tab_colo, 1 }, { "GCtab", "asize", &l->tab_asize, 4 },
		{ "GCtab", "hmask", &l->tab_hmask, 4 }, { "GCtab", NULL, &l->tab_size, 0 },
		{ "Node", NULL, &l->node_size, 0 },
		{ "GCfuncC", "nupvalues", &l->fn_nupvalues, 1 }, { "GCfuncC", "ffid", &l->fn_ffid, 1 },
		{ "GCfuncC", NULL, &l->fnc_size, 0 }, { "GCfuncL", NULL, &l->fnl_size, 0 },
		{ "GCupval", NULL, &l->uv_size, 0 }, { "GCproto", "sizept", &l->pt_sizept, 4 },
		{ "lua_State", "stacksize", &l->L_stacksize, 4 }, { "lua_State", NULL, &l->L_size, 0 },
		{ "GCudata", "len", &l->ud_len, 4 }, { "GCudata", NULL, &l->ud_size, 0 },
		{ "GCtrace", "nins", &l->tr_nins, 4 }, { "GCtrace", "nk", &l->tr_nk, 4 },
		{ "GCtrace", "nsnap", &l->tr_nsnap, 2 }, { "GCtrace", "nsnapmap", &l->tr_nsnapmap, 4 },
		{ "GCtrace", NULL, &l->tr_size, 0 }, { "IRIns", NULL, &l->ir_size, 0 },
		{ "SnapShot", NULL, &l->snap_size, 0 }, { "SnapEntry", NULL, &l->snapent_size, 0 },
		{ "GG_State", NULL, &l->gg_size, 0 },
	};
	const struct gcoff c[] = {
		{ "global_State", "ctype_state", &l->G_ctstate, 0 },
		{ "GCcdata", "ctypeid", &l->cd_ctypeid, 2 }, { "GCcdata", NULL, &l->cd_size, 0 },
		{ "GCcdataVar", "len", &l->cdv_len, 0 }, { "GCcdataVar", "extra", &l->cdv_extra, 0 },
		{ "GCcdataVar", NULL, &l->cdv_size, 0 }, { "CTState", "tab", &l->cts_tab, 0 },
		{ "CType", "info", &l->ct_info, 0 }, { "CType", "size", &l->ct_size, 0 },
		{ "CType", NULL, &l->ct_sizeof, 0 },
	};
	if (dw_sizeof(dw, "GCSize", NULL, &gcsize) < 0)
		return -1;
	for (size_t k = 0; k < N(o) + N(c); k++) {
		const struct gcoff *f = k < N(o) ? &o[k] : &c[k - N(o)];
		int rc = f->member ? dw_offsetof(dw, f->type, f->member, NULL, &v)
				   : dw_sizeof(dw, f->type, NULL, &v);
		if (rc < 0)
			return -1;
		if (v < 0 || (f->width && v + f->width > LJB_GC_WIN))
			return error("unexpected layout of LuaJIT's %s: %s at %lld, past the "
				     "first %d bytes of an object that the eBPF walk reads",
				     f->type, f->member ? f->member : "its size", v, LJB_GC_WIN);
		*f->out = (__u32)v;
	}
	if (dw_enum(dw, "CT_ATTRIB", NULL, &attrib) < 0 ||
	    dw_enum(dw, "CT_HASSIZE", NULL, &hassize) < 0)
		return -1;
	l->ct_attrib = attrib;
	l->ct_hassize = hassize;
	l->G_total8 = gcsize == 8;
	return 0;
}

void ljb_layout_dump(const struct ljb_layout *ly)
{
	const unsigned char *p = (const unsigned char *)ly;
	/* struct ljb_cfg, then the user-space fields: all integers, dumped
	 * by offset so a new field needs no change here */
	for (size_t o = 0; o + 8 <= offsetof(struct ljb_layout, bc_name); o += 8) {
		long long v;
		memcpy(&v, p + o, 8);
		printf("layout[%zu] = %lld\n", o, v);
	}
	for (long i = 0; i < ly->bc_max; i++)
		printf("bc_name[%ld] = %s\n", i, ly->bc_name[i] ? ly->bc_name[i] : "-");
	printf("bcmode =");
	for (int i = 0; i < ly->nbc_mode; i++)
		printf(" %u", ly->bc_mode[i]);
	printf("\n");
}
