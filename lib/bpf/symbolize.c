/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/symbolize.c - see bpf/symbolize.h. */
#include "bpf/symbolize.h"
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

/* Adds the symbols of PATH, whose executable mapping [START, END) has
 * file offset OFF.  Unreadable files are skipped (their code has no names). */
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

const char *ljb_symtab_name(const struct ljb_symtab *st, uint64_t addr)
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
	return st->f[lo - 1].name;
}

/* ------------------------------------------------------------------ */
/* The target's memory.                                                */

static pid_t mem_pid;
static int mem_fd = -1, map_fd = -1;

int ljb_present(pid_t pid, uint64_t addr, size_t n)
{
	enum { PAGE = 4096, MAXP = 64 };
	uint64_t e[MAXP], first = addr / PAGE, last = (addr + (n ? n : 1) - 1) / PAGE;

	if (ljb_read_open(pid) < 0)
		return 0;
	for (uint64_t p = first; p <= last;) {
		size_t k = last - p + 1 < MAXP ? (size_t)(last - p + 1) : MAXP;
		if (pread(map_fd, e, k * 8, (off_t)(p * 8)) != (ssize_t)(k * 8))
			return 0;
		for (size_t i = 0; i < k; i++)
			if (!(e[i] >> 63))
				return 0;
		p += k;
	}
	return 1;
}

int ljb_read_open(pid_t pid)
{
	if (pid != mem_pid || mem_fd < 0 || map_fd < 0) {
		char path[64];
		if (mem_fd >= 0)
			close(mem_fd);
		if (map_fd >= 0)
			close(map_fd);
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		mem_fd = open(path, O_RDONLY | O_CLOEXEC);
		snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
		map_fd = open(path, O_RDONLY | O_CLOEXEC);
		mem_pid = pid;
		if (mem_fd < 0 || map_fd < 0)
			return -1;
	}
	return 0;
}

int ljb_read(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	/* (a page the target never touched, or swapped out, is not read:
	   reading it would map or swap one in) */
	if (!ljb_present(pid, addr, n))
		return -1;
	return pread(mem_fd, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

/* A reading context: a fault sets bad; later reads return 0. */
struct rctx {
	pid_t pid;
	const struct ljb_layout *ly;
	const struct ljb_symtab *st;
	int bad;
	int unsure;	/* a name left out on a value read now (ljb_stack_text) */
};

static uint64_t rdn(struct rctx *c, uint64_t a, size_t n)
{
	uint64_t v = 0;

	if (c->bad || ljb_read(c->pid, a, &v, n) < 0) {
		c->bad = 1;
		return 0;
	}
	return v;
}
#define R8(c, a) ((uint8_t)rdn(c, a, 1))
#define R16(c, a) ((uint16_t)rdn(c, a, 2))
#define R32(c, a) ((uint32_t)rdn(c, a, 4))
#define R64(c, a) rdn(c, a, 8)
#define REF(c, a) ((c)->ly->k.gc64 ? R64(c, a) : R32(c, a))
#define GCV(c, a) ((c)->ly->k.gc64 ? (R64(c, a) & 0x7fffffffffffULL) : R32(c, a))

uint64_t ljb_find_G(pid_t pid, const struct ljb_layout *ly, const struct ljb_symtab *st)
{
	struct rctx c = { pid, ly, st, 0, 0 };
	uint64_t L;

	if (ly->nginx) {
		uint64_t cyclep = ljb_symtab_addr(st, "ngx_cycle"),
			 httpm = ljb_symtab_addr(st, "ngx_http_module"),
			 luam = ljb_symtab_addr(st, "ngx_http_lua_module");
		if (!cyclep || !httpm || !luam)
			return 0;
		uint64_t cycle = R64(&c, cyclep);
		uint64_t conf = cycle ? R64(&c, cycle + ly->cycle_conf_ctx) : 0;
		if (!conf || c.bad)
			return 0;
		uint64_t ctx = R64(&c, conf + R64(&c, httpm + ly->mod_index) * ly->ngx_uint);
		uint64_t main = ctx ? R64(&c, ctx + ly->ctx_main_conf) : 0;
		if (!main || c.bad)
			return 0;
		uint64_t lmcf = R64(&c, main + R64(&c, luam + ly->mod_ctx_index) * ly->ngx_uint);
		L = lmcf ? R64(&c, lmcf + ly->lmcf_lua) : 0;
	} else {
		uint64_t a = ljb_symtab_addr(st, "globalL");
		L = a ? R64(&c, a) : 0;
	}
	if (!L || c.bad)
		return 0;
	L = REF(&c, L + ly->k.L_glref);
	return c.bad ? 0 : L;
}

/* ------------------------------------------------------------------ */
/* Names (the tapset's rules: lj_debug.c).                             */

void ljb_escape(struct buf *out, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = s[i];
		if (ch == ';')
			buf_addc(out, ',');
		else if (ch == '\t')
			buf_adds(out, "\\t");
		else if (ch == '\n')
			buf_adds(out, "\\n");
		else if (ch == '\r')
			buf_adds(out, "\\r");
		else if (ch < 0x20 || ch == 0x7f)
			buf_addf(out, "\\x%02x", ch);
		else
			buf_addc(out, ch);
	}
}

/* The contents of GCstr s, at most max bytes, into b (NUL-terminated);
 * returns the length. */
static size_t str_of(struct rctx *c, uint64_t s, char *b, size_t max)
{
	uint32_t len = R32(c, s + c->ly->str_len);

	if (len > max)
		len = max;
	if (c->bad || (len && ljb_read(c->pid, s + c->ly->str_size, b, len) < 0)) {
		c->bad = 1;
		len = 0;
	}
	b[len] = 0;
	return len;
}

/* luajit_proto_chunkname, escaped, appended to out. */
static void chunkname(struct rctx *c, uint64_t pt, int fullpath, struct buf *out)
{
	char s[256];
	size_t n = str_of(c, REF(c, pt + c->ly->k.pt_chunkname), s, 250);

	if (n && s[0] == '@') {
		const char *p = s + 1, *slash = fullpath ? NULL : strrchr(p, '/');
		if (slash)
			p = slash + 1;
		ljb_escape(out, p, n - (size_t)(p - s));
	} else if (n && s[0] == '=') {
		ljb_escape(out, s + 1, n - 1);
	} else {
		size_t i;
		for (i = 0; i < n && i < 40; i++)
			if ((unsigned char)s[i] < 32)
				break;
		buf_adds(out, "[string \"");
		ljb_escape(out, s, i);
		if (i < n)
			buf_adds(out, "...");
		buf_adds(out, "\"]");
	}
}

static uint64_t proto_bc(struct rctx *c, uint64_t pt)
{
	return pt + c->ly->k.proto_size;
}

/* luajit_debug_line */
static long debug_line(struct rctx *c, uint64_t pt, long pos)
{
	const struct ljb_layout *ly = c->ly;
	uint64_t li = REF(c, pt + ly->pt_lineinfo);
	long sizebc = R32(c, pt + ly->k.pt_sizebc);
	long first = (int32_t)R32(c, pt + ly->pt_firstline);
	long numline = (int32_t)R32(c, pt + ly->pt_numline);

	if (c->bad || pos < 0 || pos > sizebc || !li)
		return -1;
	if (pos == sizebc)
		return first + numline;
	if (pos == 0)
		return first;
	pos--;
	if (numline < 256)
		return first + R8(c, li + pos);
	if (numline < 65536)
		return first + R16(c, li + 2 * pos);
	return first + R32(c, li + 4 * pos);
}

/* __lj_pc2pos: bytecode position of ins in pt, undoing a JLOOP patch;
 * -1 when not in pt. */
static long pc2pos(struct rctx *c, uint64_t pt, uint64_t ins)
{
	const struct ljb_layout *ly = c->ly;
	long sizebc, pos;

	if (!ins)
		return -1;
	pos = ((long)(ins - proto_bc(c, pt))) / 4 - 1;
	sizebc = R32(c, pt + ly->k.pt_sizebc);
	if (pos > sizebc || pos < -1) {
		long op = R32(c, ins - 4) & 0xff;
		if (op == ly->bc_retm || op == ly->bc_ret || op == ly->bc_ret0 || op == ly->bc_ret1) {
			uint64_t T = ins - 4 - ly->T_startins;
			uint64_t spc = REF(c, T + ly->k.T_startpc);
			pos = ((long)(spc - proto_bc(c, pt))) / 4;
			return pos < 0 || pos > sizebc ? -1 : pos;
		}
		return -1;
	}
	return pos < 0 || c->bad ? -1 : pos;
}

/* The position a raw frame executes, -1 if none. */
static long frame_pos(struct rctx *c, const struct ljb_frame *f)
{
	if (f->ffid != 0 || (f->flags & 3) != LJB_PC_INS)
		return -1;
	return pc2pos(c, f->key, f->pc);
}

/* Reads the unsigned LEB128 at *p, advancing it. */
static uint64_t uleb128(struct rctx *c, uint64_t *p)
{
	uint64_t v = 0;
	int sh = 0;

	for (int n = 0; n < 6; n++) {
		uint8_t b = R8(c, (*p)++);
		v |= (uint64_t)(b & 0x7f) << sh;
		sh += 7;
		if (b < 0x80)
			break;
	}
	return v;
}

/* Skips a NUL-terminated name at *p. */
static void skip_name(struct rctx *c, uint64_t *p)
{
	for (int n = 0; n < 1024 && !c->bad; n++)
		if (R8(c, (*p)++) == 0)
			return;
}

/* Reads the NUL-terminated name at p into b (at most max bytes). */
static void name_at(struct rctx *c, uint64_t p, char *b, size_t max)
{
	size_t i;

	for (i = 0; i < max && !c->bad; i++)
		if ((b[i] = R8(c, p + i)) == 0)
			return;
	b[i < max ? i : max] = 0;
}

/* debug_varname: the name of the slot-th live local at pos into b, 0 if
 * found. */
static int varname(struct rctx *c, uint64_t pt, long pos, long slot, char *b, size_t max)
{
	const struct ljb_layout *ly = c->ly;
	uint64_t p = REF(c, pt + ly->pt_varinfo), lastpc = 0;

	if (!p)
		return -1;
	for (int k = 0; k < 2000 && !c->bad; k++) {
		uint64_t name = p, startpc, endpc;
		long vn = R8(c, p);
		if (vn < ly->vn_max) {
			if (vn == ly->vn_end)
				break;
			p++;
		} else {
			skip_name(c, &p);
		}
		startpc = lastpc + uleb128(c, &p);
		lastpc = startpc;
		if ((long)startpc > pos)
			break;
		endpc = startpc + uleb128(c, &p);
		if (pos < (long)endpc) {
			if (slot == 0) {
				if (vn >= ly->vn_max)
					name_at(c, name, b, max);
				else
					snprintf(b, max, "(for)");
				return c->bad ? -1 : 0;
			}
			slot--;
		}
	}
	return -1;
}

/* lj_debug_uvname into b. */
static int uvname(struct rctx *c, uint64_t pt, long idx, char *b, size_t max)
{
	const struct ljb_layout *ly = c->ly;
	uint64_t p = REF(c, pt + ly->pt_uvinfo);

	if (!p || idx >= R8(c, pt + ly->pt_sizeuv))
		return -1;
	for (; idx > 0; idx--)
		skip_name(c, &p);
	name_at(c, p, b, max);
	return c->bad ? -1 : 0;
}

/* lj_tab_getstr: the address of t[str], 0 if absent. */
static uint64_t tab_getstr(struct rctx *c, uint64_t t, uint64_t str)
{
	const struct ljb_layout *ly = c->ly;
	uint32_t hmask = R32(c, t + ly->tab_hmask);
	uint64_t node = REF(c, t + ly->tab_node);
	uint64_t n = node + (uint64_t)(R32(c, str + ly->str_hash) & hmask) * ly->node_size;

	for (int k = 0; n && k < 64 && !c->bad; k++) {
		if (GCV(c, n + ly->node_key) == str)
			return n + ly->node_val;
		n = REF(c, n + ly->node_next);
	}
	return 0;
}

/* Constant string ~idx of pt, 0 if not a string. */
static uint64_t kgc_str(struct rctx *c, uint64_t pt, long idx)
{
	uint64_t k = REF(c, pt + c->ly->pt_k);
	uint64_t s = REF(c, k - (idx + 1) * c->ly->k.gcref);

	if (!s || R8(c, s + c->ly->k.gct) != 4)
		return 0;
	return s;
}

/* The internal type tag of the TValue at tv (itype: ~LJ_Txxx, signed;
 * the tapset's __lj_tv_itype). */
static long tv_itype(struct rctx *c, uint64_t tv)
{
	if (c->ly->k.gc64)
		return (long)((int64_t)R64(c, tv) >> 47);
	return (long)(int32_t)R32(c, tv + 4);
}

#define LJB_GCT_TAB 11	/* ~LJ_TTAB (lj_obj.h; the tapset's __LJ_GCT_TAB) */

/* Whether the TValue at tv, read now, is the function fn; else marks the
 * name unsure (the value may have changed since the sample). */
static int still_holds(struct rctx *c, uint64_t tv, uint64_t fn)
{
	if (tv && GCV(c, tv) == fn && !c->bad)
		return 1;
	c->unsure = 1;
	return 0;
}

/* __lj_slotname: the name the caller (prototype pt, function cfn, frame
 * base cbase) gave the function in slot at ip, checked against the
 * function called (fn) where the named value can be read now (a local, a
 * global, a field of a table in a local, an upvalue): a tail call
 * replaced the function its caller named; into b. */
/* lj_bc_mode[op], 0 past its end */
static unsigned bcmode_of(const struct ljb_layout *ly, long op)
{
	return op >= 0 && op < ly->nbc_mode ? ly->bc_mode[op] : 0;
}

static int slotname(struct rctx *c, uint64_t pt, uint64_t ip, long slot, uint64_t cbase,
		    uint64_t cfn, uint64_t fn, char *b, size_t max)
{
	const struct ljb_layout *ly = c->ly;
	uint64_t bc = proto_bc(c, pt);

	for (int restarts = 0; restarts < 16; restarts++) {
		int again = 0;
		if (varname(c, pt, (long)(ip - bc) / 4, slot, b, max) == 0)
			return cbase && still_holds(c, cbase + slot * ly->k.tv, fn) ? 0 : -1;
		for (int n = 0; n < 2000 && !c->bad; n++) {
			ip -= 4;
			if (ip <= bc)
				return -1;
			uint32_t ins = R32(c, ip);
			long op = ins & 0xff, ra = (ins >> 8) & 0xff;
			long ma = bcmode_of(ly, op) & 7;
			if (ma == ly->bcm_base) {
				if (slot >= ra && (op != ly->bc_knil || slot <= (long)(ins >> 16)))
					return -1;
			} else if (ma == ly->bcm_dst && ra == slot) {
				uint64_t str, tv;
				if (op == ly->bc_mov) {
					slot = ins >> 16;
					again = 1;
					break;
				}
				/* a global or upvalue that holds another
				   function now: no name, an unsure one (it
				   may have changed since the sample, or the
				   caller's closure be freed and its memory
				   reused: pcall's anonymous functions) */
				if (op == ly->bc_gget) {
					if (!(str = kgc_str(c, pt, ins >> 16)))
						return -1;
					if (!still_holds(c, tab_getstr(c, REF(c, cfn + ly->fl_env), str), fn))
						return -1;
					str_of(c, str, b, max - 1);
					return c->bad ? -1 : 0;
				}
				if (op == ly->bc_tgets) {
					if (!(str = kgc_str(c, pt, (ins >> 16) & 0xff)))
						return -1;
					tv = cbase + (ins >> 24) * ly->k.tv;
					if (cbase && tv_itype(c, tv) == -1 - LJB_GCT_TAB &&
					    !still_holds(c, tab_getstr(c, GCV(c, tv), str), fn))
						return -1;
					str_of(c, str, b, max - 1);
					return c->bad ? -1 : 0;
				}
				if (op == ly->bc_uget) {
					uint64_t uv = REF(c, cfn + ly->fl_uvptr + (ins >> 16) * ly->k.gcref);
					if (!still_holds(c, uv ? REF(c, uv + ly->uv_v) : 0, fn))
						return -1;
					return uvname(c, pt, ins >> 16, b, max);
				}
				return -1;
			}
		}
		if (!again)
			return -1;
	}
	return -1;
}

/* luajit_debug_funcname of frame f (callee) whose caller is frame cf. */
static int funcname(struct rctx *c0, const struct ljb_event *ev, const struct ljb_frame *f,
		    const struct ljb_frame *cf, char *b, size_t max)
{
	struct rctx cc = *c0, *c = &cc;	/* no name is no fault of the stack */
	const struct ljb_layout *ly = c->ly;
	long pos, sizebc, op, mm;
	uint64_t pt, ip;
	uint32_t ins;

	if (!cf || !(f->flags & LJB_F_CALLER) || cf->ffid != 0 || !ly->nbc_mode)
		return -1;
	pt = cf->key;
	if ((pos = frame_pos(c, cf)) < 0)
		return -1;
	sizebc = R32(c, pt + ly->k.pt_sizebc);
	if (pos >= sizebc)
		return -1;
	ip = proto_bc(c, pt) + 4 * pos;
	ins = R32(c, ip);
	op = ins & 0xff;
	mm = bcmode_of(ly, op) >> 11;
	if (c->bad)
		return -1;
	if (mm == ly->mm_call) {
		long slot = (ins >> 8) & 0xff;
		int rc;
		if (op == ly->bc_iterc)
			slot -= 3;
		rc = slotname(c, pt, ip, slot, cf->base, cf->fn, f->fn, b, max);
		c0->unsure |= c->unsure;
		return rc;
	} else if (mm != ly->mm_max) {
		uint64_t s = REF(c, ev->g + ly->G_gcroot + (ly->gcroot_mmname + mm) * ly->k.gcref);
		str_of(c, s, b, max - 1);
		return c->bad ? -1 : 0;
	}
	return -1;
}

/* "C:SYMBOL" (escaped) or "C:0xADDR" */
static void csym(struct rctx *c, uint64_t addr, struct buf *out)
{
	const char *s = ljb_symtab_name(c->st, addr);

	buf_adds(out, "C:");
	if (s)
		ljb_escape(out, s, strlen(s));
	else
		buf_addf(out, "0x%" PRIx64, addr);
}

int ljb_stack_text(const struct ljb_event *ev, const struct ljb_layout *ly,
		   const struct ljb_symtab *st, const struct ljb_textopts *o,
		   struct buf *out, int *unsure)
{
	struct rctx c = { ev->pid, ly, st, 0, 0 };
	char name[256];
	uint32_t n = ev->nframes > LJB_MAX_FRAMES ? LJB_MAX_FRAMES : ev->nframes;
	long toppos = -1;

	if (ev->leaf) {
		const char *s = ljb_symtab_name(st, ev->leaf);
		/* a C function on top of the Lua stack is the leaf itself */
		if (!(ev->vmstate <= 0 && n && ev->f[0].ffid == 1 &&
		      ljb_symtab_name(st, ev->f[0].key) == s && s)) {
			csym(&c, ev->leaf, out);
			buf_addc(out, '\n');
		}
	}
	if (ev->vmstate > 0) {
		buf_addf(out, "trace#%d", ev->vmstate);
		if (ev->T) {
			uint64_t pt = REF(&c, ev->T + ly->T_startpt);
			uint64_t spc = REF(&c, ev->T + ly->k.T_startpc);
			long pos = ((long)(spc - proto_bc(&c, pt))) / 4;
			buf_addc(out, ':');
			chunkname(&c, pt, o->fullpath, out);
			buf_addf(out, ":%ld", debug_line(&c, pt, pos));
			if (n && ev->f[0].ffid == 0 && ev->f[0].key == pt)
				toppos = pos;
		}
		buf_addc(out, '\n');
	}
	for (uint32_t i = 0; i < n && !c.bad; i++) {
		const struct ljb_frame *f = &ev->f[i], *cf = i + 1 < n ? &ev->f[i + 1] : NULL;
		if (i + 1 == n && ev->end == LJB_END_TRUNC && n < LJB_MAX_FRAMES)
			cf = &ev->f[n];	/* the cut frame's caller */
		if (f->ffid == LJB_FFID_RESUME) {
			buf_adds(out, "[resume]");
		} else if (f->ffid == 1) {
			csym(&c, f->key, out);
		} else if (f->ffid > 1) {
			if (funcname(&c, ev, f, cf, name, sizeof(name)) == 0) {
				buf_adds(out, "builtin:");
				ljb_escape(out, name, strlen(name));
			} else {
				buf_addf(out, "builtin#%u", f->ffid);
			}
		} else {
			uint64_t pt = f->key;
			long first = (int32_t)R32(&c, pt + ly->pt_firstline);
			if (o->lines) {
				long pos = i == 0 && ev->vmstate > 0 ? toppos : frame_pos(&c, f);
				long line = pos >= 0 ? debug_line(&c, pt, pos) : -1;
				if (line >= 0) {
					chunkname(&c, pt, o->fullpath, out);
					buf_addf(out, ":%ld\n", line);
				}
			}
			chunkname(&c, pt, o->fullpath, out);
			if (first != 0) {
				if (funcname(&c, ev, f, cf, name, sizeof(name)) == 0) {
					buf_addc(out, ':');
					ljb_escape(out, name, strlen(name));
				} else {
					buf_addf(out, ":%ld", first);
				}
			}
		}
		buf_addc(out, '\n');
	}
	if (ev->end == LJB_END_TRUNC)
		buf_adds(out, "[truncated]\n");
	if (unsure)
		*unsure = c.unsure;
	return c.bad ? -1 : 0;
}
