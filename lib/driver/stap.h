/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stap.h - running SystemTap: the private temp dir, stap's argv, the run.
 */
#ifndef STAPXX_STAP_H
#define STAPXX_STAP_H

#include <sys/types.h>

#include "base/strbuf.h"

/* Create the private temp dir ($TMPDIR or /tmp, "stap++-XXXXXX", mode 0700)
 * and arrange for it to be removed at exit() and on SIGINT, SIGTERM,
 * SIGHUP and SIGQUIT (unless tmpdir_keep()).  Once only: a second call
 * returns the same dir.  Returns its path (owned by this module), or NULL
 * after error(). */
const char *tmpdir_create(void);

/* The temp dir's path (owned by this module), or NULL before
 * tmpdir_create() succeeded. */
const char *tmpdir_path(void);

/* Write DATA to REL (e.g. "tapset/a.b.stp") inside the temp dir, creating
 * the subdirectories it needs.  Returns the full path (malloc'd), or NULL
 * after error(). */
char *tmpdir_write(const char *rel, const char *data, size_t len);

/* Copy file FROM to REL inside the temp dir as tmpdir_write() does (mode
 * 0644).  Returns the full path (malloc'd), or NULL after error(). */
char *tmpdir_copy(const char *rel, const char *from);

/* Keep the temp dir at exit (stap++ -k). */
void tmpdir_keep(void);

/* What goes on stap's command line. */
struct stap_opts {
	int verbose;		/* number of -v */
	struct strv defines;	/* user -D NM[=VAL]; override the defaults */
	struct strv dpaths;	/* -d PATH: executable, libraries, extra */
	const char *tapset_dir;	/* -I for the expanded modules, or NULL */
	pid_t pid;		/* -x PID, or 0 */
	pid_t master;		/* --master PID: -G stapxx_master=PID, or 0 */
	const char *cmd;	/* -c CMD, or NULL */
	const char *pass;	/* -p N */
	const char *module;	/* -m NAME */
	const char *krelease;	/* -r KRELEASE */
	const char *runtime;	/* -R DIR */
	const char *sysroot;	/* --sysroot=DIR (a target in a container) */
	const char *outfile;	/* -o FILE */
	struct strv kbuild;	/* -B NAME=VAL */
	int keep;		/* -k */
	int skip_badvars;	/* --skip-badvars */
	struct strv extra;	/* everything after "--" */
	const char *script;	/* the expanded main script */
	struct strv script_args;	/* $1, $2, ... */
};

/* The stap binary: $STAPXX_STAP, else "stap" (looked up in $PATH when
 * run).  The string is the environment's or static: do not free it. */
const char *stap_binary(void);

/* Can this user run (load) SystemTap modules?  Root, or a member of the
 * 'stapusr' group, can.  Otherwise prints an error that names PID (when
 * not 0) and the cause, with a hint, and returns -1. */
int stap_check_privilege(pid_t pid);

/* Build stap's argv from O: OUT gets argv[0] and every argument (copies,
 * owned by OUT; NULL-terminated). */
void stap_argv(const struct stap_opts *o, struct strv *out);

/*
 * stap sees the temp dir as STAP_DIR_ALIAS: stap++ hands it the directory
 * as file descriptor STAP_DIR_FD.  The paths stap compiles into a module
 * (error locations) are then the same on every run, so stap's module cache
 * (~/.systemtap/cache) hits when the same script is built again, although
 * each run has its own private temp dir.  Not used with -c, whose command
 * would inherit the descriptor.
 */
#define STAP_DIR_FD 98
#define STAP_DIR_ALIAS "/proc/self/fd/98"

/*
 * Run ARGV (no shell) and wait for it.  stap's stderr is copied to ours
 * with every FROM[i] path replaced by TO[i], so its messages name the .sxx
 * files instead of the temp copies (same line numbers).  Ctrl-C reaches
 * stap directly (same process group); SIGTERM/SIGHUP/SIGQUIT sent to
 * stap++ are forwarded to it.  Returns stap's exit status (128+N if killed
 * by signal N), or -1 after error() if it could not be started.
 * DIR, when not NULL, is handed to stap as descriptor STAP_DIR_FD.
 */
int stap_run(char *const argv[], char *const from[], char *const to[],
	     size_t nmap, const char *dir);

#endif
