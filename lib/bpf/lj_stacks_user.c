/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/lj_stacks_user.c - see bpf/lj_stacks_user.h. */
#include "bpf/lj_stacks_user.h"
#include "base/error.h"
#include "base/strbuf.h"
#include "base/wrapper.h"
#include "bpf/layout.h"
#include "bpf/symbolize.h"
#include "bpf/vm.h"
#include "target/proc.h"

#include "bpf/lj_stacks.skel.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A stack id and the text user space gave it. */
struct idtext {
	uint64_t id;
	long text;	/* index in texts, -1: could not be named */
	uint32_t end;
};

struct text {
	char *s;
	unsigned long long count;
};

struct session {
	const struct ljb_opts *o;
	struct ljb_layout ly;
	struct ljb_symtab *st;
	struct lj_stacks *skel;
	struct idtext *ids;	/* open addressing, nids_cap a power of two */
	size_t nids, nids_cap;
	struct text *texts;
	size_t ntexts;
	long *tindex;		/* texts by hash: index + 1, 0 empty */
	size_t tindex_cap;	/* a power of two, > 2 * ntexts */
	unsigned long long unnamed;	/* stacks whose memory was gone */
	int vm_named;		/* the VM's code was named from a dispatch table */
	uint64_t *bad_g;	/* r14 candidates that failed the checks */
	size_t nbad_g;
	struct scan { pid_t pid; double next; } *scans;	/* ljb_vm_scan's */
	size_t nscans;
};

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

	if (level == LIBBPF_DEBUG && verbosity < 2)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	if (verbosity > 0)
		fputs(line, stderr);
	buf_adds(&libbpf_log, line);
	return 0;
}

static struct idtext *id_slot(struct session *s, uint64_t id)
{
	size_t i = (id * 0x9e3779b97f4a7c15ULL) >> 20;

	for (;; i++) {
		struct idtext *e = &s->ids[i & (s->nids_cap - 1)];
		if (!e->id || e->id == id)
			return e;
	}
}

static size_t text_hash(const char *t)
{
	size_t h = 14695981039346656037ULL;

	for (; *t; t++)
		h = (h ^ (unsigned char)*t) * 1099511628211ULL;
	return h;
}

/* The index of text T in s->texts, added if new. */
static long text_index(struct session *s, const char *t)
{
	size_t i;

	if (2 * (s->ntexts + 1) >= s->tindex_cap) {
		size_t cap = s->tindex_cap ? 2 * s->tindex_cap : 1024;
		long *idx = xcalloc(cap, sizeof(*idx));
		for (size_t k = 0; k < s->ntexts; k++) {
			for (i = text_hash(s->texts[k].s); idx[i & (cap - 1)]; i++)
				;
			idx[i & (cap - 1)] = (long)k + 1;
		}
		free(s->tindex);
		s->tindex = idx;
		s->tindex_cap = cap;
	}
	for (i = text_hash(t); s->tindex[i & (s->tindex_cap - 1)]; i++) {
		long k = s->tindex[i & (s->tindex_cap - 1)] - 1;
		if (strcmp(s->texts[k].s, t) == 0)
			return k;
	}
	s->tindex[i & (s->tindex_cap - 1)] = (long)s->ntexts + 1;
	s->texts = xrealloc(s->texts, (s->ntexts + 1) * sizeof(*s->texts));
	s->texts[s->ntexts].s = xstrdup(t);
	s->texts[s->ntexts].count = 0;
	return (long)s->ntexts++;
}

/* A new stack from the kernel: name it now, while its functions live. */
static int on_event(void *ctx, void *data, size_t size)
{
	struct session *s = ctx;
	const struct ljb_event *ev = data;
	struct ljb_textopts to = { s->o->lines, s->o->fullpath };
	struct buf b = {0};
	struct idtext *e;

	if (size < sizeof(*ev) - sizeof(ev->f) || s->nids * 2 >= s->nids_cap)
		return 0;
	e = id_slot(s, ev->id);
	if (e->id)
		return 0;
	e->id = ev->id;
	e->end = ev->end;
	e->text = -1;
	s->nids++;
	if (ev->end != LJB_END_BROKEN && ljb_stack_text(ev, &s->ly, s->st, &to, &b) == 0 && b.s)
		e->text = text_index(s, b.s);
	buf_free(&b);
	return 0;
}

/* The processes to sample: PID, or the master's children. */
static size_t targets(const struct ljb_opts *o, pid_t **out)
{
	size_t n = 0;

	if (o->pid) {
		*out = xmalloc(sizeof(**out));
		(*out)[0] = o->pid;
		return kill(o->pid, 0) == 0 || errno == EPERM ? 1 : 0;
	}
	if (proc_children(o->master, out, &n) < 0)
		return 0;
	return n;
}

/* Gives the kernel the symbol ranges. */
static void put_syms(struct session *s)
{
	size_t nsyms;
	const struct ljb_sym *r = ljb_symtab_ranges(s->st, &nsyms);
	int fd = bpf_map__fd(s->skel->maps.syms);

	for (__u32 i = 0; i < nsyms; i++)
		bpf_map_update_elem(fd, &i, &r[i], BPF_ANY);
	s->skel->bss->nsyms = nsyms;
}

/* Gives the kernel the executable file mappings. */
static void put_files(struct session *s)
{
	size_t n;
	const struct ljb_file *f = ljb_symtab_files(s->st, &n);
	int fd = bpf_map__fd(s->skel->maps.files);

	if (n > LJB_MAX_FILES)
		n = LJB_MAX_FILES;
	for (__u32 i = 0; i < n; i++) {
		struct ljb_sym r = { f[i].lo, f[i].hi };
		bpf_map_update_elem(fd, &i, &r, BPF_ANY);
	}
	s->skel->bss->nfiles = n;
}

/* The global_State whose dispatch table R14 points at (a sample's
 * DISPATCH register), if it passes the checks on the live process; 0
 * otherwise (a candidate that failed is not checked again). */
static uint64_t from_dispatch(struct session *s, pid_t pid, uint64_t r14)
{
	uint64_t g = r14 - s->ly.gg_g2disp;

	if (!r14 || !s->ly.bc_max)
		return 0;
	for (size_t i = 0; i < s->nbad_g; i++)
		if (s->bad_g[i] == r14)
			return 0;
	if (ljb_vm_check_G(pid, &s->ly, s->st, g))
		return g;
	if (s->nbad_g < 4096) {
		s->bad_g = xrealloc(s->bad_g, (s->nbad_g + 1) * sizeof(*s->bad_g));
		s->bad_g[s->nbad_g++] = r14;
	}
	return 0;
}

/* Names the VM's code from G's dispatch table where the target has no
 * symbols, and gives the kernel the new ranges: before any process has
 * its g, so that no sample sees them change. */
static void name_vm(struct session *s, pid_t pid, uint64_t g)
{
	struct ljb_vm_check bad;

	s->vm_named = 1;
	if (ljb_vm_name(pid, &s->ly, s->st, g, &bad))
		put_syms(s);
	if (bad.n)
		fprintf(stderr, "WARNING: lj-lua-stacks: %zu bytecode handlers named from the "
			"dispatch table disagree with the symbols (the first: %s)\n",
			bad.n, bad.first);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The global_State of PID found in its memory, when its samples gave
 * none: a second after it was first looked for, then every 5 s. */
static uint64_t from_scan(struct session *s, pid_t pid)
{
	double t = now();
	size_t i;

	for (i = 0; i < s->nscans && s->scans[i].pid != pid; i++)
		;
	if (i == s->nscans) {
		s->scans = xrealloc(s->scans, (s->nscans + 1) * sizeof(*s->scans));
		s->scans[s->nscans++] = (struct scan){ pid, t + 1 };
		return 0;
	}
	if (t < s->scans[i].next)
		return 0;
	s->scans[i].next = t + 5;
	return ljb_vm_scan(pid, &s->ly, s->st);
}

/* Adds new target processes to the pids map and looks for the VM of
 * those that have none yet. */
static void refresh(struct session *s)
{
	pid_t *p = NULL;
	size_t n = targets(s->o, &p);
	int fd = bpf_map__fd(s->skel->maps.pids);

	for (size_t i = 0; i < n; i++) {
		__u32 k = p[i];
		struct ljb_proc v = {0};
		int have = bpf_map_lookup_elem(fd, &k, &v) == 0;
		uint64_t g;

		if (have && v.g)
			continue;
		g = ljb_find_G(p[i], &s->ly, s->st);
		if (!g && have)
			g = from_dispatch(s, p[i], v.r14);
		if (!g && have)
			g = from_scan(s, p[i]);
		if (have && !g)
			continue;
		if (g && !s->vm_named)
			name_vm(s, p[i], g);
		/* (the kernel counts the samples before: "before the VM was
		   found") */
		if (!have || bpf_map_lookup_elem(fd, &k, &v) < 0)
			v = (struct ljb_proc){0};	/* (again: the kernel counts) */
		v.g = g;
		bpf_map_update_elem(fd, &k, &v, BPF_ANY);
	}
	free(p);
}

/* Whether the session's target is still there. */
static int alive(const struct ljb_opts *o)
{
	pid_t p = o->pid ? o->pid : o->master;
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

/* Opens a cpu-clock perf event per CPU and attaches the program. */
static int attach(struct session *s, struct bpf_link ***links, int *nlinks)
{
	int ncpu = libbpf_num_possible_cpus();
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000000ULL / s->o->hz,
	};

	*links = xcalloc(ncpu > 0 ? ncpu : 1, sizeof(**links));
	*nlinks = 0;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV)
				continue;	/* CPU offline */
			return error("cannot open a cpu-clock perf event on CPU %d: %s",
				     cpu, strerror(errno));
		}
		struct bpf_link *l = bpf_program__attach_perf_event(s->skel->progs.lj_sample, fd);
		if (!l) {
			close(fd);
			return error("cannot attach the eBPF program to the perf event on "
				     "CPU %d: %s", cpu, strerror(errno));
		}
		(*links)[(*nlinks)++] = l;
	}
	return 0;
}

static int by_count(const void *a, const void *b)
{
	const struct text *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->s, y->s);
}

struct pidcount { __u32 pid; unsigned long long n; };

static int by_samples(const void *a, const void *b)
{
	const struct pidcount *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Prints the stacks and the statistics, as the SystemTap sample does. */
static void report(struct session *s)
{
	int ncpu = libbpf_num_possible_cpus();
	unsigned long long n[LJB_N_MAX] = {0}, truncated = 0, broken = 0, lost = 0;
	__u64 *v = xcalloc(ncpu, sizeof(*v));
	int sfd = bpf_map__fd(s->skel->maps.stacks), pfd = bpf_map__fd(s->skel->maps.psamples);
	__u64 key, next, cnt;
	int more;

	for (__u32 k = 0; k < LJB_N_MAX; k++)
		if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.stats), &k, v) == 0)
			for (int c = 0; c < ncpu; c++)
				n[k] += v[c];
	free(v);
	for (more = bpf_map_get_next_key(sfd, NULL, &next) == 0; more;
	     more = bpf_map_get_next_key(sfd, &key, &next) == 0) {
		key = next;
		if (bpf_map_lookup_elem(sfd, &key, &cnt) < 0)
			continue;
		struct idtext *e = id_slot(s, key);
		if (!e->id) {
			lost += cnt;	/* its raw frames never reached us */
		} else if (e->end == LJB_END_BROKEN) {
			broken += cnt;
		} else if (e->text < 0) {
			s->unnamed += cnt;
		} else {
			if (e->end == LJB_END_TRUNC)
				truncated += cnt;
			s->texts[e->text].count += cnt;
		}
	}
	qsort(s->texts, s->ntexts, sizeof(*s->texts), by_count);
	for (size_t i = 0; i < s->ntexts; i++) {
		if (!s->texts[i].count || (s->o->limit > 0 && (long)i >= s->o->limit))
			break;
		printf("%s\t%llu\n\n", s->texts[i].s, s->texts[i].count);
	}
	fflush(stdout);

	unsigned long long skipped = n[LJB_N_SKIPPED] + s->unnamed;
	fprintf(stderr, "WARNING: lj-lua-stacks: %llu samples taken, %llu with a Lua stack "
		"(%llu in JIT code, %llu interpreted, %llu in C functions, %llu in GC, "
		"%llu in other VM states)\n", n[LJB_N_SAMPLES], n[LJB_N_LUA] - s->unnamed,
		n[LJB_N_JIT], n[LJB_N_INTERP], n[LJB_N_C], n[LJB_N_GC], n[LJB_N_VMOTHER]);
	fprintf(stderr, "WARNING: lj-lua-stacks: %llu not running Lua, %llu before the VM "
		"was found, %llu skipped (faults), %llu dropped (nojit/nointerp), %llu "
		"truncated at depth %ld, %llu inconsistent stacks (dropped)\n",
		n[LJB_N_NOLUA], n[LJB_N_NOVM], skipped, n[LJB_N_DROPPED], truncated,
		s->o->depth, broken);
	lost += n[LJB_N_LOSTMAP] + n[LJB_N_LOSTRB];
	if (lost)
		fprintf(stderr, "WARNING: lj-lua-stacks: %llu samples lost: more than %ld "
			"distinct stacks\n", lost, s->o->maxstacks);
	if (n[LJB_N_SAMPLES]) {
		unsigned long long avg = n[LJB_N_COST] / n[LJB_N_SAMPLES], hz = s->o->hz;
		fprintf(stderr, "WARNING: lj-lua-stacks: %llu.%llu us per sample in the sampling "
			"probe on average (%llu.%02llu%% of a CPU at %llu samples/s)\n",
			avg / 1000, avg % 1000 / 100, avg * hz / 10000000,
			avg * hz / 100000 % 100, hz);
	}
	struct pidcount *pc = NULL;
	size_t np = 0;
	__u32 pk, pn;
	for (more = bpf_map_get_next_key(pfd, NULL, &pn) == 0; more;
	     more = bpf_map_get_next_key(pfd, &pk, &pn) == 0) {
		__u64 pv;
		pk = pn;
		if (bpf_map_lookup_elem(pfd, &pk, &pv) < 0 || !pv)
			continue;
		pc = xrealloc(pc, (np + 1) * sizeof(*pc));
		pc[np].pid = pk;
		pc[np++].n = pv;
	}
	qsort(pc, np, sizeof(*pc), by_samples);
	fputs("WARNING: lj-lua-stacks: samples per process (pid:samples):", stderr);
	for (size_t i = 0; i < np && i < 16; i++)
		fprintf(stderr, " %u:%llu", pc[i].pid, pc[i].n);
	fputc('\n', stderr);
	free(pc);
	struct { const char *why; unsigned long long n; } f[] = {
		{ "user memory read fault in the frame walk", n[LJB_N_F_READ] },
		{ "no symbol for the interpreter's PC", n[LJB_N_F_NOSYM] },
		{ "interpreter BASE register is not a frame of the running thread", n[LJB_N_F_BASE] },
		{ "user memory read fault in ngx_lua's coroutine contexts (the parent of a "
		  "coroutine)", n[LJB_N_F_NGX] },
		{ "the target's memory was gone before the stack was named", s->unnamed },
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(*f); i++)
		if (f[i].n)
			fprintf(stderr, "WARNING: lj-lua-stacks: %llu samples skipped: %s\n",
				f[i].n, f[i].why);
}

/* Loads the program with the layouts and symbols; 0 or -1 after error(). */
static int load(struct session *s)
{
	libbpf_set_print(libbpf_print);
	s->skel = lj_stacks__open();
	if (!s->skel)
		return error("cannot open the eBPF program: %s", strerror(errno));
	s->ly.k.depth = s->o->depth;
	s->ly.k.lines = s->o->lines;
	s->ly.k.nojit = s->o->nojit;
	s->ly.k.nointerp = s->o->nointerp;
	memcpy((void *)&s->skel->rodata->cfg, &s->ly.k, sizeof(s->ly.k));
	bpf_map__set_max_entries(s->skel->maps.stacks, s->o->maxstacks);
	if (lj_stacks__load(s->skel)) {
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
	put_syms(s);
	put_files(s);
	return 0;
}

int ljb_run(const struct ljb_opts *o, struct dw_set *dw)
{
	struct session s = { .o = o };
	struct bpf_link **links = NULL;
	struct ring_buffer *rb = NULL;
	int nlinks = 0, rc = EXIT_FAIL;
	pid_t *p = NULL;
	double t0, last = 0;

	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		error("this kernel has no BTF (/sys/kernel/btf/vmlinux): the eBPF backend "
		      "needs it");
		hint("use the SystemTap backend (without --runtime=bpf), or a kernel built "
		     "with CONFIG_DEBUG_INFO_BTF=y");
		return EXIT_FAIL;
	}
	if (ljb_layout_load(dw, o->exec, &s.ly) < 0)
		return EXIT_FAIL;
	if (!targets(o, &p)) {
		free(p);
		if (o->pid)
			error("no process %d", (int)o->pid);
		else
			error("master process %d has no children to sample", (int)o->master);
		return EXIT_FAIL;
	}
	s.st = ljb_symtab_load(p[0]);
	if (!s.st) {
		free(p);
		return EXIT_FAIL;
	}
	free(p);
	if (s.ly.k.ngx) {
		/* ngx_lua's C functions that resume a coroutine (kernel's
		   ngx_parent): without all of them, no ngx parents */
		struct ljb_cfg *k = &s.ly.k;
		k->ngx_resume = ljb_symtab_addr(s.st, "ngx_http_lua_coroutine_resume");
		k->ngx_wrap_runner = ljb_symtab_addr(s.st, "ngx_http_lua_coroutine_wrap_runner");
		k->ngx_spawn = ljb_symtab_addr(s.st, "ngx_http_lua_uthread_spawn");
		k->ngx = k->ngx_resume && k->ngx_wrap_runner && k->ngx_spawn;
		if (!k->ngx)
			fprintf(stderr, "WARNING: lj-lua-stacks: no symbols of ngx_lua's "
				"coroutine functions (a stripped nginx): the stacks of "
				"coroutines that ngx_lua resumes end at the coroutine, "
				"without [resume] and their parent's frames\n");
	}
	s.nids_cap = 1;
	while (s.nids_cap < 4 * (size_t)o->maxstacks)
		s.nids_cap *= 2;
	s.ids = xcalloc(s.nids_cap, sizeof(*s.ids));
	if (load(&s) < 0)
		goto out;
	refresh(&s);
	rb = ring_buffer__new(bpf_map__fd(s.skel->maps.events), on_event, &s, NULL);
	if (!rb) {
		error("cannot set up the ring buffer: %s", strerror(errno));
		goto out;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (attach(&s, &links, &nlinks) < 0)
		goto out;
	if (o->time > 0)
		fprintf(stderr, "WARNING: lj-lua-stacks: sampling for %ld s; press Ctrl-C to stop\n",
			o->time);
	else
		fputs("WARNING: lj-lua-stacks: sampling until Ctrl-C; press Ctrl-C to stop\n", stderr);
	t0 = now();
	while (!stop) {
		ring_buffer__poll(rb, 20);
		double t = now();
		if (o->time > 0 && t - t0 >= o->time)
			break;
		if (t - last >= 0.05) {
			last = t;
			if (!alive(o))
				break;
			refresh(&s);
		}
	}
	for (int i = 0; i < nlinks; i++)
		bpf_link__destroy(links[i]);
	nlinks = 0;
	ring_buffer__consume(rb);
	report(&s);
	rc = 0;
out:
	for (int i = 0; i < nlinks; i++)
		bpf_link__destroy(links[i]);
	free(links);
	ring_buffer__free(rb);
	lj_stacks__destroy(s.skel);
	ljb_symtab_free(s.st);
	for (size_t i = 0; i < s.ntexts; i++)
		free(s.texts[i].s);
	free(s.texts);
	free(s.tindex);
	free(s.ids);
	free(s.bad_g);
	free(s.scans);
	buf_free(&libbpf_log);
	return rc;
}
