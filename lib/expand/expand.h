/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand.h - the stapxx macro dialect: .sxx text in, plain stap text out.
 *
 * Macros (see stap++ --help and README):
 *   @use a.b, c.d            load module tapset/a/b.sxx (each once, recursively)
 *   $^arg_NAME [:default(V)] value of --arg NAME=V (or the default)
 *   $^exec_path              the target executable
 *   $^libNAME_path           the target's shared library libNAME (exact match
 *                            libNAME[-.0-9]*.so(.N)*, then looser; else the
 *                            executable, with a warning)
 *   $^dso_NAME_path          the target's shared object NAME[-.0-9]*.so(.N)*
 *                            (an nginx module); else the executable, silently
 *   $^target                 target(); inside a string, the PID of -x PID
 *                            or --master PID as text ("0", with a warning,
 *                            when none was given)
 *   $^pid_ok                 "is this process one we trace?" (depends on mode)
 *   $^vm_allocf_path, $^vm_allocf, $^vm_allocd_to_G
 *                            LuaJIT's allocator (g->allocf) in the running
 *                            target, when its binary has no symbol for it:
 *                            the file, a symbol to probe, G - g->allocd
 *                            (expand_opts.vm_allocf finds them)
 *   @pfunc(NAME)             process("EXEC").function("NAME")
 *   $*NAME := EXPR           binds (expands to nothing); later $*NAME -> EXPR
 *   @sizeof(T[, MOD]) @offsetof(T, a.b[, MOD]) @has_member(T, a[, MOD])
 *   @has_type(T[, MOD]) @enum(NAME[, MOD])   DWARF, through dw_*()
 *   @var("sym")              @var("sym@CU", "MODULE") (module found in DWARF)
 *
 * Expansion never changes line numbers: a macro whose text spans lines is
 * replaced by its value followed by the same number of newlines, and values
 * that contain newlines are joined with spaces.  Macros are not expanded in
 * comments; inside string literals only $^ macros are, and --arg values
 * there are escaped.  In code, --arg values that could change the script's
 * structure (newline, ';', braces, comments, '%{', unbalanced quotes or
 * brackets, @define) are rejected.
 *
 * Errors are reported through error() with FILE:LINE set; expansion goes
 * on after errors that do not hide later ones (e.g. unknown struct members),
 * so one run reports them all.  Nothing here calls die() or exit().
 */
#ifndef STAPXX_EXPAND_H
#define STAPXX_EXPAND_H

#include <stddef.h>
#include <sys/types.h>

#include "base/source.h"
#include "base/strbuf.h"

struct dw_set;

/* Module global holding the master PID in --master mode: set with stap
 * -G (stap++ --master PID) or at load time (staprun MOD.ko stapxx_master=PID).
 * Declared at the end of the main script when $^pid_ok/$^target use it. */
#define STAPXX_MASTER "stapxx_master"

/* How $^pid_ok decides whether the current process is traced (the caller
 * picks it from its target options). */
enum pid_ok_mode {
	PID_OK_NONE,	/* no target: $^pid_ok, $^exec_path... are errors */
	PID_OK_TARGET,	/* -x PID or -c CMD: pid() == target() */
	PID_OK_MASTER,	/* --master: ppid() == STAPXX_MASTER (run-time
			   children); else ppid() == target() with staprun -x;
			   else execname() match */
	PID_OK_EXEC,	/* --exec / --sample-pid: ppid() == STAPXX_MASTER
			   when set at load time, else pid() == target()
			   when staprun -x was given, else execname() match */
};

/* LuaJIT's allocator in a running target ($^vm_allocf*): what the
 * driver's expand_opts.vm_allocf finds.  The strings are the driver's. */
struct expand_allocf {
	const char *path;	/* the file holding g->allocf, as the target
				   names it ($^vm_allocf_path) */
	const char *sym;	/* a symbol that starts at it there
				   ($^vm_allocf) */
	long long g_off;	/* G minus g->allocd ($^vm_allocd_to_G) */
};

/* One --arg NAME=VALUE. */
struct expand_arg {
	const char *name;
	const char *value;
	int used;		/* set by expand_script() */
};

struct expand_opts {
	enum pid_ok_mode mode;
	const char *exec_path;	/* NULL: no target executable */
	const char *exec_comm;	/* execname() to match (TASK_COMM_LEN-1 chars) */
	pid_t target_pid;	/* -x PID or --master PID, else 0: the text
				   of $^target inside strings */
	char *const *libs;	/* shared libraries, load order */
	size_t nlibs;
	char *const *missing;	/* libraries the target needs but that were
				   not found (names): $^lib*_path errors */
	size_t nmissing;
	struct dw_set *dw;	/* NULL: DWARF macros are errors */
	const char *target_root;	/* the prefix under which the DWARF's
				   binaries were read when the target runs in a
				   container ("/proc/PID/root"), left out of
				   the paths written into the script; or NULL */
	const char *sysroot;	/* then: stap's --sysroot, where @var's
				   binaries are named (stap looks them up
				   without it) */
	char *const *incdirs;	/* module search path, in order */
	size_t nincdirs;
	struct expand_arg *args;	/* --arg values */
	size_t nargs;
	int scan_only;		/* only load modules and collect $^arg_*:
				   no target, DWARF or --arg values needed */
	/* $^vm_allocf*: called once, at the first of them outside a dead
	   %( %) branch; fills *A.  0, or -1 after error() (the macros then
	   fail).  NULL: the macros are errors. */
	int (*vm_allocf)(void *ctx, struct expand_allocf *a);
	void *vm_allocf_ctx;
};

/* One file of the expanded script. */
struct xfile {
	char *module;		/* "a.b", or NULL for the main script */
	struct source *src;	/* the original text (owned) */
	char *out;		/* expanded text (owned; NULL if scan_only) */
};

/* One script argument ($^arg_NAME) seen in the script or its modules. */
struct xparam {
	char *name;
	char *def;		/* default value (as written), or NULL */
	struct source *def_src;	/* where the default is written: */
	size_t def_from, def_to;	/* def_src->text[from, to) */
	const char *file;	/* where first seen (points into an xfile) */
	int line;
};

struct expansion {
	struct xfile *files;	/* [0] is the main script, then modules in
				   the order they were first used */
	size_t nfiles;
	struct xparam *params;	/* in order of first use */
	size_t nparams;
	struct strv modules;	/* binaries @var() resolved into (for -d) */
	int uses_master;	/* the script reads STAPXX_MASTER */
	int allocf_state;	/* $^vm_allocf*: 0 unused, 1 found (allocf
				   holds it), -1 failed */
	struct expand_allocf allocf;
};

/*
 * expand_script - load MAIN's modules and expand everything.
 * Takes ownership of MAIN (even on failure).  Fills *X (free it with
 * expansion_free(), also on failure).  Returns 0, or -1 after at least one
 * error() was printed.
 */
int expand_script(const struct expand_opts *o, struct source *main,
		  struct expansion *x);
/* Free everything *X holds (files, their sources and outputs, params,
 * modules); *X is empty afterwards. */
void expansion_free(struct expansion *x);

#endif
