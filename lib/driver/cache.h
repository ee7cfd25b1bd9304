/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * driver/cache.h - stap++'s cache dir: entries built once and kept,
 * named by a hash of what they are made from.
 *
 * The cache is $XDG_CACHE_HOME/stap++ or ~/.cache/stap++ (as root, else
 * /var/cache/stap++), used only when no other user can change it (what
 * it holds goes into kernel modules).  An entry is a directory KIND-HASH
 * with a stamp file; it is built in a temporary directory beside it and
 * renamed into place, so a reader never sees half an entry and two
 * stap++ runs that build the same one at once both end up using one.
 * A run that uses an entry touches its stamp; when a run adds an entry,
 * the entries of the same kind that no run used for 7 days are removed.
 */
#ifndef STAPXX_DRIVER_CACHE_H
#define STAPXX_DRIVER_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* The start value of cache_hash(). */
#define CACHE_HASH_INIT 0xcbf29ce484222325ULL

/* Mixes LEN bytes at DATA into the hash *H (FNV-1a, 64 bits). */
void cache_hash(uint64_t *h, const void *data, size_t len);

/* Removes PATH and everything below it (a file is unlinked).  0, or -1
 * (errno set) if something could not be removed; no message. */
int cache_remove_tree(const char *path);

/* Creates directory PATH and its missing parents (mode 0755).  0, or -1
 * after error(). */
int cache_mkdir_p(const char *path);

/*
 * cache_entry - the cache entry KIND-HASH (e.g. "runtime"): its path
 * (malloc'd) when it exists (its stamp file STAMP_NAME does); else
 * FILL(TMP, DIR, CTX) builds it in a new temporary directory TMP (DIR:
 * the entry's path, for messages) and returns 0 (or -1 after error()),
 * and the entry is published with the stamp file, which holds NOTE.  WHAT names the
 * entry in messages ("the patched SystemTap runtime").  Returns NULL
 * after error() (and hints): no cache dir, one that another user can
 * change, or FILL failed.
 */
char *cache_entry(const char *kind, const char *stamp_name, uint64_t hash, const char *what,
		  const char *note, int (*fill)(const char *tmp, const char *dir, void *ctx),
		  void *ctx);

/* The entry KIND-HASH's path (malloc'd) when it exists (its stamp file
 * STAMP_NAME does) and no other user can change it, its stamp touched;
 * NULL otherwise, with no message but cache_root()'s warnings.  WHAT as
 * for cache_entry(). */
char *cache_lookup(const char *kind, const char *stamp_name, uint64_t hash, const char *what);

/* Gives lib/dwarf its names cache (dw_names_cache()): entries names-HASH,
 * one per build-id, each with the file "names".  Storing one never fails
 * the run: without a cache dir it can write to, nothing is stored. */
void cache_dwarf_names(void);

#endif
