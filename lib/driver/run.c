/* SPDX-License-Identifier: GPL-2.0-or-later */
/* run.c - see run.h. */
#include "driver/run.h"
#include "base/error.h"
#include "base/source.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "driver/allocf.h"
#include "driver/runtime.h"
#include "driver/sysroot.h"
#include "dwarf/dwarf.h"
#include "target/origin.h"
#include "target/proc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A script's header line saying that it runs on a LuaJIT without debug
 * info (the tapsets then find the VM and name its code without symbols;
 * the script itself probes and reads no internal symbol). */
#define STRIPPED_TAG "# stap++ stripped: "

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

/* A running process of the target, 0 if none: -x PID, --sample-pid
 * PID, or the first worker of --master PID (the master if it has none). */
static pid_t live_pid(const struct run_opts *o)
{
	pid_t *kids, p = 0;
	size_t n;

	if (o->stap.pid || o->sample_pid || !o->stap.master)
		return o->stap.pid ? o->stap.pid : o->sample_pid;
	if (proc_children(o->stap.master, &kids, &n) == 0) {
		p = n ? kids[0] : 0;
		free(kids);
	}
	return p ? p : o->stap.master;
}

/* Whether the expanded script uses the tapset module NAME: tapset luajit
 * takes Lua stacks, whose leaf is the native function sampled, so stap
 * gets names for every function (sysroot_name_functions). */
static int uses_module(const struct expansion *x, const char *name)
{
	for (size_t i = 0; i < x->nfiles; i++)
		if (x->files[i].module && strcmp(x->files[i].module, name) == 0)
			return 1;
	return 0;
}

/* A target in a container: where it runs on stderr (its PID in the
 * container, its cgroup and container ID), and util/pprof's header on
 * stdout, above what the module prints. */
static void say_origin(const struct run_opts *o)
{
	pid_t pid = o->stap.pid ? o->stap.pid : o->stap.master;
	struct origin og;
	char *text, *h;

	if (!pid)
		return;
	origin_read(pid, &og);
	text = origin_text(&og);
	fprintf(stderr, "stap++: %s%s\n", o->stap.master ? "master " : "", text);
	if (!o->stap.outfile && (h = origin_header(&og))) {
		printf("%s\n", h);
		fflush(stdout);
		free(h);
	}
	free(text);
	origin_free(&og);
	/* a master's workers that run now (the module follows later ones) */
	pid_t *kids;
	size_t n;
	if (o->stap.master && proc_children(pid, &kids, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			origin_read(kids[i], &og);
			text = origin_text(&og);
			fprintf(stderr, "stap++: worker %s\n", text);
			free(text);
			origin_free(&og);
		}
		free(kids);
	}
}

static int run_stap(struct run_opts *o, struct expansion *x)
{
	struct strv from = {0}, to = {0}, argv = {0};
	char *name, *tapset_dir = NULL, *fixed = NULL;
	char *ktree = NULL, *krel = NULL;
	const char *karg = o->stap.krelease, *root, *script;
	int status = -1;

	/* -r DIR: stap gets the absolute tree, the runtime fix its release */
	if (karg) {
		if (kernel_arg(karg, &ktree, &krel) < 0)
			goto out;
		if (ktree)
			o->stap.krelease = ktree;
	}

	if ((!o->stap.pass || o->stap.pass[0] == '5') &&
	    stap_check_privilege(o->stap.pid ? o->stap.pid
					     : o->stap.master) < 0)
		goto out;
	if (!tmpdir_create())
		goto out;
	/* stable paths for stap's cache, unless -c would inherit the fd */
	root = o->stap.cmd ? tmpdir_path() : STAP_DIR_ALIAS;
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
		if (runtime_fix(krel, &fixed) < 0) {
			hint("pass --no-runtime-fix to use the installed "
			     "runtime as is");
			goto out;
		}
		o->stap.runtime = fixed;	/* NULL: no fix needed */
	}
	if (o->stap.keep) {
		tmpdir_keep();
		fprintf(stderr, "stap++: keeping the expanded script in '%s'\n",
			tmpdir_path());
	}
	stap_argv(&o->stap, &argv);
	if (verbosity > 0) {
		fputs("stap++: running:", stderr);
		for (size_t i = 0; i < argv.n; i++)
			fprintf(stderr, " %s", argv.v[i]);
		fputc('\n', stderr);
	}
	status = stap_run(argv.v, from.v, to.v, from.n,
			  strcmp(root, STAP_DIR_ALIAS) == 0 ? tmpdir_path()
							    : NULL);
out:
	free(tapset_dir);
	free(fixed);
	free(krel);
	free(ktree);
	o->stap.krelease = karg;
	strv_free(&argv);
	strv_free(&from);
	strv_free(&to);
	return status < 0 ? EXIT_FAIL : status;
}

/* 0, or EXIT_FAIL after saying that standard output could not be written. */
static int flush_stdout(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return 0;
	error("cannot write standard output: %s", strerror(errno ? errno : EIO));
	return EXIT_FAIL;
}

int run_script(struct run_opts *o, const struct target *t,
	       const struct strv *dirs)
{
	struct expand_opts eo = {0};
	struct expansion x = {0};
	struct source *src;
	struct dw_set *dw;
	struct strv libs = {0};	/* $^lib*_path: the target's, then -d's */
	int rc;
	const char *db, *ngx;
	char *stripped = NULL, *sysroot = NULL;
	struct allocf af = {0};

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
		strv_add(&libs, t->libs.v[i]);
	}
	/* (a library that the target loads itself, such as the lua
	   module's libluajit in a stock nginx, is a -d PATH) */
	for (size_t i = 0; i < o->dextra.n; i++) {
		dw_set_add(dw, o->dextra.v[i]);
		if (strv_find(&o->stap.dpaths, o->dextra.v[i]) < 0)
			strv_add(&o->stap.dpaths, o->dextra.v[i]);
		if (strv_find(&libs, o->dextra.v[i]) < 0)
			strv_add(&libs, o->dextra.v[i]);
	}

	/* (a target in a container: the script names its files as it does) */
	for (size_t i = 0; i < libs.n; i++) {
		const char *p = path_under(t->root, libs.v[i]);
		if (p != libs.v[i]) {
			char *own = xstrdup(p);
			free(libs.v[i]);
			libs.v[i] = own;
		}
	}
	if (t->root) {
		if (sysroot_container(&o->stap, t->root, &sysroot) < 0) {
			rc = EXIT_FAIL;
			goto out;
		}
		o->stap.sysroot = sysroot;
	}
	eo.target_root = t->root;
	eo.sysroot = sysroot;
	eo.mode = o->mode;
	eo.exec_path = t->exec ? path_under(t->root, t->exec) : NULL;
	eo.exec_comm = t->comm;
	eo.target_pid = o->stap.pid ? o->stap.pid : o->stap.master;
	eo.libs = libs.v;
	eo.nlibs = libs.n;
	eo.missing = t->missing.v;
	eo.nmissing = t->missing.n;
	eo.dw = dw;
	eo.incdirs = dirs->v;
	eo.nincdirs = dirs->n;
	eo.args = o->args;
	eo.nargs = o->nargs;
	eo.scan_only = o->list_args;
	af.t = t;
	af.dw = dw;
	af.pid = o->list_args ? 0 : live_pid(o);
	eo.vm_allocf = allocf_find;
	eo.vm_allocf_ctx = &af;

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
	for (size_t i = 0; i < x.modules.n; i++) {
		const char *m = path_under(t->root, x.modules.v[i]);
		if (strv_find(&o->stap.dpaths, m) < 0)
			strv_add(&o->stap.dpaths, m);
	}
	if (o->dump_src) {
		dump_src(&x);
		rc = flush_stdout();
		goto out;
	}
	stripped = source_header_tag(src, STRIPPED_TAG);
	if ((db = dw_database_binary(dw)) && (!stripped || strcmp(stripped, "ok"))) {
		/* the tapsets find the VM and name its code without symbols,
		   but a script may probe LuaJIT's internal functions or read
		   its variables: only a script that says it needs neither */
		error("the SystemTap backend cannot run '%s' on '%s': it has no "
		      "debug info (stap++ has its layouts from the layout "
		      "database, but stap needs the DWARF and symbols of "
		      "LuaJIT's VM for what this script may use)", src->path, db);
		hint("samples/lj-lua-stacks.sxx, lj-lua-bt.sxx, lj-vm-states.sxx, "
		     "lj-lua-off-cpu.sxx, lj-lua-fio.sxx, ngx-lua-yield.sxx and "
		     "ngx-lua-exec-time.sxx run without them, lj-lua-alloc.sxx "
		     "with a running target, and in nginx "
		     "lj-gc-objs.sxx and lj-gco-ref.sxx (a "
		     "script says so with a header line '" STRIPPED_TAG "ok', "
		     "docs/stock-binaries.md)");
		hint("--runtime=bpf runs lj-lua-stacks, lj-lua-bt, lj-vm-states, "
		     "lj-lua-off-cpu, lj-lua-fio, ngx-lua-yield and lj-lua-alloc "
		     "on it, no debug info needed");
		hint("or install its debug symbols (a -dbgsym package, or a "
		     "debuginfod server in DEBUGINFOD_URLS)");
		rc = EXIT_FAIL;
		goto out;
	}
	if (db && (ngx = dw_nodebug_nginx(dw)))
		warning("no debug info in '%s': the lua module's layouts are unknown, "
			"so its Lua VM is found as in the luajit CLI (from the "
			"interpreter's registers), and coroutines that ngx_lua "
			"resumes end at their own frames", ngx);
	if (sysroot_name_functions(&o->stap, t, (!o->stap.pass || o->stap.pass[0] >= '3') &&
				   uses_module(&x, "luajit"),
				   x.allocf_state > 0 && af.add_sym ? &af : NULL, &sysroot) < 0) {
		rc = EXIT_FAIL;
		goto out;
	}
	if (t->root && (!o->stap.pass || o->stap.pass[0] == '5'))
		say_origin(o);
	rc = run_stap(o, &x);
out:
	free(stripped);
	allocf_free(&af);
	free(sysroot);
	o->stap.sysroot = NULL;
	expansion_free(&x);
	dw_set_free(dw);
	strv_free(&libs);
	return rc;
}

