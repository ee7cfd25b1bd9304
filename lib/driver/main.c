/* SPDX-License-Identifier: GPL-2.0-or-later */
/* main.c - stap++: the command line.  The run itself is in run.c. */
#include "base/error.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "bpf/run.h"
#include "driver/cache.h"
#include "driver/run.h"
#include "driver/stap.h"
#include "dwarf/dwarf.h"
#include "expand/expand.h"
#include "expand/use.h"
#include "target/proc.h"
#include "target/target.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
"usage: stap++ [OPTIONS] SCRIPT.sxx [SCRIPT-ARGS...] [-- STAP-OPTIONS...]\n"
"       stap++ [OPTIONS] - < SCRIPT.sxx\n"
"       stap++ [OPTIONS] -e 'SCRIPT' [SCRIPT-ARGS...]\n"
"\n"
"Expand a stap++ (.sxx) script against a target's binaries and run it with\n"
"SystemTap.  Macros: @use, $^arg_NAME [:default(V)], $^exec_path,\n"
"$^libNAME_path, $^target, $^pid_ok, @pfunc(F), $*NAME := EXPR, $*NAME,\n"
"@sizeof, @offsetof, @has_member, @has_type, @enum, @var (see README.md).\n"
"\n"
"Target (the binaries whose DWARF and paths the script uses):\n"
"  -x PID              trace process PID ($^pid_ok: pid() == target())\n"
"  --master PID        trace the children of master process PID (nginx\n"
"                      workers), decided at run time: ppid() == MASTER,\n"
"                      so workers started after a reload are traced too;\n"
"                      the PID goes to the module global stapxx_master\n"
"                      (stap -G), not to stap -x, which would hide the\n"
"                      workers that already run from SystemTap\n"
"  --master -          with --exec or --sample-pid: build a master-mode\n"
"                      module without a running process; run it with\n"
"                      'staprun MOD.ko stapxx_master=MASTER_PID'\n"
"                      (without it: processes named like the exec)\n"
"  --exec PATH         the executable (no process needed; libraries from\n"
"                      its dynamic section, via ldd).  Alone, the module\n"
"                      traces the process given to 'staprun -x PID' at run\n"
"                      time, the children of the master given as\n"
"                      'staprun MOD.ko stapxx_master=PID', or else every\n"
"                      process named like PATH\n"
"  --sample-pid PID    take executable and libraries from PID, like --exec\n"
"                      (a process in a container: from its root, for a\n"
"                      module that runs where the container runs)\n"
"  -c CMD              run CMD and trace it (stap -c); exec = its 1st word\n"
"\n"
"Script:\n"
"  -e SCRIPT           script text instead of a file\n"
"  -I DIR              look for @use modules in DIR first (repeatable):\n"
"                      '@use a.b' loads DIR/a/b.sxx; then ., ./tapset,\n"
"                      the tapset dir next to stap++ (or installed under\n"
"                      its prefix, BIN/../share/stap++/tapset), and\n"
"                      " STAPXX_DATADIR "/tapset\n"
"  --arg NAME=VALUE    set $^arg_NAME (repeatable)\n"
"  --args              list the script's arguments and defaults, then exit\n"
"  --dump-src          print the expanded script and modules, then exit\n"
"\n"
"SystemTap:\n"
"  -D NAME=VALUE       define for the module (defaults: MAXACTION=100000,\n"
"                      MAXMAPENTRIES=5000, MAXBACKTRACE=200,\n"
"                      MAXSTRINGLEN=2048: a whole Lua stack is one string,\n"
"                      MAXSKIPPED=100000: long sessions)\n"
"  -d PATH             also load symbols/DWARF of PATH (the executable and\n"
"                      its libraries are added for you)\n"
"  -p N                stop after pass N (-p4: build the module only)\n"
"  -m NAME             module name\n"
"  -r KREL|DIR         kernel release, or kernel build tree (a path with '/',\n"
"                      e.g. build/kernel/KREL from make deps)\n"
"  -R DIR              runtime dir (disables the automatic runtime fix)\n"
"  --no-runtime-fix    use the installed runtime as is\n"
"  --runtime=bpf       run the sample's native eBPF implementation on this\n"
"                      kernel instead of a module (docs/bpf.md)\n"
"  -k                  keep temp files  -o FILE       output file\n"
"  -B NAME=VALUE       kbuild option    --skip-badvars\n"
"  -v                  more messages (repeatable; passed to stap too)\n"
"  -- ARGS...          pass ARGS to stap as they are\n"
"\n"
"  -h, --help          this help        -V, --version\n"
"\n"
"Exit status: 0 ok, 1 failure, 2 usage error; when stap runs, stap's.\n"
"Environment: STAPXX_STAP (stap binary to run, default 'stap'), TMPDIR,\n"
"STAPXX_LAYOUTS (the layout database's folder, layouts/README.md).\n"
"\n"
"Examples:\n"
"  stap++ samples/lj-lua-stacks.sxx -x 12345 --arg time=10 > a.bt\n"
"  stap++ samples/lj-lua-stacks.sxx --master $(cat nginx.pid)\n"
"  stap++ samples/lj-lua-stacks.sxx --exec /usr/bin/luajit --args\n"
"  stap++ samples/lj-lua-stacks.sxx --exec build/nginx/sbin/nginx \\\n"
"         -p4 -r 6.1.0-56-amd64 -m ljstacks     # then: staprun -x PID ljstacks.ko\n"
"  stap++ samples/lj-lua-stacks.sxx --exec build/nginx/sbin/nginx --master - \\\n"
"         -p4 -m ljmaster       # then: staprun ljmaster.ko stapxx_master=MASTER\n"
"  stap++ -e 'probe @pfunc(main) { println($^exec_path) }' -c /bin/true\n";

/* The command line: the target options, -I dirs, and what the run
 * needs (see run.h). */
struct options {
	const char *exec;		/* --exec */
	const char *master;		/* --master */
	pid_t pid, sample_pid;
	int bpf;			/* --runtime=bpf */
	struct strv incdirs;
	struct run_opts run;
};

static void add_arg(struct options *o, const char *spec)
{
	const char *eq = strchr(spec, '=');
	size_t n = eq ? (size_t)(eq - spec) : 0;

	if (!eq || n == 0)
		usage_die("--arg wants NAME=VALUE, not '%s'", spec);
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)spec[i]) || spec[i] == '_'))
			usage_die("invalid argument name '%.*s' in --arg",
				  (int)n, spec);
	for (size_t i = 0; i < o->run.nargs; i++)
		if (strlen(o->run.args[i].name) == n &&
		    strncmp(o->run.args[i].name, spec, n) == 0) {
			/* the last one wins, like repeated options usually do */
			o->run.args[i].value = eq + 1;
			return;
		}
	o->run.args = xrealloc(o->run.args,
			       (o->run.nargs + 1) * sizeof(*o->run.args));
	o->run.args[o->run.nargs].name = xstrndup(spec, n);
	o->run.args[o->run.nargs].value = eq + 1;
	o->run.args[o->run.nargs].used = 0;
	o->run.nargs++;
}

static void check_define(const char *d)
{
	size_t n = strcspn(d, "=");

	if (n == 0 || isdigit((unsigned char)d[0]))
		usage_die("-D wants NAME=VALUE, not '%s'", d);
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)d[i]) || d[i] == '_'))
			usage_die("-D wants NAME=VALUE, not '%s'", d);
}

/* Option ids: a short option's id is its letter, long-only options count
 * from 256.  longopts names the long options (a short-only option has no
 * entry); short_with_arg and short_flags list the short ones. */
enum {
	O_X = 'x', O_E = 'e', O_I = 'I', O_D = 'D', O_d = 'd', O_C = 'c',
	O_P = 'p', O_M = 'm', O_R = 'r', O_RT = 'R', O_O = 'o', O_B = 'B',
	O_V = 'v', O_K = 'k', O_H = 'h', O_VER = 'V',
	O_MASTER = 256, O_EXEC, O_SAMPLE, O_ARG, O_ARGS, O_DUMP, O_SKIP,
	O_NOFIX, O_HELP, O_VERSION, O_RUNTIME,
};

static const struct optdef {
	const char *name;	/* "--name" or NULL */
	int id;
	int has_arg;
} longopts[] = {
	{ "master", O_MASTER, 1 }, { "exec", O_EXEC, 1 },
	{ "sample-pid", O_SAMPLE, 1 }, { "arg", O_ARG, 1 },
	{ "args", O_ARGS, 0 }, { "dump-src", O_DUMP, 0 },
	{ "skip-badvars", O_SKIP, 0 }, { "no-runtime-fix", O_NOFIX, 0 },
	{ "help", O_HELP, 0 }, { "version", O_VERSION, 0 },
	{ "runtime", O_RUNTIME, 1 },
};
static const char short_with_arg[] = "xeIDdcpmrRoB";
static const char short_flags[] = "vkhV";

static void apply(struct options *o, int id, const char *val, const char *spelled)
{
	switch (id) {
	case O_X:
		if (parse_pid("-x", val, &o->pid) < 0)
			exit(EXIT_USAGE);
		break;
	case O_MASTER: o->master = val; break;
	case O_EXEC: o->exec = val; break;
	case O_SAMPLE:
		if (parse_pid("--sample-pid", val, &o->sample_pid) < 0)
			exit(EXIT_USAGE);
		break;
	case O_E: o->run.script_text = val; break;
	case O_I: strv_add(&o->incdirs, val); break;
	case O_D: check_define(val); strv_add(&o->run.stap.defines, val); break;
	case O_d: strv_add(&o->run.dextra, val); break;
	case O_C: o->run.stap.cmd = val; break;
	case O_P:
		if (!(val[0] >= '1' && val[0] <= '5' && val[1] == '\0'))
			usage_die("-p wants a pass number 1-5, not '%s'", val);
		o->run.stap.pass = val;
		break;
	case O_M: o->run.stap.module = val; break;
	case O_R: o->run.stap.krelease = val; break;
	case O_RT: o->run.stap.runtime = val; break;
	case O_O: o->run.stap.outfile = val; break;
	case O_B: strv_add(&o->run.stap.kbuild, val); break;
	case O_ARG: add_arg(o, val); break;
	case O_ARGS: o->run.list_args = 1; break;
	case O_DUMP: o->run.dump_src = 1; break;
	case O_SKIP: o->run.stap.skip_badvars = 1; break;
	case O_NOFIX: o->run.no_runtime_fix = 1; break;
	case O_RUNTIME:
		if (strcmp(val, "bpf") != 0 && strcmp(val, "kernel") != 0)
			usage_die("--runtime must be kernel or bpf, not '%s'", val);
		o->bpf = strcmp(val, "bpf") == 0;
		break;
	case O_V: o->run.stap.verbose++; verbosity++; break;
	case O_K: o->run.stap.keep = 1; break;
	case O_H: case O_HELP:
		fputs(usage_text, stdout);
		exit(0);
	case O_VER: case O_VERSION:
		printf("stap++ %s\n", STAPXX_VERSION);
		exit(0);
	default:
		usage_die("unknown option '%s'", spelled);
	}
}

static void parse_options(struct options *o, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			for (i++; i < argc; i++)
				strv_add(&o->run.stap.extra, argv[i]);
			break;
		}
		if (strncmp(a, "--", 2) == 0) {
			const char *eq = strchr(a, '=');
			size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			const struct optdef *d = NULL;
			for (size_t k = 0; k < sizeof(longopts) / sizeof(*longopts); k++)
				if (strlen(longopts[k].name) == n &&
				    strncmp(longopts[k].name, a + 2, n) == 0)
					d = &longopts[k];
			if (!d)
				usage_die("unknown option '%.*s'", (int)n + 2, a);
			if (!d->has_arg && eq)
				usage_die("option '--%s' takes no value", d->name);
			const char *val = NULL;
			if (d->has_arg) {
				if (eq)
					val = eq + 1;
				else if (i + 1 < argc)
					val = argv[++i];
				else
					usage_die("option '--%s' needs a value",
						  d->name);
			}
			apply(o, d->id, val, a);
			continue;
		}
		if (a[0] == '-' && a[1]) {
			for (const char *p = a + 1; *p; p++) {
				char opt[3] = { '-', *p, 0 };
				if (strchr(short_flags, *p)) {
					apply(o, *p, NULL, opt);
				} else if (strchr(short_with_arg, *p)) {
					const char *val = p[1] ? p + 1 : NULL;
					if (!val && i + 1 < argc)
						val = argv[++i];
					if (!val)
						usage_die("option '%s' needs a value",
							  opt);
					apply(o, *p, val, opt);
					break;
				} else {
					usage_die("unknown option '%s'", opt);
				}
			}
			continue;
		}
		if (!o->run.script && !o->run.script_text)
			o->run.script = a;
		else
			strv_add(&o->run.stap.script_args, a);
	}
	if (o->run.script && o->run.script_text) {
		/* -e came after the file name: the "file" is a script arg */
		struct strv args = {0};
		strv_add(&args, o->run.script);
		for (size_t k = 0; k < o->run.stap.script_args.n; k++)
			strv_add(&args, o->run.stap.script_args.v[k]);
		strv_free(&o->run.stap.script_args);
		o->run.stap.script_args = args;
		o->run.script = NULL;
	}
	if (!o->run.script && !o->run.script_text)
		usage_die("no script given");
	if (o->pid && o->master)
		usage_die("-x and --master exclude each other");
	if (o->pid && o->sample_pid)
		usage_die("-x and --sample-pid exclude each other");
	if (o->master && strcmp(o->master, "-") != 0 && o->sample_pid)
		usage_die("--master PID and --sample-pid exclude each other");
	if (o->run.stap.cmd && (o->pid || o->master))
		usage_die("-c excludes -x and --master");
	if (o->master && strcmp(o->master, "-") == 0 && !o->exec && !o->sample_pid)
		usage_die("--master - (no running master) needs --exec PATH or --sample-pid PID");
}

/* How $^pid_ok decides (expand/expand.h), from the target options:
 * --master first, then -x or -c, then an executable alone (--exec,
 * --sample-pid). */
static enum pid_ok_mode pid_ok_mode(const struct options *o,
				    const struct target *t)
{
	if (o->master)
		return PID_OK_MASTER;
	if (o->pid || o->run.stap.cmd)
		return PID_OK_TARGET;
	return t->exec ? PID_OK_EXEC : PID_OK_NONE;
}

/* The target the options name (see target/target.h) and the mode of
 * $^pid_ok; --master PID and -x PID also go to stap's options.  Exits 2
 * on a bad --master PID. */
static int resolve(struct options *o, struct target *t)
{
	struct target_spec s = {
		.pid = o->pid, .sample_pid = o->sample_pid,
		.master = o->master != NULL, .exec = o->exec,
		.cmd = o->run.stap.cmd,
	};

	if (o->master && strcmp(o->master, "-") != 0) {
		/* not stap -x: see STAPXX_MASTER in expand.h */
		if (parse_pid("--master", o->master, &o->run.stap.master) < 0)
			exit(EXIT_USAGE);
		s.master_pid = o->run.stap.master;
	} else if (o->pid) {
		o->run.stap.pid = o->pid;
	}
	if (target_resolve(&s, t) < 0)
		return -1;
	dw_debug_root(t->root);	/* (a container's debug files: its own) */
	cache_dwarf_names();
	o->run.mode = pid_ok_mode(o, t);
	o->run.sample_pid = o->sample_pid;
	return 0;
}

static void options_free(struct options *o)
{
	for (size_t i = 0; i < o->run.nargs; i++)
		free((char *)o->run.args[i].name);
	free(o->run.args);
	strv_free(&o->incdirs);
	strv_free(&o->run.dextra);
	strv_free(&o->run.stap.defines);
	strv_free(&o->run.stap.dpaths);
	strv_free(&o->run.stap.kbuild);
	strv_free(&o->run.stap.extra);
	strv_free(&o->run.stap.script_args);
}

int main(int argc, char **argv)
{
	struct options o = {0};
	struct target t = {0};
	struct strv dirs = {0};
	int rc = EXIT_FAIL;

	set_program_name("stap++");
	parse_options(&o, argc, argv);
	int user = !o.run.list_args && !o.run.dump_src && bpf_native_user(o.run.script);
	if (user && o.run.stap.pass)
		usage_die("'%s' runs in stap++ itself, with no kernel module: -p is not for it",
			  o.run.script);
	if ((o.bpf && !o.run.list_args) || user) {
		/* a sample's native implementation (bpf/run.h): eBPF, or none
		   in the kernel at all */
		struct bpf_run_opts b = { o.run.script, o.pid, 0, o.run.args, o.run.nargs, &dirs };
		module_search_path(&o.incdirs, &dirs);
		if ((user || bpf_check_privilege() == 0) && resolve(&o, &t) == 0) {
			b.master = o.run.stap.master;
			rc = bpf_run(&b, &t);
		}
	} else if (o.run.list_args || resolve(&o, &t) == 0) {
		module_search_path(&o.incdirs, &dirs);
		rc = run_script(&o.run, &t, &dirs);
	}
	strv_free(&dirs);
	target_free(&t);
	options_free(&o);
	return rc;
}
