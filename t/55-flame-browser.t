#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# A real browser: Debian's chromium (headless, network closed), driven by
# playwright-core (build/node, installed by make deps), loads a generated
# flame graph, hovers, clicks a frame to zoom, resets, searches by regex and
# reads the matched percentage, and must see no JavaScript error and no
# network request.  Screenshots: t/out/55-flame-browser/*.png.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Test::More;
use JSON::PP;

chdir($ROOT) or die "$ROOT: $!";    # the commands below name files relative to it
my $out = scratch('55-flame-browser');
ok(-x '/usr/bin/chromium', '/usr/bin/chromium installed (make deps)');
ok(-d 'build/node/node_modules/playwright-core', 'playwright-core installed (make deps)');

# The seed app's shape: main -> foo -> heavy (2/3), main -> bar -> heavy (1/3).
spit("$out/in.txt", "C:lj_BC_IFORL\ntest.lua:heavy\ntest.lua:foo\ntest.lua:main\ncontent_by_lua(nginx.conf:24)\n\t40\n\n" .
                    "trace#2:test.lua:4\ntest.lua:heavy\ntest.lua:foo\ntest.lua:main\ncontent_by_lua(nginx.conf:24)\n\t26\n\n" .
                    "trace#2:test.lua:4\ntest.lua:heavy\ntest.lua:bar\ntest.lua:main\ncontent_by_lua(nginx.conf:24)\n\t33\n\n" .
                    "C:ngx_http_lua_ngx_say\ntest.lua:main\ncontent_by_lua(nginx.conf:24)\n\t1\n\n");
system("util/fold $out/in.txt > $out/in.folded && util/flamegraph --title 'seed app' $out/in.folded > $out/graph.svg");
is($?, 0, 'fold + flamegraph');

my $json = `node t/browser/flamegraph.js $out/graph.svg $out test.lua:foo test.lua:bar 'heavy\$' 2> $out/node.err`;
is($? >> 8, 0, 'browser script ran') or diag slurp("$out/node.err");
my $r = eval { decode_json($json) } or do { fail("JSON from the browser: $@"); done_testing; exit };

is_deeply($r->{errors}, [], 'no JavaScript errors');
is_deeply($r->{requests}, [], 'no network requests');
like($r->{hoverDetails}, qr/^test\.lua:foo \(66 samples, 66\.00%\)$/, 'hover shows the frame details');

sub by { my ($snap, $name) = @_; grep { $_->{name} eq $name } @{$snap->{frames}} }
my $z = $r->{zoomed};
my ($foo) = by($z, 'test.lua:foo');
ok(abs($foo->{x} - 10) < 0.01 && abs($foo->{w} - 1180) < 0.01, 'zoom: clicked frame fills the width');
ok(!$foo->{hidden}, 'zoom: clicked frame shown');
my ($bar) = by($z, 'test.lua:bar');
ok($bar->{hidden}, 'zoom: sibling hidden');
my ($main) = by($z, 'test.lua:main');
ok($main->{parent} && !$main->{hidden} && abs($main->{w} - 1180) < 0.01, 'zoom: ancestor stretched and faded');
my @heavy = by($z, 'test.lua:heavy');
my ($heavy) = grep { !$_->{hidden} } @heavy;
ok($heavy && abs($heavy->{w} - 1180) < 0.01, 'zoom: child scaled with it');
my ($iforl) = by($z, 'C:lj_BC_IFORL');
ok(abs($iforl->{w} - 1180 * 40 / 66) < 0.05, 'zoom: grandchild scaled by 1180/width(foo)');
is($iforl->{label}, 'C:lj_BC_IFORL', 'zoom: label refitted');
ok(!$z->{unzoomHidden}, 'zoom: Reset Zoom shown');

my $u = $r->{unzoomed};
ok($u->{unzoomHidden}, 'reset: Reset Zoom hidden');
is_deeply([map { [$_->{x}, $_->{w}, $_->{hidden} ? 1 : 0] } @{$u->{frames}}],
          [map { [$_->{x}, $_->{w}, 0] } @{$r->{initial}{frames}}], 'reset: initial geometry back');

my $s = $r->{searched};
is($s->{matched}, 'Matched: 99.00%', 'search heavy$: matched percentage');
is($s->{searchLabel}, 'Reset Search', 'search: button turns to Reset Search');
my @hits = grep { $_->{fill} eq 'rgb(230,0,230)' } @{$s->{frames}};
is_deeply([sort map { $_->{name} } @hits], ['test.lua:heavy', 'test.lua:heavy'], 'search: matched frames highlighted');
ok(scalar(grep { $_->{fill} eq 'rgb(230,0,230)' } @{$r->{zoomedSibling}{frames}}), 'zoom keeps the highlight');
my ($bar2) = by($r->{zoomedSibling}, 'test.lua:bar');
ok(abs($bar2->{w} - 1180) < 0.01, 'zoom on the other branch');
is($r->{reset}{matched}, ' ', 'reset search: no matched text');
ok(!(grep { $_->{fill} eq 'rgb(230,0,230)' } @{$r->{reset}{frames}}), 'reset search: colors back');
is($r->{badRegex}{matched}, 'invalid regular expression', 'bad regex: message, no exception');
is(scalar @{$r->{dialogs}}, 2, 'two search prompts');
for my $png (qw(initial zoomed search)) {
	ok(-s "$out/$png.png" > 1000, "screenshot $png.png");
}
done_testing;
