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

#endif
