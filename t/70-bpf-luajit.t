#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks --runtime=bpf on this host's kernel (no VM) against the
# luajit CLI, GC64 and non-GC64 debug builds: the seed app (t/apps/run.lua)
# with the JIT on, off, with FFI calls and with lines=1 (the assertions of
# t/40, foo's share within 2 points), the first three on copies without
# the symbol table too (the same assertions); frame shapes of t/apps/edge.lua
# (coroutines continued into their resumer after a [resume] frame, pcall,
# tail calls, varargs, metamethods, recursion cut at depth with a
# [truncated] root frame); the options nojit, nointerp, fullpath, limit and
# hz.  Every case samples for an amount of the target's CPU time, not of
# the wall clock.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjStacks;
use Bpf;
use Test::More;
use Time::HiRes qw(sleep time);

my $DEPTH = 20;
my $run = "$ROOT/t/apps/run.lua";
my $edge = "$ROOT/t/apps/edge.lua";
my $app = "$ROOT/t/apps/test.lua";
# heavy()'s loop count: a periodic workload whose calls last about the
# sampling period aliases with it (at 1 ms, foo/bar measured 64/36 to
# 69/31 with calls of 1.6 ms).  Natively a call of 2000000 iterations
# takes 7 ms interpreted or with FFI calls, but only 1.6 ms as a trace, so
# JIT-compiled plain loops get 2.5 times more: 4 ms a call, 16 sampling
# periods at 4,000 a second.
my $N = 2000000;
my $NJIT = 5000000;
# foo's share of the foo + bar samples within 2 points (the README's
# claim for this backend): 8,889 samples, 2.2 s of the target's CPU time a
# case at 4,000 samples a second.  A share is measured over a session
# that starts and ends inside cycles of run.lua's main() (foo, then bar:
# 12 ms with the JIT, 21 ms without), off by up to 2/3 of a cycle's
# samples, so a session spans 100 cycles or more (t/40 says why).  lines=1 is about the line frames: its share is held to 4 points
# (2,223 samples).  The frame shapes and options need a few hundred.
my $CLAIM = 2;
my $CLAIM_LINES = 4;
my $SAMPLES_OTHER = 2000;

# Runs the target CMD (for an hour: it is killed when the session ends),
# samples it with ARGS until the output holds SAMPLES samples (or, with
# cpu => SECS first, for SECS of its CPU time); returns the parsed output
# and the CPU seconds sampled.  The seed cases sample at 4,000 a second:
# the shares need a sample count, not a rate (the probe's few us are
# about 4% of the target's time at that rate).
my $HZ = 4000;
sub sample {
	my ($name, $cmd, @args) = @_;
	my $pid = Bpf::spawn(@$cmd);
	ok Bpf::ready($pid), "$name: the target runs";
	my ($st, $out, $err, $p, $used, $wall) = $args[0] eq 'cpu'
		? Bpf::stacks_cpu(['-x', $pid], [$pid], @args[1 .. $#args])
		: Bpf::stacks_samples(['-x', $pid], [$pid], @args, "hz=$HZ");
	kill 'TERM', $pid;
	waitpid($pid, 0);
	is $st, 0, "$name: status 0" or diag $err;
	note sprintf('%s: %d samples in %.1f s of CPU time (%.1f s wall)', $name, ($p->{stats} // {})->{samples} // 0, $used, $wall);
	note $_ for LjStacks::session_lines($name, $p);
	return ($p, $used);
}

# What a sample reads of the target's memory (issue 26): the same on any
# machine, so a bound holds it.  The seed app's stacks have 4 Lua frames
# and the walk reads 4 a Lua frame (its two slots, its function's header,
# its prototype's chunk name, the call instruction) and about 5 to find
# the frame to start from (a trace's snapshot adds its search): 27 to 30
# interpreted, 40 to 44 in JIT code, on average on 2026-12-06 (34 to 37
# and 47 to 51 while the walk looked for a resumer below the main thread,
# 48 to 51 and 56 to 59 before the reads were merged).  Looking there
# again fails both bounds.
my %READS = (nojit => 32, jit => 48);
sub check_reads {
	my ($name, $p) = @_;
	my $READS = $READS{$name =~ /nojit/ ? 'nojit' : 'jit'};
	my $st = $p->{stats} // {};
	ok(defined $st->{reads} && $st->{reads} > 0 && $st->{reads} <= $READS && $st->{reads_p99} >= $st->{reads},
	   sprintf('%s: %s reads of the target\'s memory per sample on average (%s bytes; at most %d), 99%% at most %s',
		   $name, $st->{reads} // '?', $st->{rbytes} // '?', $READS, $st->{reads_p99} // '?'));
	# the probe's time: its median and 99th percentile (issue 26), which
	# depend on the machine: only consistent
	ok(defined $st->{cost_med} && $st->{cost_med} > 0 && $st->{cost_med} <= $st->{cost_p99},
	   sprintf('%s: half of the samples at most %s us in the probe, 99%% at most %s us (%s on average)',
		   $name, $st->{cost_med} // '?', $st->{cost_p99} // '?', $st->{cost_us} // '?'));
}

for my $b (qw(gc64 nogc64)) {
	my $lj = "$ROOT/build/luajit-$b/bin/luajit";
	# stripped as a distribution ships it (issue 21): its layouts from the
	# layout database, its VM found in its memory as the session starts,
	# the interpreter's PCs named from the dispatch table, the main C
	# function (pmain) an address
	my $bare = Bpf::stripped($lj);
	for my $c (['jit', 'jit', 'plain', $NJIT], ['nojit', 'nojit', 'plain', $N], ['ffi-native', 'jit', 'ffi', $N]) {
		my ($mode, @work) = @$c;
		(my $name = "$b $mode") =~ s/-native//;
		my ($p) = sample($name, [$lj, $run, 3600, @work], LjStacks::seed_samples($CLAIM));
		my ($f, $n) = LjStacks::check_seed($name, $p, app => $app, root => ['run.lua', 'C:pmain'], mode => $mode,
			lines => 0, claim => $CLAIM);
		Bpf::check_accounted($name, $p);
		check_reads($name, $p);
		LjStacks::check_stopped($name, $p, hz => $HZ);
		is_deeply [grep { /disagree with the symbols/ } @{ $p->{warnings} // [] }], [],
			"$name: the handlers named from the dispatch table are the symbols";
		my ($q) = sample("$name stripped", [$bare, $run, 3600, @work], LjStacks::seed_samples($CLAIM));
		LjStacks::check_seed("$name stripped", $q, app => $app, root => ['run.lua', qr/^C:[\w.-]+\+0x[0-9a-f]+$/],
			mode => $mode, lines => 0, claim => $CLAIM);
		Bpf::check_accounted("$name stripped", $q, 1);
		is_deeply $q->{layout}, { $bare => "luajit2-2.1-20230119-$b" },
			"$name stripped: stderr names the layout database's entry, once";
		# (nojit: lj_BC_ADDVV and lj_BC_IFORL, 30 to 65% each)
		is_deeply LjStacks::top_leaves($q, 0.05), LjStacks::top_leaves($p, 0.05),
			"$name stripped: the main leaves named as with symbols" if $mode eq 'nojit';
	}
	my ($p) = sample("$b lines", [$lj, $run, 3600, 'jit', 'plain', $NJIT], LjStacks::seed_samples($CLAIM_LINES), 'lines=1');
	LjStacks::check_seed("$b lines=1", $p, app => $app, root => ['run.lua', 'C:pmain'], mode => 'jit', lines => 1,
		claim => $CLAIM_LINES);
}

# options: nojit on a JIT workload, nointerp on an interpreted one (as
# t/40); lines, fullpath and limit on the JIT workload's three hot stacks;
# hz=99
{
	my $lj = "$ROOT/build/luajit-gc64/bin/luajit";
	# (options that drop samples print few: 0.5 s of CPU time at $HZ a
	# second, 2,000 taken)
	my ($p) = sample('nojit=1', [$lj, $run, 3600, 'jit', 'plain', $NJIT], cpu => 0.5, 'nojit=1', "hz=$HZ");
	LjStacks::check_dropping('nojit=1', $p, 'JIT', 'trace frames', sub { grep { /^trace#/ } @_ });
	($p) = sample('limit=2', [$lj, $run, 3600, 'jit', 'plain', $NJIT], $SAMPLES_OTHER, 'lines=1', 'fullpath=1', 'limit=2');
	LjStacks::check_limit('options', $p);
	($p) = sample('nointerp=1', [$lj, $run, 3600, 'nojit', 'plain', $N], cpu => 0.5, 'nointerp=1', "hz=$HZ");
	LjStacks::check_dropping('nointerp=1', $p, 'interpreter', 'interpreter leaves', sub { $_[0] =~ /^C:lj_BC_/ });
	($p, my $used) = sample('hz=99', [$lj, $run, 3600, 'jit', 'plain', $NJIT], cpu => 3, 'hz=99');
	my $n = ($p->{stats} // {})->{samples} // 0;
	# 99 a second of the target's CPU time, never the default 1000: the
	# ticks that found it running, within 4 times the deviation of a
	# Poisson count (more than a tick count's) and 10 ticks for the ends
	my $want = 99 * $used;
	my $tol = 4 * sqrt($want) + 10;
	ok abs($n - $want) <= $tol, sprintf('hz=99: %d samples in %.2f s of CPU time (%.0f +- %.0f)', $n, $used, $want, $tol);
}

# frame shapes, JIT on and off
for my $mode (qw(jit nojit)) {
	my ($p) = sample("edge $mode", ["$ROOT/build/luajit-gc64/bin/luajit", $edge, 3600, $mode], $SAMPLES_OTHER, "depth=$DEPTH");
	my ($cut, $bad, @bad) = (0, 0);
	for my $s (@{ $p->{stacks} }) {
		my $n = grep { /^edge\.lua/ } @{ $s->{frames} };
		my $t = grep { $_ eq '[truncated]' } @{ $s->{frames} };
		if ($t) {
			$cut += $s->{count};
			# the last frame is named by its caller, beyond depth
			# (the root frame [truncated] follows edge.lua:rec, or the main
			# chunk when a sample lands 18 frames deep in the recursion:
			# then C:pmain is the frame cut)
			next if $t == 1 && $s->{frames}[-1] eq '[truncated]' && $n == $DEPTH;
			$bad += $s->{count};
			push @bad, join(';', @{ $s->{frames} }) . " $s->{count}";
		}
	}
	# coroutines: the coroutine's frames, [resume], then the resumer's
	my $co = LjStacks::line_of($edge, qr/^local co = coroutine\.wrap\(function\(\)/);
	my $res = LjStacks::count_with($p, sub { my @f = @_;
		LjStacks::has_seq(\@f, 'edge.lua:burn_co', "edge.lua:$co", '[resume]', 'builtin:co', 'edge.lua:use_co')
		&& $f[-1] eq 'C:pmain' });
	my $burn_co = LjStacks::count_with($p, sub { grep { $_ eq 'edge.lua:burn_co' } @_ });
	ok $res >= 0.9 * $burn_co && $res > 0,
		"edge $mode: burn_co <- coroutine <- [resume] <- builtin:co <- use_co ... <- C:pmain ($res of $burn_co)"
		or diag LjStacks::dump_stacks($p, 10);
	my $stray = LjStacks::count_with($p, sub { my @f = @_; my @r = grep { $f[$_] eq '[resume]' } 0 .. $#f;
		@r && grep { $_ == 0 || $f[$_ - 1] ne "edge.lua:$co" } @r });
	is $stray, 0, "edge $mode: [resume] only below the coroutine's function";
	ok $cut > 0, "edge $mode: stacks cut at depth end in a [truncated] root frame ($cut samples)";
	is $bad, 0, "edge $mode: [truncated] only as the root of a stack of depth=$DEPTH Lua frames"
		or diag join "\n", @bad;
	is $p->{stats}{truncated}, $cut, "edge $mode: the truncated count on stderr";
	# t/40's shapes, [resume] and [truncated] included: the two backends agree
	LjStacks::check_edge("edge $mode", $p, app => $edge, depth => $DEPTH);
}

# Late names: user space names a new stack when its event arrives, reading
# the target then, and pcall's and xpcall's anonymous callers are closures
# made anew each round: by then the one the sample saw may be freed, its
# memory another object's, and the check of the name (the caller's
# upvalue holds the function called) fails.  The sample then asks the
# kernel for the stack again at its next sample.  Here the sample's user
# space is stopped (SIGSTOP) for 1.5 s as the shapes start (edge.lua waits
# for GO), so that it reads every first event late; it then samples on
# (16,000 samples in all, 6,000 at most in those 1.5 s).  burn_pcall and
# burn_xpcall must be named but in the samples of a stack that came once
# (0 to 4 in a run); without the second asking, all but a few of one's
# samples were not, in every run (1,676 of 1,680, 2,097 of 2,098).
{
	my $go = "$ROOT/t/out/go.$$.edge";
	my $ready = "$ROOT/t/out/go.$$.edge-app";
	unlink $go, $ready;
	my $pid = Bpf::spawn({ stdout => $ready }, "$ROOT/build/luajit-gc64/bin/luajit", $edge, 3600, 'jit', 20000, $go);
	my $t0 = time;
	sleep 0.02 until (slurp($ready) // '') =~ /^ready$/m || time - $t0 > 30;
	my $h = Bpf::start(['-x', $pid], 'time=0', 'samples=16000', "depth=$DEPTH", "hz=$HZ");
	ok $h->{started}, 'late names: the sample started';
	kill 'STOP', $h->{pid};
	spit($go, '');
	sleep 1.5;
	kill 'CONT', $h->{pid};
	ok Bpf::wait_end($h, 120), 'late names: the sample ends after 16,000 samples';
	my ($st, $out, $err, $p) = Bpf::finish($h, 'INT');
	kill 'TERM', $pid;
	waitpid($pid, 0);
	unlink $go, $ready;
	is $st, 0, 'late names: status 0' or diag $err;
	my $by_line = 0;
	for my $f (qw(burn_pcall burn_xpcall)) {
		my $line = LjStacks::line_of($edge, qr/^local function \Q$f\E\(\)/);
		my $named = LjStacks::count_with($p, sub { grep { $_ eq "edge.lua:$f" } @_ });
		my $unnamed = LjStacks::count_with($p, sub { grep { $_ eq "edge.lua:$line" } @_ });
		ok $named > 0 && $unnamed <= 0.02 * ($named + $unnamed),
			"late names: $f named in 98% of its samples at least ($named; $unnamed as edge.lua:$line)"
			or diag LjStacks::dump_stacks($p, 12);
		$by_line += $unnamed;
	}
	# a function shown by its line for want of a checked name is counted
	cmp_ok $p->{stats}{unsure} // 0, '>=', $by_line,
		"late names: stderr counts the samples shown by line ($by_line here)";
}

done_testing;
