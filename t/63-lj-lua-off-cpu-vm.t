#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-off-cpu in the VM (one boot): a(), b(), c() of t/apps/wait.lua
# block in FFI usleep 1:2:3; the luajit CLI, GC64 and non-GC64, JIT on and
# off, and an nginx worker whose handler blocks (t/apps/wait.conf).  The
# split must hold within 3 points and the graph account for at least 80%
# of the traced time.  Bad input: a target without LuaJIT (error at build
# time), a target that exits mid-session, a thread blocked longer than the
# session, and min_us (a runtime option) above every wait.  Runtime
# options: lines=1 (the blocking line), fullpath=1 with limit=2.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjStacks;
use LjWait;
use Pprof;
use Test::More;

my $vm = VM->new;
my $T = 3;    # seconds traced per case
my $S = 'samples/lj-lua-off-cpu.sxx';

# --- a target without LuaJIT: clear error, non-zero exit (no VM needed) ---
{
	my ($st, $log) = run_cmd({ cwd => $vm->out, merge => 1 }, "$ROOT/stap++", '--dump-src',
		'--exec', '/bin/sleep', "$ROOT/$S");
	isnt $st, 0, 'against /bin/sleep: fails';
	like $log, qr/error: no LuaJIT VM in '\/(?:usr\/)?bin\/sleep'/, '... saying there is no LuaJIT VM in it' or diag $log;
}

# --- modules: one per target build ---
my %ko;
@ko{qw(gc64 nogc64 ngx)} = $vm->builds(    # two at a time
	(map { ["offcpu_$_", $S, exec => "build/luajit-$_/bin/luajit", args => ['--arg', "time=$T"]] } qw(gc64 nogc64)),
	['offcpu_ngx', $S, exec => 'build/nginx/sbin/nginx', args => ['--arg', "time=$T"]]);
ok $ko{$_}, "builds for luajit-$_" for qw(gc64 nogc64);
ok $ko{ngx}, 'builds for nginx';

my $run = "$ROOT/t/apps/wait-run.lua";
for my $b (qw(gc64 nogc64)) {
	next unless $ko{$b};
	my $lj = "$ROOT/build/luajit-$b/bin/luajit";
	for my $mode (qw(jit nojit)) {
		$vm->case("${b}_$mode" => VM::staprun_sh(target => "$lj $run 60 $mode offcpu",	# (killed after staprun)
			module => "offcpu_$b.ko", ready => 'sleep 1'), files => [$ko{$b}], timeout => 30);
	}
}
if (my $ko = $ko{gc64}) {
	my $lj = "$ROOT/build/luajit-gc64/bin/luajit";
	# killed 2.5 s after staprun starts: before the end of the 3 s session
	$vm->case(exits => VM::staprun_sh(target => "$lj $run 30 jit offcpu", module => 'offcpu_gc64.ko',
		ready => 'sleep 0.3; (sleep 2.5; kill $pid) &'), files => [$ko], timeout => 30);
	# blocked in one usleep of 30 s: longer than the session
	$vm->case(long => VM::staprun_sh(target => "$lj $run 1 jit long_wait", module => 'offcpu_gc64.ko',
		ready => 'sleep 0.5'), files => [$ko], timeout => 30);
	# min_us, lines, fullpath and limit are module globals: staprun MOD.ko
	# min_us=N show_lines=1 show_fullpath=1 max_stacks=N
	for my $k (['min_us', 'min_us=100000'], ['lines', 'show_lines=1'], ['fullpath', 'show_fullpath=1 max_stacks=2']) {
		$vm->case($k->[0] => <<"SH", files => [$ko], timeout => 30);
$lj $run 60 jit offcpu > target.log 2>&1 &
pid=\$!
sleep 1
timeout -s INT -k 10 30 staprun -x \$pid "\$VM_JOB"/offcpu_gc64.ko $k->[1]
rc=\$?
kill \$pid 2>/dev/null
wait
exit \$rc
SH
	}
}
if (my $ko = $ko{ngx}) {
	$vm->case(nginx => VM::nginx_up(conf => 't/apps/wait.conf', url => '/yield')
		. VM::under_wrk('-t1 -c2 http://127.0.0.1:8080/offcpu', 'timeout -s INT -k 10 30 staprun -x $worker "$VM_JOB"/offcpu_ngx.ko')
		. VM::nginx_down() . "exit \$rc\n", files => [$ko], timeout => 60);
}

my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
my $c = $r->{cases};

my $frame_re = qr/^(?:[\w-]+\.lua(?::\w+)?|content_by_lua\(wait\.conf:\d+\)(?::\d+)?|trace#\d+:\S+:\d+|C:[\w.\@]+|builtin(?::\w+|#\d+))$/;

# The 1:2:3 split, the coverage of the traced time, well-formed frames.
sub check_split {
	my ($name, $case, %o) = @_;
	my $p = LjWait::parse($case->{output}, 'lj-lua-off-cpu');
	my $w = $p->{wait};
	is $case->{status}, 0, "$name: staprun status 0" or diag $case->{output};
	is_deeply LjStacks::bad($p, $name), [], "$name: well-formed lj-lua-stacks output";
	like $case->{output}, qr/^# stap\+\+ type=us$/m, "$name: the output's header gives the unit (type=us)";
	my @garbage = grep { $_ !~ $frame_re } map { @{ $_->{frames} } } @{ $p->{stacks} };
	is_deeply \@garbage, [], "$name: every frame is a well-formed name" or diag $case->{output};
	ok $p->{total} > 0 && defined $w->{graph_us} && $p->{total} == $w->{graph_us},
		"$name: the graph's total is the Lua off-CPU time on stderr ($p->{total} us)" or diag $case->{output};
	my @pct = map { LjWait::share($p, "wait.lua:$_") } qw(a b c);
	for my $i (0 .. 2) {
		my $want = 100 * ($i + 1) / 6;
		ok abs($pct[$i] - $want) <= 3, sprintf('%s: %s %.1f%% of the off-CPU time (%.1f +- 3)', $name,
			(qw(a b c))[$i], $pct[$i], $want) or diag LjStacks::dump_stacks($p, 8);
	}
	my $leaf = LjStacks::count_with($p, sub { $_[0] =~ /^C:\w*(?:nanosleep|usleep)/ });
	ok $leaf >= 0.9 * $p->{total}, "$name: the blocking call is the leaf ($leaf of $p->{total} us)"
		or diag LjStacks::dump_stacks($p, 8);
	if ($o{coverage}) {
		my $cov = $w->{traced_us} ? 100 * $p->{total} / $w->{traced_us} : 0;
		ok $cov >= 80, sprintf('%s: the graph accounts for %.1f%% of the traced time (>= 80)', $name, $cov)
			or diag $case->{output};
	}
	if (defined $o{jit}) {
		my $tr = LjStacks::count_with($p, sub { grep { /^trace#\d+:wait\.lua:\d+$/ } @_ });
		if ($o{jit}) {
			ok $tr >= 0.5 * $p->{total}, "$name: FFI calls from JIT traces show the trace frame ($tr of $p->{total} us)"
				or diag LjStacks::dump_stacks($p, 8);
		} else {
			is $tr, 0, "$name: no trace frames with the JIT off";
		}
	}
	note sprintf('%s: a %.1f%% b %.1f%% c %.1f%% of %d us; traced %d us', $name, @pct, $p->{total}, $w->{traced_us} // 0);
	return $p;
}

for my $b (qw(gc64 nogc64)) {
	for my $mode (qw(jit nojit)) {
		my $case = $c->{"${b}_$mode"} or next;
		check_split("$b $mode", $case, coverage => 1, jit => $mode eq 'jit');
	}
}
if (my $case = $c->{nginx}) {
	my $p = check_split('nginx', $case);
	my $w = $p->{wait};
	my $root = LjStacks::count_with($p, sub { $_[-1] =~ /^content_by_lua\(wait\.conf:\d+\)$/ });
	is $root, $p->{total}, 'nginx: every stack rooted at the content_by_lua chunk' or diag LjStacks::dump_stacks($p, 8);
	ok defined $w->{nolua}, "nginx: waits without a Lua stack totalled on stderr ($w->{nolua_us} us in $w->{nolua})"
		or diag $case->{output};
}
if (my $case = $c->{exits}) {
	my $p = LjWait::parse($case->{output}, 'lj-lua-off-cpu');
	is $case->{status}, 0, 'target exits: staprun status 0 (the session ends itself)' or diag $case->{output};
	ok $p->{wait}{exited}, 'target exits: a line says the process exited' or diag $case->{output};
	ok $p->{total} > 0 && ($p->{wait}{graph_us} // -1) == $p->{total}, "target exits: what was measured is printed ($p->{total} us)"
		or diag $case->{output};
	ok(($p->{wait}{traced_us} // 1e9) < ($T - 0.1) * 1e6, "target exits: before the session's time ($p->{wait}{traced_us} us)");
}
if (my $case = $c->{long}) {
	my $p = LjWait::parse($case->{output}, 'lj-lua-off-cpu');
	my $w = $p->{wait};
	is $case->{status}, 0, 'blocked longer than the session: status 0' or diag $case->{output};
	is $w->{open}, 1, 'blocked longer than the session: one wait still open at the end' or diag $case->{output};
	my $n = LjStacks::count_with($p, sub { grep { $_ eq 'wait.lua:block_long' } @_ });
	ok $n >= 0.9 * $w->{traced_us} && $n == ($w->{open_us} // 0),
		"blocked longer than the session: counted up to the end under block_long ($n of $w->{traced_us} us)"
		or diag $case->{output};
}
if (my $case = $c->{min_us}) {
	my $p = LjWait::parse($case->{output}, 'lj-lua-off-cpu');
	is $case->{status}, 0, 'min_us=100000: status 0' or diag $case->{output};
	# each wait asks for 2 ms; on a loaded host a rare one really lasts longer
	# (one of 887 took 118 ms): only those may be in the graph
	my ($n, $short) = ($p->{wait}{waits} // 1e9, $p->{wait}{short} // 0);
	ok $n <= 0.01 * $short && $p->{total} >= 100000 * $n,
		"min_us=100000: only waits of 100 ms or more in the graph ($n waits, $p->{total} us)" or diag $case->{output};
	ok $short > 100, "min_us=100000: the short waits counted on stderr ($short)";
}

# lines=1: the line of the usleep call above each function's frame
if (my $case = $c->{lines}) {
	my $p = LjWait::parse($case->{output}, 'lj-lua-off-cpu');
	is $case->{status}, 0, 'show_lines=1: status 0' or diag $case->{output};
	my $app = "$ROOT/t/apps/wait.lua";
	for my $f (qw(a b c)) {
		my $line = LjStacks::line_of($app, qr/^local function $f\(\)/) + 1;
		my $n = LjStacks::count_with($p, sub { my @fr = @_; LjStacks::has_seq(\@fr, "wait.lua:$line", "wait.lua:$f") });
		my $all = LjStacks::count_with($p, sub { grep { $_ eq "wait.lua:$f" } @_ });
		ok $all > 0 && $n == $all, "show_lines=1: the usleep call's line wait.lua:$line above wait.lua:$f ($n of $all us)"
			or diag LjStacks::dump_stacks($p, 8);
	}
}

# fullpath=1: chunks named by their full path; limit=2: the 2 heaviest
# stacks printed (c's and b's)
if (my $case = $c->{fullpath}) {
	my $p = LjWait::parse($case->{output}, 'lj-lua-off-cpu');
	is $case->{status}, 0, 'show_fullpath=1 max_stacks=2: status 0' or diag $case->{output};
	my @rel = grep { /\.lua/ && !m{^(?:trace#\d+:)?/\S+\.lua} } map { @{ $_->{frames} } } @{ $p->{stacks} };
	ok @{ $p->{stacks} } && !@rel, 'show_fullpath=1: every chunk is a full path' or diag $case->{output};
	is scalar @{ $p->{stacks} }, 2, 'max_stacks=2: 2 stacks printed' or diag $case->{output};
	my @top = sort map { my ($f) = grep { m{/t/apps/wait\.lua:[abc]$} } @{ $_->{frames} }; $f // '?' } @{ $p->{stacks} };
	is_deeply \@top, ["$ROOT/t/apps/wait.lua:b", "$ROOT/t/apps/wait.lua:c"], "max_stacks=2: the heaviest, c's and b's"
		or diag $case->{output};
}

# The real output as a pprof profile, read back by go tool pprof: the
# unit from the header, the shares, and (show_lines=1) the Lua lines.
Pprof::init($vm->out . '/pprof');
if (my $case = $c->{gc64_jit}) {
	Pprof::check_real('offcpu', $case->{output}, types => 'off_cpu/microseconds',
		frames => [map { "wait.lua:$_" } qw(a b c)]);
}
if (my $case = $c->{lines}) {
	my $pb = Pprof::check_real('offcpu-lines', $case->{output}, types => 'off_cpu/microseconds', frames => []);
	my $t = Pprof::top(Pprof::gopprof('-top -lines -nodefraction=0', $pb));
	my $line = LjStacks::line_of("$ROOT/t/apps/wait.lua", qr/^local function c\(\)/) + 1;
	ok exists $t->{"wait.lua:$line wait.lua:$line"}, "pprof -lines: the usleep call in c() at wait.lua:$line"
		or diag join "\n", sort keys %$t;
}

done_testing;
