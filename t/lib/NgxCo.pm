# SPDX-License-Identifier: GPL-2.0-or-later
package NgxCo;

=head1 NAME

NgxCo - the assertions of the OpenResty coroutine tests (t/48 in the VM,
t/73 with --runtime=bpf) on lj-lua-stacks output of t/apps/co.lua.

=head1 FUNCTIONS

=over 4

=item C<check(NAME, PARSED, CONF)>

PARSED: LjStacks::parse of a run against t/apps/nginx-co.conf under wrk,
started as CONF (the file name in the chunk name content_by_lua(CONF:N)).
Checks: well-formed output, at most 1% of the samples skipped; every
sample in co_burn (a coroutine.wrap function) goes on after C<[resume]>
in the handler suspended in C<C:ngx_http_lua_coroutine_wrap_runner>, every
sample in th_burn (an ngx.thread.spawn thread's first run) in the handler
suspended in C<C:ngx_http_lua_uthread_spawn>, each rooted at the
content_by_lua chunk; every sample in late_burn (the same thread resumed
by the event loop) ends at the thread's function, no C<[resume]>; every
C<[resume]> is followed by one of those C functions; the split
co_burn : th_burn is 1 : 2 within 3 points.  Returns the shares of
co_burn, th_burn and late_burn among the three (percent; 25, 50, 25
expected).

=item C<nginx(%o)>

Bpf::nginx with t/apps/nginx-co.conf, o{heavy} (HEAVY_N, default
1000000) and o{nojit}, one worker (stop it with Bpf::nginx_stop).

=back

=cut

use strict;
use warnings;
use Test::More ();
use TestUtil;
use LjStacks;
use Bpf;

sub check {
	my ($name, $p, $conf) = @_;
	my $app = "$ROOT/t/apps/co.lua";
	my $chunk = "content_by_lua($conf:" .
		LjStacks::line_of("$ROOT/t/apps/nginx-co.conf", qr/content_by_lua_block \{ require "co"\.handler\(\) \}/) . ')';
	my $wrap = 'co.lua:' . LjStacks::line_of($app, qr/^local function in_wrap\(\)/);
	my $thread = 'co.lua:' . LjStacks::line_of($app, qr/^local function in_thread\(\)/);
	Test::More::is_deeply(LjStacks::bad($p, $name), [], "$name: well-formed output");
	Test::More::cmp_ok($p->{total}, '>=', 500, "$name: at least 500 Lua samples");
	my $st = $p->{stats} // {};
	Test::More::ok(($st->{skipped} // 1e9) <= 0.01 * ($st->{samples} // 0),
	               "$name: at most 1% of the samples skipped (" . ($st->{skipped} // '?') . ')')
		or Test::More::diag(join("\n", @{ $p->{warnings} // [] }));
	my $frame_re = qr/^(?:[\w.-]+\.lua(?::\w+)?|\Q$chunk\E|trace#\d+:\S+:\d+|C:[\w.\@]+|builtin(?::\w+|#\d+)|\[resume\])$/;
	my @garbage = grep { $_ !~ $frame_re } map { @{ $_->{frames} } } @{ $p->{stacks} };
	Test::More::is_deeply(\@garbage, [], "$name: every frame is a well-formed name");
	my %want = (
		co_burn => [$wrap, '[resume]', 'C:ngx_http_lua_coroutine_wrap_runner', 'co.lua:handler', $chunk],
		th_burn => [$thread, '[resume]', 'C:ngx_http_lua_uthread_spawn', 'co.lua:handler', $chunk],
		late_burn => [$thread],
	);
	my %n;
	for my $fn (sort keys %want) {
		my @tail = @{ $want{$fn} };
		my ($all, $good) = (0, 0);
		for my $s (@{ $p->{stacks} }) {
			my @f = @{ $s->{frames} };
			my ($i) = grep { $f[$_] eq "co.lua:$fn" } 0 .. $#f;
			next unless defined $i;
			$all += $s->{count};
			$good += $s->{count} if join("\n", @f[$i + 1 .. $#f]) eq join("\n", @tail);
		}
		$n{$fn} = $all;
		Test::More::ok($all > 0 && $good == $all, "$name: $fn <- " . join(' <- ', @tail) .
		               " in $good of $all samples") or Test::More::diag(LjStacks::dump_stacks($p, 12));
	}
	my $bad = LjStacks::count_with($p, sub {
		my @f = @_;
		for my $i (0 .. $#f) {
			next unless $f[$i] eq '[resume]';
			return 1 unless $i < $#f && $f[$i + 1] =~ /^C:ngx_http_lua_(?:coroutine_wrap_runner|coroutine_resume|uthread_spawn)$/
				&& $f[-1] eq $chunk;
		}
		return 0;
	});
	Test::More::is($bad, 0, "$name: every [resume] goes on in a resuming C function, down to the chunk")
		or Test::More::diag(LjStacks::dump_stacks($p, 12));
	# The split asserted is co_burn : th_burn, 1 : 2: both stacks cross a
	# [resume] into the same handler, so a sample costs the same in
	# either.  late_burn's stacks are shorter, so cheaper to sample: where
	# the probe takes a sizeable share of the CPU (the VM: over 100 us per
	# sample under TCG) its share comes out a point or two low, so it is
	# only reported.
	my $two = $n{co_burn} + $n{th_burn} || 1;
	for my $c (['co_burn', 33.3], ['th_burn', 66.7]) {
		my ($fn, $exp) = @$c;
		my $pct = 100 * $n{$fn} / $two;
		Test::More::ok(abs($pct - $exp) <= 3,
		               sprintf('%s: %s %.1f%% of the co_burn + th_burn samples (%.1f +- 3)', $name, $fn, $pct, $exp));
	}
	my $sum = $n{co_burn} + $n{th_burn} + $n{late_burn} || 1;
	return map { 100 * $n{$_} / $sum } qw(co_burn th_burn late_burn);
}

sub nginx {
	my (%o) = @_;
	return Bpf::nginx(conf => 't/apps/nginx-co.conf', heavy => $o{heavy} // 1000000, nojit => $o{nojit});
}

1;
