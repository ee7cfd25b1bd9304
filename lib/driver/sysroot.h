/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * driver/sysroot.h - the directory stap reads the target's files from
 * (stap --sysroot), when it must not read them where they are.
 *
 * - A target in another mount namespace: stap reads its binaries through
 *   the sysroot, and the module probes them by the paths the target
 *   names them (sysroot_container).
 * - Names for stap: stap names an address by the closest symbol before
 *   it, so for a script that takes Lua stacks each -d file without a
 *   symbol table gets a copy that names every function
 *   (driver/symbols.h); and LuaJIT's allocator where it has no symbol
 *   (driver/allocf.h).  A host target's sysroot is then an entry of
 *   stap++'s cache dir (driver/cache.h), named by the files it copies, so
 *   its path is the same from run to run and stap's own module cache
 *   still hits; it links the host's /usr/lib/debug, where stap looks for
 *   separate debug files under a sysroot.
 */
#ifndef STAPXX_DRIVER_SYSROOT_H
#define STAPXX_DRIVER_SYSROOT_H

#include "driver/allocf.h"
#include "driver/stap.h"
#include "target/target.h"

/*
 * sysroot_container - a target in another mount namespace whose root is
 * ROOT: each -d binary of S (its dpaths) copied into the temp dir at its
 * path in the target (ROOT stripped; a -d file of ours keeps its path),
 * since stap resolves its sysroot to a real path and /proc/PID/root reads
 * as "/".  Rewrites the -d paths to those; *DIR: the sysroot (malloc'd).
 * Returns 0, or -1 after error().
 */
int sysroot_container(struct stap_opts *s, const char *root, char **dir);

/*
 * sysroot_name_functions - with FUNCS, the -d files of S without a
 * symbol table get a copy that names every function; with AF (not NULL),
 * the copy of the allocator's file names it.  In the sysroot *SYSROOT
 * when there is one (a container's); else, when a file needs it, a cache
 * entry becomes the sysroot (*SYSROOT, malloc'd, and S->sysroot).
 * Returns 0, or -1 after error().
 */
int sysroot_name_functions(struct stap_opts *s, const struct target *t, int funcs,
			   const struct allocf *af, char **sysroot);

#endif
