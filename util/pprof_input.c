/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pprof_input.c - see pprof_input.h. */
#include "pprof_input.h"
#include "base/strbuf.h"
#include "base/wrapper.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const type_names[] = {
	[PPROF_CPU] = "cpu", [PPROF_BYTES] = "bytes", [PPROF_US] = "us",
};

enum pprof_type pprof_type_parse(const char *s)
{
	int i;

	for (i = PPROF_CPU; i <= PPROF_US; i++)
		if (!strcmp(s, type_names[i]))
			return (enum pprof_type)i;
	return PPROF_TYPE_UNSET;
}

const char *pprof_type_name(enum pprof_type type)
{
	return type >= PPROF_CPU && type <= PPROF_US ? type_names[type] : "unset";
}

/* ---- reading one input ------------------------------------------------ */

/* All of PATH ("-": standard input, NAME in messages) into B. */
static void slurp_input(struct buf *b, const char *path, const char *name)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY) : 0;

	if (fd < 0)
		die("cannot open '%s': %s", path, strerror(errno));
	if (buf_read_fd(b, fd) < 0)
		die("cannot read '%s': %s", name, strerror(errno));
	if (fd)
		close(fd);
}

/* What one header line says. */
struct header {
	int profile;			/* "profile": a block starts */
	enum pprof_type type;
	uint64_t hz;
	int64_t start_ns, duration_ns;	/* -1: not given */
	const char *label[PPROF_NLABELS];	/* the value, in the line; NULL: not given */
	size_t label_len[PPROF_NLABELS];
};

const char *const pprof_label_keys[PPROF_NLABELS] = { "cgroup", "container" };

/* Name FILE:LINE in the next error message (line 0: FILE alone). */
static void at(const char *file, size_t line)
{
	error_set_location(file, line > INT32_MAX ? INT32_MAX : (int)line);
}

/* A decimal number in [MIN, INT64_MAX], or die naming KEY. */
static int64_t header_number(const char *file, size_t line, const char *key,
			     const char *v, size_t n, int64_t min)
{
	uint64_t x = 0;
	size_t i;

	for (i = 0; i < n && v[i] >= '0' && v[i] <= '9' && x <= INT64_MAX / 10; i++)
		x = x * 10 + (uint64_t)(v[i] - '0');
	if (!n || i < n || x > INT64_MAX || (int64_t)x < min) {
		at(file, line);
		die("header %s=%.*s: expected a number%s", key,
		    (int)n, v, min > 0 ? " above 0" : "");
	}
	return (int64_t)x;
}

/* Parse S (LEN bytes) into H if it is a header line; returns 0 if not. */
static int parse_header(const char *file, size_t line, const char *s, size_t len,
			struct header *h)
{
	const char *p = s + 8, *end = s + len, *w, *eq;
	int first = 1;

	if (len < 8 || memcmp(s, "# stap++", 8) || (len > 8 && s[8] != ' ' && s[8] != '\t'))
		return 0;
	memset(h, 0, sizeof *h);
	h->start_ns = h->duration_ns = -1;
	for (;;) {
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p == end)
			return 1;
		for (w = p; p < end && *p != ' ' && *p != '\t'; p++)
			;
		eq = memchr(w, '=', (size_t)(p - w));
		if (!eq) {
			if (first && p - w == 7 && !memcmp(w, "profile", 7))
				h->profile = 1;
			first = 0;
			continue;	/* unknown words are for other readers */
		}
		first = 0;
#define KEY(k) ((size_t)(eq - w) == sizeof k - 1 && !memcmp(w, k, sizeof k - 1))
		if (KEY("type")) {
			char name[16];
			size_t n = (size_t)(p - eq - 1);
			snprintf(name, sizeof name, "%.*s", (int)n, eq + 1);
			h->type = n < sizeof name ? pprof_type_parse(name) : PPROF_TYPE_UNSET;
			if (!h->type) {
				at(file, line);
				die("header type=%.*s: expected cpu, bytes or us",
				    (int)n, eq + 1);
			}
		} else if (KEY("hz")) {
			h->hz = (uint64_t)header_number(file, line, "hz", eq + 1,
							(size_t)(p - eq - 1), 1);
			if (h->hz > 1000000000) {	/* as --hz: a period of at least 1 ns */
				at(file, line);
				die("header hz=%" PRIu64 ": expected a whole number from 1 to 1000000000",
				    h->hz);
			}
		} else if (KEY("start")) {
			h->start_ns = header_number(file, line, "start", eq + 1,
						    (size_t)(p - eq - 1), 0);
		} else if (KEY("duration")) {
			h->duration_ns = header_number(file, line, "duration", eq + 1,
						       (size_t)(p - eq - 1), 0);
		} else {
			for (int k = 0; k < PPROF_NLABELS; k++)
				if ((size_t)(eq - w) == strlen(pprof_label_keys[k]) &&
				    !memcmp(w, pprof_label_keys[k], (size_t)(eq - w))) {
					h->label[k] = eq + 1;
					h->label_len[k] = (size_t)(p - eq - 1);
				}
		}
#undef KEY
	}
}

static struct pprof_block *new_block(struct pprof_input *in, const char *file, size_t line)
{
	struct pprof_block *b;

	in->blocks = xrealloc(in->blocks, (in->nblocks + 1) * sizeof *in->blocks);
	b = &in->blocks[in->nblocks++];
	memset(b, 0, sizeof *b);
	b->start_ns = b->duration_ns = -1;
	b->file = file;
	b->line = line;
	return b;
}

/* Widen B's time span to cover H's. */
static void merge_span(struct pprof_block *b, const struct header *h)
{
	int64_t end = b->start_ns >= 0 && b->duration_ns >= 0 ? b->start_ns + b->duration_ns : -1;
	int64_t hend = h->start_ns >= 0 && h->duration_ns >= 0 ? h->start_ns + h->duration_ns : -1;

	if (h->start_ns < 0)
		return;
	if (b->start_ns < 0 || h->start_ns < b->start_ns)
		b->start_ns = h->start_ns;
	if (end < hend)
		end = hend;
	b->duration_ns = end >= 0 ? end - b->start_ns : -1;
}

/* The stacks of lines [FROM, TO) of the input, FROM being line FROM_LINE,
 * into B. */
static void read_block(struct pprof_block *b, const char *name, size_t from_line,
		       const char *from, const char *to)
{
	const char *p;

	for (p = from; p < to && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'); p++)
		;
	if (p < to)	/* not just header and empty lines */
		flame_read_mem(&b->t, name, from_line, from, (size_t)(to - from));
}

/* With --split: the stacks of block B (lines [FROM, TO), FROM being
 * FROM_LINE) are read, handed to EMIT and freed. */
static void end_block(struct pprof_input *in, struct pprof_block *b, const char *name,
		      size_t from_line, const char *from, const char *to,
		      pprof_emit_fn *emit, void *ctx)
{
	read_block(b, name, from_line, from, to);
	emit(in, b, ctx);
	flame_table_free(&b->t);
}

/* With --split: die if START is the start of an earlier block. */
static void check_start(const struct pprof_input *in, const char *name, size_t line,
			int64_t start)
{
	size_t i;

	for (i = 0; i < in->nblocks; i++)
		if (in->blocks[i].start_ns == start) {
			at(name, line);
			die("a second profile with start=%" PRId64 " (the first: %s:%zu)",
			    start, in->blocks[i].file, in->blocks[i].line);
		}
}

void pprof_read(struct pprof_input *in, const char *path, pprof_emit_fn *emit, void *ctx)
{
	const char *name = strcmp(path, "-") ? path : "<stdin>";
	struct buf t = {0};

	slurp_input(&t, path, name);
	pprof_read_mem(in, name, t.s ? t.s : "", t.len, emit, ctx);
	buf_free(&t);
}

void pprof_read_mem(struct pprof_input *in, const char *name, const char *text,
		    size_t len, pprof_emit_fn *emit, void *ctx)
{
	struct buf t = {0};
	size_t line = 0, seg_line = 1, cur = 0;	/* cur: 1 + block index */
	char *s, *e, *seg;
	int stacks_outside = 0;
	struct header h;

	buf_add(&t, text, len);
	if (t.len && t.s[t.len - 1] != '\n')
		buf_addc(&t, '\n');
	if (!emit) {
		if (!in->nblocks)
			new_block(in, name, 0);
		cur = 1;
	}
	seg = t.s;
	for (s = t.s; s && s < t.s + t.len; s = e + 1) {
		size_t n;
		e = memchr(s, '\n', (size_t)(t.s + t.len - s));
		n = (size_t)(e - s);
		line++;
		if (n && s[n - 1] == '\r')
			n--;
		if (!parse_header(name, line, s, n, &h)) {
			if (emit && !cur && n && s[0] != ' ' && s[0] != '\t' && !stacks_outside)
				stacks_outside = (int)line;
			continue;
		}
		if (h.type && in->type && h.type != in->type) {
			at(name, line);
			die("header type=%s, but the input so far is type=%s",
			    pprof_type_name(h.type), pprof_type_name(in->type));
		}
		if (h.hz && in->hz && h.hz != in->hz) {
			at(name, line);
			die("header hz=%" PRIu64 ", but the input so far has hz=%" PRIu64,
			    h.hz, in->hz);
		}
		if (emit && in->nblocks && ((h.type && !in->type) || (h.hz && !in->hz))) {
			at(name, line);
			die("with --split, type= and hz= must come before the first profile block");
		}
		for (int k = 0; k < PPROF_NLABELS; k++) {
			const char *key = pprof_label_keys[k], *v = h.label[k];
			size_t n = h.label_len[k], m = in->label[k] ? strlen(in->label[k]) : 0;
			if (!v)
				continue;
			if (in->label[k] && (m != n || memcmp(in->label[k], v, n))) {
				at(name, line);
				die("header %s=%.*s, but the input so far has %s=%s", key, (int)n, v,
				    key, in->label[k]);
			}
			if (!in->label[k])
				in->label[k] = xstrndup(v, n);
		}
		if (h.type)
			in->type = h.type;
		if (h.hz)
			in->hz = h.hz;
		if (!emit) {
			merge_span(&in->blocks[0], &h);
			continue;
		}
		if (!h.profile)
			continue;
		if (h.start_ns < 0) {
			at(name, line);
			die("'# stap++ profile' without start=UNIX_NS");
		}
		if (stacks_outside) {
			at(name, (size_t)stacks_outside);
			die("stacks before the first '# stap++ profile' line"
			    " (--split needs every stack in a profile block)");
		}
		check_start(in, name, line, h.start_ns);
		if (cur)
			end_block(in, &in->blocks[cur - 1], name, seg_line, seg, s, emit, ctx);
		new_block(in, name, line);
		cur = in->nblocks;
		in->blocks[cur - 1].start_ns = h.start_ns;
		in->blocks[cur - 1].duration_ns = h.duration_ns;
		seg = e + 1;
		seg_line = line + 1;
	}
	if (emit && !cur) {
		at(name, 0);
		die("no '# stap++ profile' line (--split needs profile blocks)");
	}
	if (emit)
		end_block(in, &in->blocks[cur - 1], name, seg_line, seg, t.s + t.len, emit, ctx);
	else
		flame_read_mem(&in->blocks[0].t, name, 1, t.s, t.len);
	buf_free(&t);
}

void pprof_input_free(struct pprof_input *in)
{
	size_t i;

	for (i = 0; i < in->nblocks; i++)
		flame_table_free(&in->blocks[i].t);
	free(in->blocks);
	for (i = 0; i < PPROF_NLABELS; i++)
		free(in->label[i]);
	memset(in, 0, sizeof *in);
}
