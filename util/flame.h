/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * flame.h - code shared by util/fold and util/flamegraph: reading stack
 * samples, the table of distinct stacks and the folded text format.
 * Errors go through lib/base/error.h: the program name comes from
 * set_program_name(), bad input is reported as FILE:LINE.
 *
 * Internal form of a stack: its frames, root first, joined by FLAME_SEP
 * (a byte that can never be part of a frame: control bytes are escaped,
 * see below), NUL-terminated.  Frames hold their bytes exactly as they
 * were sampled; ';' and '\' have no special meaning inside them.  Because
 * FLAME_SEP sorts below every byte a frame may contain, strcmp() on the
 * internal form orders stacks frame by frame: every stack under one frame
 * path is contiguous, siblings in byte order.
 *
 * Folded text format (what util/fold writes, one line per distinct stack):
 *     FRAME;FRAME;...;FRAME COUNT
 * root first, leaf last, a single space, then a decimal count.  Inside a
 * frame a ';' is written as "\;" and a '\' as "\\"; nothing else changes.
 * Reading accepts any other "\x" as the two bytes '\' 'x', so folded files
 * from other tools (with Windows paths, say) read unchanged.
 *
 * Input formats (flame_read detects the format per file):
 *   - stack blocks, as samples/lj-lua-stacks.sxx and stap scripts print
 *     them: frames one per line, innermost first; then a line holding a tab
 *     (or spaces) and the sample count; then an empty line (optional).
 *     A frame line in print_ubacktrace() form, " 0xADDR : SYM+0xOFF/0xLEN
 *     [MODULE]", becomes the frame "SYM"; " 0xADDR [MODULE+0xOFF]" becomes
 *     "MODULE+0xOFF" (MODULE's basename).  Other frame lines are kept
 *     byte for byte (a trailing '\r' is dropped).
 *   - folded lines, as described above (a file without any count line).
 * In both, a line starting with "# stap++" (followed by a space, a tab or
 * nothing) is a header: what the input says about itself (type=, hz=,
 * profile start=; see docs/pprof.md).  The readers pass over it like an
 * empty line; util/pprof reads it.
 * Control bytes in a frame (< 0x20 and 0x7f: a tab inside a frame line, an
 * ESC, a '\r' that does not end the line) are shown visibly, as the
 * samples print Lua-derived text: "\t", "\n", "\r", else "\xHH" (two
 * lowercase hex digits); bytes from 0x80 up pass unchanged.  So no frame
 * can forge a count line or break a parser downstream; only the count
 * separator (the tab or space before the count) keeps its meaning.
 * Errors name FILE:LINE ("<stdin>" for standard input) and exit 1: a count
 * that is not a number or overflows, a stack without a count, a count
 * without frames, an empty frame, binary data (a NUL byte), an input with
 * no stacks at all.
 */
#ifndef STAPXX_FLAME_H
#define STAPXX_FLAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "base/wrapper.h"

#define FLAME_SEP '\001'

/* One distinct stack.  key is the internal form (owned by the table's
 * arena); count the sum of its samples. */
struct flame_stack {
	const char *key;
	size_t len;
	uint64_t count;
	uint64_t hash;
};

/* Distinct stacks, merged by key.  Create zeroed (struct flame_table t = {0}),
 * release with flame_table_free(). */
struct flame_table {
	struct flame_stack *items;	/* the n stacks, in insertion order */
	size_t n, cap;
	size_t *slots;			/* hash index: 1 + item index, 0 = empty */
	size_t nslots;
	uint64_t total;			/* sum of all counts */
	struct flame_chunk *arena;	/* memory for keys and input text */
};

/* Read every stack of PATH ("-" = standard input) into T, adding counts of
 * stacks already there.  Dies with "FILE:LINE: error: ..." on bad input
 * (see above); an input without any stack is an error too.  Returns the
 * number of stack records read. */
size_t flame_read(struct flame_table *t, const char *path);

/* The same for the LEN bytes of TEXT (not changed; a missing final newline
 * is supplied), named NAME in messages, whose first byte starts line
 * FIRST_LINE of NAME (errors say NAME:LINE with the real line). */
size_t flame_read_mem(struct flame_table *t, const char *name, size_t first_line,
		      const char *text, size_t len);

/* Add COUNT samples of the stack KEY (internal form, LEN bytes, copied).
 * Dies if the total overflows. */
void flame_add(struct flame_table *t, const char *key, size_t len, uint64_t count);

/* Find KEY; NULL if absent.  The result points into T. */
const struct flame_stack *flame_find(const struct flame_table *t,
				     const char *key, size_t len);

/* The distinct stacks of T sorted by key (frame by frame, byte order).
 * Returns a malloc'ed array of *N pointers into T; the caller frees the
 * array (not the stacks). */
struct flame_stack **flame_sorted(const struct flame_table *t, size_t *n);

/* Reverse the frame order of every stack of T (leaf becomes root); stacks
 * that become equal are merged. */
void flame_reverse(struct flame_table *t);

void flame_table_free(struct flame_table *t);

/* Write the stack KEY in folded form followed by " COUNT\n". */
void flame_write_folded(FILE *out, const char *key, size_t len, uint64_t count);

/* Write to OUT and die with "PROG: error: cannot write ..." if writing
 * failed (disk full, closed pipe); call once at the end. */
void flame_close_output(FILE *out, const char *what);

#endif
