/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand/caret.h - the $^ macros (see expand.h for what each means).
 */
#ifndef STAPXX_EXPAND_CARET_H
#define STAPXX_EXPAND_CARET_H

#include "expand/ctx.h"

/* $^NAME at t[i] ('$'), IN_STR when inside a string literal (values are
 * then escaped; newlines the macro spans are left to c->pending_nl).
 * Appends the value to OUT.  Returns the index after the macro, or
 * (size_t)-1 after an error that stops the file. */
size_t do_caret(struct xctx *c, size_t i, size_t end, struct buf *out,
		int in_str);

#endif
