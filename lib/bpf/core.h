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

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/layout.h"
#include "bpf/symbolize.h"
#include "dwarf/dwarf.h"

struct ring_buffer;

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
};

/* A stack id and what user space made of it. */
struct ljb_idtext {
	uint64_t id;
	long text;		/* index in texts, -1: could not be named */
	uint32_t end;		/* LJB_END_* */
};

struct ljb_text {
	char *s;
	unsigned long long count;
};

/* What a report found in the kernel's counts, by stack (ljb_core_add). */
struct ljb_tally {
	unsigned long long truncated, broken, lost, unnamed;
};

struct ljb_core {
	struct ljb_target t;
	struct ljb_layout ly;
	struct ljb_symtab *st;
	struct ljb_textopts to;
	/* the program's maps and globals (lj_walk.bpf.h), set by the loader
	   before ljb_core_start() */
	int pids_fd, syms_fd, files_fd, events_fd;
	uint32_t *nsyms, *nfiles;
	/* called for each new stack named (text: its index, -1 when it could
	   not be named); optional; it may set stop */
	void (*on_stack)(struct ljb_core *c, const struct ljb_event *ev, long text);
	/* called every 50 ms of ljb_core_loop(); optional; nonzero ends it */
	int (*tick)(struct ljb_core *c);
	void *ctx;
	int stop;		/* the loop ends */
	struct ring_buffer *rb;	/* events (ljb_core_loop) */
	/* the stack ids (open addressing, ids_cap a power of two) */
	struct ljb_idtext *ids;
	size_t nids, ids_cap;
	struct ljb_text *texts;
	size_t ntexts;
	long *tindex;		/* texts by hash: index + 1, 0 empty */
	size_t tindex_cap;
	/* finding the VM (lib/bpf/vm.c) */
	int vm_named;
	uint64_t *bad_g;
	size_t nbad_g;
	struct ljb_scan { pid_t pid; double next; } *scans;
	size_t nscans;
};

/* After loading SKEL (any skeleton of a program on lj_walk.bpf.h): gives
 * core C the fds of its shared maps and its globals. */
#define LJB_CORE_MAPS(c, skel) do {					\
	(c)->pids_fd = bpf_map__fd((skel)->maps.pids);			\
	(c)->syms_fd = bpf_map__fd((skel)->maps.syms);			\
	(c)->files_fd = bpf_map__fd((skel)->maps.files);		\
	(c)->events_fd = bpf_map__fd((skel)->maps.events);		\
	(c)->nsyms = &(skel)->bss->nsyms;				\
	(c)->nfiles = &(skel)->bss->nfiles;				\
} while (0)

/*
 * ljb_core_open - checks the kernel's BTF, loads the layouts from DW and
 * the first target process's symbols, sets up the table of MAXSTACKS
 * stack ids.  Sets libbpf's log (kept for ljb_core_load_error()).
 * Returns 0, or -1 after error() (free with ljb_core_free() either way).
 */
int ljb_core_open(struct ljb_core *c, const struct ljb_target *t,
		  const struct ljb_textopts *to, struct dw_set *dw, long maxstacks);

/* Says that the program could not be loaded (libbpf's last message and
 * what the kernel needs); returns -1. */
int ljb_core_load_error(void);

/* After loading: gives the kernel the symbols and file mappings, adds
 * the target's processes.  0, or -1 after error(). */
int ljb_core_start(struct ljb_core *c);

/*
 * ljb_core_loop - runs the session: prints "NAME: VERB for N sMORE; press
 * Ctrl-C to stop" (or "until Ctrl-C"; MORE: "" or e.g. ", weighted by
 * bytes"), then names new stacks from the ring
 * buffer and follows the target's processes every 50 ms, until TIME
 * seconds (0: none), Ctrl-C, c->stop, or the target's end (returns 1
 * then, else 0; -1 after error()).  *ELAPSED: the seconds it ran.  The
 * caller detaches its program, then calls ljb_core_drain().
 */
int ljb_core_loop(struct ljb_core *c, long time, const char *verb, const char *more,
		  double *elapsed);

/* Names the stacks still in the ring buffer. */
void ljb_core_drain(struct ljb_core *c);

/* CLOCK_MONOTONIC in seconds (bpf_ktime_get_ns()'s clock). */
double ljb_now(void);

/* Adds the kernel's count N of stack ID to its text (or to *T: lost,
 * inconsistent, not named; truncated ones both). */
void ljb_core_add(struct ljb_core *c, uint64_t id, unsigned long long n,
		  struct ljb_tally *t);

/* As ljb_core_add, with the frame LEAF (escaped) below the stack's
 * innermost one ("" or NULL: none). */
void ljb_core_add_leaf(struct ljb_core *c, uint64_t id, const char *leaf,
		       unsigned long long n, struct ljb_tally *t);

/* Prints the texts with a count, heaviest first, at most LIMIT (0: all),
 * as "TEXT\tCOUNT\n\n"; returns the total printed. */
unsigned long long ljb_core_print(struct ljb_core *c, long limit);

/* The per-CPU array FD's NK counters summed over the CPUs into N. */
void ljb_sum_percpu(int fd, unsigned long long *n, size_t nk);

/* Prints "NAME: WHAT (pid:UNIT): P:N ..." from the hash map FD (pid ->
 * count), most first, 16 at most. */
void ljb_print_per_pid(const struct ljb_core *c, int fd, const char *what);

/* Prints, when the tally T has any, the line of the weight (in UNIT)
 * left out of the graph or cut, as the SystemTap samples' ljw_limits, and
 * the one of stacks not named because the target's memory was gone. */
void ljb_print_limits(const struct ljb_core *c, const struct ljb_tally *t, const char *unit,
		      long depth, long maxstacks);

/* Prints "NAME: N EVENTS skipped: WHY" for each fault reason of the
 * statistics N (LJB_N_*) and the UNNAMED stacks. */
void ljb_print_faults(const struct ljb_core *c, const unsigned long long *n,
		      unsigned long long unnamed, const char *events);

void ljb_core_free(struct ljb_core *c);

#endif
