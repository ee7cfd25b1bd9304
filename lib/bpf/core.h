/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bpf/core.h - what every sample's user space on eBPF shares (libbpf-tools
 * style: one loader per program, on this core): the target's layouts and
 * symbols, the processes to follow and their VM (pids map), the stack ids
 * the kernel sends as raw frames (named as they arrive, counted by text),
 * the session's loop, libbpf's log for load errors, and the statistics
 * lines every sample prints alike.  A loader (lj_stacks_user.c,
 * lj_offcpu_user.c) opens its skeleton, gives the core the fds of the
 * maps of lj_walk.bpf.h, and prints its own report.
 */
#ifndef STAPXX_BPF_CORE_H
#define STAPXX_BPF_CORE_H

#include "target/origin.h"
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/layout.h"
#include "bpf/symbolize.h"
#include "bpf/snapshot.h"
#include "dwarf/dwarf.h"

struct ring_buffer;
struct bpf_program;
struct bpf_link;

/* The session's target and the sample's name (starts its stderr lines). */
struct ljb_target {
	const char *name;	/* "lj-lua-stacks" */
	pid_t pid;		/* -x PID, or 0 */
	pid_t master;		/* --master PID, or 0 */
	const char *exec;	/* the target executable (for errors) */
};

/* A sample's options on eBPF (run.c fills them from --arg and the
 * sample's defaults). */
struct ljb_opts {
	long time, depth, hz, limit, maxstacks, min_us;
	long samples;		/* lj-lua-stacks: stop after N with a Lua stack */
	long lines, fullpath, nojit, nointerp;
	long weight, files;	/* lj-lua-fio: 0 us, 1 bytes; file leaves */
	long rate, on, period;	/* lj-lua-alloc: bytes per sample; ms armed of
				   every period ms */
	long stacks;		/* resty-memory: the parts as stacks (bytes) */
	long handler;		/* ngx-lua-exec-time: 0 all, 1 content, 2 rewrite,
				   3 access */
	long objs, gap, top, workers, wait;	/* lj-gc-objs: objects a slice, ms
						   between slices, biggest listed,
						   processes, s to wait for one */
	long kernel, user;	/* sample-bt: kernel frames, user frames */
	const char *diff;	/* resty-memory: an earlier run's output, or NULL */
};

/* A stack id and what user space made of it. */
struct ljb_idtext {
	uint64_t id;
	long text;		/* index in texts, -1: could not be named */
	uint32_t end;		/* LJB_END_* */
	uint8_t asked;		/* its frames asked for again (resend map) */
	uint8_t resent;		/* ... times so far */
	uint8_t unsure;		/* its text left a function's name out: the
				   caller's value that checks it had changed
				   at every try (ljb_stack_text) */
	uint8_t nosnap;		/* in a trace: why the frames it inlined are
				   not shown (LJB_SNAP_*, 0: they are) */
	uint8_t gone;		/* a function on it was freed before it was
				   named: named by its definition from what
				   the sample read (ljb_textres gone) */
};

struct ljb_text {
	char *s;
	unsigned long long count;
};

/* What a report found in the kernel's counts, by stack (ljb_core_add). */
struct ljb_tally {
	unsigned long long truncated, broken, lost, unnamed;
	unsigned long long unsure;	/* (printed, a function by its first line) */
	unsigned long long gone;	/* (printed, named from the sample's copy) */
	unsigned long long nosnap[LJB_SNAP_NWHY];	/* (printed without the
							   frames a trace inlined) */
};

struct ljb_core {
	struct ljb_target t;
	struct ljb_layout ly;
	struct ljb_symtab *st;	/* of pid0, the first target process */
	pid_t pid0;
	struct ljb_textopts to;
	/* the program's maps and globals (lj_walk.bpf.h), set by the loader
	   before ljb_core_start() */
	int pids_fd, syms_fd, files_fd, events_fd, resend_fd;
	uint32_t *nsyms, *nfiles, *nresend;
	/* called for each new stack named (text: its index, -1 when it could
	   not be named); optional; it may set stop */
	void (*on_stack)(struct ljb_core *c, const struct ljb_event *ev, long text);
	/* called every 50 ms of ljb_core_loop(); optional; nonzero ends it */
	int (*tick)(struct ljb_core *c);
	void *ctx;
	int stop;		/* the loop ends */
	struct ring_buffer *rb;	/* events (ljb_core_loop) */
	double poll_end;	/* on_event stops a poll of rb then */
	/* the stack ids (open addressing, ids_cap a power of two) */
	struct ljb_idtext *ids;
	size_t nids, ids_cap;
	struct ljb_text *texts;
	size_t ntexts;
	long *tindex;		/* texts by hash: index + 1, 0 empty */
	size_t tindex_cap;
	/* finding the VM (lib/bpf/vm.c); novm: not looked for */
	int vm_named, novm;
	uint64_t *bad_g;
	size_t nbad_g;
	struct ljb_scan { pid_t pid; double next; } *scans;
	size_t nscans;
	/* where the processes sampled run, read when first seen (a process
	   may be gone by the end) */
	struct origin *origins;
	size_t norigins;
};

/* After loading SKEL (any skeleton of a program on lj_walk.bpf.h): gives
 * core C the fds of its shared maps and its globals. */
#define LJB_CORE_MAPS(c, skel) do {					\
	(c)->pids_fd = bpf_map__fd((skel)->maps.pids);			\
	(c)->syms_fd = bpf_map__fd((skel)->maps.syms);			\
	(c)->files_fd = bpf_map__fd((skel)->maps.files);		\
	(c)->events_fd = bpf_map__fd((skel)->maps.events);		\
	(c)->resend_fd = bpf_map__fd((skel)->maps.resend);		\
	(c)->to.names_fd = bpf_map__fd((skel)->maps.names);		\
	(c)->nsyms = &(skel)->bss->nsyms;				\
	(c)->nfiles = &(skel)->bss->nfiles;				\
	(c)->nresend = &(skel)->bss->nresend;				\
} while (0)

/*
 * LJB_CORE_OPEN - opens core C for the sample's target T and options O
 * (ljb_core_open, DW: the target's binaries), then the skeleton of the
 * program NAME into SKEL (NAME__open), the walk's depth and lines from O.
 * Evaluates to 0, or -1 after error().
 */
#define LJB_CORE_OPEN(c, t, o, dw, skel, name) __extension__ ({		\
	struct ljb_textopts to_ = { (o)->lines, (o)->fullpath, -1 };	\
	int r_ = ljb_core_open((c), (t), &to_, (dw), (o)->maxstacks);	\
	if (r_ == 0 && !((skel) = name##__open()))			\
		r_ = error("cannot open the eBPF program: %s", strerror(errno)); \
	if (r_ == 0) {							\
		(c)->ly.k.depth = (o)->depth;				\
		(c)->ly.k.lines = (o)->lines;				\
	}								\
	r_;								\
})

/*
 * LJB_CORE_LOAD - loads the opened skeleton SKEL of the program NAME
 * (NAME__load), a program on lj_walk.bpf.h with a weights map, on core
 * C: the core's layouts as its cfg, MAXSTACKS distinct stacks (its maps
 * stacks and weights), then gives the core its maps (LJB_CORE_MAPS) and
 * starts it (ljb_core_start).  Set the program's other read-only data
 * before.  Evaluates to 0, or -1 after error().
 */
#define LJB_CORE_LOAD(c, skel, name, maxstacks) __extension__ ({		\
	int r_ = -1;							\
	memcpy((void *)&(skel)->rodata->cfg, &(c)->ly.k, sizeof((c)->ly.k));	\
	bpf_map__set_max_entries((skel)->maps.stacks, (maxstacks));	\
	bpf_map__set_max_entries((skel)->maps.weights, (maxstacks));	\
	if (name##__load(skel) == 0) {					\
		LJB_CORE_MAPS((c), (skel));				\
		r_ = ljb_core_start(c);					\
	} else {							\
		ljb_core_load_error();					\
	}								\
	r_;								\
})

/*
 * ljb_core_open - checks the kernel's BTF, loads the layouts from DW and
 * the first target process's symbols, sets up the table of MAXSTACKS
 * stack ids.  Sets libbpf's log (kept for ljb_core_load_error()).
 * Returns 0, or -1 after error() (free with ljb_core_free() either way).
 */
int ljb_core_open(struct ljb_core *c, const struct ljb_target *t,
		  const struct ljb_textopts *to, struct dw_set *dw, long maxstacks);

/*
 * ljb_core_open_novm - as ljb_core_open, for a sample that takes no Lua
 * stack (ngx-lua-exec-time): no layouts, no VM looked for (the pids map
 * has each target process, with G 0), no stacks.
 */
int ljb_core_open_novm(struct ljb_core *c, const struct ljb_target *t);

/* Says that the program could not be loaded (libbpf's last message and
 * what the kernel needs); returns -1. */
int ljb_core_load_error(void);

/* After loading: gives the kernel the symbols and file mappings, adds
 * the target's processes.  0, or -1 after error(). */
int ljb_core_start(struct ljb_core *c);

/*
 * ljb_core_G - the global_State of the target process PID as the kernel
 * has it: after ljb_core_start, which looked for it in PID's symbols and
 * then its memory, or a later refresh.  0 when none is found (yet).
 */
uint64_t ljb_core_G(struct ljb_core *c, pid_t pid);

/*
 * ljb_core_uprobe - attaches PROG (a SEC("uprobe") program) at the entry
 * of the function NAME, found in the symbols (.symtab or .dynsym) of the
 * objects the first target process maps: for the -x process only, or
 * with --master for every process that maps that object (the program
 * keeps the workers').  Returns the link, or NULL after error() (and for
 * a function the symbols lack, the hints WHY, NULL-terminated).
 */
struct bpf_link *ljb_core_uprobe(struct ljb_core *c, struct bpf_program *prog,
				 const char *name, const char *const *why);

/* ljb_core_uretprobe - as ljb_core_uprobe, at the returns of NAME (a
 * SEC("uretprobe") program). */
struct bpf_link *ljb_core_uretprobe(struct ljb_core *c, struct bpf_program *prog,
				    const char *name, const char *const *why);

/*
 * ljb_core_uprobe_at - as ljb_core_uprobe, at the address ADDR of the
 * first target process: code of a file it maps that no symbol names
 * (WHAT names it in errors).  Returns the link, or NULL after error().
 */
struct bpf_link *ljb_core_uprobe_at(struct ljb_core *c, struct bpf_program *prog,
				    uint64_t addr, const char *what);

/*
 * ljb_uprobe_cost - what a uprobe of PROG costs a call on this host (ns):
 * a function of stap++ itself called with PROG attached and without, the
 * fastest of 5 runs of 500 calls each way (the program returns at once,
 * this process being no target): the trap, and the program's entry.
 * 2,500 traps, a few ms each run at the 5-20 us a trap costs under
 * virtualization.  -1 when it cannot be attached.
 */
double ljb_uprobe_cost(struct bpf_program *prog);

/* " (N.N us each here, measured at the start)", or " (not measured)" for
 * a cost NS below 0, in B. */
const char *ljb_uprobe_cost_text(char *b, size_t size, double ns);

/*
 * ljb_core_loop - runs the session: prints "NAME: VERB for N sMORE; press
 * Ctrl-C to stop" (or "until Ctrl-C"; MORE: "" or e.g. ", weighted by
 * bytes"; nothing when VERB is NULL), then names new stacks from the ring
 * buffer and follows the target's processes every 50 ms, until TIME
 * seconds (0: none), Ctrl-C, c->stop, or the target's end (returns 1
 * then, else 0; -1 after error()).  *ELAPSED: the seconds it ran.  The
 * caller detaches its program, then calls ljb_core_drain().
 */
int ljb_core_loop(struct ljb_core *c, long time, const char *verb, const char *more,
		  double *elapsed);

/* Names the stacks still in the ring buffer. */
void ljb_core_drain(struct ljb_core *c);

/* The session's end, its program detached: says that the -x process
 * exited when GONE (ljb_core_loop's 1), names the stacks still in the
 * ring buffer. */
void ljb_core_end(struct ljb_core *c, int gone);

/* CLOCK_MONOTONIC in seconds, and in nanoseconds (bpf_ktime_get_ns()'s
 * clock). */
double ljb_now(void);
unsigned long long ljb_now_ns(void);

/* Adds the kernel's count N of stack ID to its text (or to *T: lost,
 * inconsistent, not named; truncated ones both). */
void ljb_core_add(struct ljb_core *c, uint64_t id, unsigned long long n,
		  struct ljb_tally *t);

/* As ljb_core_add, with the frame LEAF (escaped) below the stack's
 * innermost one ("" or NULL: none). */
void ljb_core_add_leaf(struct ljb_core *c, uint64_t id, const char *leaf,
		       unsigned long long n, struct ljb_tally *t);

/* As ljb_core_add_leaf, with the frame ROOT (escaped) above the stack's
 * outermost one ("" or NULL: none). */
void ljb_core_add_framed(struct ljb_core *c, uint64_t id, const char *leaf, const char *root,
			 unsigned long long n, struct ljb_tally *t);

/* Adds N to the text of the frames FRAMES (NULL-terminated, each escaped
 * here): a stack that is no stack id (e.g. "(no Lua stack)"). */
void ljb_core_add_frames(struct ljb_core *c, const char *const *frames, unsigned long long n);

/* Adds the count of each stack id in the hash map FD (__u64 id ->
 * __u64, a program's weights) to its text (ljb_core_add, into *T). */
void ljb_core_add_map(struct ljb_core *c, int fd, struct ljb_tally *t);

/* The maps of a waiting-time program (lj_wait.bpf.h's, and its waits
 * keyed by KEYSIZE bytes): LJB_WAITS(skel, key type) fills it. */
struct ljb_waits {
	int stats, wstats, weights, pus, waits;
	size_t keysize;
};
#define LJB_WAITS(skel, key) ((struct ljb_waits){				\
	bpf_map__fd((skel)->maps.stats), bpf_map__fd((skel)->maps.wstats),	\
	bpf_map__fd((skel)->maps.weights), bpf_map__fd((skel)->maps.pus),	\
	bpf_map__fd((skel)->maps.waits), sizeof(key) })

/*
 * ljb_waits_report - the stacks of a waiting-time sample (M: its maps),
 * printed as ljb_core_print(LIMIT) does, heaviest first: their weights,
 * and the waits still open at NOW (ljb_now_ns()) closed as the kernel
 * closes one (ljb_wait_add, lj_wait.bpf.h: shorter than MIN_US as
 * LJB_K_SHORT; the others' microseconds added to their process in pus
 * and, with a Lua stack, to their stack).  N, W: the sums of the
 * counters (LJB_N_*, LJB_W_*, the open waits' included); *T: what was
 * left out (the weights map's overflow in lost); OPEN: the open waits'
 * number and microseconds.  Then the first statistics line, "NAME:
 * traced for N us; N us VERB in N EVENTS with a Lua stack (N us
 * printed)", TRACED being the session's seconds.
 */
void ljb_waits_report(struct ljb_core *c, const struct ljb_waits *m, unsigned long long now,
		      long min_us, long limit, double traced, const char *verb,
		      const char *events, unsigned long long *n, unsigned long long *w,
		      struct ljb_tally *t, unsigned long long open[2]);

/* Prints, after ljb_waits_report's lines, the waits still open at the
 * end (OPEN, "N EVENTS still open at the end, counted up to it: N us")
 * and the limits (ljb_print_limits: T, DEPTH, MAXSTACKS). */
void ljb_waits_open_limits(const struct ljb_core *c, const unsigned long long open[2],
			   const char *events, const struct ljb_tally *t, long depth,
			   long maxstacks);

/* Prints the texts with a count, heaviest first, at most LIMIT (0: all),
 * as "TEXT\tCOUNT\n\n"; returns the total printed. */
unsigned long long ljb_core_print(struct ljb_core *c, long limit);

/* Prints "NAME: WHAT (pid:UNIT): P:N ..." from the hash map FD (pid ->
 * count), most first, 16 at most; then a line of where each of them runs
 * where that is known apart (origin_text: a container). */
void ljb_print_per_pid(const struct ljb_core *c, int fd, const char *what);

void ljb_core_free(struct ljb_core *c);

#include "bpf/stats.h"

#endif
