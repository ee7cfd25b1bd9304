/* SPDX-License-Identifier: GPL-2.0-or-later */
/* driver/cache.c - see driver/cache.h. */
#include "driver/cache.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/wrapper.h"
#include "dwarf/dwarf.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <utime.h>
#include <unistd.h>

#define CACHE_KEEP_DAYS 7

void cache_hash(uint64_t *h, const void *data, size_t len)
{
	*h = fnv1a(*h, data, len);
}

int cache_remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *p = xasprintf("%s/%s", path, e->d_name);
		cache_remove_tree(p);
		free(p);
	}
	closedir(d);
	return rmdir(path);
}

int cache_mkdir_p(const char *path)
{
	char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			int rc = error("cannot create '%s': %s", p, strerror(errno));
			free(p);
			return rc;
		}
		*s = '/';
	}
	int rc = 0;
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		rc = error("cannot create '%s': %s", p, strerror(errno));
	free(p);
	return rc;
}

/* Is every existing component of PATH owned by us or root and writable by
 * nobody else?  What the cache holds is compiled into kernel modules, so
 * it must not be a dir that another user can change (sudo -E keeps the
 * caller's HOME). */
static int trusted_path(const char *path)
{
	char *p = xstrdup(path);
	int ok = 1;

	for (char *slash = p; ok && slash; ) {
		struct stat st;
		slash = strchr(slash + 1, '/');
		if (slash)
			*slash = '\0';
		if (lstat(*p ? p : "/", &st) == 0) {
			/* a sticky dir (/tmp) protects the entries below it,
			 * which are checked in turn */
			ok = !S_ISLNK(st.st_mode) &&
			     (st.st_uid == geteuid() || st.st_uid == 0) &&
			     (!(st.st_mode & (S_IWGRP | S_IWOTH)) ||
			      (slash && (st.st_mode & S_ISVTX)));
		} else if (errno != ENOENT) {
			ok = 0;
		}
		if (slash)
			*slash = '/';
	}
	free(p);
	return ok;
}

/* The cache dir: $XDG_CACHE_HOME/stap++ or ~/.cache/stap++, the first one
 * that is trusted_path(); as root, else /var/cache/stap++.  NULL if none. */
static char *cache_root(const char *what)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	char *cand[2] = {
		xdg && *xdg == '/' ? xasprintf("%s/stap++", xdg) : NULL,
		home && *home == '/' ? xasprintf("%s/.cache/stap++", home) : NULL,
	};
	char *root = NULL;

	for (int i = 0; i < 2; i++) {
		if (!root && cand[i] && trusted_path(cand[i]))
			root = cand[i];
		else if (cand[i]) {
			if (!root)
				warning("not using '%s' for %s: it can be changed "
					"by another user", cand[i], what);
			free(cand[i]);
		}
	}
	if (!root && geteuid() == 0)
		root = xstrdup("/var/cache/stap++");
	return root;
}

/* Removes the entries KIND-* of ROOT but KEEP that no run used for
 * CACHE_KEEP_DAYS (their stamp's time: a run that uses one touches it). */
static void evict(const char *root, const char *kind, const char *stamp_name,
		  const char *keep)
{
	DIR *d = opendir(root);
	struct dirent *e;
	size_t klen = strlen(kind);
	time_t now = time(NULL);

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat st;
		if (strncmp(e->d_name, kind, klen) != 0 || e->d_name[klen] != '-' ||
		    strcmp(e->d_name, keep) == 0)
			continue;
		char *dir = xasprintf("%s/%s", root, e->d_name);
		char *stamp = xasprintf("%s/%s", dir, stamp_name);
		if (stat(stamp, &st) == 0 && now - st.st_mtime > CACHE_KEEP_DAYS * 86400) {
			info(1, "removing '%s' from the cache: unused for %d days", dir,
			     CACHE_KEEP_DAYS);
			cache_remove_tree(dir);
		}
		free(stamp);
		free(dir);
	}
	closedir(d);
}

char *cache_entry(const char *kind, const char *stamp_name, uint64_t hash, const char *what,
		  const char *note, int (*fill)(const char *tmp, const char *dir, void *ctx),
		  void *ctx)
{
	char *root = cache_root(what), *dir = NULL, *stamp = NULL;
	int rc = 0;

	if (!root) {
		error("cannot find a cache dir for %s", what);
		hint("set XDG_CACHE_HOME or HOME to a directory only you can write");
		return NULL;
	}
	dir = xasprintf("%s/%s-%016llx", root, kind, (unsigned long long)hash);
	stamp = xasprintf("%s/%s", dir, stamp_name);
	if (access(stamp, F_OK) == 0) {
		if (!trusted_path(dir)) {
			rc = error("%s '%s' can be changed by another user", what, dir);
			hint("remove it, or set XDG_CACHE_HOME to a directory only you can write");
		} else {
			utime(stamp, NULL);	/* used now (evict) */
		}
		goto done;
	}
	if (cache_mkdir_p(root) < 0) {
		rc = -1;
		goto done;
	}
	if (!trusted_path(root)) {
		rc = error("cache dir '%s' can be changed by another user", root);
		hint("set XDG_CACHE_HOME to a directory only you can write");
		goto done;
	}
	char *tmp = xasprintf("%s/.tmp-%s-XXXXXX", root, kind);
	if (!mkdtemp(tmp)) {
		rc = error("cannot create a temporary dir in '%s': %s", root, strerror(errno));
		free(tmp);
		goto done;
	}
	chmod(tmp, 0755);
	char *tstamp = xasprintf("%s/%s", tmp, stamp_name);
	rc = fill(tmp, dir, ctx);
	if (rc == 0)
		rc = write_file(tstamp, note, strlen(note), 0644);
	if (rc == 0 && rename(tmp, dir) < 0) {
		int e = errno;
		/* another stap++ may have won the race: its entry is used */
		if (!((e == EEXIST || e == ENOTEMPTY) && access(stamp, F_OK) == 0))
			rc = error("cannot rename '%s' to '%s': %s", tmp, dir, strerror(e));
	}
	cache_remove_tree(tmp);	/* (gone when renamed) */
	if (rc == 0)
		evict(root, kind, stamp_name, strrchr(dir, '/') + 1);
	free(tstamp);
	free(tmp);
done:
	free(stamp);
	free(root);
	if (rc < 0) {
		free(dir);
		return NULL;
	}
	return dir;
}

char *cache_lookup(const char *kind, const char *stamp_name, uint64_t hash, const char *what)
{
	char *root = cache_root(what);
	char *dir = NULL, *stamp = NULL;

	if (!root)
		return NULL;
	dir = xasprintf("%s/%s-%016llx", root, kind, (unsigned long long)hash);
	stamp = xasprintf("%s/%s", dir, stamp_name);
	if (access(stamp, F_OK) == 0 && trusted_path(dir)) {
		utime(stamp, NULL);	/* used now (evict) */
	} else {
		free(dir);
		dir = NULL;
	}
	free(stamp);
	free(root);
	return dir;
}

/* ------------------------------------------------------------------ */
/* The names cache of lib/dwarf (dw_names_cache()): an entry names-HASH
 * per build-id, holding the file "names". */

#define NAMES_WHAT "the DWARF names of a binary"

static uint64_t names_hash(const char *id)
{
	uint64_t h = CACHE_HASH_INIT;
	cache_hash(&h, "names 1", 8);
	cache_hash(&h, id, strlen(id) + 1);
	return h;
}

static char *names_get(const char *id, void *ctx)
{
	(void)ctx;
	char *dir = cache_lookup("names", "stamp", names_hash(id), NAMES_WHAT);
	char *path = dir ? xasprintf("%s/names", dir) : NULL;
	free(dir);
	return path;
}

struct names_fill {
	int (*write)(const char *path, void *wctx);
	void *wctx;
};

static int names_fill(const char *tmp, const char *dir, void *ctx)
{
	struct names_fill *f = ctx;
	char *path = xasprintf("%s/names", tmp);
	(void)dir;
	int rc = f->write(path, f->wctx);
	free(path);
	return rc;
}

/* Whether PATH, or the nearest dir above it that exists, can be written. */
static int writable_or_creatable(const char *path)
{
	char *p = xstrdup(path), *slash;
	int ok;
	while (access(p, F_OK) < 0 && (slash = strrchr(p, '/')) && slash != p)
		*slash = '\0';
	ok = access(p, W_OK) == 0;
	free(p);
	return ok;
}

static void names_put(const char *id, int (*write)(const char *path, void *wctx), void *wctx,
		      int replace, void *ctx)
{
	struct names_fill f = { write, wctx };
	char *root = cache_root(NAMES_WHAT), *old;
	(void)ctx;
	if (replace && (old = cache_lookup("names", "stamp", names_hash(id), NAMES_WHAT))) {
		info(1, "replacing '%s'", old);
		cache_remove_tree(old);
		free(old);
	}
	/* (only into a cache dir that exists and can be written: the cache
	   saves time, and a run that needs no other entry fails on none) */
	if (root && writable_or_creatable(root))
		free(cache_entry("names", "stamp", names_hash(id), NAMES_WHAT, id, names_fill, &f));
	else
		info(1, "%s not cached: no cache dir to write (%s)", NAMES_WHAT,
		     root ? root : "none");
	free(root);
}

void cache_dwarf_names(void)
{
	static const struct dw_names_cache c = { names_get, names_put, NULL };
	dw_names_cache(&c);
}
