/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/open.c - opening and indexing a binary; debug-info hints.  See
 * dwarf/open.h.
 */
#include "dwarf/open.h"
#include "base/error.h"
#include "base/wrapper.h"
#include "dwarf/names.h"

#include <dirent.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------ */
/* Opening a binary */

static char *debuginfo_path;	/* NULL: libdwfl's default search path */
static char *debug_root;	/* dw_debug_root()'s, or NULL */

void dw_debug_root(const char *root)
{
	free(debuginfo_path);
	free(debug_root);
	debug_root = root ? xstrdup(root) : NULL;
	/* libdwfl's default (the binary's directory, its .debug, then
	   /usr/lib/debug), then the container's */
	debuginfo_path = root ? xasprintf(":.debug:/usr/lib/debug:%s/usr/lib/debug", root) : NULL;
}

static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

static void unusable(struct dw_bin *b, char *why)
{
	b->state = B_UNUSABLE;
	b->why = why;
}

/* The ELF part of bin_open(): b->dwfl and b->mod, or B_UNUSABLE. */
void bin_open_elf(struct dw_bin *b)
{
	if (b->state != B_NEW || b->mod)
		return;
	int fd = open(b->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		unusable(b, xasprintf("cannot open '%s': %s", b->path,
				      strerror(errno)));
		return;
	}
	unsigned char magic[4];
	ssize_t n = read(fd, magic, sizeof(magic));
	close(fd);
	if (n != 4 || memcmp(magic, ELFMAG, SELFMAG)) {
		unusable(b, n < 0 ? xasprintf("cannot read '%s': %s", b->path,
					      strerror(errno))
				  : xasprintf("'%s' is not an ELF file",
					      b->path));
		return;
	}
	b->dwfl = dwfl_begin(&offline_callbacks);
	if (!b->dwfl)
		die("cannot initialize libdwfl: %s", dwfl_errmsg(-1));
	const char *base = strrchr(b->path, '/');
	b->mod = dwfl_report_offline(b->dwfl, base ? base + 1 : b->path,
				     b->path, -1);
	dwfl_report_end(b->dwfl, NULL, NULL);
	if (!b->mod) {
		unusable(b, xasprintf("cannot read ELF file '%s': %s", b->path,
				      dwfl_errmsg(-1)));
		return;
	}
}

/* Open and index B once; afterwards b->state says what we got. */
void bin_open(struct dw_bin *b)
{
	if (b->state != B_NEW)
		return;
	double t0 = now_ms();
	bin_open_elf(b);
	if (b->state != B_NEW)
		return;
	Dwarf_Addr bias;
	b->dw = dwfl_module_getdwarf(b->mod, &bias);
	if (!b->dw) {
		b->state = B_NODEBUG;
		info(1, "no debug info in '%s': %s", b->path, dwfl_errmsg(-1));
		return;
	}
	const char *main_file = NULL, *debug_file = NULL;
	dwfl_module_info(b->mod, NULL, NULL, NULL, NULL, NULL, &main_file, &debug_file);
	if (debug_file && (!main_file || strcmp(debug_file, main_file)))
		b->dwarf_file = xstrdup(debug_file);	/* (for the names cache) */
	double t1 = now_ms();
	index_dwarf(b, b->dw);
	Dwarf *alt = dwarf_getalt(b->dw);	/* dwz's common file */
	if (alt)
		index_dwarf(b, alt);
	b->state = b->used ? B_READY : B_NODEBUG;
	info(1, "indexed '%s': %zu names in %.1f ms (%.1f ms to load its "
	     "DWARF)", b->path, b->used, now_ms() - t0, t1 - t0);
	names_store(b);
}

/* Whether ELF has a section of type SHT_SYMTAB. */
static int elf_has_symtab(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			return 1;
	return 0;
}

int dw_file_has_symtab(const char *path)
{
	Dwfl *dwfl = dwfl_begin(&offline_callbacks);
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	Elf *elf;
	const char *debugfile = NULL;
	int rc = -1;

	if (!dwfl)
		die("cannot initialize libdwfl: %s", dwfl_errmsg(-1));
	const char *base = strrchr(path, '/');
	mod = dwfl_report_offline(dwfl, base ? base + 1 : path, path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	if (mod && (elf = dwfl_module_getelf(mod, &bias))) {
		rc = elf_has_symtab(elf);
		if (!rc) {
			/* finds the separate debug file, if any */
			(void)dwfl_module_getdwarf(mod, &bias);
			dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
		}
		if (!rc && debugfile) {
			elf_version(EV_CURRENT);
			int fd = open(debugfile, O_RDONLY | O_CLOEXEC);
			Elf *d = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
			rc = d && elf_has_symtab(d);
			if (d)
				elf_end(d);
			if (fd >= 0)
				close(fd);
		}
	}
	dwfl_end(dwfl);
	return rc;
}

/* The Debian package that installed binary B (from dpkg's file lists),
 * or NULL.  Only for hints: reads a few MB, once per binary without debug
 * info.  Caller frees. */
static char *dpkg_owner(struct dw_bin *b)
{
	DIR *d = opendir("/var/lib/dpkg/info");
	if (!d)
		return NULL;
	char *owner = NULL, *line = NULL;
	size_t cap = 0;
	struct dirent *de;
	while (!owner && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".list"))
			continue;
		char *f = xasprintf("/var/lib/dpkg/info/%s", de->d_name);
		FILE *fp = fopen(f, "r");
		free(f);
		if (!fp)
			continue;
		ssize_t len;
		while (!owner && (len = getline(&line, &cap, fp)) > 0) {
			if (line[len - 1] == '\n')
				line[--len] = '\0';
			/* merged /usr: dpkg may list /lib/x, realpath() says
			 * /usr/lib/x */
			if (!strcmp(line, b->path) || !strcmp(line, b->real) ||
			    (!strncmp(b->real, "/usr/", 5) &&
			     !strcmp(line, b->real + 4))) {
				size_t end = strcspn(de->d_name, ":"); /* arch */
				owner = xstrndup(de->d_name,
						 end < n - 5 ? end : n - 5);
			}
		}
		fclose(fp);
	}
	free(line);
	closedir(d);
	return owner;
}

/* The hints printed after "no debug info in ...": how to get it, and
 * where libdwfl looked for a separate debug file (and debuginfod).  Only
 * the first time for B: a script with many macros would repeat them for
 * every one. */
void hint_debuginfo(struct dw_bin *b)
{
	if (b->hinted++)
		return;		/* once per binary is enough */
	const unsigned char *id = NULL;
	GElf_Addr vaddr;
	int len = b->mod ? dwfl_module_build_id(b->mod, &id, &vaddr) : 0;
	char *pkg = dpkg_owner(b);
	if (pkg)
		hint("install the debug symbols of '%s' (Debian: %s-dbgsym "
		     "from the debian-debug archive, or %s-dbg) or rebuild it "
		     "with -g", b->path, pkg, pkg);
	else
		hint("install the debug symbols of '%s' (Debian: its -dbgsym "
		     "package from the debian-debug archive) or rebuild it "
		     "with -g", b->path);
	free(pkg);
	if (len > 1) {
		char hex[2 * 64 + 1];
		int m = len < 64 ? len : 64;
		for (int i = 0; i < m; i++)
			snprintf(hex + 2 * i, 3, "%02x", id[i]);
		hint("a separate debug file is found by build-id as "
		     "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
		if (debug_root)
			hint("or, in the target's container, as "
			     "%s/usr/lib/debug/.build-id/%.2s/%s.debug", debug_root, hex,
			     hex + 2);
	} else {
		hint("a separate debug file is found by build-id under "
		     "/usr/lib/debug/.build-id/ (this binary has no build-id)");
	}
	Dwarf_Addr bias;
	GElf_Word crc;
	Elf *elf = b->mod ? dwfl_module_getelf(b->mod, &bias) : NULL;
	const char *link = elf ? dwelf_elf_gnu_debuglink(elf, &crc) : NULL;
	if (link) {
		const char *slash = strrchr(b->real, '/');
		int dl = slash ? (int)(slash - b->real) : 0;
		hint("or by its .gnu_debuglink as '%s' in '%.*s/', "
		     "'%.*s/.debug/' or '/usr/lib/debug%.*s/' (with a "
		     "matching CRC)", link, dl, b->real, dl, b->real, dl,
		     b->real);
	}
	if (len > 1) {
		/* by build-id too: libdwfl asks them itself (libdebuginfod) */
		const char *urls = getenv("DEBUGINFOD_URLS");
		if (urls && *urls)
			hint("or from the debuginfod servers in DEBUGINFOD_URLS "
			     "('%s'), which did not answer with it (a miss is "
			     "cached for 10 minutes: see DEBUGINFOD_CACHE_PATH)",
			     urls);
		else
			hint("or from a debuginfod server: set DEBUGINFOD_URLS "
			     "(e.g. https://debuginfod.debian.net)");
	}
}

/* Open B for a query naming it explicitly; errors if it has no usable
 * DWARF. */
int bin_require(struct dw_bin *b)
{
	bin_open(b);
	switch (b->state) {
	case B_READY:
		return 0;
	case B_NODEBUG:
		error("no debug info in '%s'", b->path);
		hint_debuginfo(b);
		return -1;
	default:
		return error("%s", b->why);
	}
}
