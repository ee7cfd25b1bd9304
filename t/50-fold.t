#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# util/fold: golden output for folding, merging, ordering, escaping; the
# print_ubacktrace and folded input forms; round trip through flamegraph.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Test::More;

my $fold = 'util/fold';
my $F = 't/fixtures/flame';
my $out = scratch('50-fold');
ok(-x "$ROOT/$fold", "$fold is built") or BAIL_OUT("run make first");

# util/fold ARGS, run in the repository; returns (stdout, stderr, exit code).
sub fold {
	my ($rc, $o, $e) = run_cmd(ref $_[0] ? shift : {}, $fold, @_);
	return ($o, $e, $rc);
}

# lj-lua-stacks output: innermost first, tab + count, blank line; the same
# stack twice is merged; ';' and '\' inside a frame are escaped; ubacktrace
# lines become their symbol.
my ($o, $e, $rc) = fold("$F/stacks.txt");
is($rc, 0, 'fold stacks.txt exits 0') or diag $e;
is($e, '', 'no stderr');
is($o, <<'EOF2', 'folded: merged, root first, sorted, escaped');
[string "a\;b\\c"]:1 1
content_by_lua(nginx.conf:24);test.lua:main;test.lua:bar;test.lua:heavy;trace#3:test.lua:5 15
content_by_lua(nginx.conf:24);test.lua:main;test.lua:foo;test.lua:heavy;C:lj_BC_IFORL 32
libc.so.6+0x1234;main 4
EOF2

# Already-folded input is read back unchanged (escapes kept).
($o) = fold("$F/stacks.folded");
is($o, slurp("$ROOT/$F/stacks.folded"), 'folded input folds to itself');

# Standard input, several files merged, counts added.
($o) = fold({ stdin => "$F/stacks.txt" }, '-', "$F/stacks.folded");
like($o, qr/^content_by_lua\(nginx.conf:24\);test.lua:main;test.lua:foo;test.lua:heavy;C:lj_BC_IFORL 64$/m,
     'stdin and a file merged: 32 + 32');

# Ordering is frame by frame: "a" and everything under it before "a!"; a
# backslash that escapes nothing is kept; duplicates merged.
($o) = fold("$F/unsorted.folded");
is($o, <<'EOF2', 'frame-by-frame byte order, merge, foreign backslashes');
C:\\win\\path;x 2
a 1
a;b 3
a;c 1
a!;x 1
b;a 7
EOF2

# print_ubacktrace forms: symbol with offset/size, unknown symbol, (inexact),
# kernel frames; CRLF line ends; no final blank line; spaces before count.
spit("$out/ubt.txt",
	" 0xffffffff81000010 : schedule+0x10/0x40 [kernel]\r\n" .
	" 0x00007f0000001234 : ngx_http_lua_run_thread+0x1f4/0x9c0 [/usr/sbin/nginx] (inexact)\r\n" .
	" 0x00007f00000abcde [/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2+0xabcde]\r\n" .
	"C:lj_BC_IFORL\r\n" .
	"test.lua:heavy\r\n" .
	"    12\r\n");
($o, $e, $rc) = fold("$out/ubt.txt");
is($rc, 0, 'ubacktrace input ok') or diag $e;
is($o, "test.lua:heavy;C:lj_BC_IFORL;libluajit-5.1.so.2+0xabcde;ngx_http_lua_run_thread;schedule 12\n",
   'ubacktrace lines become symbols');

# A frame that only looks like a count is not one when not indented.
spit("$out/odd.txt", "a b 12\n[string \"x\"]:3\n\t7\n\n");
($o) = fold("$out/odd.txt");
is($o, "[string \"x\"]:3;a b 12 7\n", 'frames with spaces and digits kept verbatim');

# Inputs larger than any read buffer (regression: input cut at 64 KiB).
{
	spit("$out/big.txt", join('', map { "leaf$_\nmid\nroot\n\t$_\n\n" } 1 .. 20000));
	ok(-s "$out/big.txt" > 300_000, 'big input is > 300 KB');
	my ($o, $e, $rc) = fold("$out/big.txt");
	is($rc, 0, 'big input folds') or diag $e;
	my @l = split /\n/, $o;
	is(scalar @l, 20000, 'every stack of the big input');
	my $sum = 0;
	$sum += (split / /)[-1] for @l;
	is($sum, 20000 * 20001 / 2, 'every sample of the big input');
}

# Output is deterministic.
my ($o1) = fold("$F/stacks.txt");
my ($o2) = fold("$F/stacks.txt");
is($o1, $o2, 'same input, same bytes');

# --help and usage errors.
($o, $e, $rc) = fold('--help');
is($rc, 0, '--help exits 0');
like($o, qr/usage: fold/, '--help prints usage');
like($o, qr/'\\;'/, '--help documents the escaping');
($o, $e, $rc) = fold('--frobnicate');
is($rc, 2, 'unknown option: exit 2');
like($e, qr/^fold: error: unknown option '--frobnicate'\nhint: see 'fold --help'$/, 'usage error message');

done_testing;
