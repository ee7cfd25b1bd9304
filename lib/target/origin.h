/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * origin.h - where a target process runs: its PID in its own PID
 * namespace, its cgroup and the container ID in it, for the statistics
 * (stderr) and for util/pprof's labels (a stdout header).  Read from
 * /proc/PID when the process is first seen: it may be gone by the end.
 */
#ifndef STAPXX_ORIGIN_H
#define STAPXX_ORIGIN_H

#include <sys/types.h>

struct origin {
	pid_t pid;
	pid_t nspid;	/* its PID in its PID namespace (0: unknown) */
	int foreign;	/* in another mount namespace (proc_foreign) */
	char *cgroup;	/* its cgroup's path, or NULL (malloc'd) */
};

/* Fill *O for process PID; parts that cannot be read stay unknown (no
 * message).  Release with origin_free(). */
void origin_read(pid_t pid, struct origin *o);
void origin_free(struct origin *o);

/* "process PID (PID N in its PID namespace): cgroup PATH, container ID"
 * (the namespace part only when N differs, the container part only when
 * the cgroup names one), malloc'd. */
char *origin_text(const struct origin *o);

/* "# stap++ cgroup=PATH container=ID" (container= when there is one),
 * the header util/pprof turns into labels, malloc'd; NULL unless the
 * process runs in another mount namespace, whose cgroup is known: the
 * output of a process of the host stays as stapxx-era runbooks parse it
 * (a line above the first stack would be a frame to them). */
char *origin_header(const struct origin *o);

/* The container ID in cgroup path CG: the last run of 64 hexadecimal
 * digits that its components hold (Docker's docker-ID.scope or
 * /docker/ID, containerd's cri-containerd-ID.scope, CRI-O's
 * crio-ID.scope, Kubernetes' kubepods/.../ID).  Malloc'd; NULL if none. */
char *cgroup_container_id(const char *cg);

#endif
