/* main.c - stap++: options, then source -> expand -> stap. */
#include "dwarf.h"
#include "error.h"
#include "expand.h"
#include "proc.h"
#include "runtime.h"
#include "source.h"
#include "stap.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
"  --master -          with --exec: build a master-mode module without a\n"
"                      running process; run it with\n"
"                      'staprun MOD.ko stapxx_master=MASTER_PID'\n"
"                      (without it: processes named like the exec)\n"
"  --exec PATH         the executable (no process needed; libraries from\n"
"                      its dynamic section, via ldd).  Alone, the module\n"
"                      traces the process given to 'staprun -x PID' at run\n"
"                      time, or else every process named like PATH\n"
"  --sample-pid PID    take executable and libraries from PID, like --exec\n"
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
"                      MAXSTRINGLEN=2048: a whole Lua stack is one string)\n"
"  -d PATH             also load symbols/DWARF of PATH (the executable and\n"
"                      its libraries are added for you)\n"
"  -p N                stop after pass N (-p4: build the module only)\n"
"  -m NAME             module name      -r KRELEASE   kernel release\n"
"  -R DIR              runtime dir (disables the automatic runtime fix)\n"
"  --no-runtime-fix    use the installed runtime as is\n"
"  -k                  keep temp files  -o FILE       output file\n"
"  -B NAME=VALUE       kbuild option    --skip-badvars\n"
"  -v                  more messages (repeatable; passed to stap too)\n"
"  -- ARGS...          pass ARGS to stap as they are\n"
"\n"
"  -h, --help          this help        -V, --version\n"
"\n"
"Exit status: 0 ok, 1 failure, 2 usage error; when stap runs, stap's.\n"
"Environment: STAPXX_STAP (stap binary to run, default 'stap'), TMPDIR.\n"
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

struct options {
	const char *script;
	const char *script_text;	/* -e */
	const char *exec;		/* --exec */
	const char *master;		/* --master */
	pid_t pid, sample_pid;
	struct strv incdirs;
	struct strv dextra;
	struct expand_arg *args;
	size_t nargs;
	int list_args, dump_src, no_runtime_fix;
	struct stap_opts stap;
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
	for (size_t i = 0; i < o->nargs; i++)
		if (strlen(o->args[i].name) == n &&
		    strncmp(o->args[i].name, spec, n) == 0) {
			/* the last one wins, like repeated options usually do */
			o->args[i].value = eq + 1;
			return;
		}
	o->args = xrealloc(o->args, (o->nargs + 1) * sizeof(*o->args));
	o->args[o->nargs].name = xstrndup(spec, n);
	o->args[o->nargs].value = eq + 1;
	o->args[o->nargs].used = 0;
	o->nargs++;
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

/* Options that take a value; a NULL long name means short only. */
enum {
	O_X = 'x', O_E = 'e', O_I = 'I', O_D = 'D', O_d = 'd', O_C = 'c',
	O_P = 'p', O_M = 'm', O_R = 'r', O_RT = 'R', O_O = 'o', O_B = 'B',
	O_V = 'v', O_K = 'k', O_H = 'h', O_VER = 'V',
	O_MASTER = 256, O_EXEC, O_SAMPLE, O_ARG, O_ARGS, O_DUMP, O_SKIP,
	O_NOFIX, O_HELP, O_VERSION,
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
	case O_E: o->script_text = val; break;
	case O_I: strv_add(&o->incdirs, val); break;
	case O_D: check_define(val); strv_add(&o->stap.defines, val); break;
	case O_d: strv_add(&o->dextra, val); break;
	case O_C: o->stap.cmd = val; break;
	case O_P:
		if (!(val[0] >= '1' && val[0] <= '5' && val[1] == '\0'))
			usage_die("-p wants a pass number 1-5, not '%s'", val);
		o->stap.pass = val;
		break;
	case O_M: o->stap.module = val; break;
	case O_R: o->stap.krelease = val; break;
	case O_RT: o->stap.runtime = val; break;
	case O_O: o->stap.outfile = val; break;
	case O_B: strv_add(&o->stap.kbuild, val); break;
	case O_ARG: add_arg(o, val); break;
	case O_ARGS: o->list_args = 1; break;
	case O_DUMP: o->dump_src = 1; break;
	case O_SKIP: o->stap.skip_badvars = 1; break;
	case O_NOFIX: o->no_runtime_fix = 1; break;
	case O_V: o->stap.verbose++; verbosity++; break;
	case O_K: o->stap.keep = 1; break;
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
				strv_add(&o->stap.extra, argv[i]);
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
		if (!o->script && !o->script_text)
			o->script = a;
		else
			strv_add(&o->stap.script_args, a);
	}
	if (o->script && o->script_text) {
		/* -e came after the file name: the "file" is a script arg */
		struct strv args = {0};
		strv_add(&args, o->script);
		for (size_t k = 0; k < o->stap.script_args.n; k++)
			strv_add(&args, o->stap.script_args.v[k]);
		strv_free(&o->stap.script_args);
		o->stap.script_args = args;
		o->script = NULL;
	}
	if (!o->script && !o->script_text)
		usage_die("no script given");
	if (o->pid && o->master)
		usage_die("-x and --master exclude each other");
	if (o->pid && o->sample_pid)
		usage_die("-x and --sample-pid exclude each other");
	if (o->master && o->sample_pid)
		usage_die("--master and --sample-pid exclude each other");
	if (o->stap.cmd && (o->pid || o->master))
		usage_die("-c excludes -x and --master");
	if (o->master && strcmp(o->master, "-") == 0 && !o->exec)
		usage_die("--master - (no running master) needs --exec PATH");
}

/* The target: executable, libraries, $^pid_ok mode; fills the -d list. */
struct target {
	char *exec;
	char *comm;
	struct strv libs;
	struct strv missing;	/* libraries ldd could not find */
	enum target_mode mode;
};

static int resolve_target(struct options *o, struct target *t)
{
	pid_t from = o->pid ? o->pid : o->sample_pid;

	memset(t, 0, sizeof(*t));
	if (o->master && strcmp(o->master, "-") != 0) {
		/* not stap -x: see STAPXX_MASTER in expand.h */
		if (parse_pid("--master", o->master, &o->stap.master) < 0)
			exit(EXIT_USAGE);
		from = o->stap.master;
	} else if (o->pid) {
		o->stap.pid = o->pid;
	}
	if (o->exec) {
		if (resolve_exec(o->exec, &t->exec) < 0)
			return -1;
		t->comm = comm_of(o->exec);
	} else if (from) {
		if (proc_exe(from, &t->exec) < 0)
			return -1;
		t->comm = proc_comm(from);
		if (!t->comm)
			t->comm = comm_of(t->exec);
	} else if (o->stap.cmd) {
		size_t n = strcspn(o->stap.cmd, " \t");
		char *word = xstrndup(o->stap.cmd, n);
		int rc = resolve_exec(word, &t->exec);
		if (rc == 0)
			t->comm = comm_of(word);
		free(word);
		if (rc < 0) {
			hint("give the executable with --exec PATH");
			return -1;
		}
	}

	if (from) {
		if (proc_libs(from, t->exec, &t->libs) < 0)
			return -1;
	} else if (t->exec) {
		if (exec_libs(t->exec, &t->libs, &t->missing) < 0)
			return -1;
	}
	if (o->master && from) {
		pid_t *kids;
		size_t n;
		if (proc_children(from, &kids, &n) == 0) {
			if (n == 0)
				warning("master process %d has no children yet; "
					"workers it starts later are still "
					"traced", (int)from);
			else
				info(1, "master %d has %zu children", (int)from,
				     n);
			/* workers may have loaded more (dlopen); a worker
			 * that just went away is no error */
			char maps[64];
			snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)(n ? kids[0] : 0));
			if (n > 0 && access(maps, R_OK) == 0)
				proc_libs(kids[0], t->exec, &t->libs);
			free(kids);
		}
	}

	if (o->master)
		t->mode = TARGET_MASTER;
	else if (o->pid || o->stap.cmd)
		t->mode = TARGET_PID;
	else if (t->exec)
		t->mode = TARGET_EXEC;
	else
		t->mode = TARGET_NONE;
	if (t->exec)
		info(1, "executable: %s (%zu libraries)", t->exec, t->libs.n);
	return 0;
}

static void search_path(struct options *o, struct strv *dirs)
{
	char self[PATH_MAX];
	ssize_t n;

	for (size_t i = 0; i < o->incdirs.n; i++)
		if (strv_find(dirs, o->incdirs.v[i]) < 0)
			strv_add(dirs, o->incdirs.v[i]);
	if (strv_find(dirs, ".") < 0)
		strv_add(dirs, ".");
	if (strv_find(dirs, "tapset") < 0)
		strv_add(dirs, "tapset");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			/* in-tree (./stap++ next to tapset/), then installed
			 * under any prefix (PREFIX/bin/../share/stap++) */
			*slash = '\0';
			char *d[2] = { xasprintf("%s/tapset", self),
				       xasprintf("%s/../share/stap++/tapset", self) };
			for (int k = 0; k < 2; k++) {
				char real[PATH_MAX];
				if (realpath(d[k], real) && strv_find(dirs, real) < 0)
					strv_add(dirs, real);
				free(d[k]);
			}
		}
	}
	if (strv_find(dirs, STAPXX_DATADIR "/tapset") < 0)
		strv_add(dirs, STAPXX_DATADIR "/tapset");
}

static void print_args(const struct expansion *x)
{
	if (x->nparams == 0) {
		printf("(this script takes no --arg)\n");
		return;
	}
	for (size_t i = 0; i < x->nparams; i++) {
		const struct xparam *p = &x->params[i];
		if (p->def)
			printf("--arg %s=VALUE (default: %s)\n", p->name, p->def);
		else
			printf("--arg %s=VALUE (required)\n", p->name);
	}
}

static void dump_src(const struct expansion *x)
{
	for (size_t i = 0; i < x->nfiles; i++) {
		const struct xfile *f = &x->files[i];
		if (i)
			printf("\n// ---- module %s: %s ----\n", f->module,
			       f->src->path);
		fputs(f->out, stdout);
		if (f->src->len && f->out[0] && f->out[strlen(f->out) - 1] != '\n')
			putchar('\n');
	}
}

/* Basename of SCRIPT without .sxx/.stp, plus ".stp". */
static char *stp_name(const char *script)
{
	const char *b = strrchr(script, '/');
	size_t n;

	b = b ? b + 1 : script;
	n = strlen(b);
	if (n > 4 && (strcmp(b + n - 4, ".sxx") == 0 ||
		      strcmp(b + n - 4, ".stp") == 0))
		n -= 4;
	if (n == 0)
		return xstrdup("script.stp");
	return xasprintf("%.*s.stp", (int)n, b);
}

/* Write REL into the temp dir; map both names stap may print for it (the
 * real path and the one under ROOT) back to SHOWN.  Returns the path under
 * ROOT (owned by FROM), or NULL. */
static const char *write_for_stap(const char *root, const char *rel,
				  const char *text, const char *shown,
				  struct strv *from, struct strv *to)
{
	char *real = tmpdir_write(rel, text, strlen(text));

	if (!real)
		return NULL;
	strv_take(from, real);
	strv_add(to, shown);
	strv_take(from, xasprintf("%s/%s", root, rel));
	strv_add(to, shown);
	return from->v[from->n - 1];
}

static int run_stap(struct options *o, struct expansion *x)
{
	struct strv from = {0}, to = {0}, argv = {0};
	char *name, *tapset_dir = NULL, *fixed = NULL;
	const char *root, *script;
	int status = -1;

	if ((!o->stap.pass || o->stap.pass[0] == '5') &&
	    stap_check_privilege(o->stap.pid ? o->stap.pid
					     : o->stap.master) < 0)
		goto out;
	if (!tmpdir_create())
		goto out;
	/* stable paths for stap's cache, unless -c would inherit the fd */
	root = o->stap.cmd ? tmpdir_create() : STAP_DIR_ALIAS;
	for (size_t i = 1; i < x->nfiles; i++) {
		char *rel = xasprintf("tapset/%s.stp", x->files[i].module);
		const char *p = write_for_stap(root, rel, x->files[i].out,
					       x->files[i].src->path, &from, &to);
		free(rel);
		if (!p)
			goto out;
	}
	if (x->nfiles > 1)
		o->stap.tapset_dir = tapset_dir = xasprintf("%s/tapset", root);
	name = stp_name(o->script && strcmp(o->script, "-") ? o->script
							    : "command-line");
	script = write_for_stap(root, name, x->files[0].out,
				x->files[0].src->path, &from, &to);
	free(name);
	if (!script)
		goto out;
	o->stap.script = script;

	if (!o->stap.runtime && !o->no_runtime_fix &&
	    (!o->stap.pass || o->stap.pass[0] >= '4')) {
		if (runtime_fix(o->stap.krelease, &fixed) < 0) {
			hint("pass --no-runtime-fix to use the installed "
			     "runtime as is");
			goto out;
		}
		o->stap.runtime = fixed;	/* NULL: no fix needed */
	}
	if (o->stap.keep) {
		tmpdir_keep();
		fprintf(stderr, "stap++: keeping the expanded script in '%s'\n",
			tmpdir_create());
	}
	stap_argv(&o->stap, &argv);
	if (verbosity > 0) {
		fputs("stap++: running:", stderr);
		for (size_t i = 0; i < argv.n; i++)
			fprintf(stderr, " %s", argv.v[i]);
		fputc('\n', stderr);
	}
	status = stap_run(argv.v, from.v, to.v, from.n,
			  strcmp(root, STAP_DIR_ALIAS) == 0 ? tmpdir_create()
							    : NULL);
out:
	free(tapset_dir);
	free(fixed);
	strv_free(&argv);
	strv_free(&from);
	strv_free(&to);
	return status < 0 ? EXIT_FAIL : status;
}

static void options_free(struct options *o)
{
	for (size_t i = 0; i < o->nargs; i++)
		free((char *)o->args[i].name);
	free(o->args);
	strv_free(&o->incdirs);
	strv_free(&o->dextra);
	strv_free(&o->stap.defines);
	strv_free(&o->stap.dpaths);
	strv_free(&o->stap.kbuild);
	strv_free(&o->stap.extra);
	strv_free(&o->stap.script_args);
}

static void target_free(struct target *t)
{
	free(t->exec);
	free(t->comm);
	strv_free(&t->libs);
	strv_free(&t->missing);
}

/* 0, or EXIT_FAIL after saying that standard output could not be written. */
static int flush_stdout(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	error("cannot write standard output: %s", strerror(errno ? errno : EIO));
	return EXIT_FAIL;
}

/* Everything after option parsing; returns the exit status. */
static int run(struct options *o, struct target *t, struct strv *dirs)
{
	struct expand_opts eo = {0};
	struct expansion x;
	struct source *src;
	struct dw_set *dw;
	int rc;

	src = o->script_text ? source_from_mem("<command-line>", o->script_text,
					       strlen(o->script_text))
			     : source_read(o->script);
	if (!src)
		return EXIT_FAIL;

	dw = dw_set_new();
	if (t->exec) {
		dw_set_add(dw, t->exec);
		strv_add(&o->stap.dpaths, t->exec);
	}
	for (size_t i = 0; i < t->libs.n; i++) {
		dw_set_add(dw, t->libs.v[i]);
		strv_add(&o->stap.dpaths, t->libs.v[i]);
	}
	for (size_t i = 0; i < o->dextra.n; i++) {
		dw_set_add(dw, o->dextra.v[i]);
		if (strv_find(&o->stap.dpaths, o->dextra.v[i]) < 0)
			strv_add(&o->stap.dpaths, o->dextra.v[i]);
	}

	eo.mode = t->mode;
	eo.exec_path = t->exec;
	eo.exec_comm = t->comm;
	eo.libs = t->libs.v;
	eo.nlibs = t->libs.n;
	eo.missing = t->missing.v;
	eo.nmissing = t->missing.n;
	eo.dw = dw;
	eo.incdirs = dirs->v;
	eo.nincdirs = dirs->n;
	eo.args = o->args;
	eo.nargs = o->nargs;
	eo.scan_only = o->list_args;

	rc = expand_script(&eo, src, &x) < 0 ? EXIT_FAIL : 0;
	if (rc == 0 && o->list_args) {
		print_args(&x);
		rc = flush_stdout();
		goto out;
	}
	for (size_t i = 0; i < o->nargs && rc == 0; i++)
		if (!o->args[i].used)
			warning("--arg %s is not used by the script",
				o->args[i].name);
	if (rc)
		goto out;
	for (size_t i = 0; i < x.modules.n; i++)
		if (strv_find(&o->stap.dpaths, x.modules.v[i]) < 0)
			strv_add(&o->stap.dpaths, x.modules.v[i]);
	if (o->dump_src) {
		dump_src(&x);
		rc = flush_stdout();
		goto out;
	}
	rc = run_stap(o, &x);
out:
	expansion_free(&x);
	dw_set_free(dw);
	return rc;
}

int main(int argc, char **argv)
{
	struct options o = {0};
	struct target t = {0};
	struct strv dirs = {0};
	int rc = EXIT_FAIL;

	parse_options(&o, argc, argv);
	if (o.list_args || resolve_target(&o, &t) == 0) {
		search_path(&o, &dirs);
		rc = run(&o, &t, &dirs);
	}
	strv_free(&dirs);
	target_free(&t);
	options_free(&o);
	return rc;
}
