/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pprof_profile.c - see pprof_profile.h. */
#include "pprof_profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;

/* ---- frame sources ---------------------------------------------------- */

static int all_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return n > 0 && n <= 9;
}

static int identifier(const char *s, size_t n)
{
	size_t i;

	if (!n || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

static int prefixed(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && !memcmp(s, prefix, k);
}

int pprof_frame_source(const char *frame, size_t len, const char **file,
		       size_t *file_len, int64_t *line)
{
	const char *s = frame, *colon;
	size_t n = len, k;

	*line = 0;
	if (prefixed(s, n, "C:") || prefixed(s, n, "builtin:") || prefixed(s, n, "builtin#"))
		return 0;
	if (prefixed(s, n, "trace#")) {
		/* trace#N:CHUNK:LINE (or a bare trace#N when the trace is gone) */
		for (k = 6; k < n && s[k] >= '0' && s[k] <= '9'; k++)
			;
		if (k == 6 || k == n || s[k] != ':')
			return 0;
		s += k + 1;
		n -= k + 1;
	}
	colon = memrchr(s, ':', n);
	if (!colon || colon == s || colon[-1] == ':')
		return 0;
	k = (size_t)(colon - s);
	if (all_digits(colon + 1, n - k - 1))
		*line = strtoll(colon + 1, NULL, 10);
	else if (s != frame || !identifier(colon + 1, n - k - 1))
		return 0;	/* a trace frame needs its line */
	if (s[0] == '@' && k > 1)
		s++, k--;
	*file = s;
	*file_len = k;
	return 1;
}

/* ---- interning --------------------------------------------------------- */

/* Distinct byte strings, each with an index in order of first sight. */
struct intern {
	char **v;		/* NUL-terminated copies (owned) */
	size_t n, cap;
	size_t *slots;		/* 1 + index, 0 = empty */
	size_t nslots;
};

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return h;
}

static size_t *intern_slot(const struct intern *in, const char *s, size_t n)
{
	size_t j = fnv(s, n) & (in->nslots - 1);

	for (;; j = (j + 1) & (in->nslots - 1)) {
		size_t *sl = &in->slots[j];
		if (!*sl || (!strncmp(in->v[*sl - 1], s, n) && !in->v[*sl - 1][n]))
			return sl;
	}
}

/* The index of S (N bytes), added if new. */
static size_t intern(struct intern *in, const char *s, size_t n)
{
	size_t *sl, i;

	if (2 * (in->n + 1) > in->nslots) {
		size_t old = in->nslots;
		in->nslots = old ? 2 * old : 256;
		free(in->slots);
		in->slots = xcalloc(in->nslots, sizeof *in->slots);
		for (i = 0; i < in->n; i++)
			*intern_slot(in, in->v[i], strlen(in->v[i])) = i + 1;
	}
	sl = intern_slot(in, s, n);
	if (*sl)
		return *sl - 1;
	if (in->n == in->cap) {
		in->cap = in->cap ? 2 * in->cap : 256;
		in->v = xrealloc(in->v, in->cap * sizeof *in->v);
	}
	in->v[in->n] = xstrndup(s, n);
	*sl = ++in->n;
	return in->n - 1;
}

static int64_t str(struct intern *strings, const char *s)
{
	return (int64_t)intern(strings, s, strlen(s));
}

static void intern_free(struct intern *in)
{
	size_t i;

	for (i = 0; i < in->n; i++)
		free(in->v[i]);
	free(in->v);
	free(in->slots);
}

/* ---- building ---------------------------------------------------------- */

static ValueType *value_type(struct intern *strings, const char *type, const char *unit)
{
	ValueType *v = xmalloc(sizeof *v);

	perftools__profiles__value_type__init(v);
	v->type = str(strings, type);
	v->unit = str(strings, unit);
	return v;
}

/* Sample types, period type and period of O. */
static void describe(Profile *p, struct intern *strings, const struct pprof_options *o)
{
	p->sample_type = xcalloc(2, sizeof *p->sample_type);
	switch (o->type) {
	case PPROF_CPU:
		p->sample_type[p->n_sample_type++] = value_type(strings, "samples", "count");
		p->sample_type[p->n_sample_type++] = value_type(strings, "cpu", "nanoseconds");
		p->period_type = value_type(strings, "cpu", "nanoseconds");
		p->period = (int64_t)(1000000000 / o->hz);
		p->default_sample_type = str(strings, "cpu");
		break;
	case PPROF_BYTES:
		p->sample_type[p->n_sample_type++] = value_type(strings, "space", "bytes");
		p->period_type = value_type(strings, "space", "bytes");
		p->period = 1;
		break;
	default:
		p->sample_type[p->n_sample_type++] = value_type(strings, "off_cpu", "microseconds");
		p->period_type = value_type(strings, "off_cpu", "microseconds");
		p->period = 1;
		break;
	}
}

/* The Location/Function of FRAME (N bytes), created on first sight; ids
 * are the frame's index + 1. */
static uint64_t frame_id(Profile *p, struct intern *frames, struct intern *strings,
			 const char *frame, size_t n)
{
	size_t i = intern(frames, frame, n);
	const char *file;
	size_t file_len;
	int64_t line;
	Function *f;
	Location *l;
	Line *ln;

	if (i < p->n_function)
		return i + 1;
	if (i % 256 == 0) {
		p->function = xrealloc(p->function, (i + 256) * sizeof *p->function);
		p->location = xrealloc(p->location, (i + 256) * sizeof *p->location);
	}
	f = xmalloc(sizeof *f);
	perftools__profiles__function__init(f);
	f->id = i + 1;
	f->name = f->system_name = str(strings, frames->v[i]);
	if (pprof_frame_source(frames->v[i], n, &file, &file_len, &line))
		f->filename = (int64_t)intern(strings, file, file_len);
	p->function[p->n_function++] = f;

	l = xmalloc(sizeof *l);
	perftools__profiles__location__init(l);
	ln = xmalloc(sizeof *ln);
	perftools__profiles__line__init(ln);
	ln->function_id = i + 1;
	ln->line = line;
	l->id = i + 1;
	l->mapping_id = 1;
	l->n_line = 1;
	l->line = xmalloc(sizeof *l->line);
	l->line[0] = ln;
	p->location[p->n_location++] = l;
	return i + 1;
}

static int64_t value(uint64_t count, uint64_t scale)
{
	if (count > (uint64_t)INT64_MAX / scale)
		die("a count of %" PRIu64 " (x %" PRIu64 ") does not fit a pprof value",
		    count, scale);
	return (int64_t)(count * scale);
}

static Sample *sample(Profile *p, struct intern *frames, struct intern *strings,
		      const struct flame_stack *s, Label **labels, size_t nlabels)
{
	Sample *x = xmalloc(sizeof *x);
	const char *end = s->key + s->len, *f, *q;
	size_t nframes = 1, i;

	perftools__profiles__sample__init(x);
	for (q = s->key; q < end; q++)
		nframes += *q == FLAME_SEP;
	x->location_id = xmalloc(nframes * sizeof *x->location_id);
	/* The key is root first; location_id is leaf first. */
	for (f = s->key, i = nframes; f < end; f = q + 1) {
		q = memchr(f, FLAME_SEP, (size_t)(end - f));
		if (!q)
			q = end;
		x->location_id[--i] = frame_id(p, frames, strings, f, (size_t)(q - f));
	}
	x->n_location_id = nframes;
	x->value = xmalloc(2 * sizeof *x->value);
	x->value[x->n_value++] = value(s->count, 1);
	if (p->n_sample_type == 2)
		x->value[x->n_value++] = value(s->count, (uint64_t)p->period);
	x->label = labels;
	x->n_label = nlabels;
	return x;
}

/* One mapping for every location: the frames are names, already
 * symbolized, so readers must not look for a binary to symbolize them. */
static Mapping *lua_mapping(struct intern *strings)
{
	Mapping *m = xmalloc(sizeof *m);

	perftools__profiles__mapping__init(m);
	m->id = 1;
	m->filename = str(strings, "[lua]");
	m->has_functions = m->has_filenames = m->has_line_numbers = 1;
	return m;
}

static Label **make_labels(struct intern *strings, const struct pprof_options *o)
{
	Label **v = xcalloc(o->nlabels + 1, sizeof *v);
	size_t i;

	for (i = 0; i < o->nlabels; i++) {
		const char *kv = o->labels[i], *eq = strchr(kv, '=');
		v[i] = xmalloc(sizeof *v[i]);
		perftools__profiles__label__init(v[i]);
		v[i]->key = (int64_t)intern(strings, kv, (size_t)(eq - kv));
		v[i]->str = str(strings, eq + 1);
	}
	return v;
}

/* ---- writing ----------------------------------------------------------- */

static void write_gzip(const uint8_t *data, size_t len, FILE *out, const char *what)
{
	unsigned char buf[1 << 16];
	z_stream z;
	int rc;

	memset(&z, 0, sizeof z);
	/* windowBits 15 + 16: a gzip header and trailer around the deflate data. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		die("cannot start gzip compression");
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;	/* profiles stay far below 4 GiB */
	do {
		z.next_out = buf;
		z.avail_out = sizeof buf;
		rc = deflate(&z, Z_FINISH);
		if (rc == Z_STREAM_ERROR)
			die("gzip compression failed");
		fwrite(buf, 1, sizeof buf - z.avail_out, out);
	} while (rc != Z_STREAM_END);
	deflateEnd(&z);
	if (fflush(out) || ferror(out))
		die("cannot write %s: %s", what, strerror(errno ? errno : EIO));
}

void pprof_write(const struct flame_table *t, const struct pprof_options *o,
		 FILE *out, const char *what)
{
	Profile *p = xmalloc(sizeof *p);
	struct intern strings = {0}, frames = {0};
	struct flame_stack **v;
	Label **labels;
	uint8_t *data;
	size_t n, i, len;

	perftools__profiles__profile__init(p);
	str(&strings, "");	/* string_table[0] is always "" */
	describe(p, &strings, o);
	p->mapping = xmalloc(sizeof *p->mapping);
	p->mapping[p->n_mapping++] = lua_mapping(&strings);
	labels = make_labels(&strings, o);
	v = flame_sorted(t, &n);
	p->sample = xmalloc((n ? n : 1) * sizeof *p->sample);
	for (i = 0; i < n; i++)
		p->sample[p->n_sample++] = sample(p, &frames, &strings, v[i], labels, o->nlabels);
	if (o->time_ns >= 0)
		p->time_nanos = o->time_ns;
	if (o->duration_ns >= 0)
		p->duration_nanos = o->duration_ns;
	p->string_table = strings.v;
	p->n_string_table = strings.n;

	len = protobuf_c_message_get_packed_size(&p->base);
	data = xmalloc(len ? len : 1);
	protobuf_c_message_pack(&p->base, data);
	write_gzip(data, len, out, what);
	free(data);

	/* Labels are shared by every sample: free them once, not with the
	 * samples. */
	for (i = 0; i < o->nlabels; i++)
		free(labels[i]);
	free(labels);
	for (i = 0; i < p->n_sample; i++) {
		p->sample[i]->label = NULL;
		p->sample[i]->n_label = 0;
	}
	p->string_table = NULL;
	p->n_string_table = 0;
	protobuf_c_message_free_unpacked(&p->base, NULL);	/* frees p too */
	intern_free(&strings);
	intern_free(&frames);
	free(v);
}
