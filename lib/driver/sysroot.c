/* SPDX-License-Identifier: GPL-2.0-or-later */
/* driver/sysroot.c - see driver/sysroot.h. */
#include "driver/sysroot.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "driver/cache.h"
#include "driver/stap.h"
#include "driver/symbols.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYSROOT_VERSION "stap++ sysroot 1"

/* (stap resolves its sysroot to a real path, and /proc/PID/root reads as
 * "/": the files are copied, not linked) */
int sysroot_container(struct stap_opts *s, const char *root, char **dir)
{
	if (!tmpdir_create())
		return -1;
	for (size_t i = 0; i < s->dpaths.n; i++) {
		const char *p = s->dpaths.v[i], *t = path_under(root, p);
		char *rel, *copy;
		if (p[0] != '/')
			continue;	/* a kernel module's name */
		rel = xasprintf("sysroot%s", t);
		copy = tmpdir_copy(rel, p);
		free(rel);
		if (!copy)
			return -1;
		free(copy);
		char *own = xstrdup(t);
		free(s->dpaths.v[i]);
		s->dpaths.v[i] = own;
	}
	*dir = xasprintf("%s/sysroot", tmpdir_path());
	info(1, "a target in another mount namespace: its binaries copied to '%s' "
	     "for stap --sysroot", *dir);
	return 0;
}

/* The files of a sysroot that name functions for stap (symbols.h). */
struct naming {
	const struct strv *dpaths;	/* every -d file: copied */
	struct strv paths;	/* the copies to rewrite, */
	unsigned char *funcs;	/* each: all its functions named, */
	const struct allocf *af;	/* the allocator's file: it named */
	const char *root;	/* a container's root (the files' paths in it) */
};

static int name_copies(const char *sysroot, const struct naming *n)
{
	int rc = 0;
	for (size_t i = 0; i < n->paths.n && rc == 0; i++) {
		const char *p = n->paths.v[i];
		int is_af = n->af && strcmp(p, n->af->path) == 0;
		struct symbols_extra ex = { ALLOCF_SYM, is_af ? n->af->vaddr : 0 };
		char *copy = xasprintf("%s%s", sysroot, p);
		char *shown = xasprintf("%s%s", n->root ? n->root : "", p);
		rc = symbols_write(copy, shown, n->funcs[i], is_af ? &ex : NULL);
		free(shown);
		free(copy);
	}
	return rc;
}

/* cache_entry()'s FILL for a host target's sysroot: a copy of each -d
 * file at its path, the host's /usr/lib/debug as a link (stap looks for
 * separate debug files under the sysroot too), and the copies named. */
static int fill_sysroot(const char *dir, const char *entry, void *ctx)
{
	(void)entry;
	const struct naming *n = ctx;
	for (size_t i = 0; i < n->dpaths->n; i++) {
		const char *p = n->dpaths->v[i];
		size_t len;
		char *data, *copy, *slash;
		struct stat st;
		int rc;
		if (p[0] != '/')
			continue;
		if (stat(p, &st) < 0 || !(data = read_file(p, &len)))
			return error("cannot read '%s': %s", p, strerror(errno));
		copy = xasprintf("%s%s", dir, p);
		slash = strrchr(copy, '/');
		*slash = '\0';
		rc = cache_mkdir_p(copy);
		*slash = '/';
		if (rc == 0)
			rc = write_file(copy, data, len, st.st_mode & 0755);
		free(data);
		free(copy);
		if (rc < 0)
			return -1;
	}
	if (access("/usr/lib/debug", F_OK) == 0) {
		char *l = xasprintf("%s/usr/lib/debug", dir), *parent = xasprintf("%s/usr/lib", dir);
		int rc = cache_mkdir_p(parent);
		if (rc == 0 && symlink("/usr/lib/debug", l) < 0 && errno != EEXIST)
			rc = error("cannot create '%s': %s", l, strerror(errno));
		free(parent);
		free(l);
		if (rc < 0)
			return -1;
	}
	return name_copies(dir, n);
}

/* The hash of a host target's sysroot: what fill_sysroot makes it from. */
static uint64_t sysroot_hash(const struct naming *n)
{
	uint64_t h = CACHE_HASH_INIT;
	cache_hash(&h, SYSROOT_VERSION, sizeof SYSROOT_VERSION);
	for (size_t i = 0; i < n->dpaths->n; i++) {
		const char *p = n->dpaths->v[i];
		struct stat st = {0};
		if (p[0] != '/')
			continue;
		stat(p, &st);
		cache_hash(&h, p, strlen(p) + 1);
		uint64_t id[5] = { st.st_dev, st.st_ino, (uint64_t)st.st_size,
				   (uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec };
		cache_hash(&h, id, sizeof(id));
	}
	for (size_t i = 0; i < n->paths.n; i++) {
		cache_hash(&h, n->paths.v[i], strlen(n->paths.v[i]) + 1);
		cache_hash(&h, &n->funcs[i], 1);
	}
	if (n->af) {
		uint64_t a = n->af->vaddr;
		cache_hash(&h, n->af->path, strlen(n->af->path) + 1);
		cache_hash(&h, &a, sizeof(a));
	}
	cache_hash(&h, access("/usr/lib/debug", F_OK) == 0 ? "d" : "-", 1);
	return h;
}

int sysroot_name_functions(struct stap_opts *s, const struct target *t, int funcs_too,
			   const struct allocf *af, char **sysroot)
{
	struct naming n = { &s->dpaths, {0}, NULL, af, t->root };
	int rc = 0;

	for (size_t i = 0; i < s->dpaths.n; i++) {
		const char *p = s->dpaths.v[i];
		if (p[0] != '/')
			continue;	/* a kernel module's name */
		/* (a target in a container has its sysroot already, and
		   its -d paths are the container's) */
		char *host = t->root ? xasprintf("%s%s", t->root, p) : xstrdup(p);
		int f = funcs_too && symbols_needed(host);
		free(host);
		if (!f && !(af && strcmp(p, af->path) == 0))
			continue;
		strv_add(&n.paths, p);
		n.funcs = xrealloc(n.funcs, n.paths.n);
		n.funcs[n.paths.n - 1] = (unsigned char)f;
	}
	if (n.paths.n && *sysroot) {
		rc = name_copies(*sysroot, &n);
	} else if (n.paths.n) {
		char *note = xasprintf("stap's sysroot for %s, made by stap++\n",
				       s->dpaths.n ? s->dpaths.v[0] : "?");
		*sysroot = cache_entry("sysroot", ".stap++-sysroot", sysroot_hash(&n), "stap's sysroot", note,
				       fill_sysroot, &n);
		free(note);
		if (*sysroot) {
			s->sysroot = *sysroot;
			info(1, "stap reads the target's files from '%s' (--sysroot), "
			     "where they name every function", *sysroot);
		} else {
			rc = -1;
		}
	}
	free(n.funcs);
	strv_free(&n.paths);
	return rc;
}

