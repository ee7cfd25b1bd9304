#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# util/flamegraph: well-formed SVG (xmllint), one <g><title><rect> per frame,
# widths proportional to counts (parsed back), options, colors by frame kind,
# --reverse, --inverted, --diff, determinism.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Test::More;

chdir($ROOT) or die "$ROOT: $!";    # the commands below name files relative to it
my $fg = 'util/flamegraph';
my $out = scratch('51-flamegraph');
ok(-x $fg, "$fg is built") or BAIL_OUT("run make first");

# util/flamegraph ARGS (shell words) into $out/NAME.svg, checked with xmllint.
sub svg {
	my ($name, @args) = @_;
	system("$fg @args > $out/$name.svg 2> $out/$name.err");
	is($? >> 8, 0, "flamegraph @args: exit 0") or diag slurp("$out/$name.err");
	system("xmllint --noout $out/$name.svg 2> $out/$name.xmllint");
	is($?, 0, "$name.svg is well-formed XML") or diag slurp("$out/$name.xmllint");
	return slurp("$out/$name.svg");
}
# Frames parsed back: name, count, pct, x, y, width, fill, label.
sub frames {
	my ($svg) = @_;
	my @f;
	while ($svg =~ m{<g><title>(.*?) \(([\d,]+) (\w+), ([\d.]+)%(.*?)\)</title><rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="(\d+)" fill="([^"]+)"[^>]*/>(?:<text[^>]*>(.*?)</text>)?</g>}g) {
		my %f = (name => $1, count => $2, unit => $3, pct => $4, extra => $5, x => $6,
		         y => $7, w => $8, h => $9, fill => $10, label => $11);
		$f{count} =~ s/,//g;
		for ($f{name}) { s/&lt;/</g; s/&gt;/>/g; s/&amp;/&/g; }
		push @f, \%f;
	}
	return @f;
}

my $svg = svg('basic', 't/fixtures/flame/stacks.folded');
my @f = frames($svg);
my $ng = () = $svg =~ /<g><title>/g;
is(scalar @f, $ng, 'every frame <g> parses back');
is(scalar @f, 12, '12 frames (11 + all)');
my ($all) = grep { $_->{name} eq 'all' } @f;
is($all->{count}, 52, 'root counts every sample');
cmp_ok($all->{w}, '==', 1180, 'root spans width - 2 * 10');
for my $f (@f) {
	my $want = $f->{count} / 52 * 1180;
	ok(abs($f->{w} - $want) < 0.02, "width of $f->{name} ($f->{w}) ~ $want");
	is($f->{pct}, sprintf('%.2f', 100 * $f->{count} / 52), "percentage of $f->{name}");
	is($f->{unit}, 'samples', 'countname default');
	is($f->{h}, 15, 'frame height 16 - 1 gap');
}
# Frames of one stack stack up: child directly above its parent, inside it.
my ($foo) = grep { $_->{name} eq 'test.lua:foo' } @f;
my ($main) = grep { $_->{name} eq 'test.lua:main' } @f;
is($main->{y} - $foo->{y}, 16, 'child one frame above its parent');
ok($foo->{x} >= $main->{x} && $foo->{x} + $foo->{w} <= $main->{x} + $main->{w} + 0.001, 'child inside parent');
is($main->{count}, 47, 'test.lua:main = 15 + 32');
# Escaped ';' and '\' are shown as the original bytes.
ok((grep { $_->{name} eq '[string "a;b\\c"]:1' } @f), 'escaped frame shown unescaped');
# Colors by kind.
sub rgb { $_[0] =~ /rgb\((\d+),(\d+),(\d+)\)/ ? [$1, $2, $3] : die "bad fill $_[0]" }
my %byname = map { $_->{name} => rgb($_->{fill}) } @f;
my ($r, $g, $b);
($r, $g, $b) = @{$byname{'test.lua:foo'}};        ok($g > $r && $g > $b, 'Lua function: green');
($r, $g, $b) = @{$byname{'[string "a;b\\c"]:1'}}; ok($b >= 200 && $g >= 190 && $r < 150, 'Lua line: aqua');
($r, $g, $b) = @{$byname{'trace#3:test.lua:5'}};  ok($b > $g && $r > $g, 'trace: purple');
($r, $g, $b) = @{$byname{'C:lj_BC_IFORL'}};       ok($r > 200 && $b < 100, 'C: orange/red');
($r, $g, $b) = @{$byname{'libc.so.6+0x1234'}};    ok($r > 200 && $b < 100, 'native sym+0x: like C');
my @heavy = grep { $_->{name} eq 'test.lua:heavy' } @f;
is($heavy[0]{fill}, $heavy[1]{fill}, 'same name, same color');
like($svg, qr{<script type="text/ecmascript"><!\[CDATA\[}, 'embedded script');
unlike($svg, qr{(?:href|src)=|https?://(?!www\.w3\.org/2000/svg)}, 'no external references');
like($svg, qr{<text id="title"[^>]*>Flame Graph</text>}, 'default title');

# Labels: cut with ".." to fit, absent when nothing fits.
my ($libc) = grep { $_->{name} eq 'libc.so.6+0x1234' } @f;
is($libc->{label}, 'libc.so.6..', 'long label cut to fit');
my ($tiny) = grep { $_->{name} =~ /^\[string/ } @f;
ok(!defined $tiny->{label}, 'no label on a frame too narrow');

# Determinism.
system("$fg t/fixtures/flame/stacks.folded > $out/again.svg");
is(slurp("$out/again.svg"), $svg, 'same input, same bytes');
# Raw lj-lua-stacks output draws the same graph as its folded form.
system("$fg t/fixtures/flame/stacks.txt > $out/raw.svg");
is(slurp("$out/raw.svg"), $svg, 'unfolded input gives the same SVG');

# Options.
$svg = svg('opts', '--title', "'T <1> & \"q\"'", '--subtitle', 'sub', '--width', 600,
           '--height', 20, '--countname', 'ms', 't/fixtures/flame/stacks.folded');
like($svg, qr{<text id="title"[^>]*>T &lt;1&gt; &amp; "q"</text>}, '--title escaped');
like($svg, qr{<text id="subtitle"[^>]*>sub</text>}, '--subtitle');
like($svg, qr{<svg [^>]*width="600"}, '--width');
@f = frames($svg);
($all) = grep { $_->{name} eq 'all' } @f;
cmp_ok($all->{w}, '==', 580, 'root spans 600 - 20');
is($all->{h}, 19, '--height 20');
is($all->{unit}, 'ms', '--countname');

$svg = svg('minwidth', '--minwidth', 30, 't/fixtures/flame/stacks.folded');
@f = frames($svg);
ok(!(grep { $_->{w} < 30 } @f), '--minwidth 30 drops narrower frames');
ok((grep { $_->{name} eq 'test.lua:bar' } @f), '--minwidth keeps wider ones');
$svg = svg('minpct', '--minwidth', '10%', 't/fixtures/flame/stacks.folded');
@f = frames($svg);
is(scalar(grep { $_->{count} / 52 < 0.10 } @f), 0, '--minwidth 10% drops frames under 10%');

# --inverted: root at the top, children below.
$svg = svg('inverted', '--inverted', 't/fixtures/flame/stacks.folded');
@f = frames($svg);
($all) = grep { $_->{name} eq 'all' } @f;
($main) = grep { $_->{name} eq 'test.lua:main' } @f;
ok($all->{y} < $main->{y}, '--inverted: root above its children');
like($svg, qr{>Icicle Graph</text>}, '--inverted default title');

# --reverse: leaves become roots, their callers merged.
$svg = svg('reverse', '--reverse', 't/fixtures/flame/stacks.folded');
@f = frames($svg);
my %depth1;
($all) = grep { $_->{name} eq 'all' } @f;
for (@f) { $depth1{$_->{name}} = $_->{count} if $_->{y} == $all->{y} - 16 }
is_deeply(\%depth1, { 'C:lj_BC_IFORL' => 32, 'trace#3:test.lua:5' => 15, 'main' => 4,
                      '[string "a;b\\c"]:1' => 1 }, '--reverse: leaves at the bottom');

# --diff: widths from AFTER, color by change.
spit("$out/before.folded", "main;foo;heavy 30\nmain;bar;heavy 30\nmain;gone 10\n");
spit("$out/after.folded",  "main;foo;heavy 60\nmain;bar;heavy 30\nmain;new 10\n");
$svg = svg('diff', '--diff', "$out/before.folded", "$out/after.folded");
@f = frames($svg);
my %d = map { ($_->{name} eq 'heavy' ? "heavy\@$_->{x}" : $_->{name}) => $_ } @f;
is($d{all}{count}, 100, 'diff: widths from AFTER');
ok(!exists $d{gone}, 'diff: a stack only in BEFORE has no width');
is_deeply(rgb($d{foo}{fill}), [255, 45, 45], 'diff: largest growth is the deepest red');
is_deeply(rgb($d{bar}{fill}), [255, 255, 255], 'diff: no change is white');
like($d{foo}{extra}, qr/before 30, change \+30 \(\+100\.0%\)/, 'diff tooltip');
like($d{new}{extra}, qr/\(new\)/, 'diff: new frame');
like($d{main}{extra}, qr/change \+30/, 'diff: parent delta includes vanished stacks (+30 +10 -10)');
$svg = svg('diffn', '--diff', '--normalize', "$out/after.folded", "$out/before.folded");
@f = frames($svg);
my ($gone) = grep { $_->{name} eq 'gone' } @f;
my $c = rgb($gone->{fill});
ok($c->[0] == 255 && $c->[2] < 255, '--normalize: gone grows from 0 (red)');
my ($foo2) = grep { $_->{name} eq 'foo' } @f;
$c = rgb($foo2->{fill});
ok($c->[2] == 255 && $c->[0] < 255, '--normalize: foo shrank (blue)');

# Control characters in --title/--subtitle/--countname: shown as \xNN, the
# SVG stays well-formed XML.
$svg = svg('ctl', "--title \"\$(printf 'x\\001y')\"", "--subtitle \"\$(printf 's\\033t')\"",
           "--countname \"\$(printf 'c\\177d')\"", "$out/after.folded");
like($svg, qr/x\\x01y/, 'control byte in --title shown as \\x01');
like($svg, qr/s\\x1bt/, 'control byte in --subtitle shown as \\x1b');

done_testing;
