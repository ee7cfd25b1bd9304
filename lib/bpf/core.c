/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/core.c - see bpf/core.h. */
#include "bpf/core.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "bpf/vm.h"
#include "target/proc.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static struct buf libbpf_log;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	static char line[1 << 16];
	va_list aq;

	if (level == LIBBPF_DEBUG && verbosity < 2)
		return 0;
	va_copy(aq, ap);
	if (verbosity > 0)
		vfprintf(stderr, fmt, aq);	/* (whole: a verifier log is longer) */
	va_end(aq);
	vsnprintf(line, sizeof(line), fmt, ap);
	buf_adds(&libbpf_log, line);
	return 0;
}

int ljb_core_load_error(void)
{
	int e = errno;

	error("cannot load the eBPF program: %s", strerror(e));
	if (libbpf_log.s) {
		char *last = strstr(libbpf_log.s, "libbpf: ");
		hint("libbpf: %.300s", last ? last + 8 : libbpf_log.s);
	}
	hint("this kernel needs eBPF with BTF, bpf_loop and ring buffers (Linux 5.17 or "
	     "later with CONFIG_DEBUG_INFO_BTF); use the SystemTap backend otherwise");
	return -1;
}

double ljb_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

unsigned long long ljb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static struct ljb_idtext *id_slot(const struct ljb_core *c, uint64_t id)
{
	size_t i = (id * 0x9e3779b97f4a7c15ULL) >> 20;

	for (;; i++) {
		struct ljb_idtext *e = &c->ids[i & (c->ids_cap - 1)];
		if (!e->id || e->id == id)
			return e;
	}
}

static size_t text_hash(const char *t)
{
	return fnv1a_str(FNV1A_INIT, t);
}

/* The index of text T in c->texts, added if new. */
static long text_index(struct ljb_core *c, const char *t)
{
	size_t i;

	if (2 * (c->ntexts + 1) >= c->tindex_cap) {
		size_t cap = c->tindex_cap ? 2 * c->tindex_cap : 1024;
		long *idx = xcalloc(cap, sizeof(*idx));
		for (size_t k = 0; k < c->ntexts; k++) {
			for (i = text_hash(c->texts[k].s); idx[i & (cap - 1)]; i++)
				;
			idx[i & (cap - 1)] = (long)k + 1;
		}
		free(c->tindex);
		c->tindex = idx;
		c->tindex_cap = cap;
	}
	for (i = text_hash(t); c->tindex[i & (c->tindex_cap - 1)]; i++) {
		long k = c->tindex[i & (c->tindex_cap - 1)] - 1;
		if (strcmp(c->texts[k].s, t) == 0)
			return k;
	}
	c->tindex[i & (c->tindex_cap - 1)] = (long)c->ntexts + 1;
	c->texts = xrealloc(c->texts, (c->ntexts + 1) * sizeof(*c->texts));
	c->texts[c->ntexts].s = xstrdup(t);
	c->texts[c->ntexts].count = 0;
	return (long)c->ntexts++;
}

/* Asks the kernel for the raw frames of stack ID again, at its next
 * sample; 0, or -1 when its resend map is full. */
static int ask_again(struct ljb_core *c, uint64_t id)
{
	__u8 one = 1;

	if (bpf_map_update_elem(c->resend_fd, &id, &one, BPF_NOEXIST) < 0)
		return -1;
	__sync_fetch_and_add(c->nresend, 1);
	return 0;
}

/* Times a stack whose name could not be checked is asked for again (its
 * first frames may name it at a later sample: ljb_stack_text). */
#define LJB_NAME_TRIES 3

/* A new stack from the kernel: name it now, while its functions live.  A
 * name left out on a value that may have changed since the sample (a
 * freed caller closure), or a stack not named at all because a function
 * on it was gone (freed, its memory reused) before it was named, is tried
 * again on the stack's next samples, up to LJB_NAME_TRIES times (its id
 * holds its functions' identities: frame_alive in bpf/symbolize.c); its
 * samples count all along, the text is the last one made. */
static int take_event(struct ljb_core *c, void *data, size_t size)
{
	const struct ljb_event *ev = data;
	struct buf b = {0};
	struct ljb_idtext *e;
	struct ljb_textres r = { 0, -1, 0, 0 };

	if (size < sizeof(*ev) - sizeof(ev->f))
		return 0;
	e = id_slot(c, ev->id);
	if (e->id) {
		if (!e->asked)
			return 0;
		e->asked = 0;
		e->resent++;
	} else {
		if (c->nids * 2 >= c->ids_cap)
			return 0;
		e->id = ev->id;
		e->end = ev->end;
		e->text = -1;
		c->nids++;
	}
	if (ev->end != LJB_END_BROKEN && ljb_stack_text(ev, &c->ly, c->st, &c->to, &b, &r) == 0 &&
	    b.s) {
		e->text = text_index(c, b.s);
		if (r.cut)
			e->end = LJB_END_TRUNC;
	}
	e->nosnap = r.snapwhy > 0 ? (uint8_t)r.snapwhy : 0;
	e->unsure = r.unsure ? 1 : 0;
	e->gone = r.gone ? 1 : 0;
	buf_free(&b);
	if ((r.unsure || (e->text < 0 && ev->end != LJB_END_BROKEN)) &&
	    e->resent < LJB_NAME_TRIES && ask_again(c, ev->id) == 0) {
		e->asked = 1;
		return 0;	/* (on_stack waits for the better name) */
	}
	if (c->on_stack)
		c->on_stack(c, ev, e->text);
	return 0;
}

/* ring_buffer's callback: take_event, and -1 (the poll returns) at
 * poll_end: a poll consumes the events as long as they come, and naming
 * a burst of new stacks would hold the loop past the session's end. */
static int on_event(void *ctx, void *data, size_t size)
{
	struct ljb_core *c = ctx;

	take_event(c, data, size);
	return c->poll_end && ljb_now() >= c->poll_end ? -1 : 0;
}

/* The processes to sample: PID, or the master's children. */
static size_t targets(const struct ljb_target *t, pid_t **out)
{
	size_t n = 0;

	if (t->pid) {
		*out = xmalloc(sizeof(**out));
		(*out)[0] = t->pid;
		return kill(t->pid, 0) == 0 || errno == EPERM ? 1 : 0;
	}
	if (proc_children(t->master, out, &n) < 0)
		return 0;
	return n;
}

/* Gives the kernel the symbol ranges. */
static void put_syms(struct ljb_core *c)
{
	size_t nsyms;
	const struct ljb_sym *r = ljb_symtab_ranges(c->st, &nsyms);

	for (__u32 i = 0; i < nsyms; i++)
		bpf_map_update_elem(c->syms_fd, &i, &r[i], BPF_ANY);
	*c->nsyms = nsyms;
}

/* Gives the kernel the executable file mappings. */
static void put_files(struct ljb_core *c)
{
	size_t n;
	const struct ljb_file *f = ljb_symtab_files(c->st, &n);

	if (n > LJB_MAX_FILES)
		n = LJB_MAX_FILES;
	for (__u32 i = 0; i < n; i++) {
		struct ljb_sym r = { f[i].lo, f[i].hi };
		bpf_map_update_elem(c->files_fd, &i, &r, BPF_ANY);
	}
	*c->nfiles = n;
}

/* The global_State whose dispatch table R14 points at (a sample's
 * DISPATCH register), if it passes the checks on the live process; 0
 * otherwise (a candidate that failed is not checked again). */
static uint64_t from_dispatch(struct ljb_core *c, pid_t pid, uint64_t r14)
{
	uint64_t g = r14 - c->ly.gg_g2disp;

	if (!r14 || !c->ly.bc_max)
		return 0;
	for (size_t i = 0; i < c->nbad_g; i++)
		if (c->bad_g[i] == r14)
			return 0;
	if (ljb_vm_check_G(pid, &c->ly, c->st, g))
		return g;
	if (c->nbad_g < 4096) {
		c->bad_g = xrealloc(c->bad_g, (c->nbad_g + 1) * sizeof(*c->bad_g));
		c->bad_g[c->nbad_g++] = r14;
	}
	return 0;
}

/* Names the VM's code from G's dispatch table where the target has no
 * symbols, and gives the kernel the new ranges: before any process has
 * its g, so that no sample sees them change. */
static void name_vm(struct ljb_core *c, pid_t pid, uint64_t g)
{
	struct ljb_vm_check bad;

	c->vm_named = 1;
	if (ljb_vm_name(pid, &c->ly, c->st, g, &bad))
		put_syms(c);
	if (bad.n)
		fprintf(stderr, "WARNING: %s: %zu bytecode handlers named from the "
			"dispatch table disagree with the symbols (the first: %s)\n",
			c->t.name, bad.n, bad.first);
}

/* The global_State of PID found in its memory, when its symbols gave
 * none and its samples none yet: at once, then every 5 s.  (Waiting for
 * the samples' registers first lost the first second: a wait or a system
 * call deep in C code, or a non-GC64 trace, shows no DISPATCH register,
 * and a short run of those was never found.) */
static uint64_t from_scan(struct ljb_core *c, pid_t pid)
{
	double t = ljb_now();
	size_t i;

	for (i = 0; i < c->nscans && c->scans[i].pid != pid; i++)
		;
	if (i == c->nscans) {
		c->scans = xrealloc(c->scans, (c->nscans + 1) * sizeof(*c->scans));
		c->scans[c->nscans++] = (struct ljb_scan){ pid, t };
	}
	if (t < c->scans[i].next)
		return 0;
	c->scans[i].next = t + 5;
	return ljb_vm_scan(pid, &c->ly, c->st);
}

/* Notes where PID runs (struct origin), once. */
static void add_origin(struct ljb_core *c, pid_t pid)
{
	for (size_t i = 0; i < c->norigins; i++)
		if (c->origins[i].pid == pid)
			return;
	c->origins = xrealloc(c->origins, (c->norigins + 1) * sizeof(*c->origins));
	origin_read(pid, &c->origins[c->norigins++]);
}

static const struct origin *origin_of(const struct ljb_core *c, pid_t pid)
{
	for (size_t i = 0; i < c->norigins; i++)
		if (c->origins[i].pid == pid)
			return &c->origins[i];
	return NULL;
}

/* Gives the kernel PID's entry: its global_State G (0: not found yet),
 * and where its trace exits run.  HAVE: the map has one already. */
static void put_proc(struct ljb_core *c, pid_t pid, uint64_t g, int have)
{
	__u32 k = pid;
	struct ljb_proc v = {0};
	uint64_t lo = 0, hi = 0;

	if (!have)
		add_origin(c, pid);
	if (g && !c->vm_named)
		name_vm(c, pid, g);
	/* (the kernel counts the samples before: "before the VM was
	   found") */
	if (!have || bpf_map_lookup_elem(c->pids_fd, &k, &v) < 0)
		v = (struct ljb_proc){0};	/* (again: the kernel counts) */
	v.g = g;
	if (g && ljb_vm_exit(pid, &c->ly, c->st, g, &lo, &hi) < 0)
		fprintf(stderr, "WARNING: %s: process %d: the code of its VM's trace "
			"exits (lj_vm_exit_interp) was not found: samples taken there "
			"are skipped\n", c->t.name, (int)pid);
	v.exit_lo = lo;
	v.exit_hi = hi;
	v.mainL = 0;
	if (g && c->ly.G_mainthref &&
	    ljb_read(pid, g + (uint64_t)c->ly.G_mainthref, &v.mainL, c->ly.k.gcref) < 0)
		v.mainL = 0;
	bpf_map_update_elem(c->pids_fd, &k, &v, BPF_ANY);
}

/* Adds new target processes to the pids map and looks for the VM of
 * those that have none yet. */
static void refresh(struct ljb_core *c)
{
	pid_t *p = NULL;
	size_t n = targets(&c->t, &p);

	for (size_t i = 0; i < n; i++) {
		__u32 k = p[i];
		struct ljb_proc v = {0};
		int have = bpf_map_lookup_elem(c->pids_fd, &k, &v) == 0;
		uint64_t g;

		if (have && (v.g || c->novm))
			continue;
		if (c->novm) {		/* (no VM looked for) */
			put_proc(c, p[i], 0, have);
			continue;
		}
		g = ljb_find_G(p[i], &c->ly, c->st);
		if (!g && have)
			g = from_dispatch(c, p[i], v.r14);
		if (!g)
			g = from_scan(c, p[i]);
		if (have && !g)
			continue;
		put_proc(c, p[i], g, have);
	}
	free(p);
}

uint64_t ljb_core_G(struct ljb_core *c, pid_t pid)
{
	__u32 k = pid;
	struct ljb_proc v = {0};

	return bpf_map_lookup_elem(c->pids_fd, &k, &v) == 0 ? v.g : 0;
}

/* Whether the session's target is still there. */
static int alive(const struct ljb_target *t)
{
	pid_t p = t->pid ? t->pid : t->master;
	char path[64];
	FILE *f;
	char st = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
	if (!(f = fopen(path, "re")))
		return 0;
	if (fscanf(f, "%*d (%*[^)]) %c", &st) != 1)
		st = 'Z';
	fclose(f);
	return st != 'Z' && st != 'X';
}

/* ljb_core_open, and ljb_core_open_novm with NOVM (TO NULL, DW unused). */
static int core_open(struct ljb_core *c, const struct ljb_target *t,
		     const struct ljb_textopts *to, struct dw_set *dw, long maxstacks, int novm)
{
	pid_t *p = NULL;

	memset(c, 0, sizeof(*c));
	c->t = *t;
	if (to)
		c->to = *to;
	c->novm = novm;
	libbpf_set_print(libbpf_print);
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		error("this kernel has no BTF (/sys/kernel/btf/vmlinux): the eBPF backend "
		      "needs it");
		hint("use the SystemTap backend (without --runtime=bpf), or a kernel built "
		     "with CONFIG_DEBUG_INFO_BTF=y");
		return -1;
	}
	if (!novm && ljb_layout_load(dw, t->exec, &c->ly) < 0)
		return -1;
	if (!targets(t, &p)) {
		free(p);
		if (t->pid)
			return error("no process %d", (int)t->pid);
		return error("master process %d has no children to sample", (int)t->master);
	}
	c->pid0 = p[0];
	c->st = ljb_symtab_load(p[0]);
	free(p);
	if (!c->st)
		return -1;
	if (c->ly.k.ngx) {
		/* ngx_lua's C functions that resume a coroutine (kernel's
		   ngx_parent): without all of them, no ngx parents */
		struct ljb_cfg *k = &c->ly.k;
		k->ngx_resume = ljb_symtab_addr(c->st, "ngx_http_lua_coroutine_resume");
		k->ngx_wrap_runner = ljb_symtab_addr(c->st, "ngx_http_lua_coroutine_wrap_runner");
		k->ngx_spawn = ljb_symtab_addr(c->st, "ngx_http_lua_uthread_spawn");
		k->ngx = k->ngx_resume && k->ngx_wrap_runner && k->ngx_spawn;
		if (!k->ngx)
			fprintf(stderr, "WARNING: %s: no symbols of ngx_lua's "
				"coroutine functions (a stripped nginx): the stacks of "
				"coroutines that ngx_lua resumes end at the coroutine, "
				"without [resume] and their parent's frames\n", t->name);
	}
	c->ids_cap = 1;
	while (c->ids_cap < 4 * (size_t)maxstacks)
		c->ids_cap *= 2;
	c->ids = xcalloc(c->ids_cap, sizeof(*c->ids));
	return 0;
}

int ljb_core_open(struct ljb_core *c, const struct ljb_target *t,
		  const struct ljb_textopts *to, struct dw_set *dw, long maxstacks)
{
	return core_open(c, t, to, dw, maxstacks, 0);
}

int ljb_core_open_novm(struct ljb_core *c, const struct ljb_target *t)
{
	return core_open(c, t, NULL, NULL, 1, 1);
}

int ljb_core_start(struct ljb_core *c)
{
	put_syms(c);
	put_files(c);
	refresh(c);
	return 0;
}

/* ljb_core_uprobe and ljb_core_uretprobe: at the entry of NAME, or at
 * its returns (RET). */
static struct bpf_link *uprobe_named(struct ljb_core *c, struct bpf_program *prog,
				     const char *name, const char *const *why, int ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = name, .retprobe = ret);
	uint64_t addr = ljb_symtab_addr(c->st, name);
	const struct ljb_file *f = addr ? ljb_symtab_file(c->st, addr) : NULL;
	struct bpf_link *l;

	if (!f) {
		error("no function '%s' in the symbols of '%s' or the libraries it maps",
		      name, c->t.exec ? c->t.exec : "the target");
		for (; why && *why; why++)
			hint("%s", *why);
		return NULL;
	}
	l = bpf_program__attach_uprobe_opts(prog, c->t.pid ? c->t.pid : -1, f->path, 0, &uo);
	if (!l)
		error("cannot attach a %s to %s in '%s': %s", ret ? "uretprobe" : "uprobe", name,
		      f->path, strerror(errno));
	return l;
}

struct bpf_link *ljb_core_uprobe(struct ljb_core *c, struct bpf_program *prog,
				 const char *name, const char *const *why)
{
	return uprobe_named(c, prog, name, why, 0);
}

struct bpf_link *ljb_core_uretprobe(struct ljb_core *c, struct bpf_program *prog,
				    const char *name, const char *const *why)
{
	return uprobe_named(c, prog, name, why, 1);
}

/* What ljb_uprobe_cost() probes (called through a volatile pointer: not
 * inlined, not dropped). */
__attribute__((noinline)) static int probed(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

/* The file and the offset in it of the code at ADDR in process PID (0:
 * this one); 0, or -1. */
static int map_offset(pid_t pid, uint64_t addr, char *path, size_t size, unsigned long *off)
{
	char line[4096];
	FILE *f;
	int rc = -1;

	if (pid)
		snprintf(line, sizeof(line), "/proc/%d/maps", (int)pid);
	else
		snprintf(line, sizeof(line), "/proc/self/maps");
	if (!(f = fopen(line, "re")))
		return -1;
	while (rc < 0 && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, pgoff;
		int n = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &pgoff, &n) < 3 || !n ||
		    addr < lo || addr >= hi || line[n] != '/')
			continue;
		line[strcspn(line, "\n")] = 0;
		char *host = NULL;
		if (pid && proc_file(pid, line + n, &host) < 0)
			break;
		snprintf(path, size, "%s", host ? host : line + n);
		free(host);
		*off = addr - lo + pgoff;
		rc = 0;
	}
	fclose(f);
	return rc;
}

struct bpf_link *ljb_core_uprobe_at(struct ljb_core *c, struct bpf_program *prog,
				    uint64_t addr, const char *what)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	char path[4096];
	unsigned long off;
	struct bpf_link *l;

	if (!ljb_symtab_file(c->st, addr) || map_offset(c->pid0, addr, path, sizeof(path), &off) < 0) {
		error("%s at 0x%llx is in no file that process %d maps", what, (unsigned long long)addr,
		      (int)c->pid0);
		return NULL;
	}
	l = bpf_program__attach_uprobe_opts(prog, c->t.pid ? c->t.pid : -1, path, off, &uo);
	if (!l)
		error("cannot attach a uprobe to %s in '%s' (offset 0x%lx): %s", what, path, off,
		      strerror(errno));
	return l;
}

/* Nanoseconds per call of probed(): the least of 5 runs of N calls (the
 * least disturbed by the rest of the machine). */
static double per_call(int (*volatile fn)(int), int n)
{
	double best = 0;

	for (int k = 0; k < 5; k++) {
		double t0 = ljb_now(), ns;
		int x = 0;
		for (int i = 0; i < n; i++)
			x = fn(x);
		ns = x == n ? (ljb_now() - t0) * 1e9 / n : 0;
		if (k == 0 || ns < best)
			best = ns;
	}
	return best;
}

double ljb_uprobe_cost(struct bpf_program *prog)
{
	int (*volatile fn)(int) = probed;
	char path[4096];
	unsigned long off;
	struct bpf_link *l;
	double with, without;
	const int n = 500;

	if (map_offset(0, (uintptr_t)probed, path, sizeof(path), &off) < 0)
		return -1;
	l = bpf_program__attach_uprobe_opts(prog, getpid(), path, off, NULL);
	if (!l)
		return -1;
	with = per_call(fn, n);
	bpf_link__destroy(l);
	without = per_call(fn, n);
	return with > without ? with - without : 0;
}

const char *ljb_uprobe_cost_text(char *b, size_t size, double ns)
{
	if (ns < 0)
		snprintf(b, size, " (not measured)");
	else
		snprintf(b, size, " (%.1f us each here, measured at the start)", ns / 1000);
	return b;
}

int ljb_core_loop(struct ljb_core *c, long time, const char *verb, const char *more,
		  double *elapsed)
{
	double t0, last = 0, t;
	int gone = 0;

	c->rb = ring_buffer__new(c->events_fd, on_event, c, NULL);
	if (!c->rb)
		return error("cannot set up the ring buffer: %s", strerror(errno));
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (verb && time > 0)
		fprintf(stderr, "WARNING: %s: %s for %ld s%s; press Ctrl-C to stop\n",
			c->t.name, verb, time, more);
	else if (verb)
		fprintf(stderr, "WARNING: %s: %s until Ctrl-C%s; press Ctrl-C to stop\n",
			c->t.name, verb, more);
	t0 = ljb_now();
	while (!stop && !c->stop) {
		c->poll_end = ljb_now() + 0.05;
		ring_buffer__poll(c->rb, 20);
		c->poll_end = 0;
		t = ljb_now();
		if (time > 0 && t - t0 >= time)
			break;
		if (t - last >= 0.05) {
			last = t;
			if (!alive(&c->t)) {
				gone = 1;
				break;
			}
			refresh(c);
			if (c->tick && c->tick(c))
				break;
		}
	}
	*elapsed = ljb_now() - t0;
	return gone;
}

void ljb_core_drain(struct ljb_core *c)
{
	if (c->rb)
		ring_buffer__consume(c->rb);
}

void ljb_core_end(struct ljb_core *c, int gone)
{
	if (gone && c->t.pid)
		fprintf(stderr, "WARNING: %s: process %d exited; stopping\n", c->t.name,
			(int)c->t.pid);
	ljb_core_drain(c);
}

void ljb_core_add(struct ljb_core *c, uint64_t id, unsigned long long n,
		  struct ljb_tally *t)
{
	struct ljb_idtext *e = id_slot(c, id);

	if (!e->id) {
		t->lost += n;	/* its raw frames never reached us */
	} else if (e->end == LJB_END_BROKEN) {
		t->broken += n;
	} else if (e->text < 0) {
		t->unnamed += n;
	} else {
		if (e->end == LJB_END_TRUNC)
			t->truncated += n;
		t->nosnap[e->nosnap] += n;
		if (e->unsure)
			t->unsure += n;
		if (e->gone)
			t->gone += n;
		c->texts[e->text].count += n;
	}
}

void ljb_core_add_leaf(struct ljb_core *c, uint64_t id, const char *leaf,
		       unsigned long long n, struct ljb_tally *t)
{
	ljb_core_add_framed(c, id, leaf, NULL, n, t);
}

/* Appends FRAME (escaped) and a newline to B, unless it is NULL or "". */
static void add_frame(struct buf *b, const char *frame)
{
	if (!frame || !*frame)
		return;
	ljb_escape(b, frame, strlen(frame));
	buf_adds(b, "\n");
}

void ljb_core_add_framed(struct ljb_core *c, uint64_t id, const char *leaf, const char *root,
			 unsigned long long n, struct ljb_tally *t)
{
	struct ljb_idtext *e = id_slot(c, id);
	struct buf b = {0};
	long k;

	if (((!leaf || !*leaf) && (!root || !*root)) || !e->id || e->end == LJB_END_BROKEN ||
	    e->text < 0) {
		ljb_core_add(c, id, n, t);
		return;
	}
	if (e->end == LJB_END_TRUNC)
		t->truncated += n;
	t->nosnap[e->nosnap] += n;
	add_frame(&b, leaf);
	buf_adds(&b, c->texts[e->text].s);
	add_frame(&b, root);
	k = text_index(c, b.s);	/* (it may move texts) */
	c->texts[k].count += n;
	buf_free(&b);
}

void ljb_core_add_frames(struct ljb_core *c, const char *const *frames, unsigned long long n)
{
	struct buf b = {0};

	for (; *frames; frames++)
		add_frame(&b, *frames);
	if (b.s)
		c->texts[text_index(c, b.s)].count += n;
	buf_free(&b);
}

void ljb_core_add_map(struct ljb_core *c, int fd, struct ljb_tally *t)
{
	__u64 key, next, n;
	int more;

	for (more = bpf_map_get_next_key(fd, NULL, &next) == 0; more;
	     more = bpf_map_get_next_key(fd, &key, &next) == 0) {
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &n) == 0)
			ljb_core_add(c, key, n, t);
	}
}

/* Closes the waits still open in the map FD (keys of KEYSIZE bytes) at
 * NOW: see ljb_waits_report (PFD: its pus). */
static void waits_close(struct ljb_core *c, int fd, size_t keysize, int pfd,
			unsigned long long now, long min_us, unsigned long long *w,
			struct ljb_tally *t, unsigned long long open[2])
{
	char *key = xcalloc(2, keysize), *next = key + keysize;
	int more;

	for (more = bpf_map_get_next_key(fd, NULL, next) == 0; more;
	     more = bpf_map_get_next_key(fd, key, next) == 0) {
		struct ljb_wait v;
		unsigned long long us;
		__u64 pu = 0;
		memcpy(key, next, keysize);
		if (bpf_map_lookup_elem(fd, key, &v) < 0 || v.since > now)
			continue;
		us = (now - v.since) / 1000;
		if ((long)us < min_us) {
			w[LJB_W_N(LJB_K_SHORT)]++;
			w[LJB_W_US(LJB_K_SHORT)] += us;
			continue;
		}
		bpf_map_lookup_elem(pfd, &v.pid, &pu);
		pu += us;
		bpf_map_update_elem(pfd, &v.pid, &pu, BPF_ANY);
		open[0]++;
		open[1] += us;
		if (v.kind >= LJB_K_MAX)
			continue;
		w[LJB_W_N(v.kind)]++;
		w[LJB_W_US(v.kind)] += us;
		if (v.kind == LJB_K_LUA)
			ljb_core_add(c, v.id, us, t);
	}
	free(key);
}

void ljb_waits_report(struct ljb_core *c, const struct ljb_waits *m, unsigned long long now,
		      long min_us, long limit, double traced, const char *verb,
		      const char *events, unsigned long long *n, unsigned long long *w,
		      struct ljb_tally *t, unsigned long long open[2])
{
	unsigned long long printed;

	ljb_sum_percpu(m->stats, n, LJB_N_MAX);
	ljb_sum_percpu(m->wstats, w, LJB_W_MAX);
	ljb_core_add_map(c, m->weights, t);
	waits_close(c, m->waits, m->keysize, m->pus, now, min_us, w, t, open);
	t->lost += w[LJB_W_LOST];
	printed = ljb_core_print(c, limit);
	fprintf(stderr, "WARNING: %s: traced for %llu us; %llu us %s in %llu %s with a Lua "
		"stack (%llu us printed)\n", c->t.name, (unsigned long long)(traced * 1e6),
		w[LJB_W_US(LJB_K_LUA)], verb, w[LJB_W_N(LJB_K_LUA)], events, printed);
}

void ljb_waits_open_limits(const struct ljb_core *c, const unsigned long long open[2],
			   const char *events, const struct ljb_tally *t, long depth,
			   long maxstacks)
{
	if (open[0])
		fprintf(stderr, "WARNING: %s: %llu %s still open at the end, counted up to it: "
			"%llu us\n", c->t.name, open[0], events, open[1]);
	ljb_print_limits(c, t, "us", depth, maxstacks);
}

static int by_count(const void *a, const void *b)
{
	const struct ljb_text *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->s, y->s);
}

unsigned long long ljb_core_print(struct ljb_core *c, long limit)
{
	unsigned long long total = 0;

	/* the container of the first process, for util/pprof's labels */
	char *h = c->norigins ? origin_header(&c->origins[0]) : NULL;
	if (h)
		printf("%s\n", h);
	free(h);
	/* (the ids keep indexes into texts: sort a copy) */
	struct ljb_text *v = xmalloc((c->ntexts + 1) * sizeof(*v));
	memcpy(v, c->texts, c->ntexts * sizeof(*v));
	qsort(v, c->ntexts, sizeof(*v), by_count);
	for (size_t i = 0; i < c->ntexts; i++) {
		if (!v[i].count || (limit > 0 && (long)i >= limit))
			break;
		printf("%s\t%llu\n\n", v[i].s, v[i].count);
		total += v[i].count;
	}
	free(v);
	fflush(stdout);
	return total;
}

struct pidcount { __u32 pid; unsigned long long n; };

static int by_n(const void *a, const void *b)
{
	const struct pidcount *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void ljb_print_per_pid(const struct ljb_core *c, int fd, const char *what)
{
	struct pidcount *pc = NULL;
	size_t np = 0;
	__u32 pk, pn;
	int more;

	for (more = bpf_map_get_next_key(fd, NULL, &pn) == 0; more;
	     more = bpf_map_get_next_key(fd, &pk, &pn) == 0) {
		__u64 pv;
		pk = pn;
		if (bpf_map_lookup_elem(fd, &pk, &pv) < 0 || !pv)
			continue;
		pc = xrealloc(pc, (np + 1) * sizeof(*pc));
		pc[np].pid = pk;
		pc[np++].n = pv;
	}
	if (np)
		qsort(pc, np, sizeof(*pc), by_n);
	fprintf(stderr, "WARNING: %s: %s:", c->t.name, what);
	for (size_t i = 0; i < np && i < 16; i++)
		fprintf(stderr, " %u:%llu", pc[i].pid, pc[i].n);
	fputc('\n', stderr);
	for (size_t i = 0; i < np && i < 16; i++) {
		const struct origin *o = origin_of(c, (pid_t)pc[i].pid);
		char *text = o ? origin_text(o) : NULL;
		if (text)
			fprintf(stderr, "WARNING: %s: %s\n", c->t.name, text);
		free(text);
	}
	free(pc);
}

void ljb_core_free(struct ljb_core *c)
{
	ring_buffer__free(c->rb);
	ljb_symtab_free(c->st);
	for (size_t i = 0; i < c->ntexts; i++)
		free(c->texts[i].s);
	free(c->texts);
	free(c->tindex);
	free(c->ids);
	free(c->bad_g);
	free(c->scans);
	for (size_t i = 0; i < c->norigins; i++)
		origin_free(&c->origins[i]);
	free(c->origins);
	buf_free(&libbpf_log);
	memset(c, 0, sizeof(*c));
}
