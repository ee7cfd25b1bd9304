/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * run.h - one stap++ run after option parsing: read the script, expand it
 * against the target's binaries, then list its arguments (--args), print
 * the expansion (--dump-src) or write it to the private temp dir and run
 * stap on it (with the runtime fix when needed).
 */
#ifndef STAPXX_RUN_H
#define STAPXX_RUN_H

#include <stddef.h>

#include "base/strbuf.h"
#include "driver/stap.h"
#include "expand/expand.h"
#include "target/target.h"

/* What the command line asks of the run.  Owned by the caller (main). */
struct run_opts {
	const char *script;		/* file, "-" (stdin); NULL with -e */
	const char *script_text;	/* -e */
	struct strv dextra;		/* -d PATH beyond the target's */
	struct expand_arg *args;	/* --arg NAME=VALUE */
	size_t nargs;
	int list_args, dump_src, no_runtime_fix;
	enum pid_ok_mode mode;		/* how $^pid_ok decides (main sets it
					   with the target) */
	pid_t sample_pid;		/* --sample-pid PID, else 0 */
	struct stap_opts stap;		/* stap's options; the run fills in
					   dpaths, tapset_dir, script and
					   runtime */
};

/*
 * run_script - everything after option parsing.  T is the resolved target
 * (empty with --args), DIRS the module search path.  Warns about --arg
 * values the script does not use.  Returns the exit status: 0, EXIT_FAIL
 * after error(), or stap's own status.
 */
int run_script(struct run_opts *o, const struct target *t,
	       const struct strv *dirs);

#endif
