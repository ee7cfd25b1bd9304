/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bpf/cpu_clock.c - see bpf/cpu_clock.h. */
#include "bpf/cpu_clock.h"
#include "base/error.h"
#include "base/wrapper.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int ljb_cpu_clock_attach(struct bpf_program *prog, long hz, struct ljb_links *l)
{
	int ncpu = libbpf_num_possible_cpus();
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000000ULL / (unsigned long long)hz,
	};

	l->l = xcalloc(ncpu > 0 ? ncpu : 1, sizeof(*l->l));
	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV)
				continue;	/* CPU offline */
			return error("cannot open a cpu-clock perf event on CPU %d: %s",
				     cpu, strerror(errno));
		}
		struct bpf_link *k = bpf_program__attach_perf_event(prog, fd);
		if (!k) {
			close(fd);
			return error("cannot attach the eBPF program to the perf event on "
				     "CPU %d: %s", cpu, strerror(errno));
		}
		l->l[l->n++] = k;
	}
	return 0;
}

void ljb_links_destroy(struct ljb_links *l)
{
	for (int i = 0; i < l->n; i++)
		bpf_link__destroy(l->l[i]);
	free(l->l);
	l->l = NULL;
	l->n = 0;
}
