/* SPDX-License-Identifier: GPL-2.0-or-later */
/* stap.c - see stap.h. */
#include "driver/stap.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "expand/expand.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The temp dir and everything created in it, deepest last, so a signal
 * handler can remove them with unlink()/rmdir() only.  Updated with the
 * signals blocked. */
#define MAX_TMP 256
/* what stap++ still relays from stap's stderr pipe once stap has exited
 * (a daemon of -c CMD may keep writing to it) */
#define RELAY_AFTER_EXIT (1u << 20)
static char tmp_root[PATH_MAX];
static char *tmp_paths[MAX_TMP];	/* files and subdirs, in creation order */
static int tmp_isdir[MAX_TMP];
static volatile sig_atomic_t tmp_count;
static int tmp_keep;
static volatile pid_t child_pid;

static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

static void remove_all(void)
{
	if (!tmp_root[0] || tmp_keep)
		return;
	for (int i = tmp_count - 1; i >= 0; i--) {
		if (tmp_isdir[i])
			rmdir(tmp_paths[i]);
		else
			unlink(tmp_paths[i]);
	}
	rmdir(tmp_root);
	tmp_root[0] = '\0';
}

static void on_signal(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	if (child_pid > 0) {
		/* Ctrl-C from the terminal already reached stap (same
		 * process group); a signal sent to us alone is passed on. */
		if (si->si_code == SI_USER || si->si_code == SI_QUEUE ||
		    sig != SIGINT)
			kill(child_pid, sig);
		return;
	}
	remove_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void block_signals(sigset_t *old)
{
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(cleanup_signals) / sizeof(int); i++)
		sigaddset(&set, cleanup_signals[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

const char *tmpdir_create(void)
{
	const char *base = getenv("TMPDIR");
	struct sigaction sa;
	sigset_t old;

	if (tmp_root[0])
		return tmp_root;
	if (!base || !*base)
		base = "/tmp";
	if (snprintf(tmp_root, sizeof(tmp_root), "%s/stap++-XXXXXX", base) >=
	    (int)sizeof(tmp_root)) {
		tmp_root[0] = '\0';
		error("temporary directory path too long ($TMPDIR='%s')", base);
		return NULL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	block_signals(&old);
	if (!mkdtemp(tmp_root)) {
		int e = errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		error("cannot create a temporary directory in '%s': %s", base,
		      strerror(e));
		tmp_root[0] = '\0';
		return NULL;
	}
	for (size_t i = 0; i < sizeof(cleanup_signals) / sizeof(int); i++)
		sigaction(cleanup_signals[i], &sa, NULL);
	atexit(remove_all);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return tmp_root;
}

static int track(char *path, int isdir)
{
	sigset_t old;

	if (tmp_count >= MAX_TMP) {
		free(path);
		return error("too many files in the temporary directory");
	}
	block_signals(&old);
	tmp_paths[tmp_count] = path;
	tmp_isdir[tmp_count] = isdir;
	tmp_count++;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return 0;
}

char *tmpdir_write(const char *rel, const char *data, size_t len)
{
	const char *slash;
	char *path;

	if (!tmp_root[0] && !tmpdir_create())
		return NULL;
	for (slash = strchr(rel, '/'); slash; slash = strchr(slash + 1, '/')) {
		char *dir = xasprintf("%s/%.*s", tmp_root, (int)(slash - rel),
				      rel);
		int known = 0;
		for (int i = 0; i < tmp_count; i++)
			known |= tmp_isdir[i] && strcmp(tmp_paths[i], dir) == 0;
		if (known) {
			free(dir);
		} else {
			if (mkdir(dir, 0700) < 0) {
				error("cannot create '%s': %s", dir,
				      strerror(errno));
				free(dir);
				return NULL;
			}
			if (track(dir, 1) < 0)
				return NULL;
		}
	}
	path = xasprintf("%s/%s", tmp_root, rel);
	/* tracked before it exists, so a signal never leaves it behind */
	if (track(xstrdup(path), 0) < 0 || write_file(path, data, len, 0644) < 0) {
		free(path);
		return NULL;
	}
	return path;
}

char *tmpdir_copy(const char *rel, const char *from)
{
	size_t len;
	char *data = read_file(from, &len), *path;

	if (!data) {
		error("cannot read '%s': %s", from, strerror(errno));
		return NULL;
	}
	path = tmpdir_write(rel, data, len);
	free(data);
	return path;
}

const char *tmpdir_path(void)
{
	return tmp_root[0] ? tmp_root : NULL;
}

void tmpdir_keep(void)
{
	tmp_keep = 1;
}

static int in_group(const char *name)
{
	struct group *g = getgrnam(name);
	gid_t groups[256];
	int n;

	if (!g)
		return 0;
	if (getegid() == g->gr_gid)
		return 1;
	n = getgroups(256, groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == g->gr_gid)
			return 1;
	return 0;
}

int stap_check_privilege(pid_t pid)
{
	if (geteuid() == 0 || in_group("stapusr"))
		return 0;
	if (pid > 0)
		error("cannot trace process %d: stap++ is not running as root "
		      "(uid %d)", (int)pid, (int)geteuid());
	else
		error("running the probes needs root: stap++ is running as "
		      "uid %d", (int)geteuid());
	hint("run it as root (sudo), or join the 'stapusr' group; or build "
	     "the module with -p4 and load it as root with staprun");
	return -1;
}

const char *stap_binary(void)
{
	const char *s = getenv("STAPXX_STAP");
	return s && *s ? s : "stap";
}

static const char *const default_defines[] = {
	"MAXACTION=100000", "MAXMAPENTRIES=5000", "MAXBACKTRACE=200",
	"MAXSTRINGLEN=2048",
	/* SystemTap ends a session after 100 skipped probes (a probe that
	   waited too long for a lock, or fired while another ran on its CPU);
	   each costs one sample, and a long session reaches 100 (make soak).
	   They are still counted and printed at the end. */
	"MAXSKIPPED=100000",
};

static int overridden(const struct stap_opts *o, const char *def)
{
	size_t n = strcspn(def, "=");

	for (size_t i = 0; i < o->defines.n; i++) {
		const char *u = o->defines.v[i];
		if (strncmp(u, def, n) == 0 && (u[n] == '=' || u[n] == '\0'))
			return 1;
	}
	return 0;
}

static void add2(struct strv *out, const char *opt, const char *val)
{
	strv_add(out, opt);
	strv_add(out, val);
}

void stap_argv(const struct stap_opts *o, struct strv *out)
{
	strv_add(out, stap_binary());
	for (int i = 0; i < o->verbose; i++)
		strv_add(out, "-v");
	for (size_t i = 0; i < sizeof(default_defines) / sizeof(char *); i++)
		if (!overridden(o, default_defines[i]))
			add2(out, "-D", default_defines[i]);
	for (size_t i = 0; i < o->defines.n; i++)
		add2(out, "-D", o->defines.v[i]);
	for (size_t i = 0; i < o->dpaths.n; i++)
		add2(out, "-d", o->dpaths.v[i]);
	if (o->sysroot)
		strv_take(out, xasprintf("--sysroot=%s", o->sysroot));
	if (o->tapset_dir)
		add2(out, "-I", o->tapset_dir);
	if (o->pid > 0) {
		char pid[32];
		snprintf(pid, sizeof(pid), "%d", (int)o->pid);
		add2(out, "-x", pid);
	}
	if (o->master > 0) {
		char g[64];
		snprintf(g, sizeof(g), STAPXX_MASTER "=%d", (int)o->master);
		add2(out, "-G", g);
	}
	if (o->cmd)
		add2(out, "-c", o->cmd);
	if (o->pass)
		add2(out, "-p", o->pass);
	if (o->module)
		add2(out, "-m", o->module);
	if (o->sysroot && (!o->krelease || !strchr(o->krelease, '/'))) {
		/* stap would look for the kernel's build tree in the sysroot,
		   which holds only the target's files: the host's, by path */
		struct utsname u;
		const char *rel = o->krelease ? o->krelease : uname(&u) == 0 ? u.release : "";
		strv_add(out, "-r");
		strv_take(out, xasprintf("/lib/modules/%s/build", rel));
	} else if (o->krelease) {
		add2(out, "-r", o->krelease);
	}
	if (o->runtime)
		add2(out, "-R", o->runtime);
	if (o->outfile)
		add2(out, "-o", o->outfile);
	for (size_t i = 0; i < o->kbuild.n; i++)
		add2(out, "-B", o->kbuild.v[i]);
	if (o->keep)
		strv_add(out, "-k");
	if (o->skip_badvars)
		strv_add(out, "--skip-badvars");
	for (size_t i = 0; i < o->extra.n; i++)
		strv_add(out, o->extra.v[i]);
	strv_add(out, o->script);
	for (size_t i = 0; i < o->script_args.n; i++)
		strv_add(out, o->script_args.v[i]);
}

/* Write LINE (N bytes) to stderr with the FROM -> TO replacements. */
static void map_line(const char *line, size_t n, char *const from[],
		     char *const to[], size_t nmap)
{
	struct buf b = {0};
	size_t i = 0;

	while (i < n) {
		size_t k;
		for (k = 0; k < nmap; k++) {
			size_t m = strlen(from[k]);
			if (m && m <= n - i && memcmp(line + i, from[k], m) == 0) {
				buf_adds(&b, to[k]);
				i += m;
				break;
			}
		}
		if (k == nmap)
			buf_addc(&b, line[i++]);
	}
	for (size_t off = 0; off < b.len;) {
		ssize_t w = write(2, b.s + off, b.len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	buf_free(&b);
}

int stap_run(char *const argv[], char *const from[], char *const to[],
	     size_t nmap, const char *dir)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none;
	int fds[2], status = 0, rc, dfd = -1, exited = 0;
	pid_t pid;
	struct buf pending = {0};
	char chunk[4096];

	if (dir) {
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd == STAP_DIR_FD) {
			/* dup2 onto itself would keep O_CLOEXEC */
			int other = fcntl(dfd, F_DUPFD_CLOEXEC, STAP_DIR_FD + 1);
			close(dfd);
			dfd = other;
		}
		if (dfd < 0)
			return error("cannot open '%s': %s", dir, strerror(errno));
	}
	if (pipe2(fds, O_CLOEXEC) < 0) {
		int e = errno;
		if (dfd >= 0)
			close(dfd);
		return error("cannot create a pipe: %s", strerror(e));
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
	if (dfd >= 0)
		posix_spawn_file_actions_adddup2(&fa, dfd, STAP_DIR_FD);
	posix_spawnattr_init(&attr);
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&attr, &none);
	/* stap++ ignores SIGPIPE while stap runs (a closed stderr reader
	 * must not kill it before it removes its temp dir); stap gets the
	 * default back */
	{
		sigset_t def;
		sigemptyset(&def);
		sigaddset(&def, SIGPIPE);
		posix_spawnattr_setsigdefault(&attr, &def);
	}
	signal(SIGPIPE, SIG_IGN);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
					POSIX_SPAWN_SETSIGDEF);
	{
		sigset_t old;
		block_signals(&old);
		rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
		if (rc == 0)
			child_pid = pid;
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(fds[1]);
	if (dfd >= 0)
		close(dfd);
	if (rc != 0) {
		close(fds[0]);
		error("cannot run '%s': %s", argv[0], strerror(rc));
		if (rc == ENOENT)
			hint("install SystemTap (apt-get install systemtap), "
			     "or point $STAPXX_STAP at stap");
		return -1;
	}
	/* Relay stap's stderr until stap exits.  Not until EOF: a daemon
	 * started by -c CMD inherits the pipe and may hold it open for good;
	 * once stap is gone, only what is already in the pipe is relayed. */
	for (size_t after = 0; after < RELAY_AFTER_EXIT;) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		int r = poll(&p, 1, exited ? 0 : 100);
		ssize_t n;
		char *nl;

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			if (exited)
				break;
			r = waitpid(pid, &status, WNOHANG);
			if (r == pid || (r < 0 && errno != EINTR))
				exited = r == pid ? 1 : -1;
			continue;
		}
		if (r < 0)
			break;
		n = read(fds[0], chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (exited)
			after += (size_t)n;
		buf_add(&pending, chunk, (size_t)n);
		while (pending.len && (nl = memchr(pending.s, '\n', pending.len))) {
			size_t len = (size_t)(nl - pending.s) + 1;
			map_line(pending.s, len, from, to, nmap);
			memmove(pending.s, pending.s + len, pending.len - len);
			pending.len -= len;
		}
	}
	if (pending.len)
		map_line(pending.s, pending.len, from, to, nmap);
	buf_free(&pending);
	close(fds[0]);
	while (exited <= 0 && waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			child_pid = 0;
			return error("waiting for '%s': %s", argv[0],
				     strerror(errno));
		}
	}
	child_pid = 0;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_FAIL;
}
