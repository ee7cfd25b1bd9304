/*
 * expand_fuzz.c - libFuzzer target for the macro expander (lib/expand.c).
 *
 * Each input is a main script.  It is expanded twice, like stap++ does:
 * once to list its arguments (--args) and once for real, against a fake
 * target (no DWARF set, so DWARF macros take their error path) with the
 * small modules in fuzz/tapset/ reachable by @use.  Expansion must never
 * crash, hang or leak, whatever the input; errors are fine.
 *
 * Build and run: make fuzz (FUZZ_SECONDS=30 by default).
 */
#include <stddef.h>
#include <stdint.h>

#include "../lib/expand.h"
#include "../lib/source.h"

static char *libs[] = { "/fz/lib/libluajit-5.1.so.2", "/fz/lib/libc.so.6" };
static char *incdirs[] = { "fuzz/tapset" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct expand_arg args[] = {
		{ "probe", "timer.profile", 0 },
		{ "str", "a\"b\n;{}", 0 },
	};
	struct expand_opts o = {
		.mode = TARGET_MASTER,
		.exec_path = "/fz/bin/nginx",
		.exec_comm = "nginx",
		.libs = libs,
		.nlibs = 2,
		.dw = NULL,
		.incdirs = incdirs,
		.nincdirs = 1,
		.args = args,
		.nargs = 2,
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
