/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/symtab.c - see bpf/symtab.h. */
#include "bpf/symtab.h"
#include "base/error.h"
#include "base/wrapper.h"
#include "target/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fsym {
	uint64_t start, end;
	const char *name;	/* in the names arena */
	int rank;		/* lower is preferred among aliases */
};

struct ljb_symtab {
	struct fsym *f;		/* function symbols, sorted */
	size_t nf;
	struct fsym *d;		/* all named symbols (for ljb_symtab_addr) */
	size_t nd;
	struct ljb_sym *r;	/* the kernel's ranges */
	struct strv names;
	struct ljb_file *files;	/* the executable file mappings */
	size_t nfiles;
};

/* The symbol names of LuaJIT's assembler VM (buildvm), as the tapset's
 * __lj_is_vm_sym. */
static int is_vm_sym(const char *s)
{
	static const char *const pre[] = { "lj_BC_", "lj_ff_", "lj_fff_", "lj_vm_",
					   "lj_vmeta", "lj_cont_" };
	for (size_t i = 0; i < sizeof(pre) / sizeof(*pre); i++)
		if (strncmp(s, pre[i], strlen(pre[i])) == 0)
			return 1;
	return 0;
}

/* Among aliases: global before local, fewer leading '_', shorter. */
static int rank_of(const char *name, int bind)
{
	int u = 0;

	while (name[u] == '_')
		u++;
	return (bind == STB_LOCAL ? 1 << 20 : 0) + (u << 12) + (int)strlen(name);
}

static int by_start(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->rank - y->rank;
}

#define LJB_RANK_FDE ((1 << 30) + 1)	/* below ljb_symtab_add's names */

/* Adds a function of PATH without a symbol, from its FDE in the table
 * of .eh_frame_hdr (which stripping keeps): from its start to the next
 * one's (sort_ranges clips it), named "FILE+0xADDR" (its address in the
 * file, as st_value), below any symbol that starts there. */
static void add_fdes(struct ljb_symtab *st, Elf *e, const char *path, int64_t bias,
		     uint64_t end)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	if (elf_getshdrstrndx(e, &shstrndx) < 0)
		return;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".eh_frame_hdr") != 0 || !(d = elf_getdata(scn, NULL)) ||
		    d->d_size < 12)
			continue;
		const uint8_t *h = d->d_buf;
		uint32_t n;
		/* version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4;
		   the table datarel|sdata4 pairs (what GNU ld writes) */
		if (h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
			return;
		memcpy(&n, h + 8, 4);
		if (12 + 8ULL * n > d->d_size)
			return;
		for (uint32_t i = 0; i < n; i++) {
			int32_t loc, next;
			char nm[300];
			memcpy(&loc, h + 12 + 8 * i, 4);
			if (i + 1 < n)
				memcpy(&next, h + 12 + 8 * (i + 1), 4);
			else
				next = loc + 1;
			uint64_t a = sh.sh_addr + (int64_t)loc;
			struct fsym f = { a + bias, sh.sh_addr + (int64_t)next + bias, NULL,
					  LJB_RANK_FDE };
			if (i + 1 == n)
				f.end = end;	/* the mapping's */
			snprintf(nm, sizeof(nm), "%s+0x%" PRIx64, base, a);
			strv_add(&st->names, nm);
			f.name = st->names.v[st->names.n - 1];
			st->f = xrealloc(st->f, (st->nf + 1) * sizeof(*st->f));
			st->f[st->nf++] = f;
		}
		return;
	}
}

/* Adds the symbols of PATH, whose executable mapping [START, END) has
 * file offset OFF, and without a .symtab its unnamed functions (add_fdes).
 * Unreadable files are skipped (their code has no names). */
static void add_file(struct ljb_symtab *st, const char *path, uint64_t start, uint64_t end,
		     uint64_t off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	size_t nph;
	int64_t bias = 0;
	int found = 0;

	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nph) < 0)
		goto out;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (off >= ph.p_offset && off < ph.p_offset + ph.p_filesz) {
			bias = (int64_t)(start - (ph.p_vaddr + (off - ph.p_offset)));
			found = 1;
			break;
		}
	}
	if (!found)
		goto out;
	st->files = xrealloc(st->files, (st->nfiles + 1) * sizeof(*st->files));
	strv_add(&st->names, path);
	st->files[st->nfiles++] = (struct ljb_file){ st->names.v[st->names.n - 1], start, end,
						     (uint64_t)bias };
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
	}
	for (int pass = 0; pass < 2; pass++) {
		Elf_Scn *s = pass == 0 ? symtab : dynsym;
		GElf_Shdr sh;
		Elf_Data *data;
		if (!s || !gelf_getshdr(s, &sh) || !(data = elf_getdata(s, NULL)) || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			if (!gelf_getsym(data, i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			int type = GELF_ST_TYPE(sym.st_info);
			struct fsym f = { sym.st_value + bias, sym.st_value + bias + sym.st_size,
					  NULL, rank_of(name, GELF_ST_BIND(sym.st_info)) };
			strv_add(&st->names, name);
			f.name = st->names.v[st->names.n - 1];
			if (pass == 0 || !symtab) {
				st->d = xrealloc(st->d, (st->nd + 1) * sizeof(*st->d));
				st->d[st->nd++] = f;
			}
			if ((type == STT_FUNC || type == STT_GNU_IFUNC) && sym.st_size > 0) {
				st->f = xrealloc(st->f, (st->nf + 1) * sizeof(*st->f));
				st->f[st->nf++] = f;
			}
		}
	}
	if (!symtab)
		add_fdes(st, e, path, bias, end);
out:
	if (e)
		elf_end(e);
	close(fd);
}

/* Sorts st->f, keeps one range per start (the preferred alias), clips
 * the ends to the next start and makes the kernel's ranges. */
static void sort_ranges(struct ljb_symtab *st)
{
	size_t n = 0;

	qsort(st->f, st->nf, sizeof(*st->f), by_start);
	for (size_t i = 0; i < st->nf; i++) {
		if (n && st->f[n - 1].start == st->f[i].start)
			continue;
		st->f[n++] = st->f[i];
	}
	st->nf = n > LJB_MAX_SYMS ? LJB_MAX_SYMS : n;
	free(st->r);
	st->r = xcalloc(st->nf ? st->nf : 1, sizeof(*st->r));
	for (size_t i = 0; i < st->nf; i++) {
		if (i + 1 < st->nf && st->f[i].end > st->f[i + 1].start)
			st->f[i].end = st->f[i + 1].start;
		st->r[i].start = st->f[i].start;
		st->r[i].end = st->f[i].end | (is_vm_sym(st->f[i].name) ? LJB_SYM_VM : 0);
	}
}

struct ljb_symtab *ljb_symtab_load(pid_t pid)
{
	char path[64], line[4096], file[4096], perm[8];
	struct ljb_symtab *st = xcalloc(1, sizeof(*st));
	struct strv seen = {0};
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		error("cannot read '%s': %s", path, strerror(errno));
		free(st);
		return NULL;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		file[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &lo, &hi, perm, &off, file) < 4)
			continue;
		if (!strchr(perm, 'x') || file[0] != '/' || strv_find(&seen, file) >= 0)
			continue;
		strv_add(&seen, file);
		/* in a container: the process's file, not ours of that name */
		char *host;
		if (proc_file(pid, file, &host) < 0) {
			fclose(f);
			strv_free(&seen);
			ljb_symtab_free(st);
			return NULL;
		}
		add_file(st, host, lo, hi, off);
		free(host);
	}
	fclose(f);
	strv_free(&seen);
	sort_ranges(st);
	return st;
}

void ljb_symtab_add(struct ljb_symtab *st, uint64_t start, uint64_t end, const char *name)
{
	struct fsym f = { start, end, NULL, 1 << 30 };	/* a real symbol wins */

	strv_add(&st->names, name);
	f.name = st->names.v[st->names.n - 1];
	st->f = xrealloc(st->f, (st->nf + 1) * sizeof(*st->f));
	st->f[st->nf++] = f;
	sort_ranges(st);
}

const struct ljb_file *ljb_symtab_file(const struct ljb_symtab *st, uint64_t addr)
{
	for (size_t i = 0; i < st->nfiles; i++)
		if (addr >= st->files[i].lo && addr < st->files[i].hi)
			return &st->files[i];
	return NULL;
}

const struct ljb_file *ljb_symtab_files(const struct ljb_symtab *st, size_t *n)
{
	*n = st->nfiles;
	return st->files;
}

void ljb_symtab_free(struct ljb_symtab *st)
{
	if (!st)
		return;
	free(st->f);
	free(st->d);
	free(st->r);
	free(st->files);
	strv_free(&st->names);
	free(st);
}

const struct ljb_sym *ljb_symtab_ranges(const struct ljb_symtab *st, size_t *n)
{
	*n = st->nf;
	return st->r;
}

uint64_t ljb_symtab_addr(const struct ljb_symtab *st, const char *name)
{
	for (size_t i = 0; i < st->nd; i++)
		if (strcmp(st->d[i].name, name) == 0)
			return st->d[i].start;
	return 0;
}

/* The function symbol ADDR lies in, or NULL. */
static const struct fsym *sym_at(const struct ljb_symtab *st, uint64_t addr)
{
	size_t lo = 0, hi = st->nf;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (addr < st->f[mid].start)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo == 0 || addr >= st->f[lo - 1].end)
		return NULL;
	return &st->f[lo - 1];
}

const char *ljb_symtab_name(const struct ljb_symtab *st, uint64_t addr)
{
	const struct fsym *f = sym_at(st, addr);

	return f ? f->name : NULL;
}

int ljb_symtab_named(const struct ljb_symtab *st, uint64_t addr)
{
	const struct fsym *f = sym_at(st, addr);

	return f && f->rank != LJB_RANK_FDE;
}
