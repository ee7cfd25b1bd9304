#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# Control bytes in input frames (issue 16): util/fold, util/flamegraph and
# util/pprof show them visibly (\t \n \r, else \xHH) as the samples do, so
# a frame can neither forge a count line nor break a parser; the count
# separator keeps its meaning; bytes >= 0x80 pass; a NUL is binary data.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Test::More;

my $out = scratch('53-escape');
for my $p (qw(util/fold util/flamegraph util/pprof)) {
	ok(-x "$ROOT/$p", "$p is built") or BAIL_OUT('run make first');
}

# stack blocks (lj-lua-stacks form): a tab inside a frame line, ESC, DEL,
# \x01 (the internal frame separator), a \r inside a frame, UTF-8
my $blocks = "leaf\x1b[31m\n" . "mid\tdle\x7f\n" . "root\x01x\ry \xc3\xa9\n" . "\t5\n\n";
spit("$out/blocks.txt", $blocks);
my ($rc, $o, $e) = run_cmd({}, 'util/fold', "$out/blocks.txt");
is $rc, 0, 'fold: exit 0' or diag $e;
my @lines = split /\n/, $o;
is scalar(@lines), 1, "fold: one folded line" or diag $o;
ok !grep({ /[\x00-\x1f\x7f]/ } @lines), 'fold: no control byte in the output' or diag $o;
ok((grep { $_ eq 'root\\\\x01x\\\\ry ' . "\xc3\xa9" . ';mid\\\\tdle\\\\x7f;leaf\\\\x1b[31m 5' } @lines),
	'fold: \x01, \r, tab, DEL and ESC shown as \x01 \r \t \x7f \x1b (the folded form doubles the backslash), UTF-8 kept')
	or diag $o;

# folded input: a tab inside a frame is escaped, the last blank before the
# count separates it
spit("$out/folded.txt", "a;b\tc\x1b 3\nx\x0cy;z\t4\n");
($rc, $o, $e) = run_cmd({}, 'util/fold', "$out/folded.txt");
is $rc, 0, 'fold folded: exit 0' or diag $e;
is $o, "a;b\\\\tc\\\\x1b 3\nx\\\\x0cy;z 4\n", 'fold folded: \t and \x1b inside frames escaped; the tab before 4 is the separator';

# flamegraph: the SVG shows the escapes, never a raw control byte
($rc, $o, $e) = run_cmd({}, 'util/flamegraph', "$out/blocks.txt");
is $rc, 0, 'flamegraph: exit 0' or diag $e;
ok $o !~ /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/, 'flamegraph: no control byte in the SVG';
like $o, qr/leaf\\x1b\[31m/, 'flamegraph: ESC shown as \x1b';
like $o, qr/mid\\tdle\\x7f/, 'flamegraph: tab and DEL shown as \t and \x7f';

# pprof: the function names in the profile are the escaped frames
($rc, $o, $e) = run_cmd({}, 'util/pprof', '-o', "$out/p.pb.gz", "$out/blocks.txt");
is $rc, 0, 'pprof: exit 0' or diag $e;
my $pb = `gzip -dc $out/p.pb.gz`;
like $pb, qr/leaf\\x1b\[31m/, 'pprof: ESC shown as \x1b in the string table';
ok $pb !~ /\x1b/, 'pprof: no raw ESC in the profile';

# a NUL stays binary data
spit("$out/nul.txt", "a\0b\n\t1\n");
for my $p (qw(util/fold util/flamegraph util/pprof)) {
	($rc, $o, $e) = run_cmd({}, $p, "$out/nul.txt", $p eq 'util/pprof' ? ('-o', "$out/n.pb.gz") : ());
	is $rc, 1, "$p: a NUL byte: exit 1";
	like $e, qr/nul\.txt:1: error: binary data \(byte 0x00 in column 2\)/, "$p: binary data, FILE:LINE";
}
done_testing;
