/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/sample_bt_user.c - see bpf/sample_bt_user.h. */
#include "bpf/sample_bt_user.h"
#include "bpf/cpu_clock.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "target/proc.h"

#include "bpf/sample_bt.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_FRAMES 100		/* user frames a stack keeps (SystemTap's MAXBACKTRACE) */
#define KFRAMES 127		/* kstacks' value: the kernel's addresses */
#define REREPORT_S 1.0		/* a process's modules read again at most this often */
#define STARTSTACK_ABOVE 64	/* bytes copied above the stack pointer a process started with */

/* --- the kernel's symbols (/proc/kallsyms) ------------------------------ */

struct ksym {
	uint64_t addr;
	char *name;		/* "name" or "name [module]" split: see mod */
	char *mod;		/* NULL: the kernel itself */
};

static struct ksym *ksyms;
static size_t nksyms;

static int by_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Reads the kernel's text symbols.  0, or -1 after error(). */
static int ksyms_load(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512], name[256], mod[128];
	unsigned long long a;
	char type;
	size_t cap = 0;

	if (!f)
		return error("cannot read /proc/kallsyms: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		int n = sscanf(line, "%llx %c %255s [%127[^]]]", &a, &type, name, mod);
		if (n < 3 || !a || (type != 't' && type != 'T' && type != 'w' && type != 'W'))
			continue;
		if (nksyms == cap)
			ksyms = xrealloc(ksyms, (cap = cap ? 2 * cap : 65536) * sizeof(*ksyms));
		ksyms[nksyms++] = (struct ksym){ a, xstrdup(name), n == 4 ? xstrdup(mod) : NULL };
	}
	fclose(f);
	if (!nksyms)
		return error("/proc/kallsyms lists no kernel addresses (kptr_restrict?): "
			     "kernel frames cannot be named");
	qsort(ksyms, nksyms, sizeof(*ksyms), by_addr);
	return 0;
}

/* " 0xADDR : SYMBOL+0xOFF/0xLEN [MODULE]" of kernel address A into B. */
static void ksym_line(struct buf *b, uint64_t a)
{
	size_t lo = 0, hi = nksyms;

	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (ksyms[mid].addr <= a)
			lo = mid;
		else
			hi = mid;
	}
	if (!nksyms || ksyms[lo].addr > a || lo + 1 == nksyms) {
		buf_addf(b, " 0x%llx : 0x%llx [kernel]\n", (unsigned long long)a, (unsigned long long)a);
		return;
	}
	buf_addf(b, " 0x%llx : %s+0x%llx/0x%llx [%s]\n", (unsigned long long)a, ksyms[lo].name,
		 (unsigned long long)(a - ksyms[lo].addr),
		 (unsigned long long)(ksyms[lo + 1].addr - ksyms[lo].addr),
		 ksyms[lo].mod ? ksyms[lo].mod : "kernel");
}

/* --- user stacks: libdwfl's unwinder on a sample's copy ------------------- */

/* A frame's line, named once (dwfl_module_addrinfo searches a module's
 * symbols one by one). */
struct named {
	uint64_t key;		/* pc << 1 | the frame is where it was */
	char *line;
};

/* A target process: its modules (libdwfl), its frames named so far, and
 * the sample being unwound. */
struct unw {
	pid_t pid;
	Dwfl *dwfl;
	double reported;	/* when its modules were read */
	const struct ljb_btev *ev;	/* the sample being unwound */
	struct named *names;	/* open addressing, ncap a power of two */
	size_t nnames, ncap;
};

static pid_t cur_pid;		/* (find_elf: the process whose module it is) */

/* The file of a module, by the path the process knows it: under
 * /proc/PID/root for a process in a container. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	char *host;
	int fd;

	if (name[0] == '/' && cur_pid && proc_foreign_quiet(cur_pid) == 1 &&
	    proc_file(cur_pid, name, &host) == 0) {
		fd = open(host, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			*file_name = host;
			*elfp = NULL;
			return fd;
		}
		free(host);
	}
	return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
}

static const Dwfl_Callbacks dwfl_cb = {
	.find_elf = find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_arg)
{
	struct unw *u = arg;

	(void)dwfl;
	if (*thread_arg)
		return 0;
	*thread_arg = u;
	return (pid_t)u->ev->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_arg)
{
	(void)dwfl;
	(void)tid;
	*thread_arg = arg;
	return true;
}

/* A word of the sample's stack copy; no other memory is read. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr a, Dwarf_Word *out, void *arg)
{
	const struct ljb_btev *e = ((struct unw *)arg)->ev;
	uint64_t sp = e->regs[7];

	(void)dwfl;
	if (a < sp || a + 8 > sp + e->len)
		return false;
	memcpy(out, e->stack + (a - sp), 8);
	return true;
}

static bool set_registers(Dwfl_Thread *t, void *arg)
{
	const struct ljb_btev *e = ((struct unw *)arg)->ev;
	Dwarf_Word r[LJB_BT_NREGS];

	for (int i = 0; i < LJB_BT_NREGS; i++)
		r[i] = e->regs[i];
	return dwfl_thread_state_registers(t, 0, LJB_BT_NREGS, r);
}

static const Dwfl_Thread_Callbacks thread_cb = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_registers,
};

/* (Re)reads process U's modules from its maps; 0, or -1. */
static int report(struct unw *u)
{
	if (u->dwfl)
		dwfl_end(u->dwfl);
	/* (the names go with the modules: a library may be another now) */
	for (size_t i = 0; i < u->ncap; i++)
		free(u->names[i].line);
	free(u->names);
	u->names = NULL;
	u->nnames = u->ncap = 0;
	u->dwfl = dwfl_begin(&dwfl_cb);
	u->reported = ljb_now();
	if (!u->dwfl)
		return -1;
	cur_pid = u->pid;
	if (dwfl_linux_proc_report(u->dwfl, u->pid) != 0 || dwfl_report_end(u->dwfl, NULL, NULL) != 0 ||
	    !dwfl_attach_state(u->dwfl, NULL, u->pid, &thread_cb, u)) {
		dwfl_end(u->dwfl);
		u->dwfl = NULL;
		return -1;
	}
	return 0;
}

struct frames {
	uint64_t pc[MAX_FRAMES];
	int act[MAX_FRAMES];	/* the frame's pc is where it was, not a return */
	int n;
};

static int frame_cb(Dwfl_Frame *f, void *arg)
{
	struct frames *fr = arg;
	Dwarf_Addr pc;
	bool act;

	if (!dwfl_frame_pc(f, &pc, &act) || fr->n == MAX_FRAMES)
		return DWARF_CB_ABORT;
	fr->pc[fr->n] = pc;
	fr->act[fr->n++] = act;
	return DWARF_CB_OK;
}

/* The module's path as the process knows it. */
static const char *mod_path(const struct unw *u, Dwfl_Module *m)
{
	const char *f = NULL, *name = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, &f, NULL);
	char pre[64];
	size_t n;

	if (name && strncmp(name, "[vdso", 5) == 0)
		return "vdso";	/* ("[vdso: PID]") */
	if (!f)
		return name ? name : "?";
	n = (size_t)snprintf(pre, sizeof(pre), "/proc/%d/root", (int)u->pid);
	return strncmp(f, pre, n) == 0 && f[n] == '/' ? f + n : f;
}

/* The line of the frame at PC (ACT: where it was, else a return address,
 * named by the call before it) in process U, named once.  *MISSING: no
 * module of U holds it. */
static const char *frame_line(struct unw *u, uint64_t pc, int act, int *missing)
{
	uint64_t key = pc << 1 | (act != 0);
	size_t i;

	if (2 * (u->nnames + 1) > u->ncap) {
		size_t cap = u->ncap ? 2 * u->ncap : 256;
		struct named *n = xcalloc(cap, sizeof(*n));
		for (size_t k = 0; k < u->ncap; k++) {
			if (!u->names[k].line)
				continue;
			for (i = (size_t)(u->names[k].key * 0x9e3779b97f4a7c15ULL) & (cap - 1); n[i].line;
			     i = (i + 1) & (cap - 1))
				;
			n[i] = u->names[k];
		}
		free(u->names);
		u->names = n;
		u->ncap = cap;
	}
	for (i = (size_t)(key * 0x9e3779b97f4a7c15ULL) & (u->ncap - 1); u->names[i].line;
	     i = (i + 1) & (u->ncap - 1))
		if (u->names[i].key == key)
			return u->names[i].line;

	Dwarf_Addr at = act ? pc : pc - 1, off;
	Dwfl_Module *m = u->dwfl ? dwfl_addrmodule(u->dwfl, at) : NULL;
	GElf_Sym sym;
	const char *name = m ? dwfl_module_addrinfo(m, at, &off, &sym, NULL, NULL, NULL) : NULL;
	char *line;

	*missing = !m;
	if (name)
		line = xasprintf(" 0x%llx : %s+0x%llx/0x%llx [%s]\n", (unsigned long long)pc, name,
				 (unsigned long long)(off + (pc - at)), (unsigned long long)sym.st_size,
				 mod_path(u, m));
	else if (m)
		line = xasprintf(" 0x%llx : 0x%llx [%s]\n", (unsigned long long)pc,
				 (unsigned long long)pc, mod_path(u, m));
	else
		line = xasprintf(" 0x%llx : 0x%llx\n", (unsigned long long)pc, (unsigned long long)pc);
	u->names[i] = (struct named){ key, line };
	u->nnames++;
	return line;
}

/* Appends the user frames of sample E (unwound in process U) to B; the
 * frames' count. */
static int user_frames(struct unw *u, const struct ljb_btev *e, struct buf *b)
{
	struct frames fr = { .n = 0 };

	u->ev = e;
	cur_pid = u->pid;
	if (u->dwfl)
		dwfl_getthread_frames(u->dwfl, (pid_t)e->tid, frame_cb, &fr);
	if (!fr.n) {		/* (no modules: the registers' pc alone) */
		fr.pc[0] = e->regs[16];
		fr.act[0] = 1;
		fr.n = 1;
	}
	int missing = 0, miss = 0;
	for (int i = 0; i < fr.n; i++) {
		buf_adds(b, frame_line(u, fr.pc[i], fr.act[i], &miss));
		missing |= miss && i > 0;
	}
	/* (a caller in no module: a library loaded since, for the next ones) */
	if (missing && ljb_now() - u->reported > REREPORT_S)
		report(u);
	return fr.n;
}

/* --- the session ------------------------------------------------------------ */

struct stack {
	char *text;
	unsigned long long count;
};

struct session {
	struct ljb_core c;
	const struct ljb_opts *o;
	struct sample_bt *skel;
	struct ring_buffer *rb;
	struct ljb_links links;
	struct unw *procs;
	size_t nprocs;
	/* distinct stacks: open addressing by text (cap a power of two) */
	struct stack *st;
	size_t nst, cap;
	unsigned long long skipped, events;
	double unwind_s;	/* user space's time unwinding and naming */
};

static uint64_t hash(const char *s)
{
	return fnv1a_str(FNV1A_INIT, s);
}

static void count_text(struct session *s, char *text)
{
	size_t i;

	if (2 * (s->nst + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		struct stack *n = xcalloc(cap, sizeof(*n));
		for (size_t k = 0; k < s->cap; k++) {
			if (!s->st[k].text)
				continue;
			for (i = hash(s->st[k].text) & (cap - 1); n[i].text; i = (i + 1) & (cap - 1))
				;
			n[i] = s->st[k];
		}
		free(s->st);
		s->st = n;
		s->cap = cap;
	}
	for (i = hash(text) & (s->cap - 1); s->st[i].text; i = (i + 1) & (s->cap - 1))
		if (strcmp(s->st[i].text, text) == 0) {
			s->st[i].count++;
			free(text);
			return;
		}
	s->st[i] = (struct stack){ text, 1 };
	s->nst++;
}

static struct unw *proc_of(struct session *s, pid_t pid)
{
	struct unw *u;

	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	s->procs = xrealloc(s->procs, (s->nprocs + 1) * sizeof(*s->procs));
	u = &s->procs[s->nprocs++];
	memset(u, 0, sizeof(*u));
	u->pid = pid;
	report(u);
	return u;
}

/* A sample from the ring buffer: its stack text, counted. */
static int on_sample(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct ljb_btev *e = data;
	struct buf b = {0};
	double t0 = ljb_now();
	int n = 0;

	if (size < offsetof(struct ljb_btev, stack) || size < offsetof(struct ljb_btev, stack) + e->len)
		return 0;
	s->events++;
	if (e->kstack >= 0) {
		uint64_t a[KFRAMES] = {0};
		uint32_t id = (uint32_t)e->kstack;
		if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.kstacks), &id, a) == 0)
			for (int i = 0; i < KFRAMES && a[i]; i++, n++)
				ksym_line(&b, a[i]);
	}
	if (s->o->user)
		n += user_frames(proc_of(s, (pid_t)e->pid), e, &b);
	if (!n) {
		s->skipped++;
		free(b.s);
	} else {
		count_text(s, b.s);
	}
	s->unwind_s += ljb_now() - t0;
	return 0;
}

/* The top of what the main thread's stack holds for the unwinder, for
 * each target process not yet given: the stack pointer the process
 * started with (/proc/PID/stat's startstack, its 28th field), where the
 * outermost frame is, and a little above it (its argc and argv, which
 * the kernel wrote: present pages). */
static void put_stacktops(struct session *s)
{
	int pfd = s->c.pids_fd, tfd = bpf_map__fd(s->skel->maps.stacktop);
	__u32 key, next, *k = NULL;

	while (bpf_map_get_next_key(pfd, k, &next) == 0) {
		char path[64], line[2048], *p;
		unsigned long long v = 0;
		__u64 top;
		FILE *f;
		key = next;
		k = &key;
		if (bpf_map_lookup_elem(tfd, &key, &top) == 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%u/stat", key);
		if (!(f = fopen(path, "re")))
			continue;
		/* (after the command's closing parenthesis: field 3 on) */
		if (fgets(line, sizeof(line), f) && (p = strrchr(line, ')'))) {
			int field = 2;
			for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " "))
				if (++field == 28) {
					v = strtoull(tok, NULL, 10);
					break;
				}
		}
		fclose(f);
		if (v) {
			top = v + STARTSTACK_ABOVE;
			bpf_map_update_elem(tfd, &key, &top, BPF_ANY);
		}
	}
}

static int tick(struct ljb_core *c)
{
	struct session *s = c->ctx;
	unsigned long long n[LJB_B_MAX];

	put_stacktops(s);
	ring_buffer__consume(s->rb);
	if (s->o->samples <= 0)
		return 0;
	ljb_sum_percpu(bpf_map__fd(s->skel->maps.btstats), n, LJB_B_MAX);
	return n[LJB_B_SAMPLES] >= (unsigned long long)s->o->samples;
}

static int by_count(const void *a, const void *b)
{
	const struct stack *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->text, y->text);
}

/* The stacks on stdout, the statistics on stderr. */
static void print_report(struct session *s)
{
	unsigned long long n[LJB_B_MAX];
	struct stack *all = xcalloc(s->nst ? s->nst : 1, sizeof(*all));
	size_t k = 0;
	const char *name = s->c.t.name;

	for (size_t i = 0; i < s->cap; i++)
		if (s->st[i].text)
			all[k++] = s->st[i];
	qsort(all, k, sizeof(*all), by_count);
	for (size_t i = 0; i < k && (s->o->limit <= 0 || (long)i < s->o->limit); i++)
		printf("%s\t%llu\n\n", all[i].text, all[i].count);
	fflush(stdout);
	free(all);
	ljb_sum_percpu(bpf_map__fd(s->skel->maps.btstats), n, LJB_B_MAX);
	fprintf(stderr, "WARNING: %s: %llu samples, %llu in user mode, %llu in kernel mode, "
		"%llu skipped (no frames), %zu distinct stacks\n", name, n[LJB_B_SAMPLES],
		n[LJB_B_USER], n[LJB_B_KERNEL], s->skipped + n[LJB_B_LOSTRB], s->nst);
	if (n[LJB_B_SAMPLES])
		fprintf(stderr, "WARNING: %s: %.1f us per sample in the sampling program on average "
			"(%.0f bytes of user stack copied per sample); %.1f us per sample in stap++ "
			"unwinding and naming it\n", name,
			(double)n[LJB_B_COST] / 1000.0 / (double)n[LJB_B_SAMPLES],
			(double)n[LJB_B_BYTES] / (double)n[LJB_B_SAMPLES],
			s->events ? s->unwind_s * 1e6 / (double)s->events : 0.0);
	if (n[LJB_B_LOSTRB])
		fprintf(stderr, "WARNING: %s: %llu samples lost: the ring buffer to stap++ was full "
			"(counted as skipped)\n", name, n[LJB_B_LOSTRB]);
	if (n[LJB_B_NOKSTACK])
		fprintf(stderr, "WARNING: %s: %llu samples in kernel mode whose kernel stack the "
			"kernel did not give (bpf_get_stackid): no kernel frames\n", name,
			n[LJB_B_NOKSTACK]);
	if (n[LJB_B_NOSTACK])
		fprintf(stderr, "WARNING: %s: %llu samples whose user stack could not be read: their "
			"user frames are the interrupted PC only\n", name, n[LJB_B_NOSTACK]);
}

int ljb_samplebt_run(const struct ljb_target *t, const struct ljb_opts *o, struct dw_set *dw)
{
	struct session s = { .o = o };
	int rc = EXIT_FAIL, gone;
	char more[64] = "";
	double dt;

	(void)dw;		/* (no layouts: no Lua stack is taken) */
	if (ljb_core_open_novm(&s.c, t) < 0)
		goto out;
	if (o->kernel && ksyms_load() < 0)
		goto out;
	if (!(s.skel = sample_bt__open())) {
		error("cannot open the eBPF program: %s", strerror(errno));
		goto out;
	}
	s.skel->rodata->bt_kernel = o->kernel;
	s.skel->rodata->bt_user = o->user;
	bpf_map__set_max_entries(s.skel->maps.stacks, 1);
	if (sample_bt__load(s.skel) < 0) {
		ljb_core_load_error();
		goto out;
	}
	LJB_CORE_MAPS(&s.c, s.skel);
	if (ljb_core_start(&s.c) < 0)
		goto out;
	s.rb = ring_buffer__new(bpf_map__fd(s.skel->maps.btevents), on_sample, &s, NULL);
	if (!s.rb) {
		error("cannot read the eBPF program's ring buffer: %s", strerror(errno));
		goto out;
	}
	put_stacktops(&s);
	if (ljb_cpu_clock_attach(s.skel->progs.bt_sample, o->hz, &s.links) < 0)
		goto out;
	if (o->samples > 0)
		snprintf(more, sizeof(more), " or %ld samples", o->samples);
	s.c.ctx = &s;
	s.c.tick = tick;
	gone = ljb_core_loop(&s.c, o->time, "sampling", more, &dt);
	if (gone < 0)
		goto out;
	ljb_links_destroy(&s.links);
	ljb_core_end(&s.c, gone);
	ring_buffer__consume(s.rb);
	print_report(&s);
	rc = 0;
out:
	ljb_links_destroy(&s.links);
	ring_buffer__free(s.rb);
	sample_bt__destroy(s.skel);
	for (size_t i = 0; i < s.nprocs; i++) {
		if (s.procs[i].dwfl)
			dwfl_end(s.procs[i].dwfl);
		for (size_t k = 0; k < s.procs[i].ncap; k++)
			free(s.procs[i].names[k].line);
		free(s.procs[i].names);
	}
	free(s.procs);
	for (size_t i = 0; i < s.cap; i++)
		free(s.st[i].text);
	free(s.st);
	ljb_core_free(&s.c);
	return rc;
}
