/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand/cond.h - stap's preprocessor conditionals, %( COND %? A %: B %),
 * as the expander sees them: when COND (after expansion) is plain integer
 * arithmetic, the branch stap will drop is marked dead (c->dead), so the
 * DWARF macros in it are not resolved.  "@define NAME %( BODY %)" bodies
 * are recorded so that @NAME can be evaluated in a later COND.
 */
#ifndef STAPXX_EXPAND_COND_H
#define STAPXX_EXPAND_COND_H

#include "expand/ctx.h"

/* One open %( ... %) in expand_range(). */
struct ppframe {
	size_t cond_out;	/* where the condition starts in the output */
	char *define;		/* "@define NAME %(": NAME, to record the body */
	int value;		/* -1 unknown, 0, 1 */
	int phase;		/* 0 condition, 1 then, 2 else */
	int dead;		/* this frame incremented c->dead */
};
#define MAX_PP 32

/* The directive "%KIND" (one of "(?:)") at the end of OUT, in the
 * expand_range() whose open %( frames are ST[0, *n) (*n may exceed
 * MAX_PP: deeper frames are counted, not tracked).  Updates the frames,
 * c->dead and c->defs. */
void pp_directive(struct xctx *c, char kind, struct buf *out,
		  struct ppframe *st, int *n);

#endif
