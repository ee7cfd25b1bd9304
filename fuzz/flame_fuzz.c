/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * flame_fuzz.c - libFuzzer target for the flame graph input parsers:
 * util/flame.c (what util/fold and util/flamegraph read: stack blocks and
 * folded lines) and util/pprof_input.c + util/pprof_profile.c (what
 * util/pprof reads and the profile it builds).
 *
 * An input is text; if its first byte is a digit '0'..'7' it is a mode
 * (and the rest is the text), else the mode is 0:
 *   mode & 1  reverse the stacks (fold --reverse, flamegraph --reverse)
 *   mode & 2  util/pprof --split (one profile per "# stap++ profile" block)
 *   mode & 4  also read the text as flamegraph --diff's BEFORE
 * Each input runs what the programs run on it:
 *   - fold/flamegraph: flame_read_mem, flame_reverse, flame_sorted, the
 *     --diff merge (flame_add of BEFORE's stacks with count 0, flame_find);
 *     then checks that hold for every accepted input: the sorted order,
 *     the total, and that the folded text written for the table
 *     (flame_write_folded) reads back to the same stacks and counts
 *     (what `fold | flamegraph` relies on).  A failed check aborts.
 *   - pprof: pprof_read_mem, then pprof_write of each profile to
 *     /dev/null (the protobuf encoding and gzip).
 * flamegraph's SVG rendering is static in util/flamegraph.c (main and
 * write_svg), reading files and writing stdout, so it is not in this
 * target: flamegraph is covered up to the sorted table it renders.
 *
 * Bad input makes the readers die() (print, exit 1).  Here die() must not
 * end the process, so set_die_routine() (lib/base/error.h) makes it longjmp()
 * back to the input's start.  What the abandoned calls had allocated
 * (the tables' arenas, the readers' line buffers) is then unreachable and
 * LeakSanitizer would report it, so every allocation the fuzzing thread
 * makes inside a call that may die is recorded (sanitizer malloc/free
 * hooks, into a fixed-size set; freed blocks leave it), and the die path
 * frees all still recorded and forgets the tables.  On the success path
 * the set is only forgotten, never freed from, so a leak there is still
 * reported; nothing is freed twice.  The die routine is active only
 * around those calls: a die() anywhere else (a folded text that does not
 * read back) exits, which libFuzzer reports as a failure.
 *
 * Built with -DFLAME_CHUNK_SIZE=256 (util/flame.c's arena chunk, 1 MiB
 * in the programs): small inputs then chain several chunks, and each
 * table does not map and poison 1 MiB under ASan (~20x more runs/s).
 *
 * Seeds: fuzz/flame-corpus (small inputs from t/fixtures/flame and
 * t/fixtures/pprof, "# stap++" headers and profile blocks, some with a
 * mode byte).  Build and run: make fuzz (FUZZ_SECONDS=30 each target);
 * t/58-flame-fuzz.t runs it for STAPXX_FUZZ_SECONDS.
 */
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sanitizer/allocator_interface.h>

#include "../util/flame.h"
#include "../util/pprof_input.h"
#include "../util/pprof_profile.h"
#include "base/error.h"

/* ---- allocations of calls that may die -------------------------------- */

#define TRACK_SLOTS (1u << 15)
#define TOMB ((const volatile void *)1)
/* The bookkeeping is no part of the code under test: no coverage. */
#define NOCOV __attribute__((no_sanitize("coverage")))

static const volatile void *track[TRACK_SLOTS];
static size_t tracked;		/* slots in use, tombstones included */
static size_t live;		/* recorded and not freed */
/* Only the thread running the inputs: libFuzzer's own threads (the RSS
 * limit, the timer) allocate too, and the hooks run on every thread. */
static __thread int fuzz_thread, tracking;

static NOCOV size_t slot_of(const volatile void *p)
{
	return (size_t)(((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull) & (TRACK_SLOTS - 1);
}

static NOCOV void malloc_hook(const volatile void *p, size_t size)
{
	size_t i;

	(void)size;
	if (!fuzz_thread || !tracking || !p)
		return;
	if (tracked >= TRACK_SLOTS / 2) {
		fputs("flame_fuzz: too many live allocations to track\n", stderr);
		abort();
	}
	for (i = slot_of(p); track[i] && track[i] != TOMB; i = (i + 1) & (TRACK_SLOTS - 1))
		;
	if (!track[i])
		tracked++;
	track[i] = p;
	live++;
}

static NOCOV void free_hook(const volatile void *p)
{
	size_t i;

	if (!fuzz_thread || !p || !tracked)
		return;
	for (i = slot_of(p); track[i]; i = (i + 1) & (TRACK_SLOTS - 1))
		if (track[i] == p) {
			track[i] = TOMB;
			live--;
			return;
		}
}

/* Free everything still recorded (the die path) and empty the set. */
static NOCOV void free_tracked(void)
{
	size_t i;

	tracking = 0;
	for (i = 0; live && i < TRACK_SLOTS; i++) {
		const volatile void *p = track[i];
		track[i] = NULL;
		if (p && p != TOMB) {
			live--;
			free((void *)p);
		}
	}
	if (tracked)
		memset((void *)track, 0, sizeof track);
	tracked = 0;
}

/* ---- die() ------------------------------------------------------------ */

static jmp_buf died;

static void die_routine(int status)
{
	(void)status;
	longjmp(died, 1);
}

/* Around a call that may die: record its allocations, die() comes back. */
#define MAY_DIE(call) do { set_die_routine(die_routine); tracking = 1; \
	call; tracking = 0; set_die_routine(NULL); } while (0)

/* ---- the target ------------------------------------------------------- */

/* Globals, so the die path can forget them after freeing their memory. */
static struct flame_table after, before, back;
static struct pprof_input in;
static FILE *devnull;

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "flame_fuzz: check failed: %s\n", what);
		abort();
	}
}

static void write_pprof(const struct pprof_input *pin, struct pprof_block *b, void *ctx)
{
	struct pprof_options o = {
		.type = pin->type ? pin->type : PPROF_CPU,
		.hz = pin->hz ? pin->hz : 1000,
		.time_ns = b->start_ns,
		.duration_ns = b->duration_ns,
	};
	static char *labels[] = { "host=fuzz" };

	(void)ctx;
	o.labels = labels;
	o.nlabels = 1;
	if (b->t.n)
		pprof_write(&b->t, &o, devnull, "/dev/null");
}

/* fold and flamegraph on TEXT; MODE as above. */
static void flame(const char *text, size_t len, int mode)
{
	struct flame_stack **v;
	char *folded = NULL;
	size_t n, i, flen = 0;
	uint64_t sum = 0;
	FILE *mem;

	MAY_DIE(flame_read_mem(&after, "fuzz", 1, text, len));
	if (mode & 4)
		MAY_DIE(flame_read_mem(&before, "before", 1, text, len));
	if (mode & 1) {
		MAY_DIE(flame_reverse(&after));
		MAY_DIE(flame_reverse(&before));
	}
	for (i = 0; i < after.n; i++)
		sum += after.items[i].count;
	check(sum == after.total, "total is the sum of the counts");
	/* flamegraph --diff: stacks only in BEFORE, with count 0 */
	for (i = 0; i < before.n; i++) {
		flame_add(&after, before.items[i].key, before.items[i].len, 0);
		check(flame_find(&after, before.items[i].key, before.items[i].len) != NULL,
		      "a stack added is found");
	}
	v = flame_sorted(&after, &n);
	check(n == after.n, "sorted has every stack");
	mem = open_memstream(&folded, &flen);
	check(mem != NULL, "open_memstream");
	for (i = 0; i < n; i++) {
		check(!i || strcmp(v[i - 1]->key, v[i]->key) < 0, "stacks sorted, distinct");
		check(flame_find(&after, v[i]->key, v[i]->len) == v[i], "flame_find");
		if (v[i]->count)
			flame_write_folded(mem, v[i]->key, v[i]->len, v[i]->count);
		flame_write_folded(devnull, v[i]->key, v[i]->len, v[i]->count);
	}
	fclose(mem);
	/* fold's output reads back as the same stacks (zero counts aside) */
	if (after.total) {
		flame_read_mem(&back, "folded", 1, folded, flen);
		check(back.total == after.total, "folded text reads back: total");
		for (i = 0; i < n; i++) {
			const struct flame_stack *s = flame_find(&back, v[i]->key, v[i]->len);
			check(v[i]->count ? s && s->count == v[i]->count : !s,
			      "folded text reads back: each stack and count");
		}
	}
	free(folded);
	free(v);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	set_program_name("flame_fuzz");
	devnull = fopen("/dev/null", "w");
	if (!devnull)
		abort();
	__sanitizer_install_malloc_and_free_hooks(malloc_hook, free_hook);
	return 0;
}

/* After a die(): free what the abandoned calls left and forget it. */
static void recover(void)
{
	tracking = 0;
	set_die_routine(NULL);
	free_tracked();
	memset(&after, 0, sizeof after);
	memset(&before, 0, sizeof before);
	memset(&back, 0, sizeof back);
	memset(&in, 0, sizeof in);
	error_clear_location();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	int mode = 0;

	fuzz_thread = 1;
	if (size && data[0] >= '0' && data[0] <= '7') {
		mode = data[0] - '0';
		text++;
		size--;
	}
	if (!setjmp(died)) {
		flame(text, size, mode);
		flame_table_free(&after);
		flame_table_free(&before);
		flame_table_free(&back);
	} else {
		recover();
	}
	if (!setjmp(died)) {
		MAY_DIE(pprof_read_mem(&in, "fuzz", text, size,
				       mode & 2 ? write_pprof : NULL, NULL));
		if (!(mode & 2) && in.nblocks)
			MAY_DIE(write_pprof(&in, &in.blocks[0], NULL));
		pprof_input_free(&in);
	} else {
		recover();
	}
	/* Forget (not free) what is still recorded: on this path nothing
	 * should be, and if something is, LeakSanitizer reports it. */
	memset((void *)track, 0, sizeof track);
	tracked = live = 0;
	return 0;
}
