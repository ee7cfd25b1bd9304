/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/run.c - see bpf/run.h. */
#include "bpf/run.h"
#include "base/error.h"
#include "base/source.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "bpf/core.h"
#include "bpf/lj_alloc_user.h"
#include "bpf/lj_exectime_user.h"
#include "bpf/layout.h"
#include "bpf/lj_fio_user.h"
#include "bpf/lj_gcwalk_user.h"
#include "bpf/lj_offcpu_user.h"
#include "bpf/lj_stacks_user.h"
#include "bpf/lj_yield_user.h"
#include "bpf/resty_memory.h"
#include "bpf/sample_bt_user.h"
#include "dwarf/dwarf.h"

#include <errno.h>
#include <linux/capability.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NATIVE_TAG "# stap++ native: bpf "
/* (a native implementation without a kernel part: both runtimes run it) */
#define USER_TAG "# stap++ native: user "

/* An option an implementation honours: its range (or its words, the
 * value their index) and where it goes. */
struct opt {
	const char *name;
	long lo, hi;
	size_t off;		/* in struct ljb_opts */
	const char *const *words;	/* NULL-terminated, or NULL: a number */
	int text;		/* a string (a path): "" is none */
};

#define O(name, lo, hi) { #name, lo, hi, offsetof(struct ljb_opts, name), NULL, 0 }
#define W(name, w) { #name, 0, 0, offsetof(struct ljb_opts, name), w, 0 }
#define S(name) { #name, 0, 0, offsetof(struct ljb_opts, name), NULL, 1 }
static const char *const weights[] = { "us", "bytes", NULL };
static const char *const handlers[] = { "all", "content", "rewrite", "access", NULL };
#define BIG (1L << 30)

/* An option of the sample that an implementation does not honour, and
 * what it would have done (for the error). */
struct unhonoured {
	const char *name, *what;
};

struct impl {
	const char *name, *sample;
	int (*run)(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw);
	struct opt opts[12];
	struct unhonoured no[4];
};

static const struct impl impls[] = {
	{ "lj-lua-stacks", "samples/lj-lua-stacks.sxx", ljb_stacks_run,
	  { O(time, 0, BIG), O(depth, 1, LJB_MAX_FRAMES), O(lines, 0, 1), O(fullpath, 0, 1),
	    O(nojit, 0, 1), O(nointerp, 0, 1), O(limit, 0, BIG), O(hz, 1, 10000),
	    O(maxstacks, 1, 16384), O(samples, 0, BIG) },
	  { { "interval", "periodic profiles" },
	    { "maxsyms", "a cache of symbols: the kernel side has the whole table" } } },
	{ "lj-lua-bt", "samples/lj-lua-bt.sxx", ljb_bt_run,
	  { O(time, 1, BIG), O(depth, 1, LJB_MAX_FRAMES), O(lines, 0, 1), O(fullpath, 0, 1) },
	  { { "slots", "the stack slots (local variables)" } } },
	{ "lj-vm-states", "samples/lj-vm-states.sxx", ljb_states_run,
	  { O(time, 0, BIG) }, { { 0 } } },
	{ "lj-lua-off-cpu", "samples/lj-lua-off-cpu.sxx", ljb_offcpu_run,
	  { O(time, 0, BIG), O(min_us, 0, BIG), O(depth, 1, LJB_MAX_FRAMES), O(lines, 0, 1),
	    O(fullpath, 0, 1), O(limit, 0, BIG), O(maxstacks, 1, 16384) }, { { 0 } } },
	{ "lj-lua-fio", "samples/lj-lua-fio.sxx", ljb_fio_run,
	  { O(time, 0, BIG), O(depth, 1, LJB_MAX_FRAMES), O(lines, 0, 1), O(fullpath, 0, 1),
	    O(limit, 0, BIG), O(maxstacks, 1, 16384), W(weight, weights), O(files, 0, 1) },
	  { { 0 } } },
	{ "ngx-lua-yield", "samples/ngx-lua-yield.sxx", ljb_yield_run,
	  { O(time, 0, BIG), O(min_us, 0, BIG), O(depth, 1, LJB_MAX_FRAMES), O(lines, 0, 1),
	    O(fullpath, 0, 1), O(limit, 0, BIG), O(maxstacks, 1, 16384) }, { { 0 } } },
	{ "lj-lua-alloc", "samples/lj-lua-alloc.sxx", ljb_alloc_run,
	  { O(time, 0, BIG), O(rate, 2, BIG), O(depth, 1, LJB_MAX_FRAMES), O(on, 0, BIG),
	    O(period, 1, BIG), O(maxstacks, 1, 16384) }, { { 0 } } },
	{ "ngx-lua-exec-time", "samples/ngx-lua-exec-time.sxx", ljb_exectime_run,
	  { O(time, 0, BIG), W(handler, handlers) }, { { 0 } } },
	{ "sample-bt", "samples/sample-bt.sxx", ljb_samplebt_run,
	  { O(time, 0, BIG), O(samples, 0, BIG), O(limit, 0, BIG), O(kernel, 0, 1), O(user, 0, 1),
	    O(hz, 1, 10000) }, { { 0 } } },
	{ "lj-gc-objs", "samples/lj-gc-objs.sxx", ljb_gcobjs_run,
	  { O(time, 0, BIG), O(objs, 1, 100000), O(gap, 0, 1000000), O(top, 0, 64),
	    O(workers, 0, 1024), O(wait, 1, BIG) }, { { 0 } } },
	{ "resty-memory", "samples/resty-memory.sxx", ljb_memory_run,
	  { O(stacks, 0, 1), S(diff) }, { { 0 } } },
};

/* The NAME of the script's "# stap++ native: bpf NAME" line (malloc'd),
 * NULL if none; -1 when unreadable. */
static int native_name(const char *path, char **name)
{
	struct source *src = source_read(path);

	*name = NULL;
	if (!src)
		return -1;
	*name = source_header_tag(src, NATIVE_TAG);
	if (!*name)
		*name = source_header_tag(src, USER_TAG);
	source_free(src);
	return 0;
}

int bpf_native_user(const char *script)
{
	struct source *src;
	char *name;
	int user;

	if (!script || strcmp(script, "-") == 0 || access(script, R_OK) != 0 ||
	    !(src = source_read(script)))
		return 0;
	name = source_header_tag(src, USER_TAG);
	source_free(src);
	user = name != NULL;
	free(name);
	return user;
}

int bpf_check_privilege(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (geteuid() == 0)
		return 0;
	if (syscall(SYS_capget, &h, d) == 0 &&
	    (d[1].effective & (1u << (39 - 32))) && (d[1].effective & (1u << (38 - 32))))
		return 0;
	error("--runtime=bpf needs root, or the capabilities CAP_BPF and CAP_PERFMON "
	      "(running as uid %d)", (int)geteuid());
	hint("run stap++ with sudo, or give it the capabilities: "
	     "setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep stap++");
	return -1;
}

/* V as a number in [lo, hi] into *OUT; -1 when it is not one. */
static int parse_num(const char *v, long lo, long hi, long *out)
{
	char *end;

	if (!v)
		return -1;
	errno = 0;
	*out = strtol(v, &end, 10);
	return errno || end == v || *end || *out < lo || *out > hi ? -1 : 0;
}

/* The value --arg NAME was given (marked used), NULL if none. */
static const char *given(const struct bpf_run_opts *o, const char *name)
{
	const char *v = NULL;

	for (size_t i = 0; i < o->nargs; i++)
		if (strcmp(o->args[i].name, name) == 0) {
			o->args[i].used = 1;
			v = o->args[i].value;
		}
	return v;
}

/*
 * The options of implementation IM from the sample's own parameters (X,
 * from the expander) and --arg: each one IM honours from its --arg or the
 * sample's default, in its range; one it does not honour only at the
 * sample's default.  Returns 0, or EXIT_USAGE after error().
 */
static int options(const struct bpf_run_opts *o, const struct impl *im,
		   const struct expansion *x, struct ljb_opts *lo)
{
	for (size_t i = 0; i < x->nparams; i++) {
		const struct xparam *p = &x->params[i];
		const char *v = given(o, p->name);
		const struct opt *op = NULL;
		long n;

		for (const struct opt *q = im->opts; q->name && !op; q++)
			if (strcmp(q->name, p->name) == 0)
				op = q;
		if (op && op->text) {
			const char *w = v ? v : p->def;
			*(const char **)((char *)lo + op->off) = w && *w ? w : NULL;
			continue;
		}
		if (op && op->words) {
			const char *w = v ? v : p->def;
			for (n = 0; op->words[n] && (!w || strcmp(op->words[n], w) != 0); n++)
				;
			if (!op->words[n]) {
				/* (the SystemTap sample's words: "A, B or C") */
				struct buf sb = {0};
				for (size_t k = 0; op->words[k]; k++)
					buf_addf(&sb, "%s%s", k == 0 ? "" : op->words[k + 1] ? ", " : " or ",
						    op->words[k]);
				error("--arg %s must be %s, not '%s'", p->name, sb.s, w ? w : "");
				buf_free(&sb);
				return EXIT_USAGE;
			}
			*(long *)((char *)lo + op->off) = n;
			continue;
		}
		if (op) {
			if (!v && parse_num(p->def, op->lo, op->hi, &n) < 0) {
				/* (the sample's own default: a bug of the sample) */
				error("the default of --arg %s in '%s' ('%s') is not a number "
				      "from %ld to %ld", p->name, o->script,
				      p->def ? p->def : "none", op->lo, op->hi);
				return EXIT_FAIL;
			}
			if (v && parse_num(v, op->lo, op->hi, &n) < 0) {
				error("--arg %s must be a number from %ld to %ld, not '%s'",
				      p->name, op->lo, op->hi, v);
				hint("see docs/bpf.md for the options of --runtime=bpf");
				return EXIT_USAGE;
			}
			*(long *)((char *)lo + op->off) = n;
			continue;
		}
		if (!v || (p->def && strcmp(v, p->def) == 0))
			continue;
		const char *what = NULL;
		for (const struct unhonoured *u = im->no; u->name && !what; u++)
			if (strcmp(u->name, p->name) == 0)
				what = u->what;
		if (what)
			error("--arg %s (%s) is not supported with --runtime=bpf", p->name, what);
		else
			error("--arg %s is not supported with --runtime=bpf", p->name);
		hint("run the sample without --runtime=bpf for it; docs/bpf.md lists what "
		     "each sample honours on eBPF");
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < o->nargs; i++)
		if (!o->args[i].used)
			warning("--arg %s is not used by the script", o->args[i].name);
	return 0;
}

/* The sample's parameters ($^arg_* and their defaults), from the
 * expander.  0, or -1 after error(). */
static int scan_params(const struct bpf_run_opts *o, struct expansion *x)
{
	struct expand_opts eo = {0};
	struct source *src = source_read(o->script);

	memset(x, 0, sizeof(*x));
	if (!src)
		return -1;
	eo.scan_only = 1;
	if (o->incdirs) {
		eo.incdirs = o->incdirs->v;
		eo.nincdirs = o->incdirs->n;
	}
	return expand_script(&eo, src, x);
}

/* The target's executable and libraries, for their layouts. */
static struct dw_set *target_set(const struct target *t)
{
	struct dw_set *dw = dw_set_new();
	if (t->exec)
		dw_set_add(dw, t->exec);
	for (size_t i = 0; i < t->libs.n; i++)
		dw_set_add(dw, t->libs.v[i]);
	return dw;
}

static int run_impl(const struct bpf_run_opts *o, const struct impl *im,
		    const struct target *t)
{
	struct ljb_target tg = { im->name, o->pid, o->master, t->exec };
	struct ljb_opts lo = {0};
	struct expansion x;
	struct dw_set *dw;
	int rc;

	rc = scan_params(o, &x) < 0 ? EXIT_FAIL : options(o, im, &x, &lo);
	expansion_free(&x);
	if (rc)
		return rc;
	if (getenv("STAPXX_BPF_LAYOUT_DUMP")) {
		/* tests: the layouts of the target, without sampling */
		struct ljb_layout ly;
		dw = target_set(t);
		rc = ljb_layout_load(dw, t->exec, &ly);
		if (rc == 0)
			ljb_layout_dump(&ly);
		dw_set_free(dw);
		return rc < 0 ? EXIT_FAIL : 0;
	}
	if (!o->pid && !o->master) {
		error("%s reads a running process: give -x PID or --master PID",
		      im->run == ljb_memory_run ? "resty-memory" : "--runtime=bpf");
		return EXIT_USAGE;
	}
	dw = target_set(t);
	rc = im->run(&tg, &lo, dw);
	dw_set_free(dw);
	return rc;
}

int bpf_run(const struct bpf_run_opts *o, const struct target *t)
{
	const struct impl *im = NULL;
	char *name;

	if (!o->script || strcmp(o->script, "-") == 0) {
		error("--runtime=bpf runs a sample's native eBPF implementation: give the "
		      "sample's file");
		return EXIT_USAGE;
	}
	if (native_name(o->script, &name) < 0)
		return EXIT_FAIL;
	for (size_t i = 0; name && i < sizeof(impls) / sizeof(*impls); i++)
		if (strcmp(name, impls[i].name) == 0)
			im = &impls[i];
	if (!im) {
		if (name)
			error("'%s' names an unknown native implementation '%s'", o->script, name);
		else
			error("'%s' has no native eBPF implementation (--runtime=bpf)", o->script);
		for (size_t i = 0; i < sizeof(impls) / sizeof(*impls); i++)
			hint("samples with one: %s", impls[i].sample);
		hint("run it without --runtime=bpf (a SystemTap module); a sample declares one "
		     "with a header line '" NATIVE_TAG "NAME' (docs/bpf.md)");
		free(name);
		return EXIT_FAIL;
	}
	free(name);
	return run_impl(o, im, t);
}
