/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/vm.c - see bpf/vm.h. */
#include "bpf/vm.h"
#include "base/wrapper.h"
#include "dwarf/vmexit.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LJ_GCT_THREAD 6	/* gct of a lua_State: ~LJ_TTHREAD */

/* A GCRef at A (64 or 32 bits); 0 when unreadable. */
static uint64_t ref(pid_t pid, const struct ljb_layout *ly, uint64_t a)
{
	uint64_t v = 0;

	if (ljb_read(pid, a, &v, ly->k.gc64 ? 8 : 4) < 0)
		return 0;
	return v;
}

/* Whether L is a thread of the VM whose global_State is G. */
static int thread_of(pid_t pid, const struct ljb_layout *ly, uint64_t L, uint64_t g)
{
	uint8_t gct = 0;

	return L && !(L & 7) && ljb_read(pid, L + ly->k.gct, &gct, 1) == 0 &&
	       gct == LJ_GCT_THREAD && ref(pid, ly, L + ly->k.L_glref) == g;
}

/* The address of the opcode NAME's value, -1 if none. */
static long op(const struct ljb_layout *ly, const char *name)
{
	for (long i = 0; i < ly->bc_max; i++)
		if (ly->bc_name[i] && strcmp(ly->bc_name[i], name) == 0)
			return i;
	return -1;
}

/* The dispatch tables of G: dynamic d[bc_max + fast functions], static
 * s[BC_FUNCF] (lj_dispatch.h: GG_LEN_DDISP, GG_LEN_SDISP).  0 or -1. */
struct disp {
	uint64_t d[2 * LJB_MAX_BC], s[LJB_MAX_BC];
	long nd, ns;
};

static int read_disp(pid_t pid, const struct ljb_layout *ly, uint64_t g, struct disp *t)
{
	uint64_t a = g + ly->gg_g2disp;

	t->ns = op(ly, "FUNCF");
	t->nd = ly->gg_ndisp - t->ns;
	if (!ly->bc_max || t->ns <= 2 || t->nd < ly->bc_max || t->nd > 2 * LJB_MAX_BC)
		return -1;
	if (ljb_read(pid, a, t->d, t->nd * 8) < 0 ||
	    ljb_read(pid, a + t->nd * 8, t->s, t->ns * 8) < 0)
		return -1;
	return 0;
}

int ljb_vm_check_G(pid_t pid, const struct ljb_layout *ly, const struct ljb_symtab *st,
		   uint64_t g)
{
	struct disp t;
	const struct ljb_file *f;

	if (!g || (g & 7) || !thread_of(pid, ly, ref(pid, ly, g + ly->G_mainthref), g))
		return 0;
	uint64_t cur = ref(pid, ly, g + ly->k.G_cur_L);
	if (cur && !thread_of(pid, ly, cur, g))
		return 0;
	if (read_disp(pid, ly, g, &t) < 0 || !(f = ljb_symtab_file(st, t.s[0])))
		return 0;
	/* the first handlers (comparisons) are never patched */
	for (int i = 1; i < 3; i++)
		if (t.s[i] <= t.s[i - 1] || t.s[i] >= f->hi)
			return 0;
	return 1;
}

/* Whether the words W[I..I+2] could start a dispatch table: increasing
 * addresses in one file's code, close together (handlers), and W[I-1]
 * not one before them in the same run. */
static int table_start(const struct ljb_symtab *st, const uint64_t *w, size_t i, size_t n)
{
	const struct ljb_file *f;

	if (i + 2 >= n || !(f = ljb_symtab_file(st, w[i])))
		return 0;
	if (w[i + 1] <= w[i] || w[i + 2] <= w[i + 1] || w[i + 2] >= f->hi ||
	    w[i + 2] - w[i] > 4096)
		return 0;
	return i == 0 || w[i - 1] < f->lo || w[i - 1] >= w[i];
}

/* Reads LEN bytes at A of PID into W page by page: a page that is not
 * present (ljb_read reads none: it would map one into the target) reads
 * as zeros, which start no dispatch table. */
static void read_present(pid_t pid, uint64_t a, uint64_t *w, size_t len)
{
	enum { PAGE = 4096 };

	for (size_t off = 0; off < len; off += PAGE) {
		size_t k = len - off < PAGE ? len - off : PAGE;
		if (ljb_read(pid, a + off, (char *)w + off, k) < 0)
			memset((char *)w + off, 0, k);
	}
}

uint64_t ljb_vm_scan(pid_t pid, const struct ljb_layout *ly, const struct ljb_symtab *st)
{
	char path[64], line[4096], perm[8], file[4096];
	enum { CHUNK = 1 << 20 };
	uint64_t *w = xmalloc(CHUNK), g = 0, budget = 256ULL << 20;
	FILE *f;

	if (!ly->bc_max)
		goto out;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(path, "re")))
		goto out;
	while (!g && budget && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		file[0] = 0;
		/* (private: a VM is never in shared memory) */
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %4095[^\n]", &lo, &hi, perm, file) < 3 ||
		    strncmp(perm, "rw-p", 4) != 0 || (file[0] && strcmp(file, "[heap]") != 0))
			continue;
		/* chunks overlap by a page: a table start on a border */
		for (uint64_t a = lo; !g && a < hi && budget; a += CHUNK - 4096) {
			size_t len = hi - a < CHUNK ? hi - a : CHUNK;
			read_present(pid, a, w, len);
			budget = budget > len ? budget - len : 0;
			for (size_t i = 0; !g && i < len / 8; i++)
				if (table_start(st, w, i, len / 8) &&
				    ljb_vm_check_G(pid, ly, st, a + 8 * i - ly->gg_g2disp))
					g = a + 8 * i - ly->gg_g2disp;
		}
	}
	fclose(f);
out:
	free(w);
	return g;
}

/* The .eh_frame entry of the file F holding ADDR: LuaJIT's VM has one
 * for all its code but lj_vm_ffi_call (buildvm).  0, or -1. */
static int fde_range(const struct ljb_file *f, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	int fd = open(f->path, O_RDONLY | O_CLOEXEC), rc = -1;
	Elf *e;
	Dwarf_CFI *cfi;
	Dwarf_Frame *fr;
	Dwarf_Addr s, end;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	if ((e = elf_begin(fd, ELF_C_READ, NULL)) && (cfi = dwarf_getcfi_elf(e))) {
		if (dwarf_cfi_addrframe(cfi, addr - f->bias, &fr) == 0) {
			if (dwarf_frame_info(fr, &s, &end, NULL) >= 0) {
				*lo = s + f->bias;
				*hi = end + f->bias;
				rc = 0;
			}
			free(fr);
		}
		dwarf_cfi_end(cfi);
	}
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}

/* Adds [LO, HI) named NAME where ST names nothing at LO; where it does,
 * a handler's NAME must be the symbol's (else counted in *BAD, the
 * first in ST_BAD). */
static size_t add(struct ljb_symtab *st, uint64_t lo, uint64_t hi, const char *name,
		  struct ljb_vm_check *bad)
{
	const char *sym;

	if (lo >= hi)
		return 0;
	if (ljb_symtab_named(st, lo) && (sym = ljb_symtab_name(st, lo))) {
		if (strcmp(name, LJB_VM_UNNAMED) != 0 && strcmp(sym, name) != 0 &&
		    !bad->n++)
			snprintf(bad->first, sizeof(bad->first), "%s at %s", name, sym);
		return 0;
	}
	ljb_symtab_add(st, lo, hi, name);
	return 1;
}

size_t ljb_vm_name(pid_t pid, const struct ljb_layout *ly, struct ljb_symtab *st, uint64_t g,
		   struct ljb_vm_check *bad)
{
	uint64_t at[LJB_MAX_BC] = {0}, lo, hi;
	struct disp t;
	const struct ljb_file *f;
	long forl = op(ly, "FORL"), iterl = op(ly, "ITERL"), loop = op(ly, "LOOP"),
	     itern = op(ly, "ITERN"), funcv = op(ly, "FUNCV");
	size_t n = 0;
	char name[48];

	memset(bad, 0, sizeof(*bad));
	if (read_disp(pid, ly, g, &t) < 0 || !(f = ljb_symtab_file(st, t.s[0])) ||
	    forl < 0 || iterl < 0 || loop < 0 || itern < 0 || funcv < 0)
		return 0;
	if (fde_range(f, t.s[0], &lo, &hi) < 0 || lo > t.s[0])
		lo = hi = t.s[0];	/* only the handlers the tables bound */
	/* while the JIT is off (or recording), lj_dispatch_update points
	   the static entries of FORL, ITERL, LOOP at their I- variants and
	   ITERN at lj_vm_IITERN: their own starts are unknown then */
	int jit = t.s[forl] != t.s[forl + 1] && t.s[iterl] != t.s[iterl + 1] &&
		  t.s[loop] != t.s[loop + 1];
	for (long i = 0; i < t.ns; i++)
		if (jit || (i != forl && i != iterl && i != loop && i != itern))
			at[i] = t.s[i];
	/* the call handlers: dynamic entries, FUNCF and FUNCV the JIT's */
	for (long i = t.ns; i < ly->bc_max; i++)
		if (jit || (i != t.ns && i != funcv))
			at[i] = t.d[i];
	/* handlers lie in opcode order (buildvm): entries out of it
	   (hooks) are dropped, and so are those outside the VM's code */
	uint64_t last = 0;
	for (long i = 0; i < ly->bc_max; i++) {
		if (!at[i])
			continue;
		if (at[i] < last || at[i] >= f->hi || (hi > lo && (at[i] < lo || at[i] >= hi))) {
			if (i < t.ns)
				return 0;	/* the static table is not what it seems */
			at[i] = 0;
			continue;
		}
		last = at[i];
	}
	if (lo < t.s[0])
		n += add(st, lo, t.s[0], LJB_VM_UNNAMED, bad);
	for (long i = 0; i < ly->bc_max; i++) {
		long j, known = 1;
		if (!at[i])
			continue;
		for (j = i + 1; j < ly->bc_max && !at[j]; j++)
			known = 0;
		if (j < ly->bc_max && at[j] == at[i])
			continue;	/* an empty handler (FUNCV): the symbol of
					   the code there is the next one's */
		uint64_t end = j < ly->bc_max ? at[j] : hi;
		if (j == ly->bc_max)
			known = 0;	/* the last handler: the subroutines follow */
		snprintf(name, sizeof(name), "lj_BC_%s", ly->bc_name[i]);
		n += add(st, at[i], end, known ? name : LJB_VM_UNNAMED, bad);
	}
	return n;
}

int ljb_vm_exit(pid_t pid, const struct ljb_layout *ly, const struct ljb_symtab *st,
		uint64_t g, uint64_t *lo, uint64_t *hi)
{
	struct disp t;
	const struct ljb_file *f;
	uint64_t a, b;
	unsigned char *code;
	size_t wlo, whi;
	int rc = -1;

	*lo = *hi = 0;
	if (read_disp(pid, ly, g, &t) < 0 || !(f = ljb_symtab_file(st, t.s[0])) ||
	    fde_range(f, t.s[0], &a, &b) < 0 || a > t.s[0] || b <= a || b - a > (64u << 20))
		return -1;
	code = xmalloc(b - a);
	if (ljb_read(pid, a, code, b - a) == 0 && lj_vm_exit_window(code, b - a, &wlo, &whi) == 0) {
		*lo = a + wlo;
		*hi = a + whi;
		rc = 0;
	}
	free(code);
	return rc;
}
