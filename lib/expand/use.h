/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand/use.h - the @use module loader and its search path.
 *
 * "@use a.b, c.d" loads the module files a/b.sxx and c/d.sxx from the
 * first directory of the search path that has them.  A module file starts
 * with "// module a.b".  Each module is loaded once (in pass 1), appended
 * to the expansion's files and expanded like the main script.
 *
 * module_search_path() is for stap++'s main; do_use() is the expander's.
 */
#ifndef STAPXX_EXPAND_USE_H
#define STAPXX_EXPAND_USE_H

#include <stddef.h>

#include "base/strbuf.h"

struct xctx;	/* expand/ctx.h: private to the expander */

/* @use a.b, c.d at t[i] ('@'); consumes up to the end of the line and
 * expands to nothing.  Loads new modules when scanning (pass 1).  Returns
 * the index after the list, or (size_t)-1 after an error. */
size_t do_use(struct xctx *c, size_t i, size_t end);

/* The module search path, appended to DIRS (each once, in order): every
 * -I dir of INCDIRS, ".", "tapset", the tapset dir next to the running
 * executable and under its prefix (BIN/../share/stap++/tapset) as real
 * paths, if they exist, and STAPXX_DATADIR/tapset. */
void module_search_path(const struct strv *incdirs, struct strv *dirs);

#endif
