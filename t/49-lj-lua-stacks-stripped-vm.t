#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# The SystemTap backend on stripped LuaJIT (issue 21), in the VM (one
# boot): lj-lua-stacks against copies of the GC64 and non-GC64 debug luajit
# CLI without DWARF and symbol table (strip --strip-all, as distributions
# ship it), whose layouts come from the layout database.  The tapset finds
# the VM from the interpreter's registers, names its handlers from the
# dispatch tables and reads the bytecode modes from the database.  The
# seed app with the JIT on and off, with the assertions of t/40 (foo's
# share within 3 points); the main C function (pmain, a local symbol that
# strip removed) an address; the interpreter's leaves named as the
# symbols name them.  lj-lua-bt once.  Scripts that do not say they run
# without debug info are refused (t/24).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use Bpf;
use LjStacks;
use Test::More;

my $vm = VM->new;
my $S = 'samples/lj-lua-stacks.sxx';
my %CLAIM = (jit => 3, nojit => 3);    # as t/40
my %N = (jit => 40000, nojit => 20000);    # t/40's loop counts (see there)
my $run = "$ROOT/t/apps/run.lua";
my $app = "$ROOT/t/apps/test.lua";
my $secs = 3600;    # the target runs until staprun ends
my $pmain = qr/^C:0x[0-9a-f]+$/;

my (%bare, @mods);
for my $b (qw(gc64 nogc64)) {
	$bare{$b} = Bpf::stripped("$ROOT/build/luajit-$b/bin/luajit");
	push @mods, [$b, "ljs_strip_$b", $S, exec => $bare{$b}];
}
push @mods, ['bt', 'ljbt_strip', 'samples/lj-lua-bt.sxx', exec => $bare{gc64}];
my %ko;
@ko{ map { $_->[0] } @mods } = $vm->builds(map { [@$_[1 .. $#$_]] } @mods);
ok $ko{ $_->[0] }, "$_->[2] builds for the stripped $_->[4]" for @mods;

for my $b (qw(gc64 nogc64)) {
	next unless $ko{$b};
	for my $mode (qw(jit nojit)) {
		$vm->case("${b}_$mode" => VM::staprun_sh(target => "$bare{$b} $run $secs $mode plain $N{$mode}",
			module => "ljs_strip_$b.ko", ready => 'sleep 1', samples => LjStacks::seed_samples($CLAIM{$mode})),
			files => [$ko{$b}], timeout => 180);
	}
}
$vm->case(bt => VM::staprun_sh(target => "$bare{gc64} $run $secs nojit plain 200000", module => 'ljbt_strip.ko',
	ready => 'sleep 1'), files => [$ko{bt}]) if $ko{bt};

my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
my $c = $r->{cases};

for my $b (qw(gc64 nogc64)) {
	for my $mode (qw(jit nojit)) {
		my $name = "$b stripped $mode";
		my $case = $c->{"${b}_$mode"};
		ok $case, "$name: the case ran" or next;
		is $case->{status}, 0, "$name: staprun status 0" or diag $case->{output};
		my $p = LjStacks::parse($case->{output});
		my ($f, $n) = LjStacks::check_seed($name, $p, app => $app, root => ['run.lua', $pmain], mode => $mode,
			lines => 0, claim => $CLAIM{$mode});
		note sprintf('%s: foo %.1f%% of %d foo + bar samples, %d samples (%d before the VM was found) in %.1f s',
			$name, $f // 0, $n, $p->{stats}{samples} // 0, $p->{stats}{novm} // 0, $p->{wall} // 0);
		Bpf::check_accounted($name, $p);
		LjStacks::check_stopped($name, $p);
		next unless $mode eq 'nojit';
		# the loop's two handlers, as the debug build's symbols name them
		# (t/70): a wrong range would show other names or lj_vm_unnamed
		my $leaves = LjStacks::top_leaves($p, 0.05);
		is_deeply [grep { $_ ne 'C:lj_BC_ADDVV' && $_ ne 'C:lj_BC_IFORL' } @$leaves], [],
			"$name: the leaves with 5% of the samples are the loop's handlers (@$leaves)";
		my $loop = LjStacks::count_with($p, sub { $_[0] eq 'C:lj_BC_ADDVV' || $_[0] eq 'C:lj_BC_IFORL' });
		ok $loop >= 0.5 * $p->{total}, "$name: C:lj_BC_ADDVV and C:lj_BC_IFORL hold $loop of $p->{total} samples";
	}
}

if (my $case = $c->{bt}) {
	my $o = $case->{output};
	is $case->{status}, 0, 'lj-lua-bt stripped: status 0' or diag $o;
	like $o, qr/^Lua backtrace of process \d+ \(\S+\), VM state interp:$/m, 'lj-lua-bt stripped: header';
	like $o, qr{^C:lj_BC_\w+\n(?:/\S+/test\.lua:\d+\n)?/\S+/test\.lua:heavy\n/\S+/test\.lua:\d+\n/\S+/test\.lua:(?:foo|bar)\n/\S+/test\.lua:\d+\n/\S+/test\.lua:main\n/\S+/run\.lua:\d+\n/\S+/run\.lua\nC:0x[0-9a-f]+$}m,
		'lj-lua-bt stripped: heavy <- foo|bar <- main <- run.lua <- the main C function, as t/40' or diag $o;
} else {
	fail 'lj-lua-bt stripped: the case ran';
}

done_testing;
