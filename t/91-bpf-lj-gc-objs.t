#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-gc-objs --runtime=bpf on this host's kernel (no VM), the truths of
# t/60 (t/lib/LjGc.pm's check_census):
# - the luajit CLI, GC64 and non-GC64 (t/apps/leak/heap.lua: 50000
#   strings and 10000 tables of known sizes, then only collector steps, a
#   heap at rest): the walk completes with no fault, the GC-managed total
#   and the census within 5% of the app's own collectgarbage("count"), the
#   known objects counted, the biggest string's preview escaped;
# - Debian's stripped luajit CLI: a clear error (its walk point, the
#   collector's lj_gc_step, has no symbol), status 1;
# - the leak app of issue 12 in nginx, debug and Debian's stock one, under
#   load, then idle with a ping loop (the walk advances between events):
#   the same truths, strings first, the biggest table foo's;
# - --master with two workers: one census per worker, each within 5% of
#   its own count, and stderr names both.
# The walks run with gap=5 (ms between slices) to keep the cases short.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Bpf;
use LjGc;
use Test::More;

for my $b (qw(gc64 nogc64)) {
	my ($st, $out, $err, $counts) = LjGc::bpf_heap_census("$ROOT/build/luajit-$b/bin/luajit", 60);
	is $st, 0, "cli $b: status 0" or diag $err;
	my ($count, $end) = @$counts[0, -1];
	ok @$counts >= 2 && $count && $end && abs($end - $count) <= 0.001 * $count,
		"cli $b: the heap at rest during the walk (count " . ($count // '?') . ', then ' . ($end // '?') . ')';
	my $p = LjGc::check_census("cli $b", $out, $count // 1);
	ok $p->{type}{string}{count} >= 50000, "cli $b: the 50000 strings counted";
	ok $p->{type}{table}{count} >= 10000, "cli $b: the 10000 tables counted";
	like $out, qr/^  string 0x[0-9a-f]+: \d+ bytes ",\\t\\n\\x01z{30,}"$/m,
		"cli $b: the biggest string's preview escaped (';' as ',', control bytes as \\t \\n \\xHH)" or diag $out;
	like $err, qr/^WARNING: lj-gc-objs: walking the heap of process \d+ in slices of 2000 objects until the walk is complete$/m,
		"cli $b: stderr says what is walked and until when";
}

# Debian's stripped CLI: no symbol for its walk point
{
	my $bin = "$ROOT/build/debian/luajit/usr/bin/luajit";
	my ($st, $out, $err) = LjGc::bpf_heap_census($bin, 5);
	is $st, 1, 'cli stripped: status 1';
	like $err, qr/^stap\+\+: error: no function 'lj_gc_step' in the symbols of '[^']*\/luajit'/m,
		'cli stripped: the error names the walk point it has no symbol for' or diag $err;
	like $err, qr/^hint: in the luajit CLI the walk point is the collector's lj_gc_step/m,
		'cli stripped: a hint says why';
	is $out, '', 'cli stripped: nothing on stdout';
}

sub get {
	my ($port, $path) = @_;
	my $r = `curl -s http://127.0.0.1:$port$path`;
	chomp $r;
	return $r;
}

# The leak app in nginx (STOCK: Debian's), WORKERS workers: 1 s of load
# on /go, then the walk of TARGET (a sub of the nginx, for the sample's
# arguments) beside a trickle of pings; returns the nginx, the counts before and
# after (PID => bytes, /countpid) and the session's output.
sub leak {
	my (%o) = @_;
	local $ENV{LEAK_APP_DIR} = "$ROOT/t/apps/leak";
	my $n = Bpf::nginx(conf => 't/apps/leak/nginx.conf', workers => $o{workers}, url => '/ping', stock => $o{stock});
	my $port = $n->{port};
	my %count;
	my $counts = sub {
		my %c;
		# (a worker answers once its connection hashes to it: 40 tries)
		for (1 .. 40) {
			my ($pid, $bytes) = split ' ', get($port, '/countpid');
			$c{$pid} = $bytes if $pid;
			last if keys %c >= $o{workers};
		}
		return \%c;
	};
	get($port, '/go?n=0') for 1 .. 20;
	my $wrk = `wrk -t1 -c32 -d1s 'http://127.0.0.1:$port/go?n=100' 2>&1`;
	my ($reqs) = $wrk =~ /(\d+) requests in/;
	$count{before} = $counts->();
	# (events for the idle workers' loops, where the walk runs: 500 a
	# second, one slice each at most, gap=5)
	my $ping = Bpf::trickle($port, '/ping', 500);
	my ($st, $out, $err) = Bpf::run('lj-gc-objs', $o{target}->($n), 'gap=5', @{ $o{args} // [] });
	Bpf::load_stop($ping);
	$count{after} = $counts->();
	Bpf::nginx_stop($n);
	return { n => $n, reqs => $reqs // 0, counts => \%count, st => $st, out => $out, err => $err };
}

for my $stock (0, 1) {
	my $name = $stock ? 'nginx stock' : 'nginx';
	my $r = leak(workers => 1, stock => $stock, target => sub { ['-x', $_[0]{workers}[0]] });
	my $w = $r->{n}{workers}[0];
	is $r->{st}, 0, "$name: status 0" or diag $r->{err};
	my ($before, $after) = map { $r->{counts}{$_}{$w} } qw(before after);
	ok $before && $after && abs($after - $before) <= 0.01 * $before,
		"$name: the heap at rest during the walk (count " . ($before // '?') . ', then ' . ($after // '?') . ')';
	my $p = LjGc::check_census($name, $r->{out}, $after // 1);
	LjGc::check_leak_census($name, $p, $r->{out}, $r->{reqs});
}

# --master: one census per worker
{
	my $r = leak(workers => 2, target => sub { ['--master', $_[0]{master}] }, args => ['workers=2']);
	my @w = @{ $r->{n}{workers} };
	is $r->{st}, 0, 'master: status 0' or diag $r->{err};
	my %rep;
	for my $t (split /^(?=lj-gc-objs: process \d+)/m, $r->{out}) {
		my ($pid) = $t =~ /^lj-gc-objs: process (\d+)/ or next;
		push @{ $rep{$pid} }, $t;
	}
	is_deeply [sort keys %rep], [sort @w], 'master: one census per worker, the master not walked' or diag $r->{out};
	for my $w (@w) {
		my @t = @{ $rep{$w} // [] };
		is scalar(@t), 1, "master: worker $w: one census" or next;
		my $p = LjGc::check_census("master: worker $w", $t[0], $r->{counts}{after}{$w} // 1);
		is $p->{order}[0], 'string', "master: worker $w: strings hold the most bytes";
	}
	like $r->{err}, qr/^WARNING: lj-gc-objs: processes walked: (\d+) (\d+); cut short: none; seen at the walk point, not walked: none$/m,
		'master: stderr names the workers walked' or diag $r->{err};
}

done_testing;
