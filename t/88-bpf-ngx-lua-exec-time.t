#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# ngx-lua-exec-time --runtime=bpf on this host (a uprobe and a uretprobe
# on each Lua handler of lua-nginx-module, no VM), the app and the
# assertions of t/45 (t/apps/exectime.conf): /spin busy-loops 2 ms of CPU
# time and times itself with its own clock, /fast only says "ok", /sleep
# yields in ngx.sleep(0.2); an exact number of requests, each timed by
# the client.  Every call is counted by how it returned; none is shorter
# than the app's own clock around its code, and the calls together take
# no longer than their requests.  Then --master with two workers,
# Debian's stripped nginx (the handlers found by their exported symbols
# in ngx_http_lua_module.so), handler=rewrite on an app without rewrite
# code, time=1 (the session ends by itself), and bad input: an unknown
# handler, a target without the lua module; an option the sample does not
# have only warns, as with SystemTap.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use Bpf;
use ExecTime;
use HTTP::Tiny;
use Time::HiRes qw(time);
use Test::More;

my $S = 'ngx-lua-exec-time';
my $http = HTTP::Tiny->new(timeout => 30);

# A session on nginx N (TARGET: stap++'s target options) while the
# requests REQS ("COUNT PATH" each) are made one by one; then Ctrl-C.
# Returns the status and stderr plus stdout, with a "# took PATH US" line
# a request (the client's clock) and the app's own "# spun N US MIN".
sub session {
	my ($n, $target, $reqs, @args) = @_;
	my $base = "http://127.0.0.1:$n->{port}";
	my $h = Bpf::start_sample($S, $target, 'time=0', @args);
	ok $h->{started}, "$S: the session started" or diag slurp("$h->{base}.err") // '(no stderr)';
	my $took = '';
	for (@$reqs) {
		my ($count, $path) = split / /;
		for (1 .. $count) {
			my $t0 = time;
			my $r = $http->get("$base$path");
			$took .= sprintf("# took %s %d%s\n", $path, (time - $t0) * 1e6, $r->{success} ? '' : ' failed');
		}
	}
	my ($st, $out, $err) = Bpf::finish($h, 'INT');
	my $spun = $http->get("$base/spun")->{content} // '';
	chomp $spun;
	return ($st, "$err$took# $spun\n$out");
}

# What every session prints besides its report: the start line, the
# probes' cost, no call left untimed (the requests came after the start
# line, which is printed once the probes are in), no request failed.
sub common {
	my ($name, $st, $o, $calls) = @_;
	is $st, 0, "$name: status 0" or diag $o;
	like $o, qr/^WARNING: $S: timing the Lua content, rewrite and access handlers until Ctrl-C; press Ctrl-C to stop$/m,
		"$name: says what it times on stderr";
	like $o, qr/^WARNING: $S: \d+\.\d us per call in the return probe on average \($calls calls\), besides two uprobe traps a call \(\d+\.\d us each here, measured at the start\)$/m,
		"$name: the probes' cost, over the $calls calls" or diag $o;
	unlike $o, qr/calls not timed/, "$name: every call timed";
	unlike $o, qr/ failed$/m, "$name: every request succeeded" or diag $o;
	unlike $o, qr/^(?:stap\+\+: )?(?:error|ERROR)/m, "$name: no error" or diag $o;
	unlike $o, qr/^stap\+\+: (?:warning|using layout)/m,
		"$name: no word of layouts or of the Lua VM (the sample reads none of it)" or diag $o;
}

# 20 /spin (ExecTime::check_spin).
sub check_spin {
	my ($name, $st, $o) = @_;
	common($name, $st, $o, 20);
	return ExecTime::check_spin($name, $o);
}

my %p;
{
	my $n = Bpf::nginx(conf => 't/apps/exectime.conf', url => '/fast');
	ok @{ $n->{workers} } == 1, 'nginx runs one worker';
	my $x = ['-x', $n->{workers}[0]];
	$p{spin} = check_spin('spin', session($n, $x, ['20 /spin']));

	my ($st, $o) = session($n, $x, ['30 /fast', '5 /sleep']);
	common('fast', $st, $o, 35);
	ExecTime::check_fast('fast', $o, $p{spin});
	# the histogram as SystemTap prints a @hist_log: the header, rows of
	# powers of 2 (two empty ones around the data), the bars 50 wide
	like $o, qr/^value \|-{50} count\n(?:\s*(?:\d+ \|@*\s+\d+|~)\n)+\n/m, 'fast: a @hist_log histogram' or diag $o;

	($st, $o) = session($n, $x, ['10 /fast'], 'handler=rewrite');
	is $st, 0, 'handler=rewrite: status 0' or diag $o;
	like $o, qr/^WARNING: $S: timing the Lua rewrite handler until Ctrl-C; press Ctrl-C to stop$/m,
		'handler=rewrite: says so';
	like $o, qr/^no Lua handler calls measured$/m, 'handler=rewrite: no calls (the app has no rewrite code)' or diag $o;
	unlike $o, qr/^content handler:/m, 'handler=rewrite: the content handler is not timed';

	($st, my $out, my $err) = run_cmd($STAPXX, '--runtime=bpf', "$ROOT/samples/$S.sxx", @$x, '--arg', 'handler=body');
	is $st, 2, 'handler=body: usage error (exit 2)' or diag "$err$out";
	like $err, qr/^stap\+\+: error: --arg handler must be all, content, rewrite or access, not 'body'$/m, 'handler=body: the error names the handlers'
		or diag $err;
	# (as with SystemTap: a warning, and the session runs)
	($st, $out, $err) = run_cmd($STAPXX, '--runtime=bpf', "$ROOT/samples/$S.sxx", @$x, '--arg', 'depth=3',
		'--arg', 'time=1');
	is $st, 0, 'depth=3 (not an option of the sample) with time=1: status 0' or diag "$err$out";
	like $err, qr/^stap\+\+: warning: --arg depth is not used by the script$/m, '... with a warning naming it' or diag $err;
	like $out, qr/^no Lua handler calls measured$/m, '... and the report of a second without requests' or diag $out;
	Bpf::nginx_stop($n);
}
{
	my $n = Bpf::nginx(conf => 't/apps/exectime.conf', url => '/fast', workers => 2);
	ok @{ $n->{workers} } == 2, 'master: nginx runs two workers';
	my ($st, $o) = session($n, ['--master', $n->{master}], ['40 /fast']);
	common('master', $st, $o, 40);
	my $p = ExecTime::parse($o);
	is "@$p{qw(calls done yielded)}", '40 40 0', 'master: the 40 requests to either of 2 workers' or diag $o;
	is $p->{hist}, 40, 'master: the histogram holds the 40 calls' or diag $o;
	Bpf::nginx_stop($n);
}
{
	my $n = Bpf::nginx(conf => 't/apps/exectime.conf', url => '/fast', stock => 1);
	ok @{ $n->{workers} } == 1, 'stock: Debian\'s nginx runs one worker';
	check_spin('stock', session($n, ['-x', $n->{workers}[0]], ['20 /spin']));
	Bpf::nginx_stop($n);
}
{
	# a LuaJIT process without lua-nginx-module: a clear error
	my $pid = Bpf::spawn("$ROOT/build/luajit-gc64/bin/luajit", '-e', 'while true do end');
	my ($st, $out, $err) = run_cmd($STAPXX, '--runtime=bpf', "$ROOT/samples/$S.sxx", '-x', $pid);
	kill 'KILL', $pid;
	waitpid($pid, 0);
	is $st, 1, 'a luajit process: fails (exit 1)' or diag "$err$out";
	like $err, qr/^stap\+\+: error: no function 'ngx_http_lua_\w+_handler' in the symbols of/m,
		'... saying the handlers are not in its symbols' or diag $err;
	like $err, qr/^hint: .*lua-nginx-module/m, '... with a hint' or diag $err;
}

done_testing;
