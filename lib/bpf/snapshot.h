/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/snapshot.h - the frames a trace inlined, restored from its
 * snapshot as LuaJIT restores them at a trace exit (lj_snap.c): what a
 * sample taken in a trace's code, or in a C function the trace called,
 * shows above the trace's base frame.
 */
#ifndef STAPXX_BPF_SNAPSHOT_H
#define STAPXX_BPF_SNAPSHOT_H

#include <stdint.h>
#include "bpf/lj_bpf.h"
#include "bpf/layout.h"
#include "bpf/symbolize.h"

/* Why a snapshot's frames were not restored (ljb_snap_restore). */
enum {
	LJB_SNAP_OK,
	LJB_SNAP_APPROX,	/* between two snapshots: only the frames both
				   hold (those the trace entered in between have
				   no snapshot) */
	LJB_SNAP_STALE,		/* the trace was flushed or replaced before
				   user space read it */
	LJB_SNAP_UNREAD,	/* its memory could not be read */
	LJB_SNAP_KIND,		/* a frame it does not restore: a metamethod's
				   continuation, a function that is no
				   constant of the trace */
	LJB_SNAP_NWHY
};

/*
 * ljb_snap_restore - the Lua frames that the trace of EV (ev->T, running
 * as trace ev->vmstate from machine code ev->mcode) had inlined at its
 * snapshot ev->snap, read now from process ev->pid, innermost first, into
 * OUT (at most MAX; more are cut): each with its function, prototype and
 * position (LJB_PC_INS | LJB_F_CALLER, no base: its slots live in the
 * trace's registers).  *BASEPC gets the position of the trace's base
 * frame (ev->f[0]), an LJB_PC_INS pc.  The trace is checked to be the
 * one sampled (its number, machine code and start PC, and that it has
 * the snapshot).
 *
 * Which snapshot: at a call the trace made (LJB_SNAP_CALL), the one
 * LuaJIT took right after it when that is provably the call's: the IR
 * between the snapshots before and after the call holds one call, an FFI
 * call or one with side effects (which makes LuaJIT snapshot the next
 * instruction), the machine code's call does not go into LuaJIT itself
 * (ST: the symbols of the process, for its files), and that snapshot's
 * PC follows a call instruction that FFI_CALL(CTX, function, its
 * address) says calls a C function through the FFI (a snapshot that
 * LuaJIT merged into a later one, when no guard came between, is then
 * at another instruction); its frames are then exact (*WHY
 * LJB_SNAP_OK) and the innermost one is at that call.  Else, and in the
 * trace's own code, only the frames that both snapshots around the
 * position hold (LJB_SNAP_APPROX: the frames the trace entered between
 * them are not known), the innermost of them at no known position (its
 * pc 0, LJB_PC_NONE) unless both snapshots agree on it; none after the
 * last snapshot.  *BASEPC is 0 when the base frame's position is not
 * known.
 *
 * Returns the number of frames (0: none above the base frame) with *WHY
 * LJB_SNAP_OK or LJB_SNAP_APPROX, or -1 with *WHY why not.
 */
int ljb_snap_restore(const struct ljb_event *ev, const struct ljb_layout *ly,
		     const struct ljb_symtab *st, int (*ffi_call)(void *, uint64_t, uint64_t),
		     void *ctx, struct ljb_frame *out, int max, uint64_t *basepc, int *why);

#endif
