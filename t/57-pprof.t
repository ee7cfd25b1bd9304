#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# util/pprof: the profiles it writes, read back by Go's own 'go tool pprof'
# (Debian golang-go): shares, traces, lines, sample types, labels, times,
# the round trip to folded stacks, --split, and errors.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Test::More;
use Pprof;

chdir($ROOT) or die "$ROOT: $!";	# the paths below are relative to it
my $pprof = 'util/pprof';
my $fold = 'util/fold';
my $fx = 't/fixtures/pprof';
my $out = 't/out/57-pprof';
my $home = Pprof::init($out) . '/home';
ok(-x $pprof && -x $fold, "$pprof and $fold are built") or BAIL_OUT("run make first");
ok(!system('go version >/dev/null 2>&1'), 'go is installed (golang-go, see dev/deps)')
	or BAIL_OUT('these tests read profiles with go tool pprof');

# --- CPU: the seed app under nginx, a real lj-lua-stacks run (README) ----
my $cpu = profile('cpu', "$fx/nginx-cpu.txt");
my $f = folded("$fx/nginx-cpu.txt");
my ($total, %share) = (0);
for my $k (keys %$f) {
	$total += $f->{$k};
	for my $fn (qw(foo bar)) { $share{$fn} += $f->{$k} if $k =~ /(^|;)test\.lua:$fn(;|$)/ }
}
my $t = top(gopprof('-top -cum -nodefraction=0', $cpu));
for my $fn (qw(foo bar)) {
	my $want = 100 * $share{$fn} / $total;
	ok(abs($t->{"test.lua:$fn"}[1] - $want) <= 0.1,
	   sprintf('test.lua:%s cum share %s%% = folded %.2f%%', $fn, $t->{"test.lua:$fn"}[1] // '?', $want));
}
is($t->{'test.lua:main'}[1], 100, 'test.lua:main is in every sample');
is($t->{'trace#1:test.lua:15'}[0], sprintf('%.2f', 100 * 9724 / 9740), 'the trace is the leaf of 9724 of 9740 samples');

my $r = raw(gopprof('-raw', $cpu));
is($r->{types}, 'samples/count cpu/nanoseconds[dflt]', 'cpu: samples/count and cpu/nanoseconds (default)');
is($r->{period}, 1000000, 'cpu: period 1e9/1000 ns');
is_deeply($r->{stacks}{'content_by_lua(nginx.conf:27);test.lua:main;test.lua:foo;test.lua:heavy;trace#1:test.lua:15'},
          [6575, 6575000000], 'a sample: its count and count x 1 ms');
round_trip('cpu', $r, "$fx/nginx-cpu.txt");
is($r->{time}, undef, 'no time unless given');

# -traces: every stack, leaf first, as lj-lua-stacks printed it.
my $tr = traces_ok('cpu', $cpu, "$fx/nginx-cpu.txt");
like($tr, qr/^\s+6\.58s\s+trace#1:test\.lua:15\n\s+test\.lua:heavy\n\s+test\.lua:foo\n/m,
     '-traces: 6575 samples of trace#1 under heavy under foo');

# Lines: trace#N:CHUNK:LINE and CHUNK:LINE frames carry their line,
# CHUNK:NAME its chunk.
my $lines = profile('lines', "$fx/nginx-cpu-lines.txt");
$r = raw(gopprof('-raw', $lines));
my %loc = map { ($_->{name}, "$_->{file}:$_->{line}") } @{ $r->{loc} };
is_deeply(\%loc, {
	'trace#1:test.lua:15' => 'test.lua:15', 'test.lua:15' => 'test.lua:15',
	'test.lua:21' => 'test.lua:21', 'test.lua:27' => 'test.lua:27',
	'test.lua:32' => 'test.lua:32', 'test.lua:33' => 'test.lua:33',
	'test.lua:heavy' => 'test.lua:0', 'test.lua:foo' => 'test.lua:0',
	'test.lua:bar' => 'test.lua:0', 'test.lua:main' => 'test.lua:0',
	'content_by_lua(nginx.conf:27):1' => 'content_by_lua(nginx.conf:27):1',
	'content_by_lua(nginx.conf:27)' => ':0',
}, 'every frame: its file and line');
round_trip('lines', $r, "$fx/nginx-cpu-lines.txt");
$t = top(gopprof('-top -lines -nodefraction=0', $lines));
ok(exists $t->{'trace#1:test.lua:15 test.lua:15'}, '-lines: trace#1 at test.lua:15');
is($t->{'test.lua:21 test.lua:21'}[1], sprintf('%.2f', 100 * 3366 / 6539), '-lines: the call in foo (line 21)');
my $list = gopprof("-list '^test.lua:15\$' -source_path t/apps", $lines);
like($list, qr/^\s+\.\s+6\.54s\s+15:\s+for i = 1, n do s = s \+ i end$/m,
     '-list: the seed app\'s line 15 (its loop) with all the time');

# Interpreted code (t/40, luajit CLI): bytecode handlers as leaves.
my $interp = profile('interp', "$fx/luajit-interp.txt");
round_trip('interp', raw(gopprof('-raw', $interp)), "$fx/luajit-interp.txt");

# print_ubacktrace frames, escapes and merged stacks (util/fold's fixture).
round_trip('ubacktrace', raw(gopprof('-raw', profile('ubt', 't/fixtures/flame/stacks.txt'))),
           't/fixtures/flame/stacks.txt');

# --- bytes -------------------------------------------------------------
my $bytes = profile('bytes', "--type bytes $fx/bytes.txt");
$r = raw(gopprof('-raw', $bytes));
is($r->{types}, 'space/bytes', 'bytes: space/bytes');
round_trip('bytes', $r, "$fx/bytes.txt");
my $top = gopprof('-top -cum -nodefraction=0', $bytes);
like($top, qr/^Type: space$/m, 'bytes: pprof shows type space');
$t = top($top);
is($t->{'test.lua:render'}[1], '88.89', 'bytes: render 4 MiB of 4.5 MiB');
like($top, qr/^\s+3072kB\s+66\.67%.*builtin:table\.concat$/m, 'bytes: shown in kB');
$tr = gopprof('-traces', $bytes);
like($tr, qr/^\s+512kB\s+builtin:string\.format\n\s+trace#3:test\.lua:57\n\s+test\.lua:log\n/m,
     'bytes: -traces leaf first');

# --- microseconds, the type given by the input's header ----------------
my $us = profile('us', "$fx/us.txt");
$r = raw(gopprof('-raw', $us));
is($r->{types}, 'off_cpu/microseconds', '# stap++ type=us: off_cpu/microseconds');
round_trip('us', $r, "$fx/us.txt");
$top = gopprof('-top -cum -nodefraction=0', $us);
like($top, qr/^\s+750ms\s+75\.00%.*C:ngx_http_lua_socket_tcp_receive$/m, 'us: 750000 us shown as 750ms');
is(top($top)->{'test.lua:fetch'}[1], '95.00', 'us: fetch waits 95%');
$tr = gopprof('-traces', $us);
like($tr, qr/^\s+200ms\s+C:ngx_http_lua_ngx_sleep\n\s+test\.lua:backoff\n\s+test\.lua:fetch\n/m,
     'us: -traces leaf first');
like(gopprof('-lines -top', $us), qr/test\.lua:88 test\.lua:88$/m, 'us: -lines');
$r = raw(gopprof('-raw', profile('us-as-cpu', "--type cpu --hz 100 $fx/us.txt")));
is($r->{types}, 'samples/count cpu/nanoseconds[dflt]', '--type overrides the header');
is($r->{period}, 10000000, '--hz 100: period 10 ms');

# --- labels and times ----------------------------------------------------
my $lab = profile('labels', "--label host=web1 --label service=nginx --label pid=120"
                  . " --time 2026-11-23T03:50:45.5Z --duration 10 $fx/nginx-cpu.txt");
my $tags = gopprof('-tags', $lab);
like($tags, qr/^ host: Total 9\.7s\n\s+9\.7s \(  100%\): web1$/m, '-tags: host');
like($tags, qr/^ service: Total.*\n.*: nginx$/m, '-tags: service');
like($tags, qr/^ pid: Total.*\n.*: 120$/m, '-tags: pid');
# the eBPF backend's header names the target's cgroup and container
# (t/80): labels of every sample, --label's value first
spit("$out/cg.txt", "# stap++ cgroup=/docker/0a1b container=0a1b\n" . slurp("$fx/nginx-cpu.txt"));
$tags = gopprof('-tags', profile('cgroup', "$out/cg.txt"));
like($tags, qr/^ cgroup: Total 9\.7s\n\s+9\.7s \(  100%\): \/docker\/0a1b$/m, 'header cgroup=: a label');
like($tags, qr/^ container: Total.*\n.*: 0a1b$/m, 'header container=: a label');
$tags = gopprof('-tags', profile('cgroup-label', "--label container=web $out/cg.txt"));
like($tags, qr/^ container: Total.*\n.*: web$/m, '--label container= wins over the header');
unlike($tags, qr/\): 0a1b$/m, '--label container=: the header\'s value left out');
spit("$out/cg2.txt", "# stap++ cgroup=/docker/ff\na\n\t1\n");
my ($cg_o, $cg_e, $cg_rc) = run("$pprof $out/cg.txt $out/cg2.txt > /dev/null");
is_deeply([$cg_rc, $cg_e], [1, "$out/cg2.txt:1: error: header cgroup=/docker/ff, but the input so far has cgroup=/docker/0a1b\n"],
          'inputs of two cgroups: an error');
$r = raw(gopprof('-raw', $lab));
is($r->{time}, '2026-11-23 03:50:45.5 +0000 UTC', '--time RFC 3339 in -raw');
is($r->{duration}, '10s', '--duration in -raw');
$r = raw(gopprof('-raw', profile('epoch', "--time 1795000000 --duration 2.5 -- $fx/nginx-cpu.txt")));
is($r->{time}, '2026-11-18 11:06:40 +0000 UTC', '--time in seconds since the epoch');
is($r->{duration}, '2.5s', '--duration 2.5');
$r = raw(gopprof('-raw', profile('offset', "--time=2026-11-23T04:50:45+01:00 $fx/bytes.txt")));
is($r->{time}, '2026-11-23 03:50:45 +0000 UTC', '--time with a zone offset');

# --- profile blocks: merged, or one file each with --split ------------
$r = raw(gopprof('-raw', profile('merged', "$fx/split.txt")));
is($r->{time}, '2026-11-18 11:06:40 +0000 UTC', 'blocks merged: the first start');
is($r->{duration}, '30s', 'blocks merged: up to the last end');
is($r->{period}, 10000000, 'header hz=100');
is_deeply($r->{stacks}{'content_by_lua(nginx.conf:27);test.lua:main;test.lua:foo;test.lua:heavy;trace#1:test.lua:15'},
          [1300, 13000000000], 'blocks merged: counts added');
# util/fold and util/flamegraph pass over the headers: the whole session
my ($o, $e, $rc) = run("$ROOT/util/fold $fx/split.txt");
is($o, "content_by_lua(nginx.conf:27);test.lua:main;test.lua:bar;test.lua:heavy;trace#1:test.lua:15 330\n"
     . "content_by_lua(nginx.conf:27);test.lua:main;test.lua:foo;test.lua:heavy;trace#1:test.lua:15 1300\n",
   'util/fold: the blocks of a periodic profile merged, headers skipped') or diag($e);
($o, $e, $rc) = run("$ROOT/util/flamegraph $fx/split.txt");
is($rc, 0, 'util/flamegraph draws a periodic profile') or diag($e);
like($o, qr/<title>all \(1,630 samples, 100.00%\)<\/title>/, 'util/flamegraph: every block counted (1,630 samples)')
	or diag(substr($o, 0, 2000));
($o, $e, $rc) = run("$pprof --split $out/split $fx/split.txt");
is($rc, 0, '--split') or diag($e);
my @files = map { s{.*/}{}r } sort glob("$out/split/*.pb.gz");
is_deeply(\@files, [map { "17950000${_}0000000000.pb.gz" } 0, 1, 2], '--split: DIR/START_NS.pb.gz per block');
my @want = ({ time => '11:06:40', stacks => 2, count => 990 },
            { time => '11:06:50', stacks => 1, count => 640 },
            { time => '11:07:00', stacks => 0, count => 0 });
for my $i (0 .. 2) {
	$r = raw(gopprof('-raw', "$out/split/$files[$i]"));
	my $n = 0;
	$n += $_->[0] for values %{ $r->{stacks} };
	is_deeply([$r->{time}, $r->{duration}, scalar keys %{ $r->{stacks} }, $n],
	          ["2026-11-18 $want[$i]{time} +0000 UTC", '10s', $want[$i]{stacks}, $want[$i]{count}],
	          "--split: block $i: its time, duration and stacks");
}

# --- output ------------------------------------------------------------
($o, $e, $rc) = run("$pprof -o $out/o.pb.gz $fx/nginx-cpu.txt");
is($rc, 0, '-o FILE');
is(slurp("$out/o.pb.gz"), slurp($cpu), '-o FILE and standard output: the same bytes');
is(substr(slurp($cpu), 0, 2), "\x1f\x8b", 'gzip');
($o, $e, $rc) = run("script -qec '$pprof $fx/nginx-cpu.txt' /dev/null");
is($rc, 2, 'a terminal on standard output: exit 2');
like($o, qr/^pprof: error: refusing to write a binary profile to a terminal\r?\nhint: .*-o FILE/m,
     'a terminal: refused, with a hint');

# --- errors ----------------------------------------------------------
spit("$out/bad.txt", "a\nb\n\tx12\n");
($o, $e, $rc) = run("$pprof $out/bad.txt");
is($rc, 1, 'bad count: exit 1');
is($e, "$out/bad.txt:3: error: count 'x12' is not a number\n", 'bad count: FILE:LINE: error:');
is($o, '', 'bad input: no output');
spit("$out/bad-header.txt", "# stap++ type=bytes\na\nb\n\tx12\n");
($o, $e, $rc) = run("$pprof $out/bad-header.txt");
is_deeply([$rc, $e], [1, "$out/bad-header.txt:4: error: count 'x12' is not a number\n"],
          'after a header line: the same FILE:LINE');
($o, $e, $rc) = run("$pprof < $out/bad-header.txt");
is_deeply([$rc, $e], [1, "<stdin>:4: error: count 'x12' is not a number\n"], 'standard input: <stdin>:LINE');
spit("$out/bad-type.txt", "x\n\t1\n\n# stap++ type=kb\n");
($o, $e, $rc) = run("$pprof $out/bad-type.txt");
is_deeply([$rc, $e], [1, "$out/bad-type.txt:4: error: header type=kb: expected cpu, bytes or us\n"],
          'bad header value: FILE:LINE');
spit("$out/bad-hz.txt", "# stap++ hz=2000000000\nx\n\t1\n");
($o, $e, $rc) = run("$pprof $out/bad-hz.txt");
is_deeply([$rc, $e], [1, "$out/bad-hz.txt:1: error: header hz=2000000000: expected a whole number from 1 to 1000000000\n"],
          'a header hz= above 1e9 (a period under 1 ns) is an error, as --hz is (found by the fuzzer)');
($o, $e, $rc) = run("$pprof $fx/us.txt $fx/split.txt");
is_deeply([$rc, $e], [1, "$fx/split.txt:1: error: header type=cpu, but the input so far is type=us\n"],
          'inputs of different types');
($o, $e, $rc) = run("$pprof --split $out/s2 $fx/nginx-cpu.txt");
is_deeply([$rc, $e], [1, "$fx/nginx-cpu.txt: error: no '# stap++ profile' line (--split needs profile blocks)\n"],
          '--split without blocks');
spit("$out/dup.txt", "# stap++ profile start=5\na\n\t1\n# stap++ profile start=5\nb\n\t2\n");
($o, $e, $rc) = run("$pprof --split $out/dup $out/dup.txt");
is_deeply([$rc, $e, -e "$out/dup" ? 1 : 0], [1, "$out/dup.txt:4: error: a second profile with start=5 (the first: $out/dup.txt:1)\n", 0],
          '--split: two blocks with one start, nothing written');
spit("$out/blocks.txt", "# stap++ profile start=5\na\n\t1\n\n# stap++ profile start=6\nb\nc\n\tx\n");
($o, $e, $rc) = run("$pprof --split $out/blocks $out/blocks.txt");
is_deeply([$rc, $e], [1, "$out/blocks.txt:8: error: count 'x' is not a number\n"], '--split: an error in the second block: its FILE:LINE');
($o, $e, $rc) = run("$pprof --split $out/blocks < $out/blocks.txt");
is($e, "<stdin>:8: error: count 'x' is not a number\n", '--split, standard input: <stdin>:LINE');
spit("$out/late-type.txt", "# stap++ profile start=5\na\n\t1\n# stap++ type=bytes\n");
($o, $e, $rc) = run("$pprof --split $out/late $out/late-type.txt");
is_deeply([$rc, $e], [1, "$out/late-type.txt:4: error: with --split, type= and hz= must come before the first profile block\n"],
          '--split: a type given after a block was written');
spit("$out/stray.txt", "a\n\t1\n# stap++ profile start=5\nb\n\t2\n");
($o, $e, $rc) = run("$pprof --split $out/stray $out/stray.txt");
like($e, qr/^\Q$out\E\/stray.txt:1: error: stacks before the first '# stap\+\+ profile' line/, '--split: stacks outside a block');
($o, $e, $rc) = run("$pprof $out/nonexistent.txt");
is_deeply([$rc, $e], [1, "pprof: error: cannot open '$out/nonexistent.txt': No such file or directory\n"],
          'missing file');
for my $bad ('--frobnicate', '--type kb', '--hz 0', '--time yesterday', '--duration -1',
             '--label nokey', '--split d -o x', '-o') {
	($o, $e, $rc) = run("$pprof $fx/nginx-cpu.txt $bad < /dev/null");
	is($rc, 2, "'$bad': exit 2");
	like($e, qr/^pprof: error: .*\nhint: see 'pprof --help'\n\z/, "'$bad': error and hint");
}
# make install: stap++-pprof.  The default PREFIX: another one is compiled
# into stap++ (its DATADIR), so make would rebuild the tree's binaries while
# other tests run them (make test runs two at a time).
($o, $e, $rc) = run("make -s install DESTDIR=$home/inst PREFIX=/usr/local");
is($rc, 0, 'make install') or diag($e);
($o, $e, $rc) = run("$home/inst/usr/local/bin/stap++-pprof --version");
like($o, qr/^pprof \(stap\+\+\) \d/, 'installed as PREFIX/bin/stap++-pprof');

($o, $e, $rc) = run("$pprof --help");
is($rc, 0, '--help');
like($o, qr/^usage: pprof .*--type TYPE.*--label KEY=VALUE.*--split DIR/s, '--help lists the options');

done_testing();
