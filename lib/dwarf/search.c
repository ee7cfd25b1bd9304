/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/search.c - searching the set.  See dwarf/search.h.
 */
#include "dwarf/search.h"
#include "base/error.h"
#include "base/wrapper.h"
#include "dwarf/names.h"
#include "dwarf/open.h"

#include <stdlib.h>
#include <string.h>

static void list_add(char **list, const char *path)
{
	char *old = *list;
	*list = old ? xasprintf("%s, '%s'", old, path) : xasprintf("'%s'", path);
	free(old);
}

/* Next binary with usable DWARF, or NULL at the end.  An explicit module
 * without DWARF is an error (returns NULL with *err = -1). */
struct dw_bin *search_next(struct search *s, int *err)
{
	*err = 0;
	if (s->only) {
		if (s->i++)
			return NULL;
		if (bin_require(s->only) < 0) {
			*err = -1;
			return NULL;
		}
		list_add(&s->searched, s->only->path);
		s->n_searched++;
		return s->only;
	}
	while (s->i < s->set->n) {
		struct dw_bin *b = s->set->bins[s->i++];
		if (s->kinds && names_skip(b, s->kinds, s->name)) {
			list_add(&s->searched, b->path);
			s->n_searched++;
			continue;
		}
		bin_open(b);
		if (b->state == B_READY) {
			list_add(&s->searched, b->path);
			s->n_searched++;
			return b;
		}
		if (b->state == B_NODEBUG) {
			list_add(&s->nodebug, b->path);
			if (!s->n_nodebug++)
				s->first_nodebug = b;
		} else {
			s->n_unusable++;
			if (!b->warned++)
				warning("%s (skipped)", b->why);
		}
	}
	return NULL;
}

void search_key(struct search *s, unsigned kinds, const char *name)
{
	s->kinds = kinds;
	s->name = name;
}

void search_init(struct search *s, struct dw_set *set,
			const char *module)
{
	memset(s, 0, sizeof(*s));
	s->set = set;
	if (module)
		s->only = set_get(set, module);
}

/* Hints naming the binaries the search skipped for lack of debug info,
 * with the how-to for the first. */
void search_hint_nodebug(struct search *s)
{
	if (s->n_nodebug) {
		hint("not searched, no debug info in %s", s->nodebug);
		hint_debuginfo(s->first_nodebug);
	}
}

/* The search found nothing: print "cannot find WHAT in LIST" (or "no debug
 * info in ...") with hints.  The first binary without debug info (the
 * executable, if it is one of them) gets the full how-to hint.  Returns
 * -1. */
int search_fail(struct search *s, const char *what, const char *extra)
{
	if (!s->n_searched && s->n_nodebug) {
		error("no debug info in %s", s->nodebug);
		hint_debuginfo(s->first_nodebug);
	} else if (!s->n_searched && s->n_unusable) {
		error("cannot find %s: no readable binary to search", what);
	} else if (!s->n_searched) {
		error("cannot find %s: no target binary to search", what);
		hint("name the target with -x PID or --exec PATH, or give a "
		     "module path as the last argument");
	} else {
		error("cannot find %s in %s", what, s->searched);
		if (extra)
			hint("%s", extra);
		search_hint_nodebug(s);
	}
	return -1;
}

void search_done(struct search *s)
{
	free(s->searched);
	free(s->nodebug);
}
