/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pprof - turn stack samples into a pprof profile (profile.proto, gzipped)
 * for go tool pprof, Pyroscope, Parca and other pprof readers.
 *
 * Reads what util/fold reads (lj-lua-stacks output, print_ubacktrace()
 * output, folded text) plus "# stap++" header lines (pprof_input.h).
 * The profile layout is in pprof_profile.h; options and the field mapping
 * in docs/pprof.md and --help.
 */
#include "pprof_input.h"
#include "pprof_profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: pprof [OPTIONS] [FILE...] > profile.pb.gz\n"
	"\n"
	"Turn stack samples into a pprof profile (gzipped profile.proto) for\n"
	"'go tool pprof', Pyroscope, Parca and other pprof readers.  Reads each\n"
	"FILE ('-' or none: standard input), all merged into one profile: the\n"
	"output of samples/lj-lua-stacks.sxx (or any stap script printing stacks\n"
	"the same way, print_ubacktrace() lines included) or folded lines, as\n"
	"util/fold reads them, plus '# stap++ KEY=VALUE...' header lines.\n"
	"\n"
	"Options:\n"
	"  -o, --output FILE   write the profile to FILE (standard output is\n"
	"                      refused when it is a terminal)\n"
	"  --type TYPE         what the counts are:\n"
	"                        cpu    samples (samples/count and cpu/nanoseconds)\n"
	"                        bytes  bytes of memory (space/bytes)\n"
	"                        us     microseconds off CPU or waiting\n"
	"                               (off_cpu/microseconds)\n"
	"                      default: the input's '# stap++ type=' header, else cpu\n"
	"  --hz N              samples per second for cpu: each sample is 1e9/N ns\n"
	"                      (default: the input's 'hz=' header, else 1000)\n"
	"  --time T            when sampling started: seconds since the Unix epoch\n"
	"                      (1795000000 or 1795000000.25) or RFC 3339\n"
	"                      (2026-11-23T03:50:45Z, 2026-11-23T04:50:45.5+01:00)\n"
	"  --duration SECS     how long sampling lasted (10 or 2.5)\n"
	"  --label KEY=VALUE   attach a string label to every sample (repeatable;\n"
	"                      'go tool pprof -tags' lists them); the input's\n"
	"                      'cgroup=' and 'container=' headers are labels too,\n"
	"                      unless --label gives that key\n"
	"  --split DIR         one profile per '# stap++ profile start=NS' block,\n"
	"                      written to DIR/START_NS.pb.gz\n"
	"  -h, --help          show this help\n"
	"  --version           show the version\n"
	"\n"
	"Each distinct stack is one sample, frames leaf first; each distinct frame\n"
	"one function named by the frame text; Lua frames carry their chunk as\n"
	"file name and their line number (test.lua:15, trace#1:test.lua:15).\n"
	"\n"
	"Exit status: 0 ok, 1 bad input or output (errors name FILE:LINE), 2 usage.\n";

struct cli {
	const char *output, *split;
	enum pprof_type type;
	uint64_t hz;
	int64_t time_ns, duration_ns;
	char **labels;
	size_t nlabels;
	char **inputs;
	size_t ninputs;
};

/* Decimal seconds ("12", "2.5") in S as nanoseconds; -1 if not that. */
static int64_t seconds_ns(const char *s)
{
	int64_t sec = 0, frac = 0, scale = 100000000;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (sec > (INT64_MAX / 1000000000 - 9) / 10)
			return -1;
		sec = sec * 10 + (*p - '0');
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			frac += scale * (*p - '0');
	}
	return *p || p[-1] == '.' ? -1 : sec * 1000000000 + frac;
}

/* --time: seconds since the epoch or RFC 3339; -1 if neither. */
static int64_t parse_time(const char *s)
{
	struct tm tm;
	const char *p;
	int64_t ns, frac = 0, scale = 100000000, off = 0;
	time_t t;

	if ((ns = seconds_ns(s)) >= 0)
		return ns;
	memset(&tm, 0, sizeof tm);
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return -1;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return -1;
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			frac += scale * (*p - '0');
	}
	if (*p == 'Z' && !p[1]) {
		off = 0;
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':' &&
		   p[1] >= '0' && p[1] <= '9' && p[2] >= '0' && p[2] <= '9' &&
		   p[4] >= '0' && p[4] <= '5' && p[5] >= '0' && p[5] <= '9') {
		off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 + ((p[4] - '0') * 10 + (p[5] - '0')) * 60;
		if (*p == '-')
			off = -off;
	} else {
		return -1;
	}
	t = timegm(&tm) - off;
	if (t < 0)
		return -1;
	return (int64_t)t * 1000000000 + frac;
}

/* The value of option NAME: "--name=V" or the next argument. */
static const char *option_value(char **argv, int *i, const char *name)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (a[n] == '=')
		return a + n + 1;
	if (!argv[*i + 1])
		usage_die("option '%s' needs a value", name);
	return argv[++*i];
}

static int is_option(const char *a, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(a, name, n) && (a[n] == '\0' || (a[n] == '=' && name[1] == '-'));
}

static void parse_args(struct cli *c, int argc, char **argv)
{
	int i, opts = 1;

	c->time_ns = c->duration_ns = -1;
	c->labels = xcalloc((size_t)argc, sizeof *c->labels);
	c->inputs = xcalloc((size_t)argc, sizeof *c->inputs);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!opts || a[0] != '-' || !a[1]) {
			c->inputs[c->ninputs++] = argv[i];
		} else if (!strcmp(a, "--")) {
			opts = 0;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			exit(0);
		} else if (!strcmp(a, "--version")) {
			printf("pprof (stap++) %s\n", STAPXX_VERSION);
			exit(0);
		} else if (is_option(a, "-o") || is_option(a, "--output")) {
			c->output = option_value(argv, &i, a[1] == 'o' ? "-o" : "--output");
		} else if (is_option(a, "--type")) {
			v = option_value(argv, &i, "--type");
			if (!(c->type = pprof_type_parse(v)))
				usage_die("--type '%s': expected cpu, bytes or us", v);
		} else if (is_option(a, "--hz")) {
			int64_t ns;
			v = option_value(argv, &i, "--hz");
			ns = seconds_ns(v);
			if (ns < 1000000000 || ns % 1000000000 || ns / 1000000000 > 1000000000)
				usage_die("--hz '%s': expected a whole number from 1 to 1000000000", v);
			c->hz = (uint64_t)(ns / 1000000000);
		} else if (is_option(a, "--time")) {
			v = option_value(argv, &i, "--time");
			if ((c->time_ns = parse_time(v)) < 0)
				usage_die("--time '%s': expected seconds since the epoch"
						" or RFC 3339 (2026-11-23T03:50:45Z)", v);
		} else if (is_option(a, "--duration")) {
			v = option_value(argv, &i, "--duration");
			if ((c->duration_ns = seconds_ns(v)) < 0)
				usage_die("--duration '%s': expected seconds (10 or 2.5)", v);
		} else if (is_option(a, "--label")) {
			v = option_value(argv, &i, "--label");
			if (!strchr(v, '=') || *v == '=')
				usage_die("--label '%s': expected KEY=VALUE", v);
			c->labels[c->nlabels++] = (char *)v;
		} else if (is_option(a, "--split")) {
			c->split = option_value(argv, &i, "--split");
		} else {
			usage_die("unknown option '%s'", a);
		}
	}
	if (c->split && (c->output || c->time_ns >= 0 || c->duration_ns >= 0))
		usage_die("--split takes times from the '# stap++ profile' lines"
				" and writes DIR/START_NS.pb.gz: no -o, --time or --duration");
	if (!c->ninputs)
		c->inputs[c->ninputs++] = "-";
}

/* Whether LABELS (N "KEY=VALUE") has one of KEY. */
static int has_key(char **labels, size_t n, const char *key)
{
	size_t k = strlen(key);

	for (size_t i = 0; i < n; i++)
		if (!strncmp(labels[i], key, k) && labels[i][k] == '=')
			return 1;
	return 0;
}

/* The options for a profile: the command line's, else the input's.  The
 * labels: --label's, then the input's headers' (cgroup=, container=)
 * whose key --label does not give; free o->labels[nlabels0...] and
 * o->labels with free_options(). */
static void options(struct pprof_options *o, const struct cli *c,
		    const struct pprof_input *in)
{
	o->type = c->type ? c->type : in->type ? in->type : PPROF_CPU;
	o->hz = c->hz ? c->hz : in->hz ? in->hz : 1000;
	o->labels = xcalloc(c->nlabels + PPROF_NLABELS + 1, sizeof *o->labels);
	memcpy(o->labels, c->labels, c->nlabels * sizeof *o->labels);
	o->nlabels = c->nlabels;
	for (int k = 0; k < PPROF_NLABELS; k++)
		if (in->label[k] && !has_key(c->labels, c->nlabels, pprof_label_keys[k]))
			o->labels[o->nlabels++] = xasprintf("%s=%s", pprof_label_keys[k], in->label[k]);
	o->time_ns = c->time_ns >= 0 ? c->time_ns : in->blocks[0].start_ns;
	o->duration_ns = c->duration_ns >= 0 ? c->duration_ns : in->blocks[0].duration_ns;
}

static void free_options(struct pprof_options *o, const struct cli *c)
{
	for (size_t i = c->nlabels; i < o->nlabels; i++)
		free(o->labels[i]);
	free(o->labels);
}

static void write_profile(const struct flame_table *t, const struct pprof_options *o,
			  const char *path)
{
	FILE *out = stdout;

	if (path) {
		out = fopen(path, "wb");
		if (!out)
			die("cannot create '%s': %s", path, strerror(errno));
	}
	pprof_write(t, o, out, path ? path : "standard output");
	if (path && fclose(out))
		die("cannot write '%s': %s", path, strerror(errno));
}

/* --split: write block B to DIR/START_NS.pb.gz. */
static void write_block(const struct pprof_input *in, struct pprof_block *b, void *ctx)
{
	const struct cli *c = ctx;
	struct pprof_options o = {0};
	char *path;

	if (in->nblocks == 1 && mkdir(c->split, 0777) && errno != EEXIST)
		die("cannot create '%s': %s", c->split, strerror(errno));
	options(&o, c, in);
	o.time_ns = b->start_ns;
	o.duration_ns = b->duration_ns;
	path = xasprintf("%s/%" PRId64 ".pb.gz", c->split, b->start_ns);
	write_profile(&b->t, &o, path);
	free_options(&o, c);
	free(path);
}

int main(int argc, char **argv)
{
	struct cli c = {0};
	struct pprof_input in = {0};
	struct pprof_options o = {0};
	size_t i;

	set_program_name("pprof");
	parse_args(&c, argc, argv);
	if (!c.output && !c.split && isatty(1)) {
		error("refusing to write a binary profile to a terminal");
		hint("redirect standard output (> profile.pb.gz) or use -o FILE");
		free(c.labels);
		free(c.inputs);
		return EXIT_USAGE;
	}
	for (i = 0; i < c.ninputs; i++)
		pprof_read(&in, c.inputs[i], c.split ? write_block : NULL, &c);
	if (!c.split) {
		options(&o, &c, &in);
		write_profile(&in.blocks[0].t, &o, c.output);
		free_options(&o, &c);
	}
	pprof_input_free(&in);
	free(c.labels);
	free(c.inputs);
	return 0;
}
