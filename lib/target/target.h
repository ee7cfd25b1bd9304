/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * target/target.h - the target of a stap++ run: which executable and
 * shared libraries the script's macros and the eBPF backend resolve
 * against.
 *
 * The target comes from the options: -x PID, --master PID (or "-"),
 * --sample-pid PID, --exec PATH, -c CMD.  target_resolve() inspects the
 * processes (/proc) or the executable (ldd) through proc.h.
 */
#ifndef STAPXX_TARGET_H
#define STAPXX_TARGET_H

#include <sys/types.h>

#include "base/strbuf.h"

/* What the options say about the target (all optional; 0/NULL: not
 * given).  The option parser has already checked that they go together. */
struct target_spec {
	pid_t pid;		/* -x PID */
	pid_t sample_pid;	/* --sample-pid PID */
	int master;		/* --master given (PID or "-") */
	pid_t master_pid;	/* --master PID (0 for "--master -") */
	const char *exec;	/* --exec PATH */
	const char *cmd;	/* -c CMD: its first word is the executable */
};

/* The resolved target.  Zero-initialise it; release with target_free(). */
struct target {
	char *exec;		/* real path of the executable, or NULL */
	char *root;		/* "/proc/PID/root" when the process runs in
				   another mount namespace (a container):
				   exec and libs are under it (proc_file());
				   else NULL */
	char *comm;		/* its execname() (TASK_COMM_LEN-1 chars) */
	struct strv libs;	/* shared libraries, load order */
	struct strv missing;	/* libraries ldd could not find (names) */
};

/*
 * target_resolve - find the executable and libraries S names: from the
 * running process (-x, --master, --sample-pid: /proc/PID/exe and maps,
 * plus the libraries a worker of a master has mapped), else from the
 * executable (--exec, the first word of -c: ldd).  Warns when a master
 * has no children yet.  Fills *T (free it with target_free(), also on
 * failure).  Returns 0, or -1 after error() (and hints).
 */
int target_resolve(const struct target_spec *s, struct target *t);

/* Free what T holds; T is empty afterwards. */
void target_free(struct target *t);

#endif
