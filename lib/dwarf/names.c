/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/names.c - the names cache.  See dwarf/names.h.
 */
#include "dwarf/names.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/wrapper.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAMES_MAGIC "stap++ dwarf names 2 "

static struct dw_names_cache cache;	/* dw_names_cache()'s; get NULL: none */

void dw_names_cache(const struct dw_names_cache *c)
{
	if (c)
		cache = *c;
	else
		memset(&cache, 0, sizeof(cache));
}

/* The set of "KIND NAME" strings of a binary. */
struct nameset {
	char **tab;	/* open addressing, cap a power of 2 */
	size_t cap, used;
};

static char **ns_slot(struct nameset *ns, const char *key)
{
	size_t mask = ns->cap - 1;
	for (size_t i = fnv1a_str(FNV1A_INIT, key) & mask;; i = (i + 1) & mask)
		if (!ns->tab[i] || !strcmp(ns->tab[i], key))
			return &ns->tab[i];
}

/* Adds KEY (taken) unless present (then freed). */
static void ns_add(struct nameset *ns, char *key)
{
	if (2 * (ns->used + 1) > ns->cap) {
		char **old = ns->tab;
		size_t oldcap = ns->cap;
		ns->cap = oldcap ? 2 * oldcap : 1024;
		ns->tab = xcalloc(ns->cap, sizeof(*ns->tab));
		for (size_t i = 0; i < oldcap; i++)
			if (old[i])
				*ns_slot(ns, old[i]) = old[i];
		free(old);
	}
	char **s = ns_slot(ns, key);
	if (*s) {
		free(key);
		return;
	}
	*s = key;
	ns->used++;
}

static void ns_free(struct nameset *ns)
{
	if (!ns)
		return;
	for (size_t i = 0; i < ns->cap; i++)
		free(ns->tab[i]);
	free(ns->tab);
	free(ns);
}

void names_free(struct dw_bin *b)
{
	ns_free(b->names);
	b->names = NULL;
	free(b->build_id);
	b->build_id = NULL;
	free(b->dwarf_file);
	b->dwarf_file = NULL;
}

/* Does ELF have a DWARF section of its own (a debug build, not a
 * stripped one)? */
static int has_debug_info(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return 1;
	}
	return 0;
}

/* B's GNU build-id in hex, read from its ELF file once; NULL if it has
 * none or cannot be read. */
static const char *build_id(struct dw_bin *b)
{
	if (b->id_read++)
		return b->build_id;
	int fd = open(b->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *id;
	ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
	if (n > 0 && n <= 64) {
		b->build_id = xcalloc(1, 2 * (size_t)n + 1);
		for (ssize_t i = 0; i < n; i++)
			sprintf(b->build_id + 2 * i, "%02x", ((const unsigned char *)id)[i]);
		b->own_dwarf = has_debug_info(elf);
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return b->build_id;
}

/* Is the DWARF that the names file's line FROM ("from self", "from
 * PATH") names there for B?  Its own, or the separate file, which must
 * still exist: a stripped copy with the same build-id, or a binary whose
 * debug package went, is opened and found without DWARF, as without the
 * cache. */
static int dwarf_there(struct dw_bin *b, const char *from)
{
	if (!strcmp(from, "from self"))
		return b->own_dwarf;
	return !strncmp(from, "from /", 6) && access(from + 5, R_OK) == 0;
}

/* Reads the names file PATH for B, whose build-id is ID; NULL if it is
 * not one, or not for this copy of B (dwarf_there()). */
static struct nameset *load(struct dw_bin *b, const char *path, const char *id)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	struct nameset *ns = xcalloc(1, sizeof(*ns));
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ok = 0, first = 1, from = 1;
	size_t lines = 0, end;
	char tail;
	while (!ok && (n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] != '\n')
			break;	/* cut short */
		line[n - 1] = '\0';
		if (first) {
			first = 0;
			if (strncmp(line, NAMES_MAGIC, strlen(NAMES_MAGIC)) ||
			    strcmp(line + strlen(NAMES_MAGIC), id))
				break;
			continue;
		}
		if (from) {
			from = 0;
			if (!dwarf_there(b, line)) {
				info(1, "not using the names file '%s': '%s' has not the "
				     "DWARF it was made from (%s)", path, b->path, line);
				fclose(f);
				free(line);
				ns_free(ns);
				return NULL;
			}
			continue;
		}
		if (sscanf(line, "end %zu%c", &end, &tail) == 1) {
			ok = end == lines;	/* the last line: every name read */
			continue;
		}
		char *sp = strchr(line, ' ');
		if (!sp || sp == line || !sp[1])
			break;
		ns_add(ns, xstrdup(line));
		lines++;
	}
	if (ok && (ferror(f) || getline(&line, &cap, f) >= 0))
		ok = 0;	/* an error, or a line after the end */
	free(line);
	fclose(f);
	if (!ok) {
		info(1, "not using the names file '%s': not one of build-id %s", path, id);
		ns_free(ns);
		return NULL;
	}
	return ns;
}

/* Asks the names cache for B's names once: 1 (b->names set), 0 (none
 * stored, or B has no build-id), -1 (a file that is not one: replace it). */
static int cached(struct dw_bin *b)
{
	if (!b->names_tried) {
		const char *id = build_id(b);
		char *path = id ? cache.get(id, cache.ctx) : NULL;
		b->names_tried = path ? -1 : 1;
		if (path && (b->names = load(b, path, id))) {
			b->names_tried = 1;
			info(1, "names of '%s' (build-id %s): %zu, from '%s'", b->path, id,
			     b->names->used, path);
		}
		free(path);
	}
	return b->names ? 1 : b->names_tried < 0 ? -1 : 0;
}

int names_skip(struct dw_bin *b, unsigned kinds, const char *name)
{
	if (!cache.get || b->state != B_NEW || cached(b) <= 0)
		return 0;
	if (!b->names)
		return 0;
	if (!name)
		return 1;
	for (unsigned k = 0; k < 32; k++) {
		if (!(kinds & KIND_BIT(k)))
			continue;
		char *key = xasprintf("%u %s", k, name);
		int has = *ns_slot(b->names, key) != NULL;
		free(key);
		if (has)
			return 0;
	}
	return 1;
}

/* names_store()'s WRITE: B's index as a names file at PATH. */
static int write_names(const char *path, void *ctx)
{
	struct dw_bin *b = ctx;
	FILE *f = fopen(path, "w");
	if (!f) {
		info(1, "cannot create '%s': %s", path, strerror(errno));
		return -1;
	}
	size_t lines = 0;
	fprintf(f, "%s%s\nfrom %s\n", NAMES_MAGIC, b->build_id,
		b->dwarf_file ? b->dwarf_file : "self");
	for (size_t i = 0; i < b->cap; i++)
		if (b->tab[i].name && ++lines)
			fprintf(f, "%u %s\n", (unsigned)b->tab[i].kind, b->tab[i].name);
	fprintf(f, "end %zu\n", lines);
	if (ferror(f) | fclose(f)) {
		info(1, "cannot write '%s': %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Can B's names be kept: is it known where its DWARF came from, and does
 * every name fit on a line?  (Said with -v when not.) */
static int storable(struct dw_bin *b)
{
	const char *why = NULL;
	if (b->dwarf_file ? b->dwarf_file[0] != '/' || strchr(b->dwarf_file, '\n') : !b->own_dwarf)
		why = "the file its DWARF came from is not known (debuginfod)";
	for (size_t i = 0; !why && i < b->cap; i++)
		if (b->tab[i].name && strchr(b->tab[i].name, '\n'))
			why = "a name holds a newline";
	if (why)
		info(1, "names of '%s' not cached: %s", b->path, why);
	return !why;
}

void names_store(struct dw_bin *b)
{
	int have;
	if (!cache.get || !cache.put || b->state != B_READY || !build_id(b) ||
	    (have = cached(b)) > 0 || !storable(b))
		return;
	cache.put(b->build_id, write_names, b, have < 0, cache.ctx);
}
