#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-gco-ref end to end, in the VM (one boot):
# - the leak app of issue 12 in nginx under wrk, then idle (wrk on /ping):
#   the heaviest path is GC roots, registry, ._LOADED, .demo, then the
#   module's function go and its upvalue foo, strings on top; it holds at
#   least 50% of the bytes; the bytes under foo are within 10% of what the
#   app measures (collectgarbage("count") after the load minus before).
# - hostile graphs from the luajit CLI, GC64 and non-GC64
#   (t/apps/leak/hostile.lua): a cycle, a weak-valued table, a metatable,
#   two closures sharing an upvalue, a coroutine holding data on its stack
#   (under "[stack] hostile.lua:LINE", the line of the coroutine's
#   function), cdata, a key with control bytes (escaped), a number key
#   ([N]) and a table key ([table]): the walk terminates, each big object
#   is counted once, on the expected path.
# - the same in Debian's stock nginx (stripped), with one Lua request
#   once the session started (its VM is found at the request's lua_resume).
# - master mode with two nginx workers (the nginx module, run as
#   'staprun MOD.ko stapxx_master=MASTER'): the workers walked one after the
#   other, each worker's paths under its own "worker PID" root frame, each
#   with the heaviest path and the bytes under foo as above (against that
#   worker's own counts); the master is not walked.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjGc;
use LjStacks;
use Test::More;

my $vm = VM->new;
my $co_line = LjStacks::line_of("$ROOT/t/apps/leak/hostile.lua", qr/^    co = coroutine\.create\(function\(\)$/);
my %ko;
# (workers=2: the master case's end, 'staprun MOD.ko stapxx_master=MASTER';
# a session of one process, -x, ends at its walk)
@ko{qw(ngx gc64 nogc64 stock)} = $vm->builds(    # two at a time
	['gcoref_ngx', 'samples/lj-gco-ref.sxx', exec => 'build/nginx/sbin/nginx',
	 args => ['--arg', 'time=60', '--arg', 'gap=5', '--arg', 'workers=2']],
	(map { ["gcoref_$_", 'samples/lj-gco-ref.sxx', exec => "build/luajit-$_/bin/luajit", args => ['--arg', 'time=40', '--arg', 'gap=5']] }
		qw(gc64 nogc64)),
	['gcoref_stock', 'samples/lj-gco-ref.sxx', exec => '/usr/sbin/nginx', args => [VM::stock_d(), '--arg', 'time=60', '--arg', 'gap=5']]);
ok $ko{ngx}, 'lj-gco-ref builds for nginx';
ok $ko{$_}, "lj-gco-ref builds for the $_ luajit CLI" for qw(gc64 nogc64);
ok $ko{stock}, 'lj-gco-ref builds for Debian\'s stripped nginx' or diag $vm->build_log;
$vm->case(ngx => LjGc::leak_ngx_case(module => 'gcoref_ngx.ko', load => 2, n => 100),
	files => [$ko{ngx}], timeout => 150) if $ko{ngx};
$vm->case(stock => LjGc::leak_ngx_case(module => 'gcoref_stock.ko', load => 2, n => 100, LjGc::stock_case($vm)),
	files => [$ko{stock}], timeout => 150) if $ko{stock};
$vm->case(master => LjGc::leak_master_case(module => 'gcoref_ngx.ko', load => 2, n => 100),
	files => [$ko{ngx}], timeout => 150) if $ko{ngx};
for my $b (qw(gc64 nogc64)) {
	next unless $ko{$b};
	$vm->case("cli_$b" => LjGc::cli_case(target => "$ROOT/build/luajit-$b/bin/luajit $ROOT/t/apps/leak/hostile.lua 100",
		module => "gcoref_$b.ko", ready => 'ready*', timeout => 45), files => [$ko{$b}], timeout => 80);
}
my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
my $c = $r->{cases};

# Checks of every case; with workers (master mode), every path ends in
# "GC roots" then "worker PID" of one of them.
sub common {
	my ($name, $case, @workers) = @_;
	my $o = $case->{output};
	is $case->{status}, 0, "$name: staprun status 0" or diag $o;
	like LjGc::stdout_of($o), qr/\A# stap\+\+ type=bytes$/m, "$name: stdout starts with its unit (type=bytes)";
	my $p = LjStacks::parse(LjGc::stdout_of($o));
	# (docs/lj-gco-ref.md: SystemTap's transport under qemu)
	is_deeply LjStacks::bad($p, $name, $o), [], "$name: well-formed stacks" or diag $o;
	like $o, qr/^WARNING: lj-gco-ref: process \d+: walk complete;/m, "$name: the walk completes" or diag $o;
	# the heap changes between slices: an object queued, then freed by
	# the collector before its visit, is skipped and counted (a few), as
	# is the rest of one freed while the walk was in its slots
	my ($objs) = $o =~ /walk complete; (\d+) objects/;
	my ($nf) = $o =~ /^WARNING: lj-gco-ref: (\d+) faults$/m;
	my %f = reverse $o =~ /^WARNING: lj-gco-ref: fault \((\d+)\): (.*)$/mg;
	# One CI run (of a static nginx heap: no Lua ran during the walk) met
	# one unreadable string in a table slot (docs/lj-gco-ref.md: likely a
	# page briefly not present); a failed read is now done again at the
	# next slice, then skips only its slot: at most one is let pass here
	my @value = grep { /^unreadable value \(skipped\)/ } keys %f;
	my $nvalue = 0;
	$nvalue += $f{$_} for @value;
	note "$name: $_ ($f{$_})" for @value;
	ok $nvalue <= 1, "$name: at most one unreadable value ($nvalue)" or diag $o;
	my @other = grep { !/queued object freed before its visit|object freed during its visit|^unreadable value \(skipped\)/ }
		keys %f;
	is_deeply \@other, [], "$name: no faults but objects freed before their visit" or diag $o;
	# (the hostile app churns on purpose: 33 of 652 seen once)
	ok defined $nf && $objs && $nf <= 0.1 * $objs, "$name: at most 10% of the objects freed before their visit (" . ($nf // '?') . ')' or diag $o;
	my %root = @workers ? map { ("GC roots;worker $_" => 1) } @workers : ('GC roots' => 1);
	my $n = @workers ? 2 : 1;
	my $roots = LjStacks::count_with($p, sub { @_ < $n || !$root{ join ';', @_[-$n .. -1] } });
	is $roots, 0, "$name: every path starts at " . join(' or ', sort keys %root);
	my ($stall) = $o =~ /longest stall (\d+) us/;
	ok defined $stall, "$name: the longest stall printed (" . ($stall // '?') . ' us)';
	note "$name: $_" for grep { /^WARNING: lj-gco-ref/ } split /\n/, $o;
	return $p;
}

# The stacks of worker W (master mode), without their "worker W" frame.
sub of_worker {
	my ($p, $w) = @_;
	my @s = map { { frames => [@{ $_->{frames} }[0 .. $#{ $_->{frames} } - 1]], count => $_->{count} } }
		grep { $_->{frames}[-1] eq "worker $w" } @{ $p->{stacks} };
	my $total = 0;
	$total += $_->{count} for @s;
	return { stacks => \@s, total => $total, bad => [] };
}

# nginx, and Debian's stripped nginx (its VM found at the lua_resume of
# the request that kicked the walk): the same paths
for (['nginx', 'ngx'], ['stock', 'stock']) {
	my ($name, $key) = @$_;
	my $case = $c->{$key} or do { fail("no $key case"); next };
	my $o = $case->{output};
	my $p = common($name, $case);
	my ($base) = $o =~ /^# count base: (\d+)$/m;
	my ($before) = $o =~ /^# count before: (\d+)$/m;
	LjGc::check_leak($name, $p, $base, $before, $o);
}
if (my $case = $c->{master}) {
	my $o = $case->{output};
	my ($master, @workers) = $o =~ /^# master: (\d+) workers: (\d+) (\d+)/m;
	is scalar(@workers), 2, 'master: two workers' or diag $o;
	my $p = common('master', $case, @workers);
	my ($base, $before) = map { LjGc::counts($o, $_) } qw(base before);
	for my $w (@workers) {
		like $o, qr/^WARNING: lj-gco-ref: process $w: walk complete;/m, "master: worker $w walked";
		LjGc::check_leak("master: worker $w", of_worker($p, $w), $base->{$w}, $before->{$w}, $o);
	}
	like $o, qr/^WARNING: lj-gco-ref: processes walked: (?:$workers[0] $workers[1]|$workers[1] $workers[0]); cut short: none; seen at the walk point, not walked: none$/m,
		'master: stderr names the workers walked';
}
for my $b (qw(gc64 nogc64)) {
	my $case = $c->{"cli_$b"} or next;
	my $p = common("cli $b", $case);
	my %exp = (
		'cycle (cyc.big)' => [['[env]', '.cyc'], 100001, 100001],
		'held by deep.a.b.held, not by the weak table' => [[qw(.deep .a .b .held)], 50001, 50001],
		'metatable __index' => [['.withmt', '[metatable]', '.__index'], 60001, 60001],
		'shared upvalue, once' => [[], 70001, 70001],
		'coroutine stack' => [['.co', "[stack] hostile.lua:$co_line"], 80001, 80001],
		'a key with ";", a newline and \\1, escaped' => [['[env]', '.ctl', '.a,b\n\x01'], 40001, 40001],
		'a number key' => [['[env]', '.nums', '[N]'], 30001, 30001],
		'a table key' => [['[env]', '.tkey', '[table]'], 20001, 20001],
	);
	for my $k (sort keys %exp) {
		my ($seq, $lo) = @{ $exp{$k} };
		my $n;
		if (@$seq) {
			$n = LjStacks::count_with($p, sub { my @f = reverse @_;
				$_[0] eq 'string' && LjStacks::has_seq(\@f, @$seq) });
		} else {
			$n = LjStacks::count_with($p, sub { $_[0] eq 'string' && grep({ /^\[upvalue\] shared$/ } @_)
				&& grep({ $_ eq '.f1' || $_ eq '.f2' } @_) });
		}
		ok $n >= $lo && $n < $lo + 2000, "cli $b: $k: $n string bytes (one string of about $lo)"
			or diag LjStacks::dump_stacks($p, 20);
	}
	my $weak = LjStacks::count_with($p, sub { grep { $_ eq '.weakv' } @_ });
	ok $weak < 1000, "cli $b: nothing big under the weak-valued table ($weak bytes)";
	# cdata is a leaf: it aggregates into its container, the globals table
	my $cd = LjStacks::count_with($p, sub { join(';', @_) eq 'cdata;[env];main thread;GC roots' });
	ok $cd >= 90000 && $cd < 91000, "cli $b: cdata char[90000] in the globals table ($cd bytes)";
	my $big = LjStacks::count_with($p, sub { $_[0] eq 'string' });
	ok $big < 100001 + 50001 + 60001 + 70001 + 80001 + 40001 + 30001 + 20001 + 200000,
		"cli $b: no big string counted twice ($big string bytes)";
}
done_testing;
