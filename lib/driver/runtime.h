/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * runtime.h - SystemTap 4.8 runtime fixes for Debian 12's 6.1.1xx kernels.
 *
 * Two bugs stop stock SystemTap 4.8 on those kernels (see README):
 *  1. runtime/stp_task_work.c calls task_work_cancel(task, func), but the
 *     kernel's task_work_cancel now takes a callback_head; the old behaviour
 *     is task_work_cancel_func().
 *  2. runtime/linux/addr-map.c rejects every user read outside task context
 *     (timer.profile, perf) when user_addr_max() is undefined, which 6.x
 *     headers no longer define.
 * and one loses data on any kernel with mmap_read_lock_killable():
 *  3. runtime/linux/task_finder2.c reads the memory map of a process it
 *     attaches to with a trylock, and a failed one leaves the process
 *     without a map (no @var, no symbols) for the whole session.
 */
#ifndef STAPXX_RUNTIME_H
#define STAPXX_RUNTIME_H

/*
 * runtime_fix - decide whether the installed runtime needs the fixes for
 * kernel KRELEASE (NULL: the running kernel, uname -r) and, if so, prepare
 * (or reuse) a patched copy of it in the cache dir
 * ($XDG_CACHE_HOME or ~/.cache)/stap++/runtime-<hash>, regenerated whenever
 * the installed runtime changes.
 *
 * Returns 0 with *dir_out = NULL when no fix is needed, 0 with *dir_out = the
 * patched runtime dir (malloc'd; the caller frees it) to pass as stap -R,
 * or -1 after printing an error.  Says what it does through info(1, ...).
 */
int runtime_fix(const char *krelease, char **dir_out);

/*
 * kernel_arg - resolve stap++'s -r ARG, which is either a kernel release
 * ("6.1.0-56-amd64") or, when it contains a '/', a kernel build tree (stap's
 * -r DIR; dev/deps makes build/kernel/KREL).  For a release: *tree_out =
 * NULL and *krel_out = a copy of ARG.  For a tree: *tree_out = its absolute
 * path (stap takes only absolute ones) and *krel_out = the release in
 * DIR/include/config/kernel.release, which is what stap uses too.  Both
 * malloc'd; the caller frees them.  Returns 0, or -1 after error() and
 * hint() (no such dir, no kernel.release in it).
 */
int kernel_arg(const char *arg, char **tree_out, char **krel_out);

#endif
