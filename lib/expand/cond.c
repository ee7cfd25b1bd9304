/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand/cond.c - the %( COND %? A %: B %) evaluator.  See expand/cond.h.
 */
#include "expand/cond.h"
#include "base/wrapper.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/*
 * stap's preprocessor conditionals pick one branch at parse time.  When the
 * condition (after expansion) is plain integer arithmetic, e.g.
 * "%( @has_member(TValue, ftsz) == 1 %?" -> "%( 0 == 1 %?", we evaluate it
 * the same way so DWARF macros in the branch stap drops are not resolved
 * (they may well not exist in this build: that is why the test is there).
 * Anything else (kernel_v, arch, ...) leaves both branches live.
 */
struct ceval {
	struct xctx *c;
	const char *p, *end;
	int ok, depth;
	int nest;		/* operators seen: bounds the recursion */
};

static long long cond_or(struct ceval *e);

static void ce_space(struct ceval *e)
{
	while (e->p < e->end && isspace((unsigned char)*e->p))
		e->p++;
}

static int ce_eat(struct ceval *e, const char *tok)
{
	size_t n = strlen(tok);
	ce_space(e);
	if ((size_t)(e->end - e->p) >= n && strncmp(e->p, tok, n) == 0) {
		e->p += n;
		return 1;
	}
	return 0;
}

static const char *find_define(struct xctx *c, const char *name, size_t n)
{
	for (size_t i = c->ndefs; i-- > 0;)
		if (strlen(c->defs[i].name) == n &&
		    strncmp(c->defs[i].name, name, n) == 0)
			return c->defs[i].value;
	return NULL;
}

static long long cond_primary(struct ceval *e)
{
	ce_space(e);
	if (!e->ok || e->p >= e->end || ++e->nest > 256)
		goto bad;
	if (ce_eat(e, "!"))
		return !cond_primary(e);
	if (ce_eat(e, "-"))
		return -cond_primary(e);
	if (ce_eat(e, "(")) {
		long long v = cond_or(e);
		if (!ce_eat(e, ")"))
			goto bad;
		return v;
	}
	if (isdigit((unsigned char)*e->p)) {
		char *endp;
		long long v = strtoll(e->p, &endp, 0);
		if (endp > e->end)
			goto bad;
		e->p = endp;
		return v;
	}
	if (*e->p == '@') {
		const char *n = ++e->p, *body;
		while (e->p < e->end && is_ident(*e->p))
			e->p++;
		body = find_define(e->c, n, (size_t)(e->p - n));
		if (!body || e->depth > 16)
			goto bad;
		struct ceval sub = { e->c, body, body + strlen(body), 1,
				     e->depth + 1, e->nest };
		long long v = cond_or(&sub);
		ce_space(&sub);
		if (!sub.ok || sub.p != sub.end)
			goto bad;
		return v;
	}
bad:
	e->ok = 0;
	return 0;
}

static long long cond_cmp(struct ceval *e)
{
	long long l = cond_primary(e);
	static const char *const ops[] = { "==", "!=", "<=", ">=", "<", ">" };

	for (size_t k = 0; k < 6; k++) {
		if (!ce_eat(e, ops[k]))
			continue;
		long long r = cond_primary(e);
		switch (k) {
		case 0: return l == r;
		case 1: return l != r;
		case 2: return l <= r;
		case 3: return l >= r;
		case 4: return l < r;
		default: return l > r;
		}
	}
	return l;
}

static long long cond_and(struct ceval *e)
{
	long long v = cond_cmp(e);
	while (e->ok && ce_eat(e, "&&")) {
		long long r = cond_cmp(e);
		v = v && r;
	}
	return v;
}

static long long cond_or(struct ceval *e)
{
	long long v = cond_and(e);
	while (e->ok && ce_eat(e, "||")) {
		long long r = cond_and(e);
		v = v || r;
	}
	return v;
}

/* 1 or 0, or -1 when COND is not plain integer arithmetic. */
static int eval_cond(struct xctx *c, const char *cond, size_t n)
{
	struct ceval e = { c, cond, cond + n, 1, 0, 0 };
	long long v = cond_or(&e);

	ce_space(&e);
	if (!e.ok || e.p != e.end)
		return -1;
	return v != 0;
}


/* If OUT ends with "@define NAME " (no parameters), return NAME. */
static char *define_name(const struct buf *out)
{
	size_t e = out->len, s;

	while (e > 0 && isspace((unsigned char)out->s[e - 1]))
		e--;
	s = e;
	while (s > 0 && is_ident(out->s[s - 1]))
		s--;
	if (s == e)
		return NULL;
	size_t d = s;
	while (d > 0 && isspace((unsigned char)out->s[d - 1]))
		d--;
	if (d < 7 || strncmp(out->s + d - 7, "@define", 7) != 0)
		return NULL;
	return xstrndup(out->s + s, e - s);
}

void pp_directive(struct xctx *c, char kind, struct buf *out,
		  struct ppframe *st, int *n)
{
	struct ppframe *top = *n > 0 ? &st[*n - 1] : NULL;

	switch (kind) {
	case '(':
		if (*n < MAX_PP) {
			struct ppframe f = { out->len + 2, define_name(out), -1,
					     0, 0 };
			st[*n] = f;
		}
		(*n)++;
		break;
	case '?':
		if (!top || *n > MAX_PP || top->phase != 0)
			break;
		top->value = eval_cond(c, out->s + top->cond_out,
				       out->len - top->cond_out);
		top->phase = 1;
		if (top->value == 0) {
			top->dead = 1;
			c->dead++;
		}
		break;
	case ':':
		if (!top || *n > MAX_PP || top->phase != 1)
			break;
		top->phase = 2;
		if (top->dead) {
			top->dead = 0;
			c->dead--;
		}
		if (top->value == 1) {
			top->dead = 1;
			c->dead++;
		}
		break;
	case ')':
		if (!top)
			break;
		if (*n <= MAX_PP) {
			if (top->dead)
				c->dead--;
			if (top->define && top->phase == 0) {
				c->defs = xrealloc(c->defs, (c->ndefs + 1) *
						   sizeof(*c->defs));
				c->defs[c->ndefs].name = top->define;
				c->defs[c->ndefs].value =
					trim_dup(out->s + top->cond_out,
						 out->len - top->cond_out);
				c->ndefs++;
				top->define = NULL;
			}
			free(top->define);
		}
		(*n)--;
		break;
	}
}
