/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/layout.h - the LuaJIT (and nginx lua module) layouts the eBPF
 * backend needs, from the target's DWARF through lib/dwarf/dwarf.h: the kernel
 * side's struct ljb_cfg (lib/bpf/lj_bpf.h) and what user space needs to
 * name frames (lib/bpf/symbolize.c).  No offset is hard-coded except the
 * C frame layout of the x86-64 interpreter, an assembler constant without
 * DWARF (as in tapset/luajit.sxx).
 */
#ifndef STAPXX_BPF_LAYOUT_H
#define STAPXX_BPF_LAYOUT_H

#include "bpf/lj_bpf.h"
#include "dwarf/dwarf.h"

#include <stdint.h>

#define LJB_MAX_BC 256	/* bytecode opcodes: 8 bits */

/* User-space layouts (offsets and enumerators, as long long). */
struct ljb_layout {
	struct ljb_cfg k;	/* the kernel side's share */
	int str_sid;		/* GCstr has sid (else hash) */
	int nginx;		/* the target has ngx_http_lua_module */
	long long str_len, str_size, str_hash;
	long long pt_firstline, pt_numline, pt_lineinfo, pt_varinfo,
		  pt_uvinfo, pt_sizeuv, pt_k;
	long long fl_env, fl_uvptr, uv_v;
	long long tab_hmask, tab_node, node_key, node_val, node_next, node_size;
	long long G_gcroot, T_startpt, T_startins;
	long long bc_mov, bc_gget, bc_tgets, bc_uget, bc_knil, bc_iterc,
		  bc_ret, bc_retm, bc_ret0, bc_ret1;
	long long bcm_base, bcm_dst, mm_call, mm_max, gcroot_mmname;
	long long vn_end, vn_max, vn_for[6];
	/* finding the VM without symbols (lib/bpf/vm.c) */
	long long G_mainthref, gg_g2disp, gg_ndisp, bc_max;
	long long G_allocf, G_allocd;	/* the allocator and its state
					   (lj-lua-alloc, stripped) */
	/* resty-memory: GC-managed bytes, the JIT's machine code, LuaJIT's
	   allocator's segments (struct malloc_state's seg list) */
	long long G_gc_total, J_szallmcarea, ms_seg, seg_base, seg_size, seg_next;
	/* restoring a trace's inlined frames (lib/bpf/snapshot.c) */
	long long T_snapmap, T_nsnapmap, T_ir, T_traceno, snap_mapofs, snap_nent,
		  snap_ref, ir_size, ir_kgc, ir_knum, bc_call, bc_callm;
	long long ir_call[5];	/* IR_CALLN, CALLA, CALLL, CALLS (side
				   effects), CALLXS (an FFI call) */
	const char *bc_name[LJB_MAX_BC];	/* BCOp by value, without "BC_" */
	/* lj_bc_mode[] (dw_table_u16), nbc_mode entries */
	uint16_t bc_mode[LJB_MAX_BC];
	int nbc_mode;
	/* nginx: finding the main lua_State */
	long long cycle_conf_ctx, mod_index, mod_ctx_index, ctx_main_conf,
		  lmcf_lua, ngx_uint;
};

/*
 * ljb_layout_load - fill *LY from the DWARF of the set DW (the target's
 * executable and libraries).  EXEC names the target in the error when it
 * has no LuaJIT.  Returns 0, or -1 after error() and hints.
 */
int ljb_layout_load(struct dw_set *dw, const char *exec, struct ljb_layout *ly);

/*
 * ljb_gc_layout_load - fill *L, the layouts of lj-gc-objs's heap walk
 * (lj_gcwalk.bpf.c), from DW, the FFI's cdata and C types included (as
 * the tapset, it needs a LuaJIT built with its FFI).  Returns 0, or -1
 * after error() (also when a field the walk reads from an object lies
 * past the window it reads, LJB_GC_WIN bytes).
 */
int ljb_gc_layout_load(struct dw_set *dw, struct ljb_gcl *l);

/*
 * ljb_layout_dump - print every value of *LY, one "name = value" line
 * each, to standard output: what STAPXX_BPF_LAYOUT_DUMP=1 prints instead
 * of sampling (tests compare debug and stripped builds with it).
 */
void ljb_layout_dump(const struct ljb_layout *ly);

#endif
