/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand/bind.h - the $* bindings: "$*NAME := EXPR" binds NAME to EXPR
 * (expanded, up to a newline, ';' or comment outside brackets) and
 * expands to nothing; a later $*NAME in the same file expands to EXPR.
 * Bindings are per file.
 */
#ifndef STAPXX_EXPAND_BIND_H
#define STAPXX_EXPAND_BIND_H

#include "expand/ctx.h"

/* $*NAME or $*NAME := EXPR at t[i] ('$').  Returns the index after it, or
 * (size_t)-1 after an error that stops the file. */
size_t do_star(struct xctx *c, size_t i, size_t end, struct buf *out);

/* Free the N bindings of *V (names and values, then the array): the
 * current file's $* bindings, or the @define bodies.  *V and *N are
 * reset. */
void bindings_free(struct binding **v, size_t *n);

#endif
