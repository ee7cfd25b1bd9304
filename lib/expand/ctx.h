/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand/ctx.h - private to the expander (lib/expand/): the state of one
 * expand_script() run and the functions every macro handler shares
 * (ctx.c: messages, names, arguments; range.c: expand_range()).  Not for
 * other callers: use expand/expand.h.
 *
 * Handlers get the index of their macro in c->src->text and return the
 * index after it, or (size_t)-1 on an error that stops the current file
 * (after xerr()).  They append what the macro expands to to OUT, followed
 * by as many newlines as the macro spans, so line numbers never move.
 */
#ifndef STAPXX_EXPAND_CTX_H
#define STAPXX_EXPAND_CTX_H

#include <stddef.h>

#include "base/error.h"
#include "base/strbuf.h"
#include "expand/expand.h"
#include "expand/scan.h"

/* A $*NAME binding (per file). */
struct binding {
	char *name;
	char *value;
};

/* A library lookup already done (so each warning is printed once). */
struct libmemo {
	char *name;
	const char *path;
};

#define MAX_ACTIVE 16
struct xctx {
	const struct expand_opts *o;
	struct expansion *x;
	struct source *src;		/* file being expanded (stable while
				   x->files grows) */
	struct binding *binds;
	size_t nbinds;
	struct libmemo *libs;
	size_t nlibs;
	int errors;
	int depth;			/* nesting of expand_range() */
	const char *active[MAX_ACTIVE];	/* arguments whose default is being
					   expanded (to catch self-reference) */
	int nactive;
	int pending_nl;			/* newlines of a macro inside a string,
					   emitted after the string ends */
	int dead;			/* > 0: inside a %( %? %: %) branch that
					   stap will drop (no DWARF lookups) */
	int warned_pidless;		/* "$^target in a string reads 0" said */
	struct binding *defs;		/* @define NAME %( BODY %), expanded */
	size_t ndefs;
};

#define MAX_DEPTH 64
#define MAX_VALUE (64 * 1024)	/* longest $*NAME value */

/* "FILE:LINE: error: MSG" for offset OFF of the current file; counts the
 * error.  Returns -1. */
int xerr(struct xctx *c, size_t off, const char *fmt, ...) PRINTF_LIKE(3, 4);
/* "FILE:LINE: warning: MSG" for offset OFF of the current file. */
void xwarn(struct xctx *c, size_t off, const char *fmt, ...) PRINTF_LIKE(3, 4);

/*
 * Expand text[i, end) of the current file into OUT (range.c; the handlers
 * call it for their arguments).  Returns END, or (size_t)-1 on an error
 * that stops this file.  With STRIP_COMMENTS, comments become one space
 * (for values that are pasted elsewhere).
 */
size_t expand_range(struct xctx *c, size_t i, size_t end, struct buf *out,
		    int strip_comments);

/* The name after "$^" or "$*" at t[i] (malloc'd; the caller frees it;
 * *after = its end), or NULL after an error. */
char *sigil_name(struct xctx *c, size_t i, size_t end, size_t *after);

/* 0 if there is a target executable, else -1 after the error "MACRO needs
 * a target" (at OFF) and a hint. */
int need_exec(struct xctx *c, size_t off, const char *macro);

/* Arguments of a macro call, expanded, trimmed and unquoted (owned: free
 * them with callargs_free()). */
struct callargs {
	int n;
	char *v[MAXARGS];
	size_t close;			/* index of ')' */
};

/* Parse and expand the arguments "(a, b, c)" of MACRO (at AT) whose '('
 * should be at t[open]: MIN to MAX of them, none empty.  0, or -1 after
 * xerr() (A is then empty). */
int parse_call(struct xctx *c, const char *macro, size_t at, size_t open,
	       size_t end, int min, int max, struct callargs *a);
void callargs_free(struct callargs *a);

#endif
