# SPDX-License-Identifier: GPL-2.0-or-later
package NgxCo;

=head1 NAME

NgxCo - the assertions of the OpenResty coroutine tests (t/48 in the VM,
t/73 with --runtime=bpf) on lj-lua-stacks output of t/apps/co.lua.

=head1 FUNCTIONS

=over 4

=item C<check(NAME, PARSED, CONF, %o)>

PARSED: LjStacks::parse of a run against t/apps/nginx-co.conf under wrk,
started as CONF (the file name in the chunk name content_by_lua(CONF:N)).
Checks: well-formed output, at most 1% of the samples skipped; every
sample in co_burn (a coroutine.wrap function) goes on after C<[resume]>
in the handler suspended in C<C:ngx_http_lua_coroutine_wrap_runner>, every
sample in th_burn (an ngx.thread.spawn thread's first run) in the handler
suspended in C<C:ngx_http_lua_uthread_spawn>, each rooted at the
content_by_lua chunk; every sample in late_burn (the same thread resumed
by the event loop) ends at the thread's function, no C<[resume]>; every
C<[resume]> is followed by one of those C functions.  The split, the
workload's own (co.lua spins N, 2N and N): co_burn is 1/3 of the co_burn +
th_burn samples within o{claim} points (the samples must reach the floor),
late_burn 1/4 of the three within 4 sigma plus the bias late_bias() bounds
(o{hz}: the sampling rate, default 1000; o{design}: the samples' design
effect, Stats, default 1).  Returns the shares of co_burn,
th_burn and late_burn among the three (percent; 25, 50, 25 expected).

=item C<samples(CLAIM [, DESIGN])>

The samples a case asks for (VM::sample_sh, Bpf::stacks_samples) so that
check's co_burn share reaches its floor for CLAIM points at design effect
DESIGN (default 1): co_burn +
th_burn are 3/4 of the samples, and a tenth more.

=item C<late_bias(COST_US, HZ)>

The points late_burn's share can come out low by when a sample costs the
probe COST_US microseconds on average at HZ samples a second (see the
comment in check).

=item C<nginx(%o)>

Bpf::nginx with t/apps/nginx-co.conf, o{heavy} (HEAVY_N, default
1000000) and o{nojit}, one worker (stop it with Bpf::nginx_stop).

=back

=cut

use strict;
use warnings;
use Test::More ();
use POSIX ();
use Stats ();
use TestUtil;
use LjStacks;
use Bpf;

sub check {
	my ($name, $p, $conf, %o) = @_;
	die "NgxCo::check: no claim (the points co_burn's share is held to)\n" unless $o{claim};
	my $app = "$ROOT/t/apps/co.lua";
	my $chunk = "content_by_lua($conf:" .
		LjStacks::line_of("$ROOT/t/apps/nginx-co.conf", qr/content_by_lua_block \{ require "co"\.handler\(\) \}/) . ')';
	my $wrap = 'co.lua:' . LjStacks::line_of($app, qr/^local function in_wrap\(\)/);
	my $thread = 'co.lua:' . LjStacks::line_of($app, qr/^local function in_thread\(\)/);
	Test::More::is_deeply(LjStacks::bad($p, $name), [], "$name: well-formed output");
	LjStacks::skipped_ok($name, $p);
	my $frame_re = qr/^(?:[\w.-]+\.lua(?::\w+)?|\Q$chunk\E|trace#\d+:\S+:\d+|$LjStacks::C_FRAME|builtin(?::\w+|#\d+)|\[resume\])$/;
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
	# The split: co_burn : th_burn is 1 : 2, and both stacks cross a
	# [resume] into the same handler, so a sample costs the probe the same
	# in either.
	my $two = $n{co_burn} + $n{th_burn};
	my $all = $two + $n{late_burn};
	Stats::share_ok("$name: co_burn of co_burn + th_burn", $two ? 100 * $n{co_burn} / $two : undef, 100 / 3, $two,
		claim => $o{claim}, design => $o{design});
	my $bias = late_bias(($p->{stats} // {})->{cost_us} // 0, $o{hz} // 1000);
	Stats::share_ok("$name: late_burn of the three", $all ? 100 * $n{late_burn} / $all : undef, 25, $all,
		design => $o{design}, bias => $bias, why => 'late_burn is sampled less, its short stacks cost the probe less time');
	return map { $all ? 100 * $n{$_} / $all : 0 } qw(co_burn th_burn late_burn);
}

# late_burn's stacks are shorter (no [resume] into the handler), so a
# sample there costs the probe less.  The timer fires every P = 1/HZ of
# wall time, and the probe's time delays the work it interrupts: work W
# whose samples cost c each takes W + k c and gets k = W / (P - c)
# samples.  With c = 0 in late_burn and c_d in co_burn and th_burn,
# late_burn's share comes out low by 25 * c_d / P points at most; c_d is at
# most the average cost over 3/4 (co_burn and th_burn are 3/4 of the
# samples).  Natively (~15 us) that is under half a point; under TCG (over
# 100 us per sample) a few points: 22.6% was measured for 25.
sub late_bias {
	my ($cost_us, $hz) = @_;
	my $cd = $cost_us / 0.75;
	return 25 * $cd / (1e6 / $hz);
}

sub samples {
	my ($claim, $design) = @_;
	return POSIX::ceil(1.1 * Stats::floor(1 / 3, $claim, $design) / 0.75);
}

sub nginx {
	my (%o) = @_;
	return Bpf::nginx(conf => 't/apps/nginx-co.conf', heavy => $o{heavy} // 1000000, nojit => $o{nojit});
}

1;
