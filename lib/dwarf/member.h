/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/member.h - private to lib/dwarf/: member paths in a struct or
 * union ("a", "a.b.c", "arr[3].x", "grid[1][2]"), found through anonymous
 * structs/unions, with array indexes checked against the array's size
 * (unless it has 0 or 1 elements or no size).
 */
#ifndef STAPXX_DWARF_MEMBER_H
#define STAPXX_DWARF_MEMBER_H

#include "dwarf/index.h"

/*
 * member_path_offset - the byte offset of MEMBER (a path; blanks around
 * punctuation are ignored) in struct/union TYPE of binary B, described as
 * DESC in messages.  Returns 1 with *out set; 2 if it is a bit-field (no
 * byte offset: an error unless QUIET, then -1); 0 if the path names
 * nothing (after an error unless QUIET); -1 after error() on a malformed
 * path or unreadable DWARF.
 */
int member_path_offset(struct dw_bin *b, Dwarf_Die *type, const char *desc,
		       const char *member, int quiet, long long *out);

#endif
