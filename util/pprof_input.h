/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pprof_input.h - util/pprof's input: stack samples (everything
 * flame_read() reads) plus the "# stap++" header lines that tell what the
 * samples count and, for periodic output, where each profile starts.
 *
 * Header lines (see docs/pprof.md for the full syntax):
 *     # stap++ type=bytes hz=1000
 *     # stap++ profile start=1795000000000000000 duration=10000000000
 * A header line is "# stap++" then space-separated KEY=VALUE words; a
 * first word "profile" starts a new profile block.  Known keys: type
 * (cpu, bytes, us), hz (samples per second), start (Unix time in ns),
 * duration (ns), and the labels of every sample: cgroup (the target's
 * cgroup path) and container (the container ID in it), which the eBPF
 * backend prints.  Unknown keys are ignored, so producers can add more.
 * Header lines may stand anywhere between stacks; they are read as empty
 * lines by the stack reader, so line numbers in errors stay right.
 */
#ifndef STAPXX_PPROF_INPUT_H
#define STAPXX_PPROF_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "flame.h"

/* The header keys that label every sample, in the order of
 * pprof_input.label. */
#define PPROF_NLABELS 2
extern const char *const pprof_label_keys[PPROF_NLABELS];	/* cgroup, container */

/* What the sample counts are. */
enum pprof_type {
	PPROF_TYPE_UNSET = 0,
	PPROF_CPU,	/* samples taken at hz per second, on CPU */
	PPROF_BYTES,	/* bytes (memory graphs) */
	PPROF_US,	/* microseconds (off-CPU and waiting graphs) */
};

/* The type named S ("cpu", "bytes", "us"); PPROF_TYPE_UNSET if none. */
enum pprof_type pprof_type_parse(const char *s);
const char *pprof_type_name(enum pprof_type type);

/* One profile: the stacks of one "# stap++ profile" block, or of all
 * input when blocks are not split.  Split blocks' tables live only until
 * they are emitted. */
struct pprof_block {
	struct flame_table t;
	int64_t start_ns;	/* -1: not given */
	int64_t duration_ns;	/* -1: not given */
	const char *file;	/* input it came from (borrowed) */
	size_t line;		/* its header line (0: none) */
};

/* Everything read so far.  Create zeroed; free with pprof_input_free(). */
struct pprof_input {
	enum pprof_type type;	/* from "type=" headers; UNSET if none */
	uint64_t hz;		/* from "hz=" headers; 0 if none */
	char *label[PPROF_NLABELS];	/* from the label headers (malloc'd); NULL if none */
	struct pprof_block *blocks;
	size_t nblocks;
};

/* Called with --split for each "# stap++ profile" block once its stacks
 * are read; the block's table is freed when it returns. */
typedef void pprof_emit_fn(const struct pprof_input *in, struct pprof_block *b,
			   void *ctx);

/* Read PATH ("-": standard input) into IN.  Without EMIT all stacks go
 * into blocks[0] (created on the first call), whose start is the earliest
 * "start=" seen and whose duration reaches the latest end.  With EMIT
 * (--split) each "# stap++ profile" block is read and handed to EMIT in
 * turn, then freed (IN keeps its start, file and line); stacks outside any
 * block, a block without start= or with the start of an earlier one, and
 * type= or hz= first given after a block are errors.  Dies with
 * "FILE:LINE: error: ..." on bad input (flame_read's errors, bad header
 * values, an input whose headers disagree with an earlier input's type,
 * hz, cgroup or container). */
void pprof_read(struct pprof_input *in, const char *path, pprof_emit_fn *emit, void *ctx);

/* The same for the LEN bytes of TEXT (not changed; a missing final newline
 * is supplied), named NAME in messages (borrowed: keep it alive as long as
 * IN, whose blocks point to it). */
void pprof_read_mem(struct pprof_input *in, const char *name, const char *text,
		    size_t len, pprof_emit_fn *emit, void *ctx);

void pprof_input_free(struct pprof_input *in);

#endif
