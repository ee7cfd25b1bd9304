#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# The SystemTap driver: what stap++ hands to stap (argv, expanded files),
# stap's exit status and stderr, the private temp dir (removed on exit and
# on signals).  stap is replaced by t/golden/fake-stap, which records what
# it got (STAPXX_STAP); t/15-stap.t runs the real stap.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Golden;
use POSIX qw(setpgid);
use Test::More;
use Time::HiRes qw(sleep);

ok(-x $STAPXX, 'stap++ is built') or BAIL_OUT('run make first');
my $f = fixture();
my $T = $f->{target};
my $out = scratch('14-driver');
my $log = "$out/fake.log";
my $fake = "$G/fake-stap";
my @I = ('-I', 't/golden/tapset');
my $C = 't/golden/cases';

sub fake_run {
	my ($env, @args) = @_;
	unlink $log, "$log.ready";
	return stapxx({ env => { STAPXX_STAP => $fake, FAKE_STAP_LOG => $log,
				 TMPDIR => $out, %$env } }, @args);
}

sub tmpdirs { my @d = glob("$out/stap++-*"); return @d }

# argv: defaults, overrides, -d for the executable and each library, the
# module dir, stap options in a fixed order, "--" extras, script args.
{
	my @args = (@I, "$C/basic.sxx", '--exec', $T, '-p4', '-m', 'mod',
		    '-r', '6.1.0-56-amd64', '-R', '/some/runtime', '-o',
		    'out.txt', '-B', 'CONFIG_X=y', '-D', 'MAXACTION=5',
		    '-DFOO', '-D', 'BAR=a b', '-d', '/bin/ls', '--skip-badvars',
		    '-k', 'arg1', 'arg 2', '--', '--poison', '-g');
	my ($rc, $o, $e) = fake_run({}, @args);
	is($rc, 0, 'fake stap run: exit 0');
	my $got = slurp($log);
	my @argv = $got =~ /^argv: (.*)$/mg;
	golden('driver-argv', \@args, $rc, join("\n", @argv) . "\n", $e);
	is(scalar(grep { /^MAXACTION=/ } @argv), 1, '-D MAXACTION overrides the default');
	ok((grep { $_ eq 'MAXMAPENTRIES=5000' } @argv), 'default -D MAXMAPENTRIES');
	ok((grep { $_ eq 'MAXBACKTRACE=200' } @argv), 'default -D MAXBACKTRACE');
	ok((grep { $_ eq 'MAXSTRINGLEN=2048' } @argv), 'default -D MAXSTRINGLEN');
	like($got, qr{^file: .*/tapset/gt\.a\.stp\n// module gt\.a\n}m, 'module gt.a written as a tapset file');
	like($got, qr{^file: .*/basic\.stp\n#!/usr/bin/env stap\n}m, 'main script written');
	my ($kept) = $e =~ /keeping the expanded script in '([^']+)'/;
	ok($kept && -d $kept, '-k keeps the temp dir');
	system('rm', '-rf', $kept) if $kept;
}

# The temp dir is removed after the run, and stap's exit status is ours.
{
	my ($rc, $o, $e) = fake_run({ FAKE_STAP_EXIT => 3 }, @I, "$C/basic.sxx",
				    '--exec', $T, '-p2');
	is($rc, 3, "stap's exit status 3 is passed through");
	is_deeply([tmpdirs()], [], 'temp dir removed after the run');
	my $got = slurp($log);
	like($got, qr{^argv: -p\nargv: 2$}m, '-p 2 passed');
	unlike($got, qr{^argv: -R$}m, 'no runtime fix below pass 4');
}

# stap's messages name the .sxx files, not the temp copies.
{
	my ($rc, $o, $e) = fake_run({ FAKE_STAP_STDERR =>
		"parse error at SCRIPT:12:3\nsemantic error at TAPSET/gt.c.stp:5:1 and SCRIPT:1:1\npartial line SCRIPT" },
		@I, "$C/basic.sxx", '--exec', $T, '-p2');
	is($rc, 0, 'exit 0');
	is($e, "t/golden/cases/basic.sxx:8: warning: no library 'libnothere' in the target: assuming '$T' is statically linked with it\n" .
	       "parse error at t/golden/cases/basic.sxx:12:3\n" .
	       "semantic error at t/golden/tapset/gt/c.sxx:5:1 and t/golden/cases/basic.sxx:1:1\n" .
	       "partial line t/golden/cases/basic.sxx",
	   'temp paths in stderr mapped back to the .sxx files');
	my ($rc2, $o2, $e2) = fake_run({ FAKE_STAP_STDERR => "error at SCRIPT:2:1\n" },
		'-e', "probe begin {\n\tx }", '-p1');
	is($e2, "error at <command-line>:2:1\n", '-e script: mapped to <command-line>');
}

# --no-runtime-fix and -R: no automatic fix.
{
	my ($rc, $o, $e) = fake_run({}, '-e', 'probe begin { exit() }', '-p4',
				    '--no-runtime-fix', '-r', '6.1.0-56-amd64');
	is($rc, 0, '--no-runtime-fix run');
	unlike(slurp($log), qr{^argv: -R$}m, '--no-runtime-fix: no -R');
}

# With -c, the command would inherit the directory descriptor: real paths.
{
	my ($rc, $o, $e) = fake_run({}, @I, "$C/basic.sxx", '-c', "$T fork", '-p2');
	is($rc, 0, '-c run');
	my $got = slurp($log);
	like($got, qr{^argv: \Q$out\E/stap\+\+-\w{6}/basic\.stp$}m, '-c: the script by its real temp path');
	like($got, qr{^argv: -I\nargv: \Q$out\E/stap\+\+-\w{6}/tapset$}m, '-c: the module dir by its real temp path');
	unlike($got, qr{/proc/self/fd}, '-c: no descriptor paths');
}

# A daemon started by -c CMD inherits stap's stderr: stap++ returns when
# stap exits, with what stap wrote and its status, not when the daemon
# closes the pipe.
{
	my $t0 = time;
	my ($rc, $o, $e) = fake_run({ FAKE_STAP_DAEMON => 20, FAKE_STAP_EXIT => 4,
				      FAKE_STAP_STDERR => "stap: last words\n" },
				    '-e', 'probe begin { exit() }', '-c', "$T fork", '-p2');
	my $took = time - $t0;
	is($rc, 4, 'daemon holds the pipe: stap\'s status');
	is($e, "stap: last words\n", 'daemon holds the pipe: stap\'s stderr relayed');
	cmp_ok($took, '<', 10, "daemon holds the pipe: stap++ returned after ${took} s, not 20");
	is_deeply([tmpdirs()], [], 'daemon holds the pipe: temp dir removed');
}

# stap missing: a clear error, exit 1, temp dir removed.
{
	my ($rc, $o, $e) = stapxx({ env => { STAPXX_STAP => '/nonexistent/stap', TMPDIR => $out } },
				  '-e', 'probe begin { exit() }', '-p2');
	is($rc, 1, 'missing stap: exit 1');
	like($e, qr{^stap\+\+: error: cannot run '/nonexistent/stap': No such file or directory\nhint: }m,
	     'missing stap: error + hint');
	is_deeply([tmpdirs()], [], 'missing stap: temp dir removed');
}

# Signals while stap runs: SIGTERM to stap++ is forwarded, Ctrl-C (SIGINT
# to the process group) reaches stap; either way the temp dir goes away
# and stap's fate is our exit status.
for my $case (['TERM', 'stap++ only', 0], ['INT', 'process group', 1],
	      ['HUP', 'stap++ only', 0]) {
	my ($sig, $what, $group) = @$case;
	unlink $log, "$log.ready";
	my $pid = fork() // die;
	if (!$pid) {
		setpgid(0, 0);
		$ENV{STAPXX_STAP} = $fake;
		$ENV{FAKE_STAP_LOG} = $log;
		$ENV{FAKE_STAP_SLEEP} = 30;
		$ENV{TMPDIR} = $out;
		chdir($ROOT);
		open(STDERR, '>', "$out/sig.err");
		exec($STAPXX, '-e', 'probe begin { exit() }', '-p2');
		die;
	}
	for (1 .. 200) { last if -e "$log.ready"; sleep(0.05) }
	ok(-e "$log.ready", "SIG$sig: fake stap is running");
	is(scalar(tmpdirs()), 1, "SIG$sig: temp dir exists while stap runs");
	kill($sig, $group ? -$pid : $pid);
	waitpid($pid, 0);
	my $num = { TERM => 15, INT => 2, HUP => 1 }->{$sig};
	is($? >> 8, 128 + $num, "SIG$sig to $what: exit 128+$num (stap's fate)");
	is_deeply([tmpdirs()], [], "SIG$sig: temp dir removed");
}

done_testing();
