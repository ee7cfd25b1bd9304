/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dwarf/ident.c - identifying the LuaJIT in an ELF file without DWARF.
 * See dwarf/ident.h.
 */
#include "dwarf/ident.h"
#include "base/hash.h"
#include "base/wrapper.h"

#include <ctype.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The start of the identities' hashes (FNV-1a, from another basis than
   FNV1A_INIT): the layout database (layouts/) holds hashes made so. */
#define IDENT_HASH_INIT 1469598103934665603ULL

/* The file bytes at link-time address A (N of them), or NULL. */
static const unsigned char *at_addr(struct ident *id, unsigned long long a,
				    size_t n)
{
	Elf *elf = id->elf;
	size_t np;
	if (elf_getphdrnum(elf, &np) != 0)
		return NULL;
	for (size_t i = 0; i < np; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (a >= ph.p_vaddr && a + n <= ph.p_vaddr + ph.p_filesz &&
		    ph.p_offset + (a - ph.p_vaddr) + n <= id->size)
			return id->image + ph.p_offset + (a - ph.p_vaddr);
	}
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int api_name(const char *n)
{
	return !strncmp(n, "lua_", 4) || !strncmp(n, "luaL_", 5) ||
	       !strncmp(n, "luaJIT_", 7) || !strncmp(n, "luaopen_", 8);
}

/* The exported API (SHT_DYNSYM) and lj_vm_asm_begin (SHT_SYMTAB). */
static void read_symbols(struct ident *id, Elf_Scn *scn, GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	char **names = NULL;
	size_t nn = 0;
	for (size_t i = 0; d && i < n; i++) {
		GElf_Sym s;
		const char *name;
		if (!gelf_getsym(d, (int)i, &s) ||
		    !(name = elf_strptr(id->elf, sh->sh_link, s.st_name)))
			continue;
		if (sh->sh_type == SHT_SYMTAB) {
			if (!strcmp(name, "lj_vm_asm_begin"))
				id->vm_addr = s.st_value;
			continue;
		}
		if (s.st_shndx != SHN_UNDEF && !strcmp(name, "ngx_cycle"))
			id->ngx_cycle = 1;
		if (s.st_shndx == SHN_UNDEF || !api_name(name) ||
		    GELF_ST_BIND(s.st_info) == STB_LOCAL)
			continue;
		names = xrealloc(names, (nn + 1) * sizeof(*names));
		names[nn++] = (char *)name;
	}
	if (sh->sh_type != SHT_DYNSYM) {
		free(names);
		return;
	}
	qsort(names, nn, sizeof(*names), cmp_str);
	unsigned long long h = IDENT_HASH_INIT;
	for (size_t i = 0; i < nn; i++)
		if (!i || strcmp(names[i], names[i - 1]))
			h = fnv1a(fnv1a(h, names[i], strlen(names[i])), "\n", 1);
	size_t uniq = 0;
	for (size_t i = 0; i < nn; i++)
		uniq += !i || strcmp(names[i], names[i - 1]);
	id->nexports = (int)uniq;
	id->exports_hash = uniq ? h : 0;
	free(names);
}

/* "LuaJIT 2.x..." standing alone between NULs in read-only data. */
static void read_version(struct ident *id, const unsigned char *p, size_t n)
{
	static const char pre[] = "LuaJIT 2.";
	const unsigned char *end = p + n, *q = p;
	while (!id->version[0] &&
	       (q = memmem(q, (size_t)(end - q), pre, sizeof(pre) - 1))) {
		const unsigned char *e = q + sizeof(pre) - 1;
		while (e < end && *e && (isalnum(*e) || strchr(".-_", *e)))
			e++;
		if ((q == p || q[-1] == 0) && e < end && !*e &&
		    (size_t)(e - q) < sizeof(id->version))
			memcpy(id->version, q, (size_t)(e - q));
		q++;
	}
}

static long long sdata4(const unsigned char *p)
{
	return (int)((unsigned)p[0] | (unsigned)p[1] << 8 |
		     (unsigned)p[2] << 16 | (unsigned)p[3] << 24);
}

/* The functions of .eh_frame_hdr's search table (encodings as GNU ld
 * writes them: pcrel|sdata4 pointer, udata4 count, datarel|sdata4
 * table; FDEs with 4-byte pc_begin/pc_range as for x86-64 "zR" CIEs). */
static void read_fdes(struct ident *id, GElf_Shdr *sh)
{
	const unsigned char *h = id->image + sh->sh_offset;
	if (sh->sh_offset + sh->sh_size > id->size || sh->sh_size < 12 ||
	    h[0] != 1 || (h[1] & 0x0f) != 0x0b || h[2] != 0x03 ||
	    h[3] != 0x3b)
		return;
	size_t n = (size_t)sdata4(h + 8) & 0xffffffffu;
	if (12 + 8 * n > sh->sh_size)
		return;
	id->fns = xcalloc(n ? n : 1, sizeof(*id->fns));
	for (size_t i = 0; i < n; i++) {
		unsigned long long start = sh->sh_addr + sdata4(h + 12 + 8 * i);
		unsigned long long fde = sh->sh_addr + sdata4(h + 16 + 8 * i);
		const unsigned char *f = at_addr(id, fde, 16);
		if (!f || sdata4(f) == -1)	/* 64-bit length: not ours */
			continue;
		struct ident_fn *fn = &id->fns[id->nfns++];
		fn->addr = start;
		fn->len = (unsigned long long)sdata4(f + 12) & 0xffffffffu;
		const unsigned char *c = at_addr(id, start, 1);
		for (size_t k = 0; c && k < IDENT_HEAD &&
				   (c = at_addr(id, start + k, 1)); k++)
			fn->head[k] = *c;
	}
}

int ident_read(const char *path, struct ident *id)
{
	memset(id, 0, sizeof(*id));
	elf_version(EV_CURRENT);
	id->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (id->fd < 0)
		return -1;
	Elf *elf = elf_begin(id->fd, ELF_C_READ_MMAP, NULL);
	id->elf = elf;
	char *raw;
	if (!elf || elf_kind(elf) != ELF_K_ELF ||
	    !(raw = elf_rawfile(elf, &id->size))) {
		ident_free(id);
		return -1;
	}
	id->image = (const unsigned char *)raw;
	size_t np;
	if (elf_getphdrnum(elf, &np) == 0)
		for (size_t i = 0; i < np; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(elf, (int)i, &ph) &&
			    ph.p_type == PT_INTERP)
				id->is_exec = 1;
		}
	size_t shstr;
	if (elf_getshdrstrndx(elf, &shstr) != 0)
		shstr = 0;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstr, sh.sh_name);
		if (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB)
			read_symbols(id, scn, &sh);
		else if (name && !strcmp(name, ".eh_frame_hdr"))
			read_fdes(id, &sh);
		else if (name && !strncmp(name, ".rodata", 7) &&
			 sh.sh_type == SHT_PROGBITS &&
			 sh.sh_offset + sh.sh_size <= id->size)
			read_version(id, id->image + sh.sh_offset, sh.sh_size);
	}
	const void *bid;
	ssize_t len = dwelf_elf_gnu_build_id(elf, &bid);
	for (ssize_t i = 0; i < len && i < 64; i++)
		snprintf(id->build_id + 2 * i, 3, "%02x",
			 ((const unsigned char *)bid)[i]);
	return 0;
}

void ident_free(struct ident *id)
{
	if (id->elf)
		elf_end(id->elf);
	if (id->fd > 0)
		close(id->fd);
	free(id->fns);
	memset(id, 0, sizeof(*id));
}

int ident_is_luajit(const struct ident *id)
{
	return id->version[0] || id->nexports > 0;
}

unsigned long long ident_fn_hash(struct ident *id, struct ident_fn *f)
{
	if (f->hash)
		return f->hash;
	const unsigned char *c = at_addr(id, f->addr, f->len);
	unsigned long long h = IDENT_HASH_INIT;
	if (!c)
		return f->hash = 1;
	h = fnv1a(h, &f->len, sizeof(f->len));
	for (unsigned long long i = 0; i < f->len; i++) {
		h = fnv1a(h, &c[i], 1);
		if (c[i] == 0xe8 || c[i] == 0xe9)	/* call/jmp rel32 */
			i += 4;
	}
	return f->hash = h ? h : 1;
}

const unsigned char *ident_fn_bytes(struct ident *id, const struct ident_fn *f)
{
	return at_addr(id, f->addr, f->len);
}

struct ident_fn *ident_fn_at(struct ident *id, unsigned long long addr)
{
	for (size_t i = 0; i < id->nfns; i++)
		if (id->fns[i].addr == addr)
			return &id->fns[i];
	return NULL;
}
