/* SPDX-License-Identifier: GPL-2.0-or-later */
/* proc.c - see proc.h. */
#include "target/proc.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "base/wrapper.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int parse_pid(const char *opt, const char *s, pid_t *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!isdigit((unsigned char)*s) || *end || errno || v <= 0 ||
	    v > INT_MAX)
		return error("%s wants a process ID (a positive number), not "
			     "'%s'", opt, s);
	*out = (pid_t)v;
	return 0;
}

static int proc_error(pid_t pid, const char *file, int err)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (err == ENOENT && access(path, F_OK) != 0)
		return error("no process with PID %d", (int)pid);
	if (err == ENOENT)
		return error("process %d has no executable (a kernel thread, "
			     "or it is exiting)", (int)pid);
	error("cannot inspect process %d ('/proc/%d/%s'): %s", (int)pid,
	      (int)pid, file, strerror(err));
	if ((err == EACCES || err == EPERM) && geteuid() != 0)
		hint("run stap++ as root (it needs to read the process's "
		     "memory map, and stap needs root to trace it)");
	return -1;
}

static void strip_deleted(char *p, const char *what)
{
	size_t n = strlen(p);
	const char *suffix = " (deleted)";
	size_t m = strlen(suffix);

	if (n > m && strcmp(p + n - m, suffix) == 0) {
		p[n - m] = '\0';
		warning("%s '%s' was deleted or replaced after the process "
			"started; its DWARF may not match", what, p);
	}
}

static int same_file(const char *a, const char *b, int *same)
{
	struct stat sa, sb;

	if (stat(a, &sa) < 0 || stat(b, &sb) < 0)
		return -1;
	*same = sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	return 0;
}

/* proc_foreign(), quiet: -1 with errno set (what failed in *what). */
static int foreign(pid_t pid, const char **what)
{
	static pid_t last;
	static int last_foreign;
	char ns[64], root[64];
	int same_ns, same_root;

	if (pid == last)
		return last_foreign;
	snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", (int)pid);
	*what = "ns/mnt";
	if (same_file(ns, "/proc/self/ns/mnt", &same_ns) < 0)
		return -1;
	snprintf(root, sizeof(root), "/proc/%d/root/", (int)pid);
	*what = "root";
	if (same_file(root, "/", &same_root) < 0)
		return -1;
	last = pid;
	last_foreign = !same_ns || !same_root;
	return last_foreign;
}

int proc_foreign(pid_t pid)
{
	const char *what;
	int f = foreign(pid, &what);

	return f < 0 ? proc_error(pid, what, errno) : f;
}

int proc_foreign_quiet(pid_t pid)
{
	const char *what;

	return foreign(pid, &what);
}

/* The target of the link /proc/PID/NAME into BUF (SIZE bytes, ended by
 * a NUL): its length, or -1 with errno set. */
static ssize_t proc_link(pid_t pid, const char *name, char *buf, size_t size)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/%s", (int)pid, name);
	n = readlink(link, buf, size - 1);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

char *proc_mntns(pid_t pid)
{
	char buf[64];

	return proc_link(pid, "ns/mnt", buf, sizeof(buf)) < 0 ? NULL : xstrdup(buf);
}

/* The root directory of PID as the kernel renders it to us (readlink of
 * /proc/PID/root), kept for the last PID asked; NULL if unreadable.  A
 * chrooted process's root reads as its directory ("/srv/jail"), and the
 * kernel renders the paths in its exe link and maps the same way, with
 * that directory in front. */
static const char *root_seen(pid_t pid)
{
	static pid_t last;
	static char root[PATH_MAX];

	if (pid == last)
		return root;
	if (proc_link(pid, "root", root, sizeof(root)) < 0)
		return NULL;
	last = pid;
	return root;
}

int proc_file(pid_t pid, const char *path, char **out)
{
	int foreign = proc_foreign(pid);
	const char *root;
	size_t n;

	if (foreign < 0)
		return -1;
	if (!foreign) {
		*out = xstrdup(path);
		return 0;
	}
	/* the part of PATH under the process's root: the path it knows */
	root = root_seen(pid);
	n = root ? strlen(root) : 0;
	if (n > 1 && strncmp(path, root, n) == 0 && path[n] == '/')
		path += n;
	*out = xasprintf("/proc/%d/root%s", (int)pid, path);
	return 0;
}

int proc_exe(pid_t pid, char **out)
{
	char buf[PATH_MAX];

	if (proc_link(pid, "exe", buf, sizeof(buf)) < 0)
		return proc_error(pid, "exe", errno);
	strip_deleted(buf, "executable");
	if (proc_file(pid, buf, out) < 0)
		return -1;
	if (strcmp(*out, buf) != 0 && access(*out, R_OK) != 0) {
		char *ns = proc_mntns(pid);
		error("cannot read the executable of process %d, '%s' in its mount namespace "
		      "%s, as '%s': %s", (int)pid, buf, ns ? ns : "(unknown)", *out,
		      strerror(errno));
		free(ns);
		free(*out);
		*out = NULL;
		return -1;
	}
	if (strcmp(*out, buf) != 0) {
		char *ns = proc_mntns(pid);
		info(1, "process %d runs in another mount namespace (%s): its files are read "
		     "under /proc/%d/root", (int)pid, ns ? ns : "?", (int)pid);
		free(ns);
	}
	return 0;
}

char *proc_comm(pid_t pid)
{
	char path[64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return xstrdup(buf);
}

/* Runs ARGV (no shell; PATH searched) with ENVP, stdout+stderr captured
 * into OUT.  The exit status, or -1 if it could not run. */
static int run_capture_env(char *const argv[], char *const envp[],
			   struct buf *out)
{
	posix_spawn_file_actions_t fa;
	int fds[2], status;
	pid_t pid;
	char chunk[4096];

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (rc != 0) {
		close(fds[0]);
		errno = rc;
		return -1;
	}
	for (;;) {
		ssize_t n = read(fds[0], chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		buf_add(out, chunk, (size_t)n);
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int run_capture(char *const argv[], struct buf *out)
{
	return run_capture_env(argv, environ, out);
}

/* The program interpreter (PT_INTERP) of the ELF file PATH, malloc'd, or
 * NULL: not an ELF file, not dynamically linked, or none named. */
static char *elf_interp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *interp = NULL;
	size_t nph;
	Elf *elf;

	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	for (size_t i = 0; elf && elf_kind(elf) == ELF_K_ELF &&
			   elf_getphdrnum(elf, &nph) == 0 && i < nph && !interp; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_INTERP ||
		    ph.p_filesz < 2 || ph.p_filesz > PATH_MAX)
			continue;
		interp = xcalloc(1, ph.p_filesz + 1);
		if (pread(fd, interp, ph.p_filesz, (off_t)ph.p_offset) !=
			    (ssize_t)ph.p_filesz || interp[0] != '/' ||
		    strlen(interp) != ph.p_filesz - 1) {
			free(interp);
			interp = NULL;
			break;
		}
	}
	elf_end(elf);
	close(fd);
	return interp;
}

/* Whether the loader INTERP (a PT_INTERP) is the one this host runs its
 * programs with, stap++'s own: only that one is run on a target.  ldd
 * too runs only the system's loaders, never one that the file names (a
 * binary could name any program, and stap++ runs as root). */
static int trusted_loader(const char *interp)
{
	static char *self;	/* realpath of our PT_INTERP; "" if none */
	char real[PATH_MAX];

	if (!self) {
		char *mine = elf_interp("/proc/self/exe");
		self = xstrdup(mine && realpath(mine, real) ? real : "");
		free(mine);
	}
	return *self && realpath(interp, real) && strcmp(real, self) == 0;
}

/* What ldd prints for EXE, into OUT: its status, or -1 with errno.  ldd
 * is a shell script that runs the loader three times; the system's loader,
 * when EXE's PT_INTERP names it, run once in ldd's trace mode
 * (LD_TRACE_LOADED_OBJECTS), prints the same list: 6 ms against ldd's
 * 37 (stap++ asks once a run, the tests hundreds of times).  ldd itself
 * when EXE names no loader or another (a shared library, a static
 * executable, another ABI) or the loader fails. */
static int ldd_output(const char *exe, struct buf *out)
{
	char *interp = elf_interp(exe);

	if (interp && trusted_loader(interp)) {
		size_t n = 0;
		while (environ[n])
			n++;
		char **envp = xcalloc(n + 2, sizeof(*envp));
		envp[0] = "LD_TRACE_LOADED_OBJECTS=1";
		for (size_t i = 0, k = 1; i < n; i++)
			if (strncmp(environ[i], "LD_TRACE_LOADED_OBJECTS=", 24))
				envp[k++] = environ[i];
		char *argv[] = { interp, (char *)exe, NULL };
		int status = run_capture_env(argv, envp, out);
		free(envp);
		free(interp);
		if (status == 0)
			return 0;
		buf_free(out);	/* (ldd says why) */
	} else {
		free(interp);
	}
	char *argv[] = { "ldd", (char *)exe, NULL };
	return run_capture(argv, out);
}

/* Libraries of EXE by ldd, in load order.  MISSING == NULL: quiet (no
 * messages at all); else the libraries ldd cannot find go there, with a
 * warning. */
static int ldd_libs(const char *exe, struct strv *out, struct strv *missing)
{
	int quiet = !missing;
	struct buf b = {0};
	int status = ldd_output(exe, &b);
	char *line, *save = NULL;

	if (status < 0) {
		if (!quiet)
			error("cannot run 'ldd' on '%s': %s", exe,
			      strerror(errno));
		buf_free(&b);
		return -1;
	}
	if (!b.s || strstr(b.s, "not a dynamic executable") ||
	    strstr(b.s, "statically linked")) {
		info(1, "'%s' is statically linked", exe);
		buf_free(&b);
		return 0;
	}
	if (status != 0) {
		if (!quiet) {
			error("'ldd %s' failed:", exe);
			fputs(b.s, stderr);
		}
		buf_free(&b);
		return -1;
	}
	for (line = strtok_r(b.s, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *arrow = strstr(line, "=> "), *p, *e;
		char real[PATH_MAX];

		p = arrow ? arrow + 3 : line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "not found", 9) == 0) {
			if (!quiet) {
				char *name = line, *ne;
				while (*name == ' ' || *name == '\t')
					name++;
				ne = arrow ? arrow : name + strlen(name);
				while (ne > name && (ne[-1] == ' ' || ne[-1] == '\t'))
					ne--;
				warning("ldd cannot find library '%.*s' of '%s'",
					(int)(ne - name), name, exe);
				char *soname = xstrndup(name, (size_t)(ne - name));
				if (strv_find(missing, soname) < 0)
					strv_take(missing, soname);
				else
					free(soname);
			}
			continue;
		}
		if (*p != '/')
			continue;	/* linux-vdso.so.1 */
		e = strstr(p, " (0x");
		if (e)
			*e = '\0';
		if (!realpath(p, real))
			snprintf(real, sizeof(real), "%s", p);
		if (strv_find(out, real) < 0)
			strv_add(out, real);
	}
	buf_free(&b);
	return 0;
}

int exec_libs(const char *exe, struct strv *out, struct strv *missing)
{
	return ldd_libs(exe, out, missing);
}

static int is_shared_object(const char *path)
{
	const char *b = strrchr(path, '/');
	return strstr(b ? b + 1 : path, ".so") != NULL;
}

int proc_libs(pid_t pid, const char *exe, struct strv *out)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	struct strv mapped = {0}, order = {0};
	int foreign = proc_foreign(pid);
	FILE *f;

	if (foreign < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return proc_error(pid, "maps", errno);
	while (getline(&line, &cap, f) > 0) {
		char *p = strchr(line, '/');
		size_t n;
		if (!p)
			continue;
		n = strlen(p);
		if (n && p[n - 1] == '\n')
			p[--n] = '\0';
		if (!is_shared_object(p))
			continue;
		strip_deleted(p, "library");
		char *host;
		if (proc_file(pid, p, &host) < 0)	/* (known above: cached) */
			continue;
		if (strcmp(host, exe) == 0 || strv_find(&mapped, host) >= 0)
			free(host);
		else
			strv_take(&mapped, host);
	}
	free(line);
	if (ferror(f)) {
		int e = errno;
		fclose(f);
		strv_free(&mapped);
		return proc_error(pid, "maps", e);
	}
	fclose(f);
	/* Load order: what the loader loads at start-up first (ldd order),
	 * then libraries loaded later (dlopen) in address order. */
	if (!foreign) {
		ldd_libs(exe, &order, NULL);
	} else {
		/* ldd would load ours: the loader mapped each library below
		   the one before (mmap goes down), so the load order is by
		   address, highest first; the loader itself, which the kernel
		   mapped before them, comes last, as in ldd's list */
		for (size_t i = mapped.n; i-- > 0;) {
			const char *b = strrchr(mapped.v[i], '/');
			if (strncmp(b ? b + 1 : mapped.v[i], "ld-", 3) != 0)
				strv_add(&order, mapped.v[i]);
		}
	}
	for (size_t i = 0; i < order.n; i++)
		if (strv_find(&mapped, order.v[i]) >= 0 &&
		    strv_find(out, order.v[i]) < 0)
			strv_add(out, order.v[i]);
	for (size_t i = 0; i < mapped.n; i++)
		if (strv_find(out, mapped.v[i]) < 0)
			strv_add(out, mapped.v[i]);
	strv_free(&order);
	strv_free(&mapped);
	return 0;
}

int proc_children(pid_t pid, pid_t **out, size_t *n)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (!d)
		return error("cannot read '/proc': %s", strerror(errno));
	while ((de = readdir(d))) {
		char path[300], buf[512], *p;
		int fd;
		ssize_t len;
		long ppid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		/* "pid (comm) state ppid ..."; comm may contain ')' */
		p = strrchr(buf, ')');
		if (!p || sscanf(p + 1, " %*c %ld", &ppid) != 1)
			continue;
		if (ppid != pid)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			*out = xrealloc(*out, cap * sizeof(**out));
		}
		(*out)[(*n)++] = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	return 0;
}

int resolve_exec(const char *path, char **out)
{
	char real[PATH_MAX], magic[4];
	char *found = NULL;
	struct stat st;
	int fd;

	if (!*path)
		return error("empty executable path");
	if (!strchr(path, '/')) {
		found = path_lookup(path);
		if (!found)
			return error("cannot find executable '%s' in $PATH",
				     path);
	}
	if (!realpath(found ? found : path, real)) {
		int e = errno;
		error("cannot use executable '%s': %s", found ? found : path,
		      strerror(e));
		free(found);
		return -1;
	}
	free(found);
	if (stat(real, &st) < 0 || !S_ISREG(st.st_mode))
		return error("'%s' is not a regular file", real);
	fd = open(real, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return error("cannot read '%s': %s", real, strerror(errno));
	if (read(fd, magic, 4) != 4 || memcmp(magic, "\177ELF", 4) != 0) {
		close(fd);
		error("'%s' is not an ELF executable", real);
		hint("give the binary itself, not a wrapper script");
		return -1;
	}
	close(fd);
	*out = xstrdup(real);
	return 0;
}

char *comm_of(const char *path)
{
	const char *b = strrchr(path, '/');
	return xstrndup(b ? b + 1 : path, 15);
}
