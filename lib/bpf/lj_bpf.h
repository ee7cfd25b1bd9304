/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/lj_bpf.h - what the eBPF programs (lib/bpf/NAME.bpf.c, through
 * lj_walk.bpf.h) and user space (core.c, symbolize.c) share: the layout configuration
 * (filled from the target's DWARF before the program is loaded), the raw
 * frames a new stack is sent as, and the statistics counters.
 * Included by both sides; only fixed-width types from <linux/types.h>.
 */
#ifndef STAPXX_LJ_BPF_H
#define STAPXX_LJ_BPF_H

#include <linux/types.h>

#define LJB_MAX_FRAMES 256	/* depth limit (a power of two) */
#define LJB_MAX_ITER 2000	/* frames visited per sample (the tapset's MAX_SCAN) */
#define LJB_MAX_SYMS 65536	/* native code symbols (sorted ranges) */
#define LJB_SYM_VM (1ULL << 63)	/* in end: a symbol of LuaJIT's assembler VM */
#define LJB_MAX_FILES 64	/* executable file mappings (files map) */

/* Offsets and constants, all from the target's DWARF (see lib/bpf/layout.c). */
struct ljb_cfg {
	__u32 gc64, fr2, tv;		/* LJ_GC64, LJ_FR2, sizeof(TValue) */
	__u32 L_glref, L_cframe, L_base, L_stack, L_stacksize;
	__u32 G_cur_L, G_vmstate, G_jit_base;
	__u32 gct, ffid, cf_f, fl_pc, proto_size, pt_chunkname, pt_sizebc;
	/* GCproto firstline, numline, lineinfo; GCstr hash (or sid), len,
	   and its size (where its bytes start) */
	__u32 pt_firstline, pt_numline, pt_lineinfo, str_hash, str_len, str_size;
	__u32 fr_func, fr_tp;		/* TValue fr.func / fr.tp (not FR2) */
	__u32 T_gct, T_startpc, T_mcode, T_szmcode;
	/* the trace's snapshots (GCtrace snap, nsnap; SnapShot mcofs and
	   size) and its stack adjustment (spadjust): the snapshot a sample
	   in a trace restores its inlined frames from (ljb_take) */
	__u32 T_snap, T_nsnap, T_spadjust, T_mcloop, snap_size, snap_mcofs;
	__s64 J_from_g;			/* GG_State: J - g */
	__u32 J_sizetrace, J_trace, gcref;
	__u32 frame_lua, frame_c, frame_cont, frame_varg;
	__s32 vmst_interp, vmst_c, vmst_gc, vmst_exit, vmst_record, vmst_opt, vmst_asm;
	__u32 cf_pc, cf_L;		/* C frame: saved PC and L (x86-64) */
	__u32 cf_size[2];		/* CFRAME_SIZE without/with LJ_NO_UNWIND */
	__u32 cf_prev;			/* CFRAME_OFS_PREV */
	__u32 depth, lines, nojit, nointerp;
	__u32 nowalk;			/* count VM states only (lj-vm-states) */
	__u32 noleaf;			/* no leaf frame from the PC: the probe
					   sits at a known function's entry
					   (a uprobe: lua_yield, lj_mem_newgco) */
	/* ngx_lua (OpenResty's LuaJIT, lua_State exdata/exdata2): ngx is 1
	 * when every field below was found, else the walk ignores them */
	__u32 ngx, L_exdata2, L_status;
	__u32 co_co, co_parent, co_ref;	/* ngx_http_lua_co_ctx_t */
	__u64 ngx_resume, ngx_wrap_runner, ngx_spawn;	/* run-time addresses */
	/* finding G from DISPATCH (r14): GG_State's dispatch - g, and
	   global_State mainthref */
	__s64 g2disp;
	__u32 G_mainthref;
};

/* How a raw frame's pc field gives the bytecode position it executes. */
enum { LJB_PC_NONE = 0, LJB_PC_INS = 1 };
#define LJB_F_CALLER 4		/* the next frame is this one's caller */
#define LJB_FFID_RESUME 0xffff	/* pseudo frame: the resumer's frames follow */
#define LJB_MAX_RESUME 16	/* resumers followed per stack (the tapset's __LJ_MAX_RESUME) */

struct ljb_frame {
	__u64 fn;	/* GCfunc */
	__u64 key;	/* C function: its f; Lua: its GCproto; fast: 0 */
	__u64 pc;	/* bytecode address (LJB_PC_INS) */
	__u64 base;	/* the frame's base in its Lua stack (0: none), where
			   user space checks that a local still holds the
			   function it names a callee after */
	__u32 ffid;	/* 0 Lua, 1 C, > 1 fast function */
	__u32 flags;	/* LJB_PC_* | LJB_F_CALLER */
	/* A Lua function's identity at the sample, which user space checks
	 * before it names the frame (the GCproto may be freed and its memory
	 * reused by then): its chunkname (a GCstr), its firstline and the
	 * chunkname's hash (or sid); all 0 for other frames.  A stack sent
	 * to user space also carries the line its pc executes, and its
	 * chunkname's bytes are in the names map: what names a function
	 * that is gone by then by its definition. */
	__u64 chunk;
	__u32 first;
	__u32 strid;	/* (sent stacks only) */
	__s32 line;	/* (sent stacks only) -1: none */
	__u32 sizebc;	/* (the walk's, for line) */
	__u64 li;	/* (the walk's, for line) lineinfo | numline << 48 */
};

/* A chunkname's bytes (map names, key: struct ljb_namekey): the first
 * LJB_NAME_MAX of them, or the last when tail (a long "@path"). */
#define LJB_NAME_MAX 64
struct ljb_namekey {
	__u64 chunk;
	__u32 strid, pad;
};
struct ljb_name {
	__u32 len, tail;
	char b[LJB_NAME_MAX];
};

/* How a trace's snapshot was found (ljb_event sflags). */
#define LJB_SNAP_CALL 1		/* from the return address of a call the
				   trace makes (user space sees whether the
				   snapshot after it is the call's: exact) */
#define LJB_SNAP_NEAR 2		/* from the PC in the trace's own code:
				   the snapshot before it (user space also
				   reads the one after) */
#define LJB_SNAP_LOOP 3		/* none: in a loop's body before its first
				   snapshot (ev.snap 0) */

/* How a walk ended. */
enum { LJB_END_OK = 0, LJB_END_BROKEN = 1, LJB_END_TRUNC = 2 };

/* A new stack id: its raw frames, innermost first.  A stack cut at depth
 * (end LJB_END_TRUNC) has one frame more than nframes when it fits: the
 * last frame's caller, which only names it. */
struct ljb_event {
	__u64 id;
	__u64 g, L, T;		/* T: the running trace's GCtrace, or 0 */
	__u64 leaf;		/* start of the symbol the sampled PC lies in, or 0 */
	__u64 mcode;		/* with T: its machine code (T->mcode), which
				   user space checks is still T's */
	__u32 snap;		/* with T: the snapshot that covers the sampled
				   position in the trace, its index + 1, or 0 */
	__u32 sflags;		/* LJB_SNAP_* */
	__u32 tofs;		/* LJB_SNAP_CALL: the offset of the trace's
				   call in its machine code (its return
				   address - 1 - mcode) */
	__u32 pad;
	__u64 startpc;		/* with T: T->startpc (also checked) */
	__s32 vmstate;
	__u32 pid, nframes, end;
	struct ljb_frame f[LJB_MAX_FRAMES];
};

/* A symbol range of native code (sorted by start in the syms map). */
struct ljb_sym {
	__u64 start, end;	/* end | LJB_SYM_VM */
};

/* Per-target-process state (pids map). */
/* A sampled process (map pids; user space writes whole entries, so
 * what the kernel counts per process is in its own map, psamples). */
struct ljb_proc {
	__u64 g;		/* its global_State, 0 until found */
	__u64 r14;		/* before g is found: the last r14 (the
				   interpreter's DISPATCH) whose G's main
				   thread points back at G, a candidate that
				   user space checks (lib/bpf/vm.c) */
	__u64 exit_lo, exit_hi;	/* with g: where lj_vm_exit_interp runs
				   with the trace's vmstate (dwarf/vmexit.h);
				   0, 0 when its code was not found */
	__u64 mainL;		/* with g: its main thread (g->mainthref),
				   which no coroutine.resume resumed: the
				   walk looks for no resumer below it, whose
				   C frame would be read from main()'s stack
				   (a fault, on a non-GC64 VM, at most
				   samples: 10 us each), 0 if not known */
};

/* Statistics counters (per-CPU array). */
enum {
	LJB_N_SAMPLES, LJB_N_LUA, LJB_N_JIT, LJB_N_INTERP, LJB_N_C, LJB_N_GC,
	LJB_N_VMOTHER, LJB_N_NOLUA, LJB_N_NOVM, LJB_N_SKIPPED, LJB_N_DROPPED,
	LJB_N_COST, LJB_N_LOSTMAP, LJB_N_LOSTRB,
	LJB_N_F_READ, LJB_N_F_NOSYM, LJB_N_F_BASE, LJB_N_F_NGX, LJB_N_F_EXIT,
	LJB_N_EXIT, LJB_N_RECORD, LJB_N_OPT, LJB_N_ASM,	/* of LJB_N_VMOTHER */
	/* samples in a trace (LJB_N_JIT): its snapshot found from a call's
	   return address, from the PC in its code, none in a loop's body
	   before its first snapshot, none elsewhere (a C function whose
	   caller's return address is not in the trace, the VM's code, the
	   trace's exit) */
	LJB_N_SNAP_CALL, LJB_N_SNAP_NEAR, LJB_N_SNAP_LOOP, LJB_N_SNAP_NONE,
	/* the reads of the target's memory the samples made, their bytes,
	   and how many samples made 0-3, 4-7, ... (LJB_RH buckets of 4,
	   the last one: all above) */
	LJB_N_READS, LJB_N_RBYTES, LJB_N_RH0,
	/* how many samples took each time in the probe (LJB_TH buckets:
	   below 256 ns, then four a power of two; the last one: all above,
	   ljb_cost) */
	LJB_N_TH0 = LJB_N_RH0 + 64,
	LJB_N_MAX = LJB_N_TH0 + 48
};
#define LJB_RH 64
#define LJB_TH 48

/* lj-lua-off-cpu (lj_offcpu.bpf.c): a wait's kind, by how ljb_take()
 * ended at its switch-out (LJB_R_*, lj_walk.bpf.h, in that order), then
 * the waits shorter than min_us. */
enum { LJB_K_LUA, LJB_K_NOLUA, LJB_K_NOVM, LJB_K_SKIPPED, LJB_K_SHORT, LJB_K_MAX };

/* An open wait (map waits, by thread id): since when, its stack. */
struct ljb_wait {
	__u64 since;	/* bpf_ktime_get_ns() (CLOCK_MONOTONIC) at switch-out */
	__u64 id;	/* stack id (LJB_K_LUA) */
	__u32 kind, pid;
};

/* Its counters (per-CPU array wstats, lj_wait.bpf.h): waits and
 * microseconds of each kind, the cost of the probe that opens a wait (ns,
 * waits), the microseconds that found no room in the weights map, the
 * waits whose end was not seen, the cost of a second probe that ends
 * waits (ngx-lua-yield's lua_resume: ns, calls that ended one). */
#define LJB_W_N(kind) (2 * (kind))
#define LJB_W_US(kind) (2 * (kind) + 1)
enum {
	LJB_W_COST = 2 * LJB_K_MAX, LJB_W_COSTN, LJB_W_LOST, LJB_W_UNSEEN, LJB_W_COST2,
	LJB_W_COST2N, LJB_W_MAX
};

/* lj-lua-fio (lj_fio.bpf.c): a call's kind (LJB_R_* of ljb_take, as the
 * waits' kinds). */
#define LJB_FNAME 64	/* file names kept (files=1), with the NUL */

/* A system call in progress (map calls, by thread id). */
struct ljb_call {
	__u64 since;	/* bpf_ktime_get_ns() at sys_enter */
	__u64 id;	/* stack id (LJB_K_LUA) */
	__u32 kind, pid;
	char name[LJB_FNAME];	/* the file's name (files=1), else empty */
};

/* A stack id and the file's name (map weights of lj_fio.bpf.c). */
struct ljb_fkey {
	__u64 id;
	char name[LJB_FNAME];
};

/* Its counters (per-CPU array fstats): calls, microseconds and bytes of
 * each kind, the calls on files that are not regular, the switch-out's
 * cost (ns, calls), the weight that found no room in the weights map. */
#define LJB_F_N(kind) (3 * (kind))
#define LJB_F_US(kind) (3 * (kind) + 1)
#define LJB_F_BYTES(kind) (3 * (kind) + 2)
enum { LJB_F_OTHER = 3 * LJB_K_SHORT, LJB_F_COST, LJB_F_COSTN, LJB_F_LOST, LJB_F_MAX };

/* ngx-lua-yield (lj_yield.bpf.c): an open yield (map waits, a struct
 * ljb_wait) is keyed by its process and coroutine. */
struct ljb_ykey {
	__u64 L;	/* the coroutine's lua_State */
	__u32 pid, pad;
};

/* lj-lua-alloc (lj_alloc.bpf.c): a sampled allocation's key in map
 * weights (bytes): its stack id (0: no Lua stack), the return address of
 * the allocator's probe (the C function that allocates: its type), and
 * with --master its process (else 0). */
struct ljb_akey {
	__u64 id, ra;
	__u32 pid, pad;
};

/* The byte budget of a CPU (per-CPU array budget): the bytes until its
 * next sample, its allocations (0: the budget is not drawn yet). */
struct ljb_budget {
	__s64 left;
	__u64 n;
};

/* Its counters (per-CPU array astats): allocations and their bytes;
 * samples, those without a Lua stack, those skipped (before the VM was
 * found; a fault in the walk or the return address unreadable, and
 * those sampled allocations whose return address was unreadable); the
 * probes' time (ns) on allocations not sampled (one in 64 timed) and
 * sampled; the bytes that found no room in weights. */
enum {
	LJB_A_ALLOCS, LJB_A_BYTES, LJB_A_SAMPLES, LJB_A_NOLUA, LJB_A_NOVM, LJB_A_FAULTS, LJB_A_NORA,
	LJB_A_FAST, LJB_A_FASTN, LJB_A_SLOW, LJB_A_SLOWN, LJB_A_LOST, LJB_A_MAX
};

/* ngx-lua-exec-time (lj_exectime.bpf.c): the calls of one Lua handler of
 * lua-nginx-module (per-CPU array xstats, by LJB_X_CONTENT...): by how
 * they returned, their microseconds (sum, least and most) and a log2
 * histogram of them as SystemTap's @hist_log keeps one (hist[0]: 0 us,
 * hist[b]: 2^(b-1) to 2^b - 1 us), and the programs' own cost (ns, calls
 * timed).  A call in progress is kept in map starts, by thread. */
enum { LJB_X_CONTENT, LJB_X_REWRITE, LJB_X_ACCESS, LJB_X_NH };
enum { LJB_X_DONE, LJB_X_YIELDED, LJB_X_DECLINED, LJB_X_ERROR, LJB_X_NKIND };
#define LJB_X_BUCKETS 65

struct ljb_exec {
	__u64 calls, sum_us, min_us, max_us;
	__u64 kind[LJB_X_NKIND];
	__u64 hist[LJB_X_BUCKETS];
	__u64 cost_ns, cost_n;
	__u64 unseen;	/* returns whose entry was not seen (the call began
			   before the probes) */
};

struct ljb_xstart {
	__u64 t0;	/* bpf_ktime_get_ns() at the entry */
	__u32 h, pad;	/* LJB_X_* */
};

/* sample-bt (sample_bt.bpf.c): a sample of a target process sends its
 * user registers (DWARF's x86-64 numbering: rax rdx rcx rbx rsi rdi rbp
 * rsp r8..r15 rip) and a copy of its user stack from rsp up, at most
 * LJB_BT_STACK bytes, which user space unwinds by the binaries' CFI; the
 * kernel stack, when the sample found the CPU in kernel mode, is an id in
 * the stack trace map kstacks.  Counters: per-CPU array btstats. */
#define LJB_BT_STACK 16384
#define LJB_BT_NREGS 17
enum {
	LJB_B_SAMPLES, LJB_B_USER, LJB_B_KERNEL, LJB_B_LOSTRB, LJB_B_NOSTACK, LJB_B_NOKSTACK,
	LJB_B_COST, LJB_B_BYTES, LJB_B_MAX
};

struct ljb_btev {
	__u32 pid, tid;
	__s64 kstack;	/* kstacks' id; -1: none asked (user mode, or kernel=0);
			   below: the helper's -errno, minus 1 */
	__u64 regs[LJB_BT_NREGS];
	__u32 kernel;	/* sampled in kernel mode */
	__u32 len;	/* bytes of stack that follow (0: not readable) */
	__u8 stack[LJB_BT_STACK];
};

/* lj-gc-objs (lj_gcwalk.bpf.c): a census of a LuaJIT heap, walked in
 * slices at a walk point where the heap is consistent (the rules of
 * samples/lj-gc-objs.sxx and tapset/luajit_gc.sxx).  The layouts it
 * reads (read-only gcl): offsets and sizes in bytes, from the target's
 * DWARF or the layout database.  An object's fields are read in one
 * window of LJB_GC_WIN bytes from its start (user space checks that
 * every field lies in it). */
#define LJB_GC_WIN 128
struct ljb_gcl {
	__u32 gcref, tv;		/* sizeof(GCRef), sizeof(TValue) */
	__u32 h_next, h_marked, h_gct;	/* GChead */
	__u32 G_root, G_total, G_total8, G_state, G_white, G_strmask, G_strtab,
	      G_mainthref, G_ctstate;	/* global_State (G_total8: GCSize is 64 bits) */
	__u32 str_len, str_size;
	__u32 tab_colo, tab_asize, tab_hmask, tab_size, node_size;
	__u32 fn_nupvalues, fn_ffid, fnc_size, fnl_size;
	__u32 uv_size, pt_sizept, L_stacksize, L_size, ud_len, ud_size;
	__u32 cd_ctypeid, cd_size, cdv_len, cdv_extra, cdv_size;
	__u32 cts_tab, ct_info, ct_size, ct_sizeof, ct_attrib, ct_hassize;
	__u32 tr_nins, tr_nk, tr_nsnap, tr_nsnapmap, tr_size, ir_size, snap_size, snapent_size;
	__u32 gg_size;			/* GG_State: the VM's own state (user space) */
};

/* The census's slots by type: the GC type tag (4 string ... 12
 * userdata, lj_obj.h's ~LJ_Txxx), and a C function (a function with an
 * ffid) apart from the Lua ones. */
#define LJB_GC_NT 16
#define LJB_GC_CFUNC 13

/* What ends a walk early (faults by reason). */
enum {
	LJB_GW_F_ROOT,		/* not a GC object in the root list */
	LJB_GW_F_STR,		/* not a string in the string table */
	LJB_GW_F_RESTARTS,	/* restarted too often */
	LJB_GW_F_UNREAD,	/* an object unreadable for 5 s */
	LJB_GW_F_MAX
};

/* The walk under way (the program's global gw, which user space reads
 * and resets between walks).  One process at a time: the first target
 * process at the walk point while pid is 0 takes it; user space prints
 * its census when phase is 3, then frees the walk for the next one. */
struct ljb_gcwalk {
	__u64 pid;		/* the process walked, 0: none yet */
	__u64 busy;		/* a slice runs now (64 bits: the atomics) */
	__u32 phase;		/* 0 not started, 1 root list, 2 string table, 3 over */
	__u32 cut;		/* it ended early (a fault) */
	__u32 curgct, slot, slots, swept, lastst, lastwhite, gen, pad;
	__u64 g, cur, mainL, strtab_at, cts_tab;
	__u64 cnt[LJB_GC_NT], bytes[LJB_GC_NT];
	__u64 tparts[3];	/* table headers, array parts, hash parts */
	__u64 objs, walked, total0, total, strtab;
	__u64 first, last;	/* bpf_ktime_get_ns(): the walk's first slice, the
				   end of its last one */
	__u64 stall, stalls, slices, restarts, skipped, novm;
	__u64 retries, fail_t0, wait;	/* reads done again later: their number,
					   since when they fail, the longest wait */
	__u64 faults[LJB_GW_F_MAX];
	__u64 bad_at;		/* the address an unreadable read was at */
	__u64 big_min[2];	/* user space: the least bytes of a table, a
				   string, that it still wants to see */
	__u64 lost;		/* big objects the ring buffer had no room for */
};

/* A big table or string (ring buffer bigs), of walk number gen. */
#define LJB_GC_PREVIEW 40
struct ljb_gcbig {
	__u64 o, size;
	__u32 kind;		/* 0 table, 1 string */
	__u32 gen;
	__u32 asize, hslots;	/* a table's array and hash slots */
	__u32 len;		/* a string's length */
	__u32 pad;
	char s[LJB_GC_PREVIEW];	/* a string's first bytes */
};

#endif
