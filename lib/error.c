/* error.c - see error.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int verbosity;

static const char *loc_file;
static int loc_line;

void error_set_location(const char *file, int line)
{
	loc_file = file;
	loc_line = line;
}

void error_clear_location(void)
{
	loc_file = NULL;
	loc_line = 0;
}

static void vreport(const char *kind, const char *fmt, va_list ap)
{
	if (loc_file && loc_line > 0)
		fprintf(stderr, "%s:%d: %s: ", loc_file, loc_line, kind);
	else if (loc_file)
		fprintf(stderr, "%s: %s: ", loc_file, kind);
	else
		fprintf(stderr, "stap++: %s: ", kind);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("error", fmt, ap);
	va_end(ap);
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("warning", fmt, ap);
	va_end(ap);
}

void hint(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("hint: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("error", fmt, ap);
	va_end(ap);
	exit(EXIT_FAIL);
}

void usage_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("error", fmt, ap);
	va_end(ap);
	fputs("hint: see 'stap++ --help'\n", stderr);
	exit(EXIT_USAGE);
}

void info(int level, const char *fmt, ...)
{
	va_list ap;
	if (verbosity < level)
		return;
	va_start(ap, fmt);
	fputs("stap++: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		die("out of memory");
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		die("out of memory");
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);
	if (!p)
		die("out of memory");
	return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
	char *s;
	if (vasprintf(&s, fmt, ap) < 0)
		die("out of memory");
	return s;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	s = xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}
