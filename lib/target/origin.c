/* SPDX-License-Identifier: GPL-2.0-or-later */
/* origin.c - see origin.h. */
#include "target/origin.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "target/proc.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The last of /proc/PID/status's NSpid numbers; 0 if unreadable. */
static pid_t read_nspid(pid_t pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	long last = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return 0;
	while (getline(&line, &cap, f) > 0) {
		char *p = line, *end;
		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		for (p += 6;; p = end) {
			long v = strtol(p, &end, 10);
			if (end == p)
				break;
			last = v;
		}
		break;
	}
	free(line);
	fclose(f);
	return last > 0 && last <= INT_MAX ? (pid_t)last : 0;
}

/* The path of PID's cgroup v2 line ("0::PATH") in /proc/PID/cgroup,
 * unless it is "/" (a hybrid host) and a v1 memory controller's line is
 * there: then that line's; else its first line's.  NULL if unreadable. */
static char *read_cgroup(pid_t pid)
{
	char path[64], *line = NULL, *v2 = NULL, *memory = NULL, *first = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (!(f = fopen(path, "re")))
		return NULL;
	while (getline(&line, &cap, f) > 0) {
		/* ID:CONTROLLERS:PATH */
		char *c = strchr(line, ':'), *p = c ? strchr(c + 1, ':') : NULL;
		if (!p)
			continue;
		p[strcspn(p, "\n")] = '\0';
		if (!first)
			first = xstrdup(p + 1);
		if (!v2 && p == c + 1 && strncmp(line, "0:", 2) == 0)
			v2 = xstrdup(p + 1);
		else if (!memory && p - c - 1 == 6 && strncmp(c + 1, "memory", 6) == 0)
			memory = xstrdup(p + 1);
	}
	free(line);
	fclose(f);
	/* (a hybrid host's v2 line may say only "/") */
	char *r = v2 && strcmp(v2, "/") != 0 ? v2 : memory ? memory : v2 ? v2 : first;
	if (r != v2)
		free(v2);
	if (r != memory)
		free(memory);
	if (r != first)
		free(first);
	return r;
}

char *cgroup_container_id(const char *cg)
{
	const char *best = NULL;

	for (const char *p = cg; *p; p++) {
		size_t n = strspn(p, "0123456789abcdef");
		if (n == 64)	/* (a whole run: runs are skipped at once) */
			best = p;
		if (n)
			p += n - 1;
	}
	return best ? xstrndup(best, 64) : NULL;
}

void origin_read(pid_t pid, struct origin *o)
{
	o->pid = pid;
	o->nspid = read_nspid(pid);
	o->cgroup = read_cgroup(pid);
	/* (a process gone: no header) */
	o->foreign = proc_foreign_quiet(pid) == 1;
}

void origin_free(struct origin *o)
{
	free(o->cgroup);
	o->cgroup = NULL;
}

char *origin_text(const struct origin *o)
{
	struct buf b = {0};
	char *id = o->cgroup ? cgroup_container_id(o->cgroup) : NULL;

	buf_addf(&b, "process %d", (int)o->pid);
	if (o->nspid && o->nspid != o->pid)
		buf_addf(&b, " (PID %d in its PID namespace)", (int)o->nspid);
	buf_addf(&b, ": cgroup %s", o->cgroup ? o->cgroup : "(unknown)");
	if (id)
		buf_addf(&b, ", container %s", id);
	free(id);
	return buf_steal(&b);
}

char *origin_header(const struct origin *o)
{
	char *id, *h;

	if (!o->foreign || !o->cgroup)
		return NULL;
	id = cgroup_container_id(o->cgroup);
	h = id ? xasprintf("# stap++ cgroup=%s container=%s", o->cgroup, id)
	       : xasprintf("# stap++ cgroup=%s", o->cgroup);
	free(id);
	return h;
}
