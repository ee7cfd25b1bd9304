#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# Bad input to util/fold and util/flamegraph: a clear error naming FILE:LINE,
# exit 1, nothing on standard output; usage errors exit 2.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Test::More;

chdir($ROOT) or die "$ROOT: $!";    # the commands below name files relative to it
my $out = scratch('52-flame-errors');

my @cases = (
	# name, input, expected stderr (regex, FILE replaced)
	['count-not-number', "a;b x\n",            qr/^FILE:1: error: count 'x' is not a number$/],
	['block-count-nan',  "f\ng\n\tabc\n\n",    qr/^FILE:3: error: count 'abc' is not a number$/],
	['count-too-large',  "a 99999999999999999999999\n", qr/^FILE:1: error: count '9+' is too large$/],
	['no-count',         "a;b;c\nd 1\n",       qr/^FILE:1: error: 'a;b;c' has no count/],
	['empty-frame',      "a 1\na;;b 2\n",      qr/^FILE:2: error: empty frame in stack 'a;;b'$/],
	['trailing-sep',     "a;b; 2\n",           qr/^FILE:1: error: empty frame in stack 'a;b;'$/],
	['empty-file',       "",                   qr/^FILE: error: no stacks in input \(empty file\)$/],
	['only-blank',       "\n\n  \n",           qr/^FILE: error: no stacks in input \(only empty lines\)$/],
	['binary',           "a 1\nb\0\x01\xff 2\n", qr/^FILE:2: error: binary data \(byte 0x00 in column 2\)$/],
	['stack-no-count',   "f\ng\n\t3\n\nh\ni\n\nj\n\t1\n", qr/^FILE:7: error: the stack that starts on line 5 has no count line/],
	['stack-eof',        "f\n\t3\n\nh\n",      qr/^FILE:4: error: the stack that starts on line 4 has no count line/],
	['count-no-stack',   "f\n\t3\n\t4\n",      qr/^FILE:3: error: count 4 without a stack above it$/],
	['overflow',         "a 18446744073709551615\nb 1\n", qr/error: sample counts add up to more than/],
);
for my $tool (qw(fold flamegraph)) {
	for my $c (@cases) {
		my ($name, $input, $re) = @$c;
		my $file = "$out/$name.in";
		spit($file, $input);
		my $rc = system("util/$tool $file > $out/$tool-$name.out 2> $out/$tool-$name.err") >> 8;
		my $err = slurp("$out/$tool-$name.err");
		chomp $err;
		is($rc, 1, "$tool $name: exit 1");
		(my $want = "$re") =~ s/FILE/\Q$file\E/;
		like($err, qr/$want/, "$tool $name: message") ;
		is(-s "$out/$tool-$name.out", 0, "$tool $name: no output");
	}
	# Standard input is named <stdin>.
	my $err = `printf 'a 1\\nb z\\n' | util/$tool 2>&1 >/dev/null`;
	like($err, qr/^<stdin>:2: error: count 'z' is not a number$/, "$tool: <stdin>:LINE");
	$err = `util/$tool $out/does-not-exist 2>&1 >/dev/null`;
	is($? >> 8, 1, "$tool missing file: exit 1");
	like($err, qr/^$tool: error: cannot open '\Q$out\E\/does-not-exist': No such file/, "$tool missing file: message");
	# Random binary junk.
	spit("$out/junk.bin", substr(slurp('/bin/sh'), 0, 4096));
	$err = `util/$tool $out/junk.bin 2>&1 >/dev/null`;
	is($? >> 8, 1, "$tool binary junk: exit 1");
	like($err, qr/^\Q$out\E\/junk.bin:1: error: binary data/, "$tool binary junk: message");
}
my @usage = (
	['fold --nope', qr/^fold: error: unknown option '--nope'\nhint: see 'fold --help'$/],
	['flamegraph --nope', qr/^flamegraph: error: unknown option '--nope'\nhint: see 'flamegraph --help'$/],
	['flamegraph --width', qr/^flamegraph: error: option '--width' needs a value/],
	['flamegraph --width 12x', qr/^flamegraph: error: --width '12x' is not a number from 100 to 1000000/],
	['flamegraph --height 0', qr/^flamegraph: error: --height '0' is not a number/],
	['flamegraph --minwidth -1', qr/^flamegraph: error: --minwidth '-1' is not a width/],
	['flamegraph --diff t/fixtures/flame/stacks.folded', qr/^flamegraph: error: --diff needs two files/],
	['flamegraph --normalize t/fixtures/flame/stacks.folded', qr/^flamegraph: error: --normalize only applies to --diff/],
	['flamegraph --inverted=1 t/fixtures/flame/stacks.folded', qr/^flamegraph: error: option '--inverted' takes no value/],
);
for my $u (@usage) {
	my $err = `util/$u->[0] 2>&1 >/dev/null`;
	is($? >> 8, 2, "$u->[0]: exit 2");
	like($err, $u->[1], "$u->[0]: message");
}
# All-zero counts: nothing to draw.
spit("$out/zero.folded", "a 0\n");
my $err = `util/flamegraph $out/zero.folded 2>&1 >/dev/null`;
is($? >> 8, 1, 'all-zero counts: exit 1');
like($err, qr/^flamegraph: error: all sample counts are zero/, 'all-zero counts: message');
# A closed pipe / full disk is reported.
$err = `util/fold t/fixtures/flame/stacks.folded 2>&1 >/dev/full`;
is($? >> 8, 1, 'write error: exit 1');
like($err, qr/^fold: error: cannot write standard output/, 'write error: message');

done_testing;
