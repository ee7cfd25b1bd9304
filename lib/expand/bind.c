/* SPDX-License-Identifier: GPL-2.0-or-later */
/* expand/bind.c - the $* bindings.  See expand/bind.h. */
#include "expand/bind.h"
#include "base/wrapper.h"

#include <stdlib.h>
#include <string.h>

static struct binding *find_binding(struct xctx *c, const char *name)
{
	for (size_t i = 0; i < c->nbinds; i++)
		if (strcmp(c->binds[i].name, name) == 0)
			return &c->binds[i];
	return NULL;
}

/* End of the expression of "$*NAME := EXPR" starting at t[i]: a newline,
 * ';' or comment at bracket depth 0, or an unmatched closing bracket.
 * *bad is set when brackets do not match or stay open. */
static size_t expr_end(const char *t, size_t i, size_t end, int *bad)
{
	char stack[64];
	int depth = 0;

	*bad = 0;
	for (; i < end; i++) {
		char ch = t[i];
		if (ch == '"') {
			int closed;
			size_t e = skip_string(t, i, end, &closed);
			if (!closed) {
				i = e;	/* unterminated: stap will say so */
				break;
			}
			i = e - 1;
		} else if (comment_at(t, i, end, 0)) {
			if (depth == 0)
				break;
			i = skip_comment(t, i, end) - 1;
		} else if (ch == '(' || ch == '[' || ch == '{') {
			if (depth == (int)sizeof(stack)) {
				*bad = 1;
				return i;
			}
			stack[depth++] = ch == '(' ? ')' : ch == '[' ? ']' : '}';
		} else if (ch == ')' || ch == ']' || ch == '}') {
			if (depth == 0)
				break;
			if (stack[--depth] != ch) {
				*bad = 1;
				return i;
			}
		} else if ((ch == '\n' || ch == ';') && depth == 0) {
			break;
		}
	}
	if (depth)
		*bad = 1;
	return i;
}

size_t do_star(struct xctx *c, size_t i, size_t end, struct buf *out)
{
	const char *t = c->src->text;
	size_t j, k;
	char *name = sigil_name(c, i, end, &j);

	if (!name)
		return (size_t)-1;
	k = j;
	while (k < end && (t[k] == ' ' || t[k] == '\t'))
		k++;
	if (k + 1 < end && t[k] == ':' && t[k + 1] == '=') {
		int bad;
		size_t vs = k + 2, ve = expr_end(t, vs, end, &bad);
		struct buf val = {0};
		struct binding *b;
		char *v;

		if (bad) {
			xerr(c, i, "unbalanced brackets in the value of '$*%s'",
			     name);
			free(name);
			return (size_t)-1;
		}
		if (expand_range(c, vs, ve, &val, 1) == (size_t)-1) {
			buf_free(&val);
			free(name);
			return (size_t)-1;
		}
		v = trim_dup(val.s ? val.s : "", val.len);
		buf_free(&val);
		if (strlen(v) > MAX_VALUE) {
			xerr(c, i, "the value of '$*%s' is longer than %d bytes",
			     name, MAX_VALUE);
			free(v);
			free(name);
			return (size_t)-1;
		}
		if (!*v) {
			xerr(c, i, "empty value for '$*%s'", name);
			free(v);
			free(name);
			return (size_t)-1;
		}
		b = find_binding(c, name);
		if (b) {
			free(b->value);
			free(name);
		} else {
			c->binds = xrealloc(c->binds,
					    (c->nbinds + 1) * sizeof(*c->binds));
			b = &c->binds[c->nbinds++];
			b->name = name;
		}
		b->value = v;
		add_newlines(out, t, i, ve);
		return ve;
	}
	struct binding *b = find_binding(c, name);
	if (!b) {
		xerr(c, i, "'$*%s' is used before it is bound", name);
		hint("bind it first: $*%s := EXPRESSION", name);
	} else {
		add_oneline(out, b->value);
	}
	free(name);
	return j;
}

void bindings_free(struct binding **v, size_t *n)
{
	for (size_t i = 0; i < *n; i++) {
		free((*v)[i].name);
		free((*v)[i].value);
	}
	free(*v);
	*v = NULL;
	*n = 0;
}
