/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/search.h - private to lib/dwarf/: a search over the set for the
 * binary that answers a query, and the message when none does.
 *
 * Usage: search_init(), then search_next() until it returns NULL or a
 * binary has the answer; search_fail() if none had; search_done() always.
 * Without MODULE every binary is tried in order (those without debug info
 * skipped and remembered for hints, unreadable ones warned about once);
 * with it only that binary, which must have DWARF.  A search for a name
 * (search_key()) passes over a binary whose names the names cache holds
 * without that name (dwarf/names.h), unopened; it counts as searched.
 */
#ifndef STAPXX_DWARF_SEARCH_H
#define STAPXX_DWARF_SEARCH_H

#include "dwarf/index.h"

/* What a search over the set saw, for the final message. */
struct search {
	struct dw_set *set;
	struct dw_bin *only;	/* explicit MODULE, or NULL */
	size_t i;
	char *searched;		/* "'a', 'b'" binaries with DWARF */
	char *nodebug;		/* same, without DWARF */
	struct dw_bin *first_nodebug;
	int n_searched, n_nodebug, n_unusable;
	unsigned kinds;		/* search_key()'s, or 0: every binary is opened */
	const char *name;
};

/* Start a search of SET, or only of MODULE (added to the set if new). */
void search_init(struct search *s, struct dw_set *set, const char *module);

/* The search is for NAME with a kind of the mask KINDS (KIND_BIT()s;
 * NAME NULL: for no name, only to class the binaries), which lets it pass
 * over binaries the names cache says lack it.  NAME is not copied. */
void search_key(struct search *s, unsigned kinds, const char *name);

/* Next binary with usable DWARF, or NULL at the end.  An explicit module
 * without DWARF is an error (returns NULL with *err = -1, after error()). */
struct dw_bin *search_next(struct search *s, int *err);

/* Hints naming the binaries the search skipped for lack of debug info,
 * with the how-to for the first.  Nothing if there were none. */
void search_hint_nodebug(struct search *s);

/* The search found nothing: error "cannot find WHAT in LIST" (or "no
 * debug info in ...", or that nothing could be searched) with hints;
 * EXTRA, if not NULL, is one more hint.  Returns -1. */
int search_fail(struct search *s, const char *what, const char *extra);

/* Free what the search collected. */
void search_done(struct search *s);

#endif
