/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * expand_fuzz.c - libFuzzer target for the macro expander (lib/expand/).
 *
 * Each input is a main script; if it starts with 'V', its first line
 * (after the 'V') is instead the value of --arg v (fuzzing the escaping
 * and the code checks) and the rest is the script.  It is expanded twice,
 * like stap++ does:
 * once to list its arguments (--args) and once for real, against a fake
 * target (no DWARF set, so DWARF macros take their error path) with the
 * small modules in fuzz/tapset/ reachable by @use.  Expansion must never
 * crash, hang or leak, whatever the input; errors are fine.
 *
 * Build and run: make fuzz (FUZZ_SECONDS=30 by default).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/source.h"
#include "expand/expand.h"

static char *libs[] = { "/fz/lib/libluajit-5.1.so.2", "/fz/lib/libc.so.6" };
static char *incdirs[] = { "fuzz/tapset" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char value[256] = "";
	struct expand_arg args[] = {
		{ "probe", "timer.profile", 0 },
		{ "str", "a\"b\n;{}", 0 },
		{ "v", value, 0 },
	};

	if (size > 0 && data[0] == 'V') {
		size_t n = 1;
		while (n < size && data[n] != '\n' && data[n] != '\0' &&
		       n < sizeof(value))
			n++;
		memcpy(value, data + 1, n - 1);
		value[n - 1] = '\0';
		data += n;
		size -= n;
	}
	struct expand_opts o = {
		.mode = PID_OK_MASTER,
		.exec_path = "/fz/bin/nginx",
		.exec_comm = "nginx",
		.libs = libs,
		.nlibs = 2,
		.dw = NULL,
		.incdirs = incdirs,
		.nincdirs = 1,
		.args = args,
		.nargs = 3,
	};

	for (int scan = 1; scan >= 0; scan--) {
		struct expansion x;
		struct source *src = source_from_mem("fuzz.sxx",
						     (const char *)data, size);
		if (!src)
			return 0;
		o.scan_only = scan;
		expand_script(&o, src, &x);
		expansion_free(&x);
	}
	return 0;
}
