// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * bench-alloc-probe - run a command with a counting eBPF uprobe on some
 * functions of a binary (dev/bench-alloc's helper; not installed).
 *
 *   bench-alloc-probe [-d ON_US/PERIOD_US] OBJ BINARY FUNC[,FUNC...] -- COMMAND [ARG...]
 *
 * Loads OBJ (bench-alloc.bpf.o), attaches its program to each FUNC of
 * BINARY in every process, with eBPF run-time statistics on
 * (BPF_ENABLE_STATS), runs COMMAND and waits for it, then prints on
 * stderr "probe: FUNC HITS" per function and "probe: run_time_ns N
 * run_cnt N" (the program's own time in the kernel).  FUNC "-" attaches
 * nothing (the same command, for a baseline with the loader around it).
 * With -d, the probes are attached for ON_US microseconds of every
 * PERIOD_US while COMMAND runs (a duty cycle: traps only in the windows),
 * and "probe: windows N attach_us N" says how many windows there were and
 * the mean time one attach of all FUNCs took.
 * Exit status: COMMAND's, or 1 when loading or attaching fails, 2 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/wait.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define MAXF 8

static int usage(void)
{
	fprintf(stderr, "usage: bench-alloc-probe [-d ON_US/PERIOD_US] OBJ BINARY FUNC[,FUNC...] -- COMMAND [ARG...]\n");
	return 2;
}

static long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* Attach prog to the NF functions of binary; 0, or -1 with a message. */
static int attach(struct bpf_program *prog, const char *binary, char **funcs, int nf,
		  struct bpf_link **links)
{
	for (int i = 0; i < nf; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, o, .func_name = funcs[i], .bpf_cookie = i);
		links[i] = bpf_program__attach_uprobe_opts(prog, -1, binary, 0, &o);
		if (!links[i]) {
			fprintf(stderr, "bench-alloc-probe: error: cannot attach to %s in %s: %s\n",
				funcs[i], binary, strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void detach(struct bpf_link **links, int nf)
{
	for (int i = 0; i < nf; i++) {
		bpf_link__destroy(links[i]);
		links[i] = NULL;
	}
}

int main(int argc, char **argv)
{
	char *funcs[MAXF], *save = NULL, *f;
	struct bpf_link *links[MAXF] = { 0 };
	int nf = 0, status = 0;
	long on_us = 0, period_us = 0;

	if (argc > 2 && strcmp(argv[1], "-d") == 0) {
		if (sscanf(argv[2], "%ld/%ld", &on_us, &period_us) != 2 || on_us <= 0 ||
		    period_us <= on_us)
			return usage();
		argc -= 2;
		argv += 2;
	}
	if (argc < 6 || strcmp(argv[4], "--") != 0)
		return usage();
	for (f = strtok_r(argv[3], ",", &save); f && nf < MAXF; f = strtok_r(NULL, ",", &save))
		if (strcmp(f, "-") != 0)
			funcs[nf++] = f;

	struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "bench-alloc-probe: error: cannot load %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, "count_hit");
	struct bpf_map *map = bpf_object__find_map_by_name(obj, "hits");
	int stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (!prog || !map || stats < 0) {
		fprintf(stderr, "bench-alloc-probe: error: no program, map or run-time statistics\n");
		return 1;
	}
	if (!on_us && attach(prog, argv[2], funcs, nf, links) < 0)
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		execvp(argv[5], argv + 5);
		fprintf(stderr, "bench-alloc-probe: error: cannot run %s: %s\n", argv[5], strerror(errno));
		_exit(127);
	}
	if (on_us) {
		long long windows = 0, attach_us = 0;
		while (waitpid(pid, &status, WNOHANG) == 0) {
			long long t0 = now_us();
			if (attach(prog, argv[2], funcs, nf, links) < 0)
				return 1;
			attach_us += now_us() - t0;
			windows++;
			usleep(on_us);
			detach(links, nf);
			usleep(period_us - on_us);
		}
		fprintf(stderr, "probe: windows %lld attach_us %lld\n", windows,
			windows ? attach_us / windows : 0);
	} else {
		waitpid(pid, &status, 0);
	}
	for (int i = 0; i < nf; i++) {
		__u32 k = i;
		__u64 v = 0;
		bpf_map__lookup_elem(map, &k, sizeof(k), &v, sizeof(v), 0);
		fprintf(stderr, "probe: %s %llu\n", funcs[i], (unsigned long long)v);
	}
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0)
		fprintf(stderr, "probe: run_time_ns %llu run_cnt %llu\n",
			(unsigned long long)info.run_time_ns, (unsigned long long)info.run_cnt);
	detach(links, nf);
	bpf_object__close(obj);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
