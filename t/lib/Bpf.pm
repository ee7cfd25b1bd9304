# SPDX-License-Identifier: GPL-2.0-or-later
package Bpf;

=head1 NAME

Bpf - run the eBPF backend of lj-lua-stacks (--runtime=bpf) on this host
against real targets, for the t/7*.t tests.

=head1 FUNCTIONS

=over 4

=item C<spawn(CMD...)>

Starts CMD in the background (stdout and stderr to /dev/null); returns its pid.

=item C<stacks(TARGET, ARGS...)>

Runs C<./stap++ --runtime=bpf samples/lj-lua-stacks.sxx TARGET ARGS> (TARGET:
C<['-x', PID]> or C<['--master', PID]>; ARGS: --arg values as NAME=VALUE).
Returns (status, stdout, stderr, parsed), parsed by LjStacks::parse from
stdout and stderr.

=item C<nginx(%o)>

Starts the seed nginx app (o{conf}, default t/apps/nginx.conf, on a free
port, prefix under t/out) with o{workers}, o{nojit}, o{heavy}; returns { master, workers
(array ref), port, prefix } once it answers.  C<nginx_stop(N)> stops it.

=item C<load(PORT, URL, SECS [, CONNS])>

Starts wrk on the URL for SECS seconds with CONNS connections (default 4); returns its pid.

=item C<shares_ok(NAME, P)>

Asserts that test.lua's foo and bar hold 66.7% and 33.3% of the samples of
P (an LjStacks::parse result), within 2 points.

=back

=cut

use strict;
use warnings;
use POSIX ();
use File::Path qw(make_path);
use TestUtil;
use LjStacks;
use Test::More ();

sub shares_ok {
	my ($name, $p) = @_;
	my $foo = LjStacks::count_with($p, sub { grep { $_ eq 'test.lua:foo' } @_ });
	my $bar = LjStacks::count_with($p, sub { grep { $_ eq 'test.lua:bar' } @_ });
	my $t = $p->{total} || 1;
	Test::More::ok(abs(100 * $foo / $t - 66.7) <= 2, sprintf('%s: foo %.1f%% (66.7 +- 2)', $name, 100 * $foo / $t));
	Test::More::ok(abs(100 * $bar / $t - 33.3) <= 2, sprintf('%s: bar %.1f%% (33.3 +- 2)', $name, 100 * $bar / $t));
}

sub spawn {
	my @cmd = @_;
	my $pid = fork() // die "fork: $!";
	if (!$pid) {
		open(STDIN, '<', '/dev/null');
		open(STDOUT, '>', '/dev/null');
		open(STDERR, '>', '/dev/null');
		{ exec { $cmd[0] } @cmd; }
		POSIX::_exit(127);
	}
	return $pid;
}

sub stacks {
	my ($target, @args) = @_;
	my ($st, $out, $err) = run_cmd("$ROOT/stap++", '--runtime=bpf', "$ROOT/samples/lj-lua-stacks.sxx",
		@$target, map { ('--arg', $_) } @args);
	return ($st, $out, $err, LjStacks::parse("$out\n$err"));
}

sub nginx {
	my (%o) = @_;
	my $port = 20000 + $$ % 20000;
	my $prefix = "$ROOT/t/out/bpf-nginx.$$";
	make_path("$prefix/logs");
	my $file = $o{conf} // 't/apps/nginx.conf';
	my $conf = slurp("$ROOT/$file");
	$conf =~ s/127\.0\.0\.1:8080/127.0.0.1:$port/ or die "$file: no listen line\n";
	open my $fh, '>', "$prefix/nginx.conf" or die "$prefix/nginx.conf: $!";
	print $fh $conf;
	close $fh;
	local $ENV{TEST_APP_DIR} = "$ROOT/t/apps";
	local $ENV{HEAVY_N} = $o{heavy} // 2000000;
	local $ENV{LJ_NOJIT} = $o{nojit} ? 1 : undef;
	delete $ENV{LJ_NOJIT} unless $o{nojit};
	my $w = $o{workers} // 1;
	spawn("$ROOT/build/nginx/sbin/nginx", '-p', $prefix, '-c', "$prefix/nginx.conf",
		'-g', "worker_processes $w;");
	my ($master, @workers);
	for (1 .. 100) {
		select(undef, undef, undef, 0.1);
		$master = slurp("$prefix/logs/nginx.pid") // next;
		chomp $master;
		@workers = split ' ', `pgrep -P $master`;
		last if @workers >= $w && system("curl -s -o /dev/null http://127.0.0.1:$port/") == 0;
	}
	return { master => $master, workers => \@workers, port => $port, prefix => $prefix };
}

sub nginx_stop {
	my ($n) = @_;
	kill 'QUIT', $n->{master} if $n->{master};
	for (1 .. 50) {
		last unless kill 0, $n->{master};
		select(undef, undef, undef, 0.1);
	}
}

sub load {
	my ($port, $url, $secs, $conns) = @_;
	return spawn('wrk', '-t2', '-c' . ($conns // 4), "-d${secs}s", "http://127.0.0.1:$port$url");
}

1;
