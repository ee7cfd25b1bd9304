#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# debuginfod (issue 21): a stripped LuaJIT whose debug info lives only on a
# debuginfod server gets its layouts from it.  The test starts Debian's
# debuginfod on a free port, serving build/debug (the .debug files that
# make deps splits off its LuaJIT builds with objcopy --only-keep-debug),
# and points DEBUGINFOD_URLS at it with a cache of its own:
#   - --dump-src --exec on the stripped copies of build/luajit-gc64 and
#     -nogc64 expands lj-lua-stacks exactly as on the debug builds (but
#     for the binary's path), and the debug file is in the cache;
#   - --runtime=bpf -x PID on a running stripped luajit: the seed app's
#     assertions of t/70 (foo's share within 2 points), the VM found
#     without the symbols strip removed (lib/bpf/vm.c);
#   - the server stopped and an empty cache: the layout database answers
#     (stderr names its entry); without it, the "no known layout" error,
#     whose hints name the servers of DEBUGINFOD_URLS, or say to set it.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use LjStacks;
use Bpf;
use Test::More;
use HTTP::Tiny;
use IO::Socket::INET;
use POSIX ();
use Cwd ();
use Time::HiRes qw(time sleep);

my $out = scratch('23-debuginfod');
my $B = "$ROOT/build";
my $sample = "$ROOT/samples/lj-lua-stacks.sxx";

sub build_id {
	my ($file) = @_;
	return (`readelf -n '$file' 2>/dev/null` =~ /Build ID: ([0-9a-f]+)/)[0];
}

# the targets: the stripped copy, its debug build, and the debug file
my @targets;
for my $b (qw(gc64 nogc64)) {
	my $t = { name => "luajit-$b", stripped => "$B/stripped/luajit-$b/bin/luajit",
	          debug => "$B/luajit-$b/bin/luajit", file => "$B/debug/luajit-$b/luajit.debug" };
	my $sec = `readelf -S -W '$t->{stripped}'`;
	ok(-x $t->{stripped} && $sec !~ /\s\.(?:symtab|debug_info)\s/,
	   "build/stripped/luajit-$b/bin/luajit: no .symtab, no .debug_info");
	like(`readelf -S -W '$t->{file}' 2>/dev/null`, qr/\s\.debug_info\s/, "build/debug/luajit-$b/luajit.debug has the DWARF");
	$t->{id} = build_id($t->{stripped});
	ok($t->{id}, "$t->{name}: the stripped copy has a build-id");
	is(build_id($t->{file}), $t->{id}, "$t->{name}: ... the debug file's");
	push @targets, $t;
}

# Starts debuginfod on a free port of 127.0.0.1 (it listens on every
# address: 0.188 has no option to choose one) serving build/debug; returns
# (pid, url) once it serves every target's debug file, or () after 60 s.
sub server {
	for my $try (1 .. 3) {
		my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0, Listen => 1, ReuseAddr => 1)
			or die "no free port: $!";
		my $port = $s->sockport;
		close $s;
		unlink "$out/db.sqlite";
		my $pid = fork() // die "fork: $!";
		if (!$pid) {
			open(STDIN, '<', '/dev/null');
			open(STDOUT, '>>', "$out/debuginfod.log");
			open(STDERR, '>&', \*STDOUT);
			{ exec 'debuginfod', '-F', '-p', $port, '-d', "$out/db.sqlite", '-t', '0', '-g', '0', "$B/debug"; }
			POSIX::_exit(127);
		}
		my $url = "http://127.0.0.1:$port";
		my $http = HTTP::Tiny->new(timeout => 5);
		my $t0 = time;
		while (time - $t0 < 60 && waitpid($pid, POSIX::WNOHANG()) == 0) {
			# (GET: it answers HEAD with 400)
			return ($pid, $url) unless grep {
				!$http->get("$url/buildid/$_->{id}/debuginfo", { data_callback => sub { } })->{success}
			} @targets;
			sleep 0.1;
		}
		kill 'TERM', $pid;
		waitpid($pid, 0);
	}
	return ();
}

my ($srv, $url) = server();
if (!ok($srv, "debuginfod serves the debug files of build/debug")) {
	diag(slurp("$out/debuginfod.log") // '');
	done_testing;
	exit;
}
my %dbgd = (DEBUGINFOD_URLS => $url, DEBUGINFOD_CACHE_PATH => "$out/cache");

# --dump-src: the same expansion as on the debug build, the layouts from
# the server
for my $t (@targets) {
	my ($st, $want, $e) = run_cmd({ env => { DEBUGINFOD_URLS => undef } }, $STAPXX, '--dump-src', '--exec', $t->{debug}, $sample);
	is($st, 0, "$t->{name} debug build: --dump-src") or diag($e);
	# (the binary as stap++ names it: its real path, or as given)
	$want =~ s/\Q$_\E/EXEC/g for Cwd::abs_path($t->{debug}), $t->{debug};
	(my $got, $e) = (run_cmd({ env => \%dbgd }, $STAPXX, '--dump-src', '--exec', $t->{stripped}, $sample))[1, 2];
	$got =~ s/\Q$_\E/EXEC/g for Cwd::abs_path($t->{stripped}), $t->{stripped};
	ok(length($want) > 10000 && $want =~ /EXEC/, "$t->{name}: the debug build's expansion names the binary");
	ok($got eq $want, "$t->{name} stripped + debuginfod: --dump-src expands as on the debug build")
		or diag("stderr: $e\n" . join("\n", grep { /^[<>]/ } split /\n/, diff_text($want, $got)));
	ok(-s "$out/cache/$t->{id}/debuginfo", "$t->{name}: its debug file came from the server (in the cache)");
}

# eBPF on a running stripped luajit: the seed app as t/70.  Its layouts
# come from the server as above; the backend finds the VM without the
# symbols strip removed (lib/bpf/vm.c), and names C functions from the
# mapped binary alone: pmain, a local symbol, is an address.  At 4,000
# samples a second with t/70's loop count (4 ms calls): the share needs
# a count, not a rate.
my $NJIT = 5000000;
for my $t (@targets) {
	local @ENV{keys %dbgd} = values %dbgd;
	my $pid = Bpf::spawn($t->{stripped}, "$ROOT/t/apps/run.lua", 3600, 'jit', 'plain', $NJIT);
	ok(Bpf::ready($pid), "$t->{name} stripped: the target runs");
	my ($st, $o, $e, $p) = Bpf::stacks_samples(['-x', $pid], [$pid], LjStacks::seed_samples(2), 'hz=4000');
	kill 'TERM', $pid;
	waitpid($pid, 0);
	is($st, 0, "$t->{name} stripped + debuginfod, --runtime=bpf: status 0") or diag($e);
	LjStacks::check_seed("$t->{name} stripped bpf", $p, app => "$ROOT/t/apps/test.lua",
		root => ['run.lua', qr/^C:[\w.-]+\+0x[0-9a-f]+$/], mode => 'jit', lines => 0, claim => 2);
}

# The server gone, an empty cache: no debug info.  The layout database
# (layouts/) then knows these builds, and stderr says it was used; with
# no database (STAPXX_LAYOUTS, an empty folder) the error names the build
# and the hints say where debug info was asked for.
kill 'TERM', $srv;
waitpid($srv, 0);
my $none = "$out/no-layouts";
mkdir $none;
for my $t (@targets) {
	my $bin = Cwd::abs_path($t->{stripped});   # (as stap++ names it)
	my $entry = 'luajit2-2.1-20230119-' . ($t->{name} =~ /nogc64/ ? 'nogc64' : 'gc64');
	my %env = (DEBUGINFOD_URLS => $url, DEBUGINFOD_CACHE_PATH => "$out/cache-empty");
	my ($st, $o, $e) = run_cmd({ env => \%env }, $STAPXX, '--dump-src', '--exec', $bin, $sample);
	is($st, 0, "$t->{name} stripped, server stopped: expands from the layout database") or diag($e);
	like($e, qr/^stap\+\+: using layout '$entry' for '\Q$bin\E' \(no debug info\)$/m,
	     "$t->{name} stripped, server stopped: stderr names the entry ($entry)") or diag($e);
	for my $urls ($url, undef) {
		my $case = "$t->{name} stripped, " . ($urls ? 'server stopped' : 'no DEBUGINFOD_URLS') . ', no layouts';
		($st, $o, $e) = run_cmd({ env => { %env, DEBUGINFOD_URLS => $urls, STAPXX_LAYOUTS => $none } },
			$STAPXX, '--dump-src', '--exec', $bin, $sample);
		is($st, 1, "$case: status 1");
		is($o, '', "$case: no script");
		like($e, qr/^stap\+\+: error: no known layout for the LuaJIT in '\Q$bin\E' \(LuaJIT 2\.1\.0-beta3, GC64 \w+, build-id \Q$t->{id}\E\)$/m,
		     "$case: the error names the build") or diag($e);
		my $p = '/usr/lib/debug/.build-id/' . substr($t->{id}, 0, 2) . '/' . substr($t->{id}, 2) . '.debug';
		like($e, qr/^hint: a separate debug file is found by build-id as \Q$p\E$/m, "$case: hint: the build-id path");
		like($e, $urls ? qr/^hint: or from the debuginfod servers in DEBUGINFOD_URLS \('\Q$urls\E'\), which did not answer with it/m
		               : qr/^hint: or from a debuginfod server: set DEBUGINFOD_URLS /m,
		     "$case: hint: " . ($urls ? 'the servers asked' : 'set DEBUGINFOD_URLS'));
	}
}

# The lines of A and B that differ, as diff(1) prints them.
sub diff_text {
	my ($a, $b) = @_;
	spit("$out/want", $a);
	spit("$out/got", $b);
	return scalar `diff '$out/want' '$out/got' | head -n 40`;
}

done_testing;
