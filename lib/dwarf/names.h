/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/names.h - private to lib/dwarf/: the names a binary's DWARF
 * defines, kept across runs by build-id (dw_names_cache() in dwarf.h),
 * so that a search for a name a binary lacks neither loads nor indexes
 * its DWARF (libc's takes about 0.3 s of CPU time: a luajit CLI target's
 * every run asked it for nginx's types).
 *
 * The file holds the line "stap++ dwarf names 1 BUILD-ID", then one line
 * "KIND NAME" per entry of the binary's index (KIND: enum kind's value),
 * then "end COUNT", the number of those lines.  A file that is not that,
 * for this build-id (another's, cut short, changed), is not used.
 */
#ifndef STAPXX_DWARF_NAMES_H
#define STAPXX_DWARF_NAMES_H

#include "dwarf/index.h"

/* Every kind of the index, for names_skip()'s KINDS. */
#define NAMES_ALL_KINDS 0x7fu

/* The kind's bit in a KINDS mask. */
#define KIND_BIT(k) (1u << (k))

/* May the search skip B, whose state is B_NEW, without opening it?  Yes
 * when the names cache holds B's names and none of them is NAME with a
 * kind of the mask KINDS (NAME NULL: any binary whose names are cached,
 * which therefore has usable DWARF).  No without a names cache, for a
 * binary without a build-id, or when the cache holds nothing for it. */
int names_skip(struct dw_bin *b, unsigned kinds, const char *name);

/* After B was indexed (B_READY): store its names in the names cache,
 * unless they came from there.  Failures are said with info(1) only: the
 * cache saves time, it never changes an answer. */
void names_store(struct dw_bin *b);

/* Frees what names_skip() loaded for B. */
void names_free(struct dw_bin *b);

#endif
