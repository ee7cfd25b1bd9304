/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * error.h - the one error API of stap++, util/fold and util/flamegraph.
 *
 * Messages look like git's, prefixed with the program name:
 *     stap++: error: cannot find struct 'lua_State' in '/usr/bin/luajit'
 *     hint: rebuild the target with -g
 * While a location is set (error_set_location), messages are prefixed
 * with it instead of "PROGRAM: ":
 *     samples/foo.sxx:12: error: no member 'x' in struct 'lua_State' (in '/x.so')
 *
 * Exit codes (documented in --help and README): 0 ok, 1 failure, 2 usage;
 * when stap runs, stap's own exit status is passed through.
 */
#ifndef STAPXX_ERROR_H
#define STAPXX_ERROR_H

#define EXIT_FAIL  1
#define EXIT_USAGE 2

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#define NORETURN __attribute__((noreturn))
#else
#define PRINTF_LIKE(f, a)
#define NORETURN
#endif

/* Name the program for messages ("stap++", "fold"): call it first in
 * main().  NAME is borrowed (a string literal).  Until it is called,
 * messages have no program prefix. */
void set_program_name(const char *name);

/* Prefix messages with "FILE:LINE: " (file is borrowed, not copied: keep it
 * alive until error_clear_location()). line 0 prints "FILE: ". */
void error_set_location(const char *file, int line);
void error_clear_location(void);

/* Print "error: MSG" to stderr; always returns -1 so callers can
 * `return error(...)`. */
int error(const char *fmt, ...) PRINTF_LIKE(1, 2);
/* Print "warning: MSG" to stderr. */
void warning(const char *fmt, ...) PRINTF_LIKE(1, 2);
/* Print "hint: MSG" to stderr (no location prefix); call after error(). */
void hint(const char *fmt, ...) PRINTF_LIKE(1, 2);
/* Print "error: MSG" and exit(EXIT_FAIL). Never returns. */
NORETURN void die(const char *fmt, ...) PRINTF_LIKE(1, 2);
/* Print "error: MSG", then "hint: see 'PROGRAM --help'", and
 * exit(EXIT_USAGE). Never returns. */
NORETURN void usage_die(const char *fmt, ...) PRINTF_LIKE(1, 2);
/* What die() and usage_die() do after printing, instead of exit(STATUS):
 * FN should not return (it exits or longjmp()s away; if it returns, exit()
 * follows).  NULL restores plain exit().
 * For harnesses that run the code many times in one process (the fuzz
 * targets in fuzz/); programs never set it.  Like git's set_die_routine. */
typedef void die_routine_fn(int status);
void set_die_routine(die_routine_fn *fn);
/* Verbose message (only when verbosity >= level), "PROGRAM: MSG". */
extern int verbosity;
void info(int level, const char *fmt, ...) PRINTF_LIKE(2, 3);

#endif
