/* SPDX-License-Identifier: GPL-2.0-or-later */
/* driver/symbols.c - see driver/symbols.h. */
#include "driver/symbols.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "driver/stap.h"
#include "dwarf/dwarf.h"
#include "target/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int symbols_needed(const char *path)
{
	return dw_file_has_symtab(path) == 0;
}

/* objcopy's flags for symbol S: its type and binding, NULL to leave it out
 * (no code or data, or undefined). */
static const char *sym_flags(const GElf_Sym *s)
{
	int type = GELF_ST_TYPE(s->st_info), bind = GELF_ST_BIND(s->st_info);

	if (s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE)
		return NULL;
	if (type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC)
		return NULL;
	if (bind == STB_WEAK)
		return type == STT_OBJECT ? "object,weak" : "function,weak";
	return type == STT_OBJECT ? "object,global" : "function,global";
}

/* A function the exported symbols cover: [start, end). */
struct span {
	uint64_t start, end;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Whether ADDR starts or lies in one of the N sorted spans S. */
static int covered(const struct span *s, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {	/* the first span starting after addr */
		size_t mid = lo + (hi - lo) / 2;
		if (s[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && (s[lo - 1].start == addr || addr < s[lo - 1].end);
}

/* The code section of ELF that holds file address ADDR: its name and
 * start, NULL if none. */
static const char *code_section(Elf *elf, size_t shstr, uint64_t addr, uint64_t *start)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
		    (sh.sh_flags & SHF_EXECINSTR) && addr >= sh.sh_addr &&
		    addr < sh.sh_addr + sh.sh_size) {
			*start = sh.sh_addr;
			return elf_strptr(elf, shstr, sh.sh_name);
		}
	}
	return NULL;
}

/* The exported symbols (.dynsym, section DYN) as objcopy arguments into B,
 * and the functions among them into *SPANS (sorted; caller frees). */
static void dynsym_args(Elf *elf, size_t shstr, Elf_Scn *dyn, struct buf *b,
			struct span **spans, size_t *nspans)
{
	GElf_Shdr sh;
	Elf_Data *d = elf_getdata(dyn, NULL);

	*spans = NULL;
	*nspans = 0;
	if (!d || !gelf_getshdr(dyn, &sh) || !sh.sh_entsize)
		return;
	for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
		GElf_Sym s;
		GElf_Shdr ssh;
		const char *fl, *n;
		Elf_Scn *in;
		if (!gelf_getsym(d, (int)i, &s) || !(fl = sym_flags(&s)) ||
		    !(n = elf_strptr(elf, sh.sh_link, s.st_name)) || !*n ||
		    !(in = elf_getscn(elf, s.st_shndx)) || !gelf_getshdr(in, &ssh))
			continue;
		buf_addf(b, "--add-symbol\n%s=%s:0x%llx,%s\n", n, elf_strptr(elf, shstr, ssh.sh_name),
			 (unsigned long long)(s.st_value - ssh.sh_addr), fl);
		if (fl[0] == 'f') {
			*spans = xrealloc(*spans, (*nspans + 1) * sizeof(**spans));
			(*spans)[(*nspans)++] = (struct span){ s.st_value, s.st_value + s.st_size };
		}
	}
	qsort(*spans, *nspans, sizeof(**spans), span_cmp);
}

/* Each function of .eh_frame_hdr's search table that neither SPANS nor
 * EXTRA starts, as a symbol "BASE+0xADDR" (objcopy arguments into B); how
 * many in *N.  A table in another encoding than GNU ld's is left out. */
static void fde_args(Elf *elf, size_t shstr, const char *base, const struct span *spans,
		     size_t nspans, const struct symbols_extra *extra, struct buf *b, size_t *n)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	const char *name;
	Elf_Data *d;

	*n = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstr, sh.sh_name)) ||
		    strcmp(name, ".eh_frame_hdr") != 0)
			continue;
		if (!(d = elf_getdata(scn, NULL)) || d->d_size < 12)
			return;
		const unsigned char *h = d->d_buf;
		uint32_t count;
		/* version 1; eh_frame_ptr pcrel|sdata4; fde_count udata4;
		   the table datarel|sdata4 pairs */
		if (h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
			return;
		memcpy(&count, h + 8, 4);
		if (12 + 8ULL * count > d->d_size)
			return;
		for (uint32_t i = 0; i < count; i++) {
			int32_t loc;
			uint64_t a, start;
			const char *sec;
			memcpy(&loc, h + 12 + 8 * i, 4);
			a = sh.sh_addr + (int64_t)loc;
			if (covered(spans, nspans, a) || (extra && extra->vaddr == a) ||
			    !(sec = code_section(elf, shstr, a, &start)))
				continue;
			buf_addf(b, "--add-symbol\n%s+0x%" PRIx64 "=%s:0x%" PRIx64 ",function,local\n",
				 base, a, sec, a - start);
			(*n)++;
		}
		return;
	}
}

/* The objcopy arguments for COPY into B (see symbols_write). */
static int symbol_args(Elf *elf, const char *copy, const char *base, int funcs,
		       const struct symbols_extra *extra, struct buf *b, size_t *nfde)
{
	Elf_Scn *scn = NULL, *dyn = NULL;
	GElf_Shdr sh;
	size_t shstr;
	int has_symtab = 0;
	struct span *spans = NULL;
	size_t nspans = 0;

	*nfde = 0;
	if (elf_getshdrstrndx(elf, &shstr) < 0)
		return error("'%s': %s", copy, elf_errmsg(-1));
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			has_symtab = 1;
		else if (sh.sh_type == SHT_DYNSYM)
			dyn = scn;
	}
	if (extra) {
		uint64_t start;
		const char *sec = code_section(elf, shstr, extra->vaddr, &start);
		if (!sec)
			return error("'%s': the address 0x%llx of %s lies in no code section",
				     copy, extra->vaddr, extra->name);
		buf_addf(b, "--add-symbol\n%s=%s:0x%llx,function,global\n", extra->name, sec,
			 (unsigned long long)(extra->vaddr - start));
	}
	if (has_symtab)
		return 0;	/* (stap reads .dynsym only without .symtab) */
	if (dyn)
		dynsym_args(elf, shstr, dyn, b, &spans, &nspans);
	if (funcs)
		fde_args(elf, shstr, base, spans, nspans, extra, b, nfde);
	free(spans);
	return 0;
}

int symbols_write(const char *copy, const char *shown, int funcs,
		  const struct symbols_extra *extra)
{
	struct buf args = {0}, log = {0};
	char real[PATH_MAX];
	const char *base;
	size_t nfde = 0;
	int fd, rc;
	Elf *elf;

	/* named as the process's maps name it: by its real path */
	base = realpath(shown, real) ? real : shown;
	base = strrchr(base, '/') ? strrchr(base, '/') + 1 : base;
	elf_version(EV_CURRENT);
	if ((fd = open(copy, O_RDONLY | O_CLOEXEC)) < 0)
		return error("cannot open '%s': %s", copy, strerror(errno));
	if (!(elf = elf_begin(fd, ELF_C_READ, NULL))) {
		close(fd);
		return error("'%s': %s", copy, elf_errmsg(-1));
	}
	rc = symbol_args(elf, copy, base, funcs, extra, &args, &nfde);
	elf_end(elf);
	close(fd);
	if (rc < 0 || !args.len) {
		buf_free(&args);
		return rc;
	}
	char *argfile = tmpdir_write("symbols.args", args.s, args.len);
	buf_free(&args);
	if (!argfile)
		return -1;
	char *at = xasprintf("@%s", argfile), *tmp = xasprintf("%s.new", copy);
	char *argv[] = { "objcopy", at, (char *)copy, tmp, NULL };
	int st = run_capture(argv, &log);
	if (st != 0)
		rc = st < 0 ? error("cannot run objcopy: %s", strerror(errno))
			    : error("objcopy failed on '%s' (status %d): %s", copy, st,
				    log.s ? log.s : "");
	buf_free(&log);
	if (rc == 0 && rename(tmp, copy) < 0)
		rc = error("cannot rename '%s': %s", tmp, strerror(errno));
	if (rc < 0)
		hint("objcopy comes with binutils, which stap's compiler needs too");
	else
		info(1, "'%s': a symbol table for stap%s%s, %zu functions without "
		     "a symbol named %s+0xADDR", copy, extra ? " naming " : "",
		     extra ? extra->name : "", nfde, base);
	unlink(tmp);
	free(tmp);
	free(at);
	free(argfile);
	return rc;
}
