/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/run.c - see bpf/run.h. */
#include "bpf/run.h"
#include "bpf/layout.h"
#include "base/error.h"
#include "base/wrapper.h"
#include "bpf/lj_stacks.h"
#include "bpf/lj_stacks_user.h"
#include "dwarf/dwarf.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NATIVE_TAG "# stap++ native: bpf "

/* The samples that have a native implementation (for the error). */
static const char *const native_samples[] = { "samples/lj-lua-stacks.sxx" };

/* The NAME of the script's "# stap++ native: bpf NAME" line (malloc'd),
 * NULL if none; -1 when unreadable. */
static int native_name(const char *path, char **name)
{
	char line[512];
	FILE *f = fopen(path, "re");

	*name = NULL;
	if (!f)
		return error("cannot open '%s': %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, NATIVE_TAG, strlen(NATIVE_TAG)) == 0) {
			char *s = line + strlen(NATIVE_TAG);
			s[strcspn(s, " \t\r\n")] = 0;
			*name = xstrdup(s);
			break;
		}
		if (line[0] != '#' && line[0] != '\n')
			break;	/* only the header comment counts */
	}
	fclose(f);
	return 0;
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

/* --arg NAME as a number (DEF when absent); marks it used.  -1 after
 * error() when not a number in [lo, hi]. */
static int num_arg(const struct bpf_run_opts *o, const char *name, long def,
		   long lo, long hi, long *out)
{
	*out = def;
	for (size_t i = 0; i < o->nargs; i++) {
		char *end;
		if (strcmp(o->args[i].name, name) != 0)
			continue;
		o->args[i].used = 1;
		errno = 0;
		*out = strtol(o->args[i].value, &end, 10);
		if (errno || end == o->args[i].value || *end || *out < lo || *out > hi)
			return error("--arg %s must be a number from %ld to %ld, not '%s'",
				     name, lo, hi, o->args[i].value);
	}
	return 0;
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

static int lj_stacks(const struct bpf_run_opts *o, const struct target *t)
{
	struct ljb_opts lo = { .pid = o->pid, .master = o->master, .exec = t->exec };
	long lines, fullpath, nojit, nointerp, interval, maxstacks;
	struct dw_set *dw;
	int rc;

	if (num_arg(o, "time", 0, 0, 1L << 30, &lo.time) < 0 ||
	    num_arg(o, "depth", 100, 1, LJB_MAX_FRAMES, &lo.depth) < 0 ||
	    num_arg(o, "lines", 0, 0, 1, &lines) < 0 ||
	    num_arg(o, "fullpath", 0, 0, 1, &fullpath) < 0 ||
	    num_arg(o, "nojit", 0, 0, 1, &nojit) < 0 ||
	    num_arg(o, "nointerp", 0, 0, 1, &nointerp) < 0 ||
	    num_arg(o, "limit", 0, 0, 1L << 30, &lo.limit) < 0 ||
	    num_arg(o, "hz", 1000, 1, 10000, &lo.hz) < 0 ||
	    num_arg(o, "maxstacks", 16384, 1, 16384, &maxstacks) < 0 ||
	    num_arg(o, "interval", 0, 0, 1L << 30, &interval) < 0) {
		hint("see docs/bpf.md for the options of --runtime=bpf");
		return EXIT_USAGE;
	}
	if (interval) {
		error("--arg interval (periodic profiles) is not supported with --runtime=bpf");
		hint("run the sample without --runtime=bpf for periodic profiles");
		return EXIT_USAGE;
	}
	lo.lines = lines;
	lo.fullpath = fullpath;
	lo.nojit = nojit;
	lo.nointerp = nointerp;
	lo.maxstacks = maxstacks;
	for (size_t i = 0; i < o->nargs; i++)
		if (!o->args[i].used)
			warning("--arg %s is not used by the script", o->args[i].name);
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
		error("--runtime=bpf samples a running process: give -x PID or --master PID");
		return EXIT_USAGE;
	}
	dw = target_set(t);
	rc = ljb_run(&lo, dw);
	dw_set_free(dw);
	return rc;
}

int bpf_run(const struct bpf_run_opts *o, const struct target *t)
{
	char *name;
	int rc;

	if (!o->script || strcmp(o->script, "-") == 0) {
		error("--runtime=bpf runs a sample's native eBPF implementation: give the "
		      "sample's file");
		return EXIT_USAGE;
	}
	if (native_name(o->script, &name) < 0)
		return EXIT_FAIL;
	if (!name || strcmp(name, "lj-lua-stacks") != 0) {
		if (name)
			error("'%s' names an unknown native implementation '%s'", o->script, name);
		else
			error("'%s' has no native eBPF implementation (--runtime=bpf)", o->script);
		for (size_t i = 0; i < sizeof(native_samples) / sizeof(*native_samples); i++)
			hint("samples with one: %s", native_samples[i]);
		hint("run it without --runtime=bpf (a SystemTap module); a sample declares one "
		     "with a header line '" NATIVE_TAG "NAME' (docs/bpf.md)");
		free(name);
		return EXIT_FAIL;
	}
	free(name);
	rc = lj_stacks(o, t);
	return rc;
}
