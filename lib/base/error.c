/* SPDX-License-Identifier: GPL-2.0-or-later */
/* error.c - see error.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "base/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int verbosity;

static const char *progname;
static const char *loc_file;
static int loc_line;
static die_routine_fn *die_routine;

void set_die_routine(die_routine_fn *fn)
{
	die_routine = fn;
}

/* End the program with STATUS, or hand over to the die routine. */
static NORETURN void die_exit(int status)
{
	if (die_routine)
		die_routine(status);
	exit(status);
}

void set_program_name(const char *name)
{
	progname = name;
}

/* "PROGRAM: ", or nothing before set_program_name(). */
static void prefix(void)
{
	if (progname)
		fprintf(stderr, "%s: ", progname);
}

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
	else {
		prefix();
		fprintf(stderr, "%s: ", kind);
	}
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
	die_exit(EXIT_FAIL);
}

void usage_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("error", fmt, ap);
	va_end(ap);
	fprintf(stderr, "hint: see '%s --help'\n", progname ? progname : "");
	die_exit(EXIT_USAGE);
}

void info(int level, const char *fmt, ...)
{
	va_list ap;
	if (verbosity < level)
		return;
	va_start(ap, fmt);
	prefix();
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
