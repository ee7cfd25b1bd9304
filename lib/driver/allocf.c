/* SPDX-License-Identifier: GPL-2.0-or-later */
/* driver/allocf.c - see driver/allocf.h. */
#include "driver/allocf.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "bpf/layout.h"
#include "bpf/symbolize.h"
#include "bpf/vm.h"
#include "driver/stap.h"
#include "target/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Whether PATH is one of the target's files (stap gets it as -d, so it
 * has a copy in the sysroot). */
static int target_file(const struct target *t, const char *path)
{
	return (t->exec && strcmp(t->exec, path) == 0) || strv_find(&t->libs, path) >= 0;
}

int allocf_find(void *ctx, struct expand_allocf *out)
{
	struct allocf *a = ctx;
	struct ljb_layout ly;
	struct ljb_symtab *st;
	const struct ljb_file *f;
	uint64_t g, fn = 0, ud = 0;
	const char *name;

	if (!a->pid) {
		error("LuaJIT's allocator has no symbol in '%s': it is found in a "
		      "running process, and this run names none", a->t->exec ? a->t->exec : "?");
		hint("give -x PID, --master PID, or --sample-pid PID (a process of the "
		     "same binaries, for a module run elsewhere)");
		return -1;
	}
	if (ljb_layout_load(a->dw, a->t->exec, &ly) < 0 || !(st = ljb_symtab_load(a->pid)))
		return -1;
	g = ljb_find_G(a->pid, &ly, st);
	if (!g || !ljb_vm_check_G(a->pid, &ly, st, g))
		g = ljb_vm_scan(a->pid, &ly, st);
	if (!g) {
		error("no LuaJIT VM found in process %d: no global_State in its memory "
		      "passes the checks (its allocator is read from there)", (int)a->pid);
		hint("a LuaJIT VM is there once the process has run Lua code; "
		     "an nginx master's is in its workers too");
		ljb_symtab_free(st);
		return -1;
	}
	if (ljb_read(a->pid, g + ly.G_allocf, &fn, sizeof(fn)) < 0 ||
	    ljb_read(a->pid, g + ly.G_allocd, &ud, sizeof(ud)) < 0 || !fn) {
		error("process %d: its global_State at 0x%llx names no allocator "
		      "(g->allocf unreadable or NULL)", (int)a->pid, (unsigned long long)g);
		ljb_symtab_free(st);
		return -1;
	}
	if (!(f = ljb_symtab_file(st, fn)) || !target_file(a->t, f->path)) {
		error("process %d: LuaJIT's allocator (g->allocf, 0x%llx) is not in "
		      "the code of its executable or libraries%s%s", (int)a->pid,
		      (unsigned long long)fn, f ? ": it is in " : "", f ? f->path : "");
		hint("a VM made by lua_newstate() with an allocator of its own, "
		     "loaded at run time, is not supported");
		ljb_symtab_free(st);
		return -1;
	}
	a->file = xstrdup(f->path);
	a->path = xstrdup(path_under(a->t->root, f->path));
	a->vaddr = fn - f->bias;
	name = ljb_symtab_name(st, fn);
	a->add_sym = !name || ljb_symtab_addr(st, name) != fn;
	a->sym = xstrdup(a->add_sym ? ALLOCF_SYM : name);
	ljb_symtab_free(st);
	out->path = a->path;
	out->sym = a->sym;
	out->g_off = (long long)(g - ud);
	info(1, "process %d: LuaJIT's allocator at 0x%llx, '%s'+0x%llx%s%s; G - allocd = %lld",
	     (int)a->pid, (unsigned long long)fn, a->path, (unsigned long long)a->vaddr,
	     a->add_sym ? ", no symbol: stap gets one, " : ", symbol ", a->sym, out->g_off);
	return 0;
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

/* The objcopy arguments that put the exported symbols of ELF and the
 * allocator's into a symbol table, one per line, into B; whether the file
 * has a .symtab already in *HAS_SYMTAB.  0, or -1 after error(). */
static int symbol_args(Elf *elf, const struct allocf *a, struct buf *b, int *has_symtab)
{
	Elf_Scn *scn = NULL, *dyn = NULL;
	GElf_Shdr sh;
	size_t shstr;
	int have_text = 0;

	*has_symtab = 0;
	if (elf_getshdrstrndx(elf, &shstr) < 0)
		return error("'%s': %s", a->file, elf_errmsg(-1));
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			*has_symtab = 1;
		else if (sh.sh_type == SHT_DYNSYM)
			dyn = scn;
		if (sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_EXECINSTR) &&
		    a->vaddr >= sh.sh_addr && a->vaddr < sh.sh_addr + sh.sh_size) {
			buf_addf(b, "--add-symbol\n%s=%s:0x%llx,function,global\n", ALLOCF_SYM,
				 elf_strptr(elf, shstr, sh.sh_name),
				 (unsigned long long)(a->vaddr - sh.sh_addr));
			have_text = 1;
		}
	}
	if (!have_text)
		return error("'%s': the allocator's address 0x%llx lies in no code section",
			     a->file, (unsigned long long)a->vaddr);
	if (*has_symtab || !dyn)
		return 0;	/* (stap reads .dynsym only without .symtab) */
	Elf_Data *d = elf_getdata(dyn, NULL);
	gelf_getshdr(dyn, &sh);
	for (size_t i = 1; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
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
	}
	return 0;
}

int allocf_symbolize(const struct allocf *a, const char *copy)
{
	struct buf args = {0};
	int fd, has_symtab, rc;
	Elf *elf;
	char *argfile, *at, *tmp;

	elf_version(EV_CURRENT);
	if ((fd = open(copy, O_RDONLY | O_CLOEXEC)) < 0)
		return error("cannot open '%s': %s", copy, strerror(errno));
	if (!(elf = elf_begin(fd, ELF_C_READ, NULL))) {
		close(fd);
		return error("'%s': %s", copy, elf_errmsg(-1));
	}
	rc = symbol_args(elf, a, &args, &has_symtab);
	elf_end(elf);
	close(fd);
	if (rc < 0) {
		buf_free(&args);
		return -1;
	}
	argfile = tmpdir_write("allocf.args", args.s, args.len);
	buf_free(&args);
	if (!argfile)
		return -1;
	at = xasprintf("@%s", argfile);
	tmp = xasprintf("%s.new", copy);
	char *argv[] = { "objcopy", at, (char *)copy, tmp, NULL };
	struct buf log = {0};
	int st = run_capture(argv, &log);
	if (st != 0)
		rc = st < 0 ? error("cannot run objcopy: %s", strerror(errno))
			    : error("objcopy failed (status %d): %s", st, log.s ? log.s : "");
	buf_free(&log);
	if (rc == 0 && rename(tmp, copy) < 0)
		rc = error("cannot rename '%s': %s", tmp, strerror(errno));
	if (rc < 0)
		hint("objcopy comes with binutils, which stap's compiler needs too");
	else
		info(1, "'%s': the allocator named %s for stap%s", copy, ALLOCF_SYM,
		     has_symtab ? "" : ", beside the exported symbols");
	unlink(tmp);
	free(tmp);
	free(at);
	free(argfile);
	return rc;
}

void allocf_free(struct allocf *a)
{
	free(a->file);
	free(a->path);
	free(a->sym);
	a->file = a->path = a->sym = NULL;
}
