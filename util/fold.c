/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fold - turn stack samples into folded stacks, one line per distinct stack.
 *
 * Reads the output of samples/lj-lua-stacks.sxx (or any stap script that
 * prints stacks the same way, print_ubacktrace() lines included) or folded
 * lines, merges equal stacks and writes "ROOT;...;LEAF COUNT" lines sorted
 * frame by frame.  Formats, escaping and errors: see flame.h and --help.
 */
#include "flame.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: fold [FILE...]\n"
	"\n"
	"Fold stack samples into one line per distinct stack:\n"
	"    ROOT;FRAME;...;LEAF COUNT\n"
	"merged (counts added) and sorted frame by frame in byte order.\n"
	"Reads each FILE ('-' or none: standard input), all merged into one output.\n"
	"\n"
	"Input (detected per file):\n"
	"  - stap++ samples/lj-lua-stacks.sxx output: frames one per line, innermost\n"
	"    first, then a line with a tab and the sample count, then an empty line;\n"
	"    frame lines in print_ubacktrace() form (' 0xADDR : SYM+0xOFF/0xLEN [MOD]')\n"
	"    become 'SYM' (' 0xADDR [MOD+0xOFF]' becomes 'MOD+0xOFF');\n"
	"  - already folded lines ('FRAME;...;FRAME COUNT').\n"
	"\n"
	"Frames are copied byte for byte, except that inside a frame ';' is written\n"
	"as '\\;' and '\\' as '\\\\' (util/flamegraph shows the original bytes), and\n"
	"a control byte is shown as '\\t', '\\n', '\\r' or '\\xHH'.\n"
	"\n"
	"Exit status: 0 ok, 1 bad input (the error names FILE:LINE), 2 usage.\n";

int main(int argc, char **argv)
{
	struct flame_table t = {0};
	struct flame_stack **v;
	size_t n, i;
	int nfiles = 0, opts = 1;

	set_program_name("fold");
	for (i = 1; i < (size_t)argc; i++) {
		const char *a = argv[i];
		if (opts && !strcmp(a, "--")) {
			opts = 0;
		} else if (opts && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
			fputs(usage, stdout);
			return 0;
		} else if (opts && !strcmp(a, "--version")) {
			printf("fold (stap++) %s\n", STAPXX_VERSION);
			return 0;
		} else if (opts && a[0] == '-' && a[1]) {
			usage_die("unknown option '%s'", a);
		}
	}
	for (i = 1, opts = 1; i < (size_t)argc; i++) {
		if (opts && !strcmp(argv[i], "--")) {
			opts = 0;
			continue;
		}
		flame_read(&t, argv[i]);
		nfiles++;
	}
	if (!nfiles)
		flame_read(&t, "-");

	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	v = flame_sorted(&t, &n);
	for (i = 0; i < n; i++)
		flame_write_folded(stdout, v[i]->key, v[i]->len, v[i]->count);
	flame_close_output(stdout, "standard output");
	free(v);
	flame_table_free(&t);
	return 0;
}
