/* SPDX-License-Identifier: GPL-2.0-or-later */
/* flame.c - see flame.h. */
#include "flame.h"
#include "base/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- errors ---------------------------------------------------------- */

/* "FILE:LINE: error: MSG", exit 1. */
static NORETURN PRINTF_LIKE(3, 4)
void input_die(const char *file, size_t line, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	error_set_location(file, (int)(line > INT32_MAX ? INT32_MAX : line));
	die("%s", msg);
}

/* Quote at most 40 bytes of S for an error message, non-printable bytes
 * as \xNN.  Returns a static buffer. */
static const char *quote(const char *s, size_t len)
{
	static char buf[4 * 40 + 8];
	size_t i, o = 0;

	for (i = 0; i < len && i < 40; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(buf + o, sizeof buf - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	if (i < len)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "...");
	buf[o] = '\0';
	return buf;
}

/* ---- arena ----------------------------------------------------------- */

/* Arena chunk size (bigger for larger requests).  The fuzz target builds
 * with a small one, so its small inputs reach the chunk-chaining path and
 * do not map 1 MiB per table under ASan. */
#ifndef FLAME_CHUNK_SIZE
#define FLAME_CHUNK_SIZE ((size_t)1 << 20)
#endif

struct flame_chunk {
	struct flame_chunk *next;
	size_t used, size;
	char data[];
};

static char *arena_alloc(struct flame_table *t, size_t n)
{
	struct flame_chunk *c = t->arena;

	if (!c || c->size - c->used < n) {
		size_t size = n > FLAME_CHUNK_SIZE ? n : FLAME_CHUNK_SIZE;
		c = xmalloc(sizeof *c + size);
		c->size = size;
		c->used = 0;
		c->next = t->arena;
		t->arena = c;
	}
	c->used += n;
	return c->data + c->used - n;
}

/* ---- table ----------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0x243f6a8885a308d3ULL ^ len;
	uint64_t w;

	while (len >= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 32;
		s += 8;
		len -= 8;
	}
	w = 0;
	memcpy(&w, s, len);
	h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return h;
}

static void table_grow(struct flame_table *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 1024, i, j;
	size_t *slots = xcalloc(nslots, sizeof *slots);

	for (i = 0; i < t->n; i++) {
		for (j = t->items[i].hash & (nslots - 1); slots[j]; j = (j + 1) & (nslots - 1))
			;
		slots[j] = i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
}

/* The slot holding KEY, or the empty slot where it would go. */
static size_t *table_slot(const struct flame_table *t, const char *key,
			  size_t len, uint64_t h)
{
	size_t j;

	for (j = h & (t->nslots - 1);; j = (j + 1) & (t->nslots - 1)) {
		size_t *sl = &t->slots[j];
		const struct flame_stack *s;
		if (!*sl)
			return sl;
		s = &t->items[*sl - 1];
		if (s->hash == h && s->len == len && !memcmp(s->key, key, len))
			return sl;
	}
}

void flame_add(struct flame_table *t, const char *key, size_t len, uint64_t count)
{
	uint64_t h = hash_bytes(key, len);
	struct flame_stack *s;
	size_t *sl;

	if (t->n * 2 >= t->nslots)
		table_grow(t);
	sl = table_slot(t, key, len, h);
	if (!*sl) {
		char *k = arena_alloc(t, len + 1);
		if (t->n == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 1024;
			t->items = xrealloc(t->items, t->cap * sizeof *t->items);
		}
		memcpy(k, key, len);
		k[len] = '\0';
		s = &t->items[t->n];
		s->key = k;
		s->len = len;
		s->hash = h;
		s->count = 0;
		*sl = ++t->n;
	}
	s = &t->items[*sl - 1];
	if (s->count + count < s->count || t->total + count < t->total)
		die("sample counts add up to more than %" PRIu64, UINT64_MAX);
	s->count += count;
	t->total += count;
}

const struct flame_stack *flame_find(const struct flame_table *t, const char *key,
				     size_t len)
{
	size_t *sl;

	if (!t->nslots)
		return NULL;
	sl = table_slot(t, key, len, hash_bytes(key, len));
	return *sl ? &t->items[*sl - 1] : NULL;
}

static int cmp_stack(const void *a, const void *b)
{
	const struct flame_stack *x = *(struct flame_stack *const *)a;
	const struct flame_stack *y = *(struct flame_stack *const *)b;
	return strcmp(x->key, y->key);
}

struct flame_stack **flame_sorted(const struct flame_table *t, size_t *n)
{
	struct flame_stack **v = xmalloc((t->n ? t->n : 1) * sizeof *v);
	size_t i, k = 0;
	int sorted = 1;

	for (i = 0; i < t->n; i++) {
		v[k] = &t->items[i];
		if (k && sorted && strcmp(v[k - 1]->key, v[k]->key) > 0)
			sorted = 0;
		k++;
	}
	if (!sorted)
		qsort(v, k, sizeof *v, cmp_stack);
	*n = k;
	return v;
}

void flame_table_free(struct flame_table *t)
{
	struct flame_chunk *c, *next;

	for (c = t->arena; c; c = next) {
		next = c->next;
		free(c);
	}
	free(t->slots);
	free(t->items);
	memset(t, 0, sizeof *t);
}

void flame_reverse(struct flame_table *t)
{
	struct flame_table r = {0};
	struct buf b = {0};
	size_t i;

	for (i = 0; i < t->n; i++) {
		const struct flame_stack *s = &t->items[i];
		const char *end, *p;
		b.len = 0;
		buf_grow(&b, s->len);
		end = s->key + s->len;
		/* Copy frames from last to first. */
		while (end > s->key) {
			for (p = end; p > s->key && p[-1] != FLAME_SEP; p--)
				;
			if (b.len)
				b.s[b.len++] = FLAME_SEP;
			memcpy(b.s + b.len, p, (size_t)(end - p));
			b.len += (size_t)(end - p);
			end = p > s->key ? p - 1 : p;
		}
		flame_add(&r, b.s, b.len, s->count);
	}
	buf_free(&b);
	flame_table_free(t);
	*t = r;
}

/* ---- writing folded text --------------------------------------------- */

void flame_write_folded(FILE *out, const char *key, size_t len, uint64_t count)
{
	static struct buf b;
	const char *end = key + len;

	/* Worst case: every byte escaped, plus " COUNT\n". */
	b.len = 0;
	buf_grow(&b, 2 * len + 32);
	for (; key < end; key++) {
		char c = *key;
		if (c == FLAME_SEP) {
			c = ';';
		} else if (c == ';' || c == '\\') {
			b.s[b.len++] = '\\';
		}
		b.s[b.len++] = c;
	}
	b.len += (size_t)snprintf(b.s + b.len, 32, " %" PRIu64 "\n", count);
	fwrite_unlocked(b.s, 1, b.len, out);
}

void flame_close_output(FILE *out, const char *what)
{
	error_clear_location();
	if (fflush(out) || ferror(out))
		die("cannot write %s: %s", what, strerror(errno ? errno : EIO));
}

/* ---- reading --------------------------------------------------------- */

/* Read all of FD (NAME for messages); the caller frees.  Adds a
 * terminating '\n' (unless empty) and the NUL. */
static char *slurp(int fd, const char *name, size_t *len)
{
	struct buf b = {0};

	if (buf_read_fd(&b, fd) < 0)
		die("cannot read '%s': %s", name, strerror(errno));
	if (b.len && b.s[b.len - 1] != '\n')
		buf_addc(&b, '\n');
	*len = b.len;
	return buf_steal(&b);
}

struct reader {
	struct flame_table *t;
	const char *name;	/* for messages */
	char *text, *pos, *end;
	size_t lineno;
	struct buf key;
	/* stack-block format: frames of the current block, innermost first */
	const char **fp;
	size_t *fl, nframes, cap;
	size_t block_line;
};

/* The next line (without '\n' or a trailing '\r') or NULL at the end.
 * Dies on binary data. */
static char *next_line(struct reader *r, size_t *len)
{
	char *s = r->pos, *e;
	size_t i, n;

	if (s >= r->end)
		return NULL;
	e = memchr(s, '\n', (size_t)(r->end - s));
	r->pos = e + 1;
	r->lineno++;
	n = (size_t)(e - s);
	if (n && s[n - 1] == '\r')
		n--;
	/* A NUL byte is binary data; other control bytes are escaped in
	 * frames (add_frame). */
	for (i = 0; i < n; i++)
		if (!s[i])
			input_die(r->name, r->lineno,
				  "binary data (byte 0x00 in column %zu)", i + 1);
	*len = n;
	return s;
}

static int is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/* Append the N bytes of frame S to B, every control byte shown visibly:
 * "\t", "\n", "\r", else "\xHH" (so FLAME_SEP and tabs never occur
 * inside a frame, and no frame can forge a count line). */
static void add_frame(struct buf *b, const char *s, size_t n)
{
	size_t i;

	buf_grow(b, n + 1);
	for (i = 0; i < n && !is_ctl((unsigned char)s[i]); i++)
		;
	if (i == n) {		/* the usual case */
		memcpy(b->s + b->len, s, n);
		b->len += n;
		return;
	}
	buf_grow(b, 4 * n + 1);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!is_ctl(c))
			b->s[b->len++] = (char)c;
		else if (c == '\t' || c == '\n' || c == '\r')
			b->len += (size_t)sprintf(b->s + b->len, "\\%c",
						  c == '\t' ? 't' : c == '\n' ? 'n' : 'r');
		else
			b->len += (size_t)sprintf(b->s + b->len, "\\x%02x", c);
	}
}

/* A "# stap++ ..." line: what the input says about itself (util/pprof
 * reads it); the stack readers pass over it like an empty line. */
static int header_line(const char *s, size_t n)
{
	return n >= 8 && !memcmp(s, "# stap++", 8) && (n == 8 || s[8] == ' ' || s[8] == '\t');
}

static int blank(const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t')
			return 0;
	return 1;
}

/* Parse the decimal count in S (LEN bytes). */
static uint64_t parse_count(struct reader *r, const char *s, size_t len)
{
	uint64_t v = 0;
	size_t i;

	if (!len)
		input_die(r->name, r->lineno, "missing count");
	for (i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';
		if (d > 9)
			input_die(r->name, r->lineno, "count '%s' is not a number",
				  quote(s, len));
		if (v > (UINT64_MAX - d) / 10)
			input_die(r->name, r->lineno, "count '%s' is too large",
				  quote(s, len));
		v = v * 10 + d;
	}
	return v;
}

/* Whether the line is a count line of the stack-block format: it starts
 * with a tab, or with spaces followed only by digits. */
static int is_count_line(const char *s, size_t n)
{
	size_t i = 0, digits = 0;

	if (!n || (s[0] != '\t' && s[0] != ' '))
		return 0;
	if (s[0] == '\t')
		return !blank(s, n);
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++, digits++;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return digits && i == n;
}

static int is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Length of "0x" + hex digits at S (0 if none). */
static size_t hexnum(const char *s, const char *end)
{
	const char *p = s + 2;

	if (end - s < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !is_hex(s[2]))
		return 0;
	while (p < end && is_hex(*p))
		p++;
	return (size_t)(p - s);
}

/* A frame line in print_ubacktrace() form becomes its symbol (or module
 * basename + offset); any other line is kept as is.  Updates *S, *N. */
static void ubacktrace_frame(const char **sp, size_t *np)
{
	const char *s = *sp, *end = s + *np, *p = s, *q;
	size_t h;

	while (p < end && *p == ' ')
		p++;
	h = hexnum(p, end);
	if (!h)
		return;
	p += h;
	if (end - p >= 10 && !memcmp(end - 10, " (inexact)", 10))
		end -= 10;
	if (end - p >= 4 && !memcmp(p, " : ", 3)) {
		/* " : SYM+0xOFF/0xLEN [MODULE]" */
		const char *sym = p + 3, *bra = NULL;
		for (q = end - 1; q > sym; q--)
			if (q[0] == '[' && q[-1] == ' ') {
				bra = q - 1;
				break;
			}
		if (!bra || end[-1] != ']')
			return;
		/* strip "+0xOFF/0xLEN" */
		for (q = bra - 1; q > sym && *q != '+'; q--)
			;
		if (q > sym) {
			const char *t = q + 1;
			size_t a = hexnum(t, bra), b;
			if (a && t + a < bra && t[a] == '/' &&
			    (b = hexnum(t + a + 1, bra)) && t + a + 1 + b == bra)
				bra = q;
		}
		if (bra == sym)
			return;
		*sp = sym;
		*np = (size_t)(bra - sym);
	} else if (end - p >= 4 && p[0] == ' ' && p[1] == '[' && end[-1] == ']') {
		/* " [MODULE+0xOFF]" */
		const char *mod = p + 2;
		for (q = end - 1; q > mod && q[-1] != '/'; q--)
			;
		if (q == end - 1)
			return;
		*sp = q;
		*np = (size_t)(end - 1 - q);
	}
}

static void push_frame(struct reader *r, const char *s, size_t n)
{
	if (r->nframes == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->fp = xrealloc(r->fp, r->cap * sizeof *r->fp);
		r->fl = xrealloc(r->fl, r->cap * sizeof *r->fl);
	}
	r->fp[r->nframes] = s;
	r->fl[r->nframes] = n;
	r->nframes++;
}

static size_t read_blocks(struct reader *r)
{
	size_t n, records = 0, i;
	const char *s;

	while ((s = next_line(r, &n))) {
		if (blank(s, n) || header_line(s, n)) {
			if (r->nframes)
				input_die(r->name, r->lineno,
					  "the stack that starts on line %zu has no count line"
					  " (a tab and the sample count)", r->block_line);
			continue;
		}
		if (is_count_line(s, n)) {
			const char *c = s;
			size_t cn = n;
			uint64_t count;
			while (cn && (*c == ' ' || *c == '\t'))
				c++, cn--;
			while (cn && (c[cn - 1] == ' ' || c[cn - 1] == '\t'))
				cn--;
			count = parse_count(r, c, cn);
			if (!r->nframes)
				input_die(r->name, r->lineno,
					  "count %" PRIu64 " without a stack above it", count);
			r->key.len = 0;
			for (i = r->nframes; i-- > 0;) {
				add_frame(&r->key, r->fp[i], r->fl[i]);
				if (i)
					r->key.s[r->key.len++] = FLAME_SEP;
			}
			flame_add(r->t, r->key.s, r->key.len, count);
			r->nframes = 0;
			records++;
			continue;
		}
		if (!r->nframes)
			r->block_line = r->lineno;
		ubacktrace_frame(&s, &n);
		push_frame(r, s, n);
	}
	if (r->nframes)
		input_die(r->name, r->lineno,
			  "the stack that starts on line %zu has no count line"
			  " (a tab and the sample count)", r->block_line);
	return records;
}

static size_t read_folded(struct reader *r)
{
	size_t n, records = 0;
	const char *s;

	while ((s = next_line(r, &n))) {
		const char *sp, *in, *end;
		size_t frame;
		uint64_t count;

		if (blank(s, n) || header_line(s, n))
			continue;
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		for (sp = s + n; sp > s && sp[-1] != ' ' && sp[-1] != '\t'; sp--)
			;
		if (sp == s)
			input_die(r->name, r->lineno,
				  "'%s' has no count (expected 'FRAME;FRAME;... COUNT'"
				  " or a stack of frames followed by a tab and a count)",
				  quote(s, n));
		count = parse_count(r, sp, (size_t)(s + n - sp));
		end = sp - 1;
		/* Unescape into r->key, frames separated by FLAME_SEP, control
		 * bytes escaped (add_frame). */
		r->key.len = frame = 0;
		buf_grow(&r->key, (size_t)(end - s) + 1);
		for (in = s; in < end; in++) {
			char c = *in;
			if (c == '\\' && in + 1 < end && (in[1] == ';' || in[1] == '\\')) {
				c = *++in;
			} else if (c == ';') {
				if (r->key.len == frame)
					input_die(r->name, r->lineno, "empty frame in stack '%s'",
						  quote(s, (size_t)(end - s)));
				c = FLAME_SEP;
				frame = r->key.len + 1;
			} else if (is_ctl((unsigned char)c)) {
				add_frame(&r->key, in, 1);
				buf_grow(&r->key, (size_t)(end - in) + 1);
				continue;
			}
			r->key.s[r->key.len++] = c;
		}
		if (r->key.len == frame)
			input_die(r->name, r->lineno, "empty frame in stack '%s'",
				  quote(s, (size_t)(end - s)));
		flame_add(r->t, r->key.s, r->key.len, count);
		records++;
	}
	return records;
}

/* Read the LEN bytes of TEXT (ending in '\n') as lines FIRST_LINE... of
 * NAME into T. */
static size_t read_text(struct flame_table *t, const char *name, size_t first_line,
			char *text, size_t len)
{
	struct reader r = {0};
	size_t records, n;
	int blocks = 0;
	const char *s;

	r.t = t;
	r.name = name;
	r.text = text;
	r.end = text + len;
	r.lineno = first_line ? first_line - 1 : 0;

	/* A count line anywhere means stack blocks; else folded lines. */
	for (r.pos = r.text; r.pos < r.end;) {
		char *e = memchr(r.pos, '\n', (size_t)(r.end - r.pos));
		s = r.pos;
		n = (size_t)(e - s);
		if (n && s[n - 1] == '\r')
			n--;
		r.pos = e + 1;
		if (is_count_line(s, n) && !blank(s, n)) {
			blocks = 1;
			break;
		}
	}
	r.pos = r.text;
	records = blocks ? read_blocks(&r) : read_folded(&r);
	if (!records) {
		error_set_location(r.name, 0);
		die("no stacks in input (%s)", len ? "only empty lines" : "empty file");
	}
	error_clear_location();
	buf_free(&r.key);
	free(r.fp);
	free(r.fl);
	return records;
}

size_t flame_read(struct flame_table *t, const char *path)
{
	size_t len, records;
	const char *name = "<stdin>";
	char *text;
	int fd = 0;

	if (strcmp(path, "-")) {
		fd = open(path, O_RDONLY);
		if (fd < 0)
			die("cannot open '%s': %s", path, strerror(errno));
		name = path;
	}
	text = slurp(fd, path, &len);
	if (fd)
		close(fd);
	records = read_text(t, name, 1, text, len);
	free(text);
	return records;
}

size_t flame_read_mem(struct flame_table *t, const char *name, size_t first_line,
		      const char *text, size_t len)
{
	struct buf b = {0};
	size_t records;

	buf_add(&b, text, len);
	if (b.len && b.s[b.len - 1] != '\n')
		buf_addc(&b, '\n');
	records = read_text(t, name, first_line, b.s ? b.s : (char *)"", b.len);
	buf_free(&b);
	return records;
}
