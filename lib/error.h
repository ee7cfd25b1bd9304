/*
 * error.h - the one error API of stap++.
 *
 * Messages look like git's:
 *     stap++: error: cannot find struct 'lua_State' in '/usr/bin/luajit'
 *     hint: rebuild the target with -g
 * While a script location is set (error_set_location), messages are
 * prefixed with it instead of "stap++: ":
 *     samples/foo.sxx:12: error: no member 'x' in struct 'lua_State' (in '/x.so')
 *
 * Exit codes (documented in --help and README): 0 ok, 1 failure, 2 usage;
 * when stap runs, stap's own exit status is passed through.
 */
#ifndef STAPXX_ERROR_H
#define STAPXX_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#define EXIT_FAIL  1
#define EXIT_USAGE 2

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#define NORETURN __attribute__((noreturn))
#else
#define PRINTF_LIKE(f, a)
#define NORETURN
#endif

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
/* Print "error: MSG" and exit(EXIT_USAGE). Never returns. */
NORETURN void usage_die(const char *fmt, ...) PRINTF_LIKE(1, 2);
/* Verbose message (only when verbosity >= level), "stap++: MSG". */
extern int verbosity;
void info(int level, const char *fmt, ...) PRINTF_LIKE(2, 3);

/* Allocation helpers: die("out of memory") instead of returning NULL.
 * The caller owns (and frees) what they return. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* asprintf that dies on failure; caller frees. */
char *xasprintf(const char *fmt, ...) PRINTF_LIKE(1, 2);
/* The same with a va_list (needs <stdarg.h>); caller frees. */
char *xvasprintf(const char *fmt, va_list ap) PRINTF_LIKE(1, 0);

#endif
