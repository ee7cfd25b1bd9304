/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pprof_profile.h - build a pprof profile (util/profile.proto) from a
 * table of stacks and write it gzip-compressed.
 *
 * Mapping (docs/pprof.md has the full table): each distinct stack is one
 * Sample whose location_id lists its frames leaf first; each distinct
 * frame is one Function and one Location with the same id, named by the
 * frame text.  Lua frames also carry their chunk as the function's
 * filename and, when the frame has one, a line number (see
 * pprof_frame_source).
 */
#ifndef STAPXX_PPROF_PROFILE_H
#define STAPXX_PPROF_PROFILE_H

#include <stdint.h>
#include <stdio.h>

#include "flame.h"
#include "pprof_input.h"

struct pprof_options {
	enum pprof_type type;	/* what counts are (never UNSET here) */
	uint64_t hz;		/* samples per second (cpu) */
	int64_t time_ns;	/* collection start, Unix ns; -1: unknown */
	int64_t duration_ns;	/* -1: unknown */
	char **labels;		/* "KEY=VALUE" strings (borrowed) */
	size_t nlabels;
};

/* The source of a frame, if the frame names one: *FILE (LEN bytes,
 * pointing into FRAME; a leading '@' dropped) and *LINE (0 if the frame
 * has no line).  Returns 0 for frames without a source: C:, builtin:,
 * native symbols, bare names. */
int pprof_frame_source(const char *frame, size_t len, const char **file,
		       size_t *file_len, int64_t *line);

/* Write the profile of the stacks of T with options O to OUT (named WHAT
 * in errors), gzip-compressed.  Dies if a value does not fit pprof's
 * int64 or writing fails. */
void pprof_write(const struct flame_table *t, const struct pprof_options *o,
		 FILE *out, const char *what);

#endif
