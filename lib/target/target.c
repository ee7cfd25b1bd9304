/* SPDX-License-Identifier: GPL-2.0-or-later */
/* target.c - see target.h. */
#include "target/target.h"
#include "base/error.h"
#include "base/wrapper.h"
#include "target/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int target_resolve(const struct target_spec *s, struct target *t)
{
	pid_t from = s->master_pid ? s->master_pid
		     : s->pid ? s->pid : s->sample_pid;

	memset(t, 0, sizeof(*t));
	if (s->exec) {
		if (resolve_exec(s->exec, &t->exec) < 0)
			return -1;
		t->comm = comm_of(s->exec);
	} else if (from) {
		if (proc_exe(from, &t->exec) < 0)
			return -1;
		t->comm = proc_comm(from);
		if (!t->comm)
			t->comm = comm_of(t->exec);
	} else if (s->cmd) {
		size_t n = strcspn(s->cmd, " \t");
		char *word = xstrndup(s->cmd, n);
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
		int foreign = proc_foreign(from);
		if (foreign < 0)
			return -1;
		if (foreign)
			t->root = xasprintf("/proc/%d/root", (int)from);
		if (proc_libs(from, t->exec, &t->libs) < 0)
			return -1;
	} else if (t->exec) {
		if (exec_libs(t->exec, &t->libs, &t->missing) < 0)
			return -1;
	}
	if (s->master_pid) {
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

	if (t->exec)
		info(1, "executable: %s (%zu libraries)", t->exec, t->libs.n);
	return 0;
}

void target_free(struct target *t)
{
	free(t->exec);
	free(t->root);
	free(t->comm);
	strv_free(&t->libs);
	strv_free(&t->missing);
	memset(t, 0, sizeof(*t));
}
