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

void allocf_free(struct allocf *a)
{
	free(a->file);
	free(a->path);
	free(a->sym);
	a->file = a->path = a->sym = NULL;
}
