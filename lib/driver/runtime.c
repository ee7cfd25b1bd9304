/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * runtime.c - SystemTap 4.8 runtime fixes for Debian 12's 6.1.1xx kernels.
 *
 * Both fixes are decided from what is installed, not from version numbers:
 * the runtime's own source tells whether it already copes, the target
 * kernel's headers tell whether the kernel needs it.
 *
 *  fix 1 (task_work_cancel_func): needed when the kernel headers declare
 *    task_work_cancel_func() and runtime/stp_task_work.c does not use it.
 *    stp_task_work.c then takes the type of task_work_cancel_func and looks
 *    that symbol up in kallsyms (it is not exported) instead of
 *    task_work_cancel, which now takes a struct callback_head *.
 *
 *  fix 2 (user_addr_max): needed when runtime/linux/addr-map.c tests
 *    `defined(user_addr_max)` and the kernel's uaccess headers no longer
 *    define it.  Without it lookup_bad_addr_user() rejects every user
 *    address outside task context, so each user read from timer.profile or
 *    perf probes faults.  The fix defines user_addr_max() as TASK_SIZE_MAX
 *    just before that function, so the range check it guards comes back.
 *
 *  fix 3 (mmap_read_lock): needed when runtime/linux/task_finder2.c reads
 *    the memory map of a process it attaches to with mmap_read_trylock()
 *    and the kernel has mmap_read_lock_killable().  SystemTap reads the map
 *    of a process that already runs once, when it attaches, in the
 *    process's own context (its task work, where it may sleep); when the
 *    trylock failed there (another thread, or khugepaged, held the lock for
 *    writing) the process had no memory map for the whole session: every
 *    @var in it was 0 and its symbols unknown, and nothing said so.  In the
 *    VM, half the attaches to a process with a thread calling mprotect() in
 *    a loop failed so (docs/design.md).  The fix waits for the lock.
 *
 * The patched copy lives in CACHE/stap++/runtime-<hash>, where <hash> covers
 * every installed runtime file's path and contents plus the set of fixes, so
 * a changed runtime (or another kernel needing other fixes) gets a new copy.
 * The copy is made in a temporary dir and renamed into place, so concurrent
 * runs never see half a runtime.
 */
#include "driver/runtime.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "driver/cache.h"
#include "driver/stap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <unistd.h>

#define FIX_TASK_WORK_CANCEL 1u
#define FIX_USER_ADDR_MAX    2u
#define FIX_MMAP_READ_LOCK   4u
/* Their names, by bit. */
static const char *const fix_name[] = { "task_work_cancel_func", "user_addr_max", "mmap_read_lock" };
/* Bump when the edits below change, so old cached copies are not reused. */
#define FIXES_VERSION "stap++ runtime fixes 2"
#define STAMP_NAME ".stap++-runtime-fix"

/* One textual edit: replace ANCHOR in FILE (relative to the runtime dir) by
 * REPLACEMENT; every occurrence when ALL is set, else exactly one. */
struct edit {
	unsigned fix;
	const char *file;
	const char *anchor;
	const char *replacement;
	int all;
};

static const struct edit edits[] = {
	{ FIX_TASK_WORK_CANCEL, "stp_task_work.c",
	  "#if !defined(STAPCONF_TASK_WORK_CANCEL_EXPORTED)",
	  "#if 1 /* stap++ runtime fix 1: task_work_cancel_func is not exported */", 1 },
	{ FIX_TASK_WORK_CANCEL, "stp_task_work.c",
	  "typedef typeof(&task_work_cancel) task_work_cancel_fn;",
	  "/* stap++ runtime fix 1: the kernel's task_work_cancel() takes a\n"
	  " * callback_head; cancelling by function is task_work_cancel_func(). */\n"
	  "typedef typeof(&task_work_cancel_func) task_work_cancel_fn;", 0 },
	{ FIX_TASK_WORK_CANCEL, "stp_task_work.c",
	  "kallsyms_lookup_name(\"task_work_cancel\")",
	  "kallsyms_lookup_name(\"task_work_cancel_func\")", 0 },
	{ FIX_TASK_WORK_CANCEL, "stp_task_work.c",
	  "Can't resolve task_work_cancel!",
	  "Can't resolve task_work_cancel_func!", 0 },
	{ FIX_USER_ADDR_MAX, "linux/addr-map.c",
	  "static int\nlookup_bad_addr_user(",
	  "/* stap++ runtime fix 2: 6.x kernels no longer define user_addr_max(),\n"
	  " * which made lookup_bad_addr_user() reject every user address outside\n"
	  " * task context (timer.profile, perf). */\n"
	  "#if !defined(user_addr_max)\n"
	  "#include <asm/processor.h>\n"
	  "#define user_addr_max() TASK_SIZE_MAX\n"
	  "#endif\n"
	  "\n"
	  "static int\nlookup_bad_addr_user(", 0 },
	{ FIX_MMAP_READ_LOCK, "linux/task_finder2.c",
	  "\tif (! mmap_read_trylock(mm)) {\n\t\t_stp_kfree(mmpath_buf);\n",
	  "\t/* stap++ runtime fix 3: this runs in the task's own context, where\n"
	  "\t * it may sleep (__stp_tf_quiesce_worker).  A failed trylock left the\n"
	  "\t * process without a memory map for the whole session (@var 0, no\n"
	  "\t * symbols), silently: wait for the lock instead. */\n"
	  "\tif (mmap_read_lock_killable(mm)) {\n\t\t_stp_kfree(mmpath_buf);\n", 0 },
};

static int file_contains(const char *path, const char *needle)
{
	char *s = read_file(path, NULL);
	int found = s && strstr(s, needle);
	free(s);
	return found;
}

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* --- where things are ----------------------------------------------------- */

/* PREFIX/share/systemtap/runtime for the stap executable STAP (a path), or
 * NULL. Caller frees. */
static char *runtime_of(const char *stap)
{
	char real[PATH_MAX];
	if (access(stap, X_OK) < 0 || !realpath(stap, real))
		return NULL;
	for (int up = 0; up < 2; up++) {	/* PREFIX/bin/stap -> PREFIX */
		char *slash = strrchr(real, '/');
		if (!slash)
			return NULL;
		*slash = '\0';
	}
	char *rt = xasprintf("%s/share/systemtap/runtime", real);
	if (is_dir(rt))
		return rt;
	free(rt);
	return NULL;
}

/* The installed runtime: $SYSTEMTAP_RUNTIME, else the runtime of the stap
 * that stap++ runs (stap_binary(), a bare name looked up in $PATH), else
 * /usr/share/systemtap/runtime. NULL if none exists. Caller frees. */
static char *find_runtime(void)
{
	const char *env = getenv("SYSTEMTAP_RUNTIME");
	if (env && *env)
		return is_dir(env) ? xstrdup(env) : NULL;
	const char *stap = stap_binary();
	char *rt = NULL;
	if (strchr(stap, '/')) {
		rt = runtime_of(stap);
	} else {
		char *p = path_lookup(stap);
		if (p)
			rt = runtime_of(p);
		free(p);
	}
	if (!rt && is_dir("/usr/share/systemtap/runtime"))
		rt = xstrdup("/usr/share/systemtap/runtime");
	return rt;
}

/* The target kernel's header trees, most specific first: the build and
 * source links in /lib/modules/KREL, /usr/src/linux-headers-KREL and
 * Debian's shared /usr/src/linux-headers-VERSION-ABI-common. Returns how
 * many were found (up to 4); the strings are malloc'd. */
static int find_headers(const char *krel, char *dirs[4])
{
	int n = 0;
	char *cand[4];
	cand[0] = xasprintf("/lib/modules/%s/build", krel);
	cand[1] = xasprintf("/lib/modules/%s/source", krel);
	cand[2] = xasprintf("/usr/src/linux-headers-%s", krel);
	const char *dash = strrchr(krel, '-');
	cand[3] = dash ? xasprintf("/usr/src/linux-headers-%.*s-common", (int)(dash - krel), krel)
		       : xstrdup("");
	for (int i = 0; i < 4; i++) {
		char real[PATH_MAX];
		int dup = 0;
		if (!*cand[i] || !realpath(cand[i], real) || !is_dir(real)) {
			free(cand[i]);
			continue;
		}
		for (int j = 0; j < n; j++)
			dup |= strcmp(dirs[j], real) == 0;
		if (!dup)
			dirs[n++] = xstrdup(real);
		free(cand[i]);
	}
	return n;
}

/* Does any header tree hold RELPATH containing NEEDLE? */
static int headers_contain(char **dirs, int n, const char *const *relpaths, const char *needle)
{
	for (int i = 0; i < n; i++)
		for (const char *const *r = relpaths; *r; r++) {
			char *p = xasprintf("%s/%s", dirs[i], *r);
			int found = file_contains(p, needle);
			free(p);
			if (found)
				return 1;
		}
	return 0;
}

/* Which fixes KREL needs with the runtime in RT (a FIX_* mask). */
static unsigned needed_fixes(const char *rt, char **hdrs, int nhdrs)
{
	static const char *const task_work_h[] = { "include/linux/task_work.h", NULL };
	static const char *const uaccess_h[] = {
		"arch/x86/include/asm/uaccess.h", "arch/x86/include/asm/uaccess_64.h",
		"include/linux/uaccess.h", "include/asm-generic/uaccess.h", NULL };
	static const char *const mmap_lock_h[] = { "include/linux/mmap_lock.h", NULL };
	unsigned fixes = 0;
	char *p;

	p = xasprintf("%s/stp_task_work.c", rt);
	if (headers_contain(hdrs, nhdrs, task_work_h, "task_work_cancel_func") &&
	    !file_contains(p, "task_work_cancel_func"))
		fixes |= FIX_TASK_WORK_CANCEL;
	free(p);

	p = xasprintf("%s/linux/addr-map.c", rt);
	if (file_contains(p, "defined(user_addr_max)") &&
	    !file_contains(p, "define user_addr_max") &&
	    !headers_contain(hdrs, nhdrs, uaccess_h, "define user_addr_max"))
		fixes |= FIX_USER_ADDR_MAX;
	free(p);

	p = xasprintf("%s/linux/task_finder2.c", rt);
	if (file_contains(p, "if (! mmap_read_trylock(mm)) {\n\t\t_stp_kfree(mmpath_buf);") &&
	    headers_contain(hdrs, nhdrs, mmap_lock_h, "mmap_read_lock_killable"))
		fixes |= FIX_MMAP_READ_LOCK;
	free(p);
	return fixes;
}

/* --- hashing and copying the runtime ------------------------------------------ */

static int skip_entry(const struct dirent *d)
{
	return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

/* Hash the tree SRC/REL (paths and contents, in sorted order) into *H and,
 * when DST is set, copy it to DST/REL. */
static int walk(const char *src, const char *dst, const char *rel, uint64_t *h)
{
	char *sdir = *rel ? xasprintf("%s/%s", src, rel) : xstrdup(src);
	struct dirent **ents;
	int n = scandir(sdir, &ents, skip_entry, alphasort);
	if (n < 0) {
		error("cannot read the SystemTap runtime dir '%s': %s", sdir, strerror(errno));
		free(sdir);
		return -1;
	}
	int rc = 0;
	for (int i = 0; i < n; i++) {
		char *r = *rel ? xasprintf("%s/%s", rel, ents[i]->d_name) : xstrdup(ents[i]->d_name);
		char *s = xasprintf("%s/%s", src, r);
		struct stat st;
		if (rc == 0 && stat(s, &st) < 0)
			rc = error("cannot read '%s': %s", s, strerror(errno));
		if (rc == 0 && S_ISDIR(st.st_mode)) {
			cache_hash(h, "d", 1);
			cache_hash(h, r, strlen(r) + 1);
			if (dst) {
				char *d = xasprintf("%s/%s", dst, r);
				if (mkdir(d, 0755) < 0)
					rc = error("cannot create '%s': %s", d, strerror(errno));
				free(d);
			}
			if (rc == 0)
				rc = walk(src, dst, r, h);
		} else if (rc == 0 && S_ISREG(st.st_mode)) {
			size_t len;
			char *data = read_file(s, &len);
			if (!data) {
				rc = error("cannot read '%s': %s", s, strerror(errno));
			} else {
				cache_hash(h, "f", 1);
				cache_hash(h, r, strlen(r) + 1);
				cache_hash(h, data, len);
				if (dst) {
					char *d = xasprintf("%s/%s", dst, r);
					rc = write_file(d, data, len, st.st_mode & 0777);
					free(d);
				}
				free(data);
			}
		}
		free(s);
		free(r);
		free(ents[i]);
	}
	free(ents);
	free(sdir);
	return rc;
}

/* Apply every edit of the fixes in FIXES to the runtime copy in DIR. */
static int apply_edits(const char *dir, unsigned fixes)
{
	for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
		const struct edit *e = &edits[i];
		if (!(fixes & e->fix))
			continue;
		char *path = xasprintf("%s/%s", dir, e->file);
		size_t len;
		char *text = read_file(path, &len);
		if (!text) {
			error("cannot read '%s': %s", path, strerror(errno));
			free(path);
			return -1;
		}
		size_t alen = strlen(e->anchor), rlen = strlen(e->replacement);
		int count = 0;
		for (const char *s = text; (s = strstr(s, e->anchor)); s += alen)
			count++;
		if (count == 0 || (count > 1 && !e->all)) {
			error("cannot apply SystemTap runtime fix %u: '%s' has %s of \"%.40s\"",
			      (unsigned)__builtin_ctz(e->fix) + 1, e->file,
			      count ? "several copies" : "no copy", e->anchor);
			hint("the installed runtime differs from the SystemTap 4.8 runtime these fixes are for");
			free(text);
			free(path);
			return -1;
		}
		char *out = xmalloc(len + (size_t)count * rlen + 1), *o = out;
		const char *s = text, *m;
		while ((m = strstr(s, e->anchor))) {
			memcpy(o, s, (size_t)(m - s));
			o += m - s;
			memcpy(o, e->replacement, rlen);
			o += rlen;
			s = m + alen;
		}
		strcpy(o, s);
		o += strlen(s);
		int rc = write_file(path, out, (size_t)(o - out), 0644);
		free(out);
		free(text);
		free(path);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* The names of FIXES, comma-separated (the caller frees it). */
static char *fix_names(unsigned fixes)
{
	struct buf b = {0};
	for (unsigned i = 0; i < sizeof fix_name / sizeof fix_name[0]; i++)
		if (fixes & (1u << i))
			buf_addf(&b, "%s%s", b.len ? ", " : "", fix_name[i]);
	return buf_steal(&b);
}

/* cache_entry()'s FILL for the runtime: a copy of it with the fixes. */
struct patch {
	const char *rt, *krelease, *names;
	unsigned fixes;
};

static int patch_runtime(const char *tmp, const char *dir, void *ctx)
{
	const struct patch *pc = ctx;
	uint64_t h = 0;

	info(1, "patching a copy of SystemTap runtime '%s' into '%s' (fixes for kernel '%s': %s)",
	     pc->rt, dir, pc->krelease, pc->names);
	if (walk(pc->rt, tmp, "", &h) < 0)
		return -1;
	return apply_edits(tmp, pc->fixes);
}

int runtime_fix(const char *krelease, char **dir_out)
{
	*dir_out = NULL;
	struct utsname u;
	if (!krelease) {
		if (uname(&u) < 0)
			return error("cannot get the kernel release: %s", strerror(errno));
		krelease = u.release;
	}

	char *rt = find_runtime();
	if (!rt) {
		info(1, "no SystemTap runtime found, no runtime fix");
		return 0;
	}
	char *hdrs[4];
	int nhdrs = find_headers(krelease, hdrs);
	if (nhdrs == 0) {
		info(1, "no kernel headers for '%s', no runtime fix", krelease);
		free(rt);
		return 0;
	}
	unsigned fixes = needed_fixes(rt, hdrs, nhdrs);
	for (int i = 0; i < nhdrs; i++)
		free(hdrs[i]);
	if (!fixes) {
		info(1, "SystemTap runtime '%s' needs no fix for kernel '%s'", rt, krelease);
		free(rt);
		return 0;
	}

	uint64_t h = CACHE_HASH_INIT;
	cache_hash(&h, FIXES_VERSION, sizeof FIXES_VERSION);
	cache_hash(&h, &fixes, sizeof fixes);
	if (walk(rt, NULL, "", &h) < 0) {
		free(rt);
		return -1;
	}
	char *names = fix_names(fixes);
	char *note = xasprintf("SystemTap runtime %s patched by stap++ for kernel %s: %s\n",
			       rt, krelease, names);
	struct patch pc = { rt, krelease, names, fixes };
	*dir_out = cache_entry("runtime", STAMP_NAME, h, "the patched SystemTap runtime", note, patch_runtime, &pc);
	if (*dir_out)
		info(1, "using the patched SystemTap runtime '%s' (fixes for kernel '%s': %s)",
		     *dir_out, krelease, names);
	free(note);
	free(names);
	free(rt);
	return *dir_out ? 0 : -1;
}

int kernel_arg(const char *arg, char **tree_out, char **krel_out)
{
	*tree_out = *krel_out = NULL;
	if (!strchr(arg, '/')) {
		*krel_out = xstrdup(arg);
		return 0;
	}
	char *tree = realpath(arg, NULL);
	struct stat st;
	if (!tree || stat(tree, &st) < 0 || !S_ISDIR(st.st_mode)) {
		error("'-r %s': %s", arg, tree ? strerror(ENOTDIR) : strerror(errno));
		hint("-r takes a kernel release (uname -r) or a kernel build tree");
		free(tree);
		return -1;
	}
	char *path = xasprintf("%s/include/config/kernel.release", tree);
	size_t len;
	char *rel = read_file(path, &len);
	free(path);
	while (rel && len > 0 && (rel[len - 1] == '\n' || rel[len - 1] == ' '))
		rel[--len] = '\0';
	if (!rel || len == 0 || strchr(rel, '\n')) {
		error("'-r %s': no include/config/kernel.release in it", arg);
		hint("a kernel build tree holds the release it was built for there");
		hint("'make deps' builds one for the VM's kernel in build/kernel/KREL");
		free(rel);
		free(tree);
		return -1;
	}
	*tree_out = tree;
	*krel_out = rel;
	return 0;
}
