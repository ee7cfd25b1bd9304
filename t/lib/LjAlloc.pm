# SPDX-License-Identifier: GPL-2.0-or-later
package LjAlloc;

=head1 NAME

LjAlloc - the checks of lj-lua-alloc's output that both backends share
(t/62 in the VM, t/78 on eBPF), on t/apps/leak/alloc.lua, whose one()
and two() make tables 1:2 and count them (the truth).

=head1 FUNCTIONS

=over 4

=item C<stacks_of(TEXT)>

TEXT without the app's own lines (C<ready>, C<start>, C<time S>,
C<rounds N>, C<tables one N two N>) and SystemTap's C<ERROR:> lines: the
stacks and the statistics, for LjStacks::parse.

=item C<check_split(NAME, TEXT, RATE [, claim => POINTS, type => LEAF])>

The split of a session at RATE bytes per sample, TEXT holding its stdout,
stderr and the app's output: the type=bytes header, well-formed stacks,
no leaf C<C:NAME> of a function that a type's rule covers (the sample's
C<__type>: C<lj_ir_growtop> is C<jit>), the app's table counts, the C<?> stacks (inconsistent when sampled) at
most 5% of the bytes, one() and two() most of the bytes under the leaf
LEAF (default C<table>), one()'s share within CLAIM points of the app's tables (the
samples must reach its floor; without CLAIM, 4 sigma of the samples
taken), at most 1% of the samples faulted, the probes' cost printed.
Returns the parsed stacks (LjStacks::parse).

=item C<check_leak_go(NAME, P, TEXT [, stock => 1])>

The leak app's allocations under load on C</go?n=N> (t/62 and t/78,
C<--master>), P parsed: demo:go's loop (C<demo.lua:go>, or the trace of
the chunk's loop that inlines it) holds at least half the bytes; with
symbols its leaves are strings (the values it keeps) and tables (the
table that keeps them, which grows), strings among them; without
(C<stock>), every leaf is C<(type unknown)>.  Which of strings and
tables holds more in a session of seconds is chance: the table doubles
its array part, and one such reallocation holds as many bytes as the
strings added since the one before.  TEXT is shown when one fails.

=item C<running(LUAJIT)>

LUAJIT running on the host, returned once its VM is set up and has run
Lua code (it printed C<start>): C<{ pid, fh }>.  It then sleeps in
sleep(3), for up to 900 s: it takes no CPU time from the module builds
that run beside it (t/62 builds five while it lives; a process that
allocated all that time took one of the two cores from them).
C<stop(APP)> ends it.  For stap++'s search of a stripped LuaJIT's
allocator in a running process, which reads the VM's state, not its work.

=item C<accounted(NAME, TEXT, RATE)>

Every byte sampled is printed, or counted as faulted or left out by the
limit: printed + left out + faults x RATE = samples x RATE.

=back

=cut

use strict;
use warnings;
use LjStacks;
use TestUtil ();
use Stats;
use Test::More ();

# The allocating functions whose type lj-lua-alloc names (its __type, and
# lib/bpf/lj_alloc_user.c's type_of): by prefix, and by name.
my $TYPED = qr/^C:(?:lj_str_|lj_strf|lj_strs|lj_tab_|lj_func|lj_stat|lj_pars|lj_bcre|lj_lex_|lj_cdat|lj_carit
	|lj_ccal|lj_cconv|lj_crec|lj_udat|lj_buf_|lj_trac|lj_ir_|lj_snap|lj_asm_|lj_mcod|lj_reco|lj_opt_)
	|^C:(?:str_alloc|newtab|newhpart|func_newL|fs_fini|buf_grow)$/x;

sub stacks_of {
	my ($o) = @_;
	return join "\n", grep { !/^(?:ready|start|time [\d.]+|rounds \d+|tables one \d+ two \d+|ERROR: .*)$/ } split /\n/, $o;
}

sub check_split {
	my ($name, $o, $rate, %o) = @_;
	my $p = LjStacks::parse(stacks_of($o));
	Test::More::is_deeply(LjStacks::bad($p, $name, $o), [], "$name: well-formed stacks") or Test::More::diag($o);
	Test::More::like($o, qr/^# stap\+\+ type=bytes$/m, "$name: the output's header gives the unit (type=bytes)");
	my %typed = map { $_->{frames}[0] => 1 } grep { $_->{frames}[0] =~ $TYPED } @{ $p->{stacks} };
	Test::More::is_deeply([sort keys %typed], [], "$name: no leaf C:NAME of a function a type's rule covers");
	my ($t1, $t2) = $o =~ /^tables one (\d+) two (\d+)$/m;
	Test::More::ok($t1 && $t2, "$name: the app counted its tables (one " . ($t1 // '?') . ', two ' . ($t2 // '?') . ')')
		or Test::More::diag($o);
	my $type = $o{type} // 'table';
	my $one = LjStacks::count_with($p, sub { $_[0] eq $type && grep { $_ eq 'alloc.lua:one' } @_ });
	my $two = LjStacks::count_with($p, sub { $_[0] eq $type && grep { $_ eq 'alloc.lua:two' } @_ });
	my $sum = $one + $two;
	# A stack whose only frame is '?' was inconsistent when sampled: a few
	# KB a run under 'string' and 'table', early in it (docs/lj-lua-alloc.md),
	# 0-4.3% of the bytes in the runs so far.  Their code path is unknown,
	# so they could be one()'s or two()'s: their share is allowed on top of
	# the split's tolerance.
	my $q = LjStacks::count_with($p, sub { $_[1] && $_[1] eq '?' && @_ == 2 });
	my $qpct = $p->{total} ? 100 * $q / $p->{total} : 100;
	Test::More::ok($qpct <= 5, sprintf("%s: '?' stacks (inconsistent when sampled) %.1f%% of the bytes (at most 5)", $name, $qpct))
		or Test::More::diag($o);
	# the rest: the start-up's own allocations (libraries, the chunk), 40 KB
	Test::More::ok($sum >= 0.8 * $p->{total}, "$name: one() and two() hold most sampled bytes ($sum of $p->{total})")
		or Test::More::diag($o);
	my $truth = ($t1 && $t2) ? 100 * $t1 / ($t1 + $t2) : 33.3;
	my $n = int($sum / $rate);
	share_ok("$name: one()'s bytes", $sum ? 100 * $one / $sum : undef, $truth, $n,
		($o{claim} ? (claim => $o{claim}) : ()),
		($q ? (bias => $qpct, why => "the '?' stacks may be one()'s or two()'s") : ()))
		or Test::More::diag(LjStacks::dump_stacks($p, 8));
	my ($faults) = $o =~ /(\d+) faults$/m;
	Test::More::ok(defined $faults && $faults <= 0.01 * ($p->{total} / $rate + 1),
		"$name: at most 1% of the samples faulted (" . ($faults // '?') . ')') or Test::More::diag($o);
	Test::More::like($o, qr/^WARNING: lj-lua-alloc: \d+ ns per allocation in the probes/m, "$name: the probes' cost printed");
	Test::More::note("$name: $_") for grep { /^WARNING: lj-lua-alloc/ } split /\n/, $o;
	return $p;
}

sub check_leak_go {
	my ($name, $p, $o, %o) = @_;
	my $go_re = qr/^(?:demo\.lua:go|trace#\d+:content_by_lua\([\w.]+\.conf:\d+\):\d+)$/;
	my $go = LjStacks::count_with($p, sub { grep { $_ =~ $go_re } @_ });
	Test::More::ok($go >= 0.5 * $p->{total}, "$name: demo:go's loop holds most bytes ($go of $p->{total})") or Test::More::diag($o);
	if ($o{stock}) {
		Test::More::is(LjStacks::count_with($p, sub { $_[0] ne '(type unknown)' }), 0, "$name: every leaf is (type unknown)")
			or Test::More::diag($o);
		return;
	}
	my %types;
	for my $s (@{ $p->{stacks} }) {
		$types{ $s->{frames}[0] } += $s->{count} if grep { $_ =~ $go_re } @{ $s->{frames} };
	}
	# (and, now and then, a trace: the JIT compiles while the loop runs,
	# and the trace object it allocates is a "jit" one, 4,096 bytes once
	# of 31 MB: at most 1% of the loop's bytes)
	my $loop = 0;
	$loop += $_ for values %types;
	Test::More::is_deeply([grep { $_ ne 'string' && $_ ne 'table' && $_ ne 'jit' } sort keys %types], [],
		"$name: demo:go's loop allocates strings and tables (" . join(', ', map { "$_ $types{$_}" } sort keys %types) . ')')
		or Test::More::diag($o);
	Test::More::ok(($types{jit} // 0) <= 0.01 * $loop, "$name: ... and the JIT's traces at most 1% of its bytes")
		or Test::More::diag($o);
	Test::More::ok($types{string}, "$name: ... strings among them") or Test::More::diag($o);
}

my $IDLE = 'local ffi = require("ffi") ffi.cdef("unsigned sleep(unsigned)") '
	. 'io.write("start\\n") io.flush() ffi.C.sleep(900)';

sub running {
	my ($luajit) = @_;
	my $pid = open(my $fh, '-|', $luajit, '-e', $IDLE) // die "$luajit: $!";
	my $line = <$fh> // '';
	die "$luajit: no start line: $line" unless $line =~ /^start$/;
	return { pid => $pid, fh => $fh };
}

sub stop {
	my ($app) = @_;
	kill 'TERM', $app->{pid};
	close $app->{fh};
}

sub accounted {
	my ($name, $o, $rate) = @_;
	my $p = LjStacks::parse(stacks_of($o));
	my ($samples, $faults) = $o =~ /^WARNING: lj-lua-alloc: \d+ allocations, \d+ bytes; (\d+) samples of $rate bytes, \d+ without a Lua stack, (\d+) faults$/m;
	Test::More::ok($samples, "$name: the summary is printed, with the samples taken (" . ($samples // '?') . ')') or Test::More::diag($o);
	my ($lost) = $o =~ /^WARNING: lj-lua-alloc: limit hit: (\d+) bytes/m;
	Test::More::is($p->{total} + ($faults // 0) * $rate + ($lost // 0), ($samples // -1) * $rate,
		"$name: the bytes sampled are printed ($p->{total}), left out by the limit (" . ($lost // 0)
		. ') or counted as faulted (' . ($faults // '?') . ' samples)') or Test::More::diag($o);
	return $p;
}

1;
