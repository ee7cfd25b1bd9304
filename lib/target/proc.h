/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * proc.h - inspecting the target: processes (/proc) and executables.
 *
 * Every function returns 0 on success or -1 after printing an error that
 * names the PID (or path) and the cause, e.g.
 *     stap++: error: no process with PID 4242
 *     stap++: error: cannot inspect process 1 ('/proc/1/exe'): Permission denied
 *     hint: run stap++ as root
 */
#ifndef STAPXX_PROC_H
#define STAPXX_PROC_H

#include <sys/types.h>

#include "base/strbuf.h"

/* Parse a PID argument of option OPT ("-x"...): a positive decimal number
 * that fits pid_t.  Returns 0, or -1 after error(). */
int parse_pid(const char *opt, const char *s, pid_t *out);

/* Executable of running process PID (real path, without the " (deleted)"
 * suffix, which gets a warning).  *out is malloc'd; the caller frees it. */
int proc_exe(pid_t pid, char **out);

/* execname() of running process PID (/proc/PID/comm), malloc'd; NULL if
 * it cannot be read (no message). */
char *proc_comm(pid_t pid);

/* Shared libraries mapped into PID (real paths, each once, EXE excluded),
 * in load order: the order the dynamic loader loads them (ldd of EXE), then
 * the rest (dlopen()ed) by address.  Appended to OUT. */
int proc_libs(pid_t pid, const char *exe, struct strv *out);

/* Direct children of PID (processes whose parent is PID).  *out is
 * malloc'd (free it); *n may be 0. */
int proc_children(pid_t pid, pid_t **out, size_t *n);

/* Shared libraries executable EXE loads, in load order (ldd's, which
 * follows the dynamic section's DT_NEEDED, RPATH/RUNPATH and ld.so.cache);
 * real paths appended to OUT.  A library ldd cannot find is a warning and
 * its name goes to MISSING.  A statically linked executable has none. */
int exec_libs(const char *exe, struct strv *out, struct strv *missing);

/* Resolve executable PATH for --exec / -c: a name without '/' is looked up
 * in $PATH; the result must be an existing regular file.  *out = its real
 * path (malloc'd). */
int resolve_exec(const char *path, char **out);

/* The execname() the kernel gives a process started from PATH: its
 * basename cut to 15 bytes.  Returns a malloc'd string. */
char *comm_of(const char *path);

#endif
