#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# Targets: -x PID, --master PID, --sample-pid PID, --exec, -c against live
# fixture processes (t/golden/fixture/target.c): executable from
# /proc/PID/exe, libraries from /proc/PID/maps in load order, $^pid_ok per
# mode, what stap gets (-x, -d), and the errors for bad, gone, kernel and
# unreadable PIDs.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Golden;
use Test::More;

ok(-x $STAPXX, 'stap++ is built') or BAIL_OUT('run make first');
my $f = fixture();
my $T = $f->{target};
my $out = scratch('13-target');
my @I = ('-I', 't/golden/tapset');
my $C = 't/golden/cases';

# Start the target (optionally forking a child); wait for "ready".
my @procs;
sub start {
	my (@args) = @_;
	pipe(my $r, my $w) or die;
	my $pid = fork() // die;
	if (!$pid) {
		close($r);
		open(STDOUT, '>&', $w) or die;
		exec($T, @args) or die;
	}
	close($w);
	my $line = <$r>;
	die "target did not start" unless $line && $line =~ /^ready/;
	push @procs, $pid;
	return ($pid, $r);
}
END { kill('KILL', @procs) if @procs; }

sub children_of {
	my ($ppid) = @_;
	my @kids;
	for my $stat (glob('/proc/[0-9]*/stat')) {
		open(my $fh, '<', $stat) or next;
		my $s = <$fh> // next;
		push @kids, $1 if $s =~ /^(\d+) \(.*\) \S (\d+) / && $2 == $ppid;
	}
	return @kids;
}

my ($pid) = start();
my ($master, $mr) = start('fork');
my @kids;
for (1 .. 100) { @kids = children_of($master); last if @kids; select(undef, undef, undef, 0.05) }
is(scalar @kids, 1, 'master fixture has one child');
my %subst = ($pid => '@PID@', $master => '@MASTER@');

for my $c (
	['target-x',        [@I, "$C/basic.sxx", '-x', $pid, '--dump-src']],
	['target-master',   [@I, "$C/basic.sxx", '--master', $master, '--dump-src']],
	['target-master-nokids', ['-e', 'probe begin { if ($^pid_ok) exit() }', '--master', $pid, '--dump-src']],
	['target-sample',   ['-e', 'probe begin { if ($^pid_ok) println("$^exec_path $^libgx_path") }', '--sample-pid', $pid, '--dump-src']],
	['target-x-exec',   ['-e', 'probe begin { println("$^exec_path $^libgx_path") }', '-x', $pid, '--exec', $f->{static}, '--dump-src']],
	['target-static',   ['-e', 'probe begin { println("$^libc_path") }', '--exec', $f->{static}, '--dump-src']],
	['target-nolib',    ['-e', 'probe begin { println("$^libgxtra_path") }', '--exec', $f->{nolib}, '--dump-src']],
	['target-in-string-x',      ["$C/target-in-string.sxx", '-x', $pid, '--dump-src']],
	['target-in-string-master', ["$C/target-in-string.sxx", '--master', $master, '--dump-src']],
) {
	my ($name, $args) = @$c;
	my ($rc, $o, $e) = stapxx(@$args);
	golden($name, $args, $rc, $o, $e, \%subst);
}

# A library the target loads itself (dlopen: stock nginx's lua module and
# its libluajit) is no dependency: $^libNAME_path finds it among the -d
# paths, after the target's own libraries, with no warning.
{
	my ($rc, $o, $e) = stapxx('-e', 'probe begin { println("$^libgx_path") }', '--exec', $f->{nolib},
		'-d', $f->{gx}, '--dump-src');
	is($rc, 0, '-d library: expands') or diag($e);
	like($o, qr/println\("\Q$f->{gx}\E"\)/, '-d library: $^libgx_path is the -d path') or diag($o);
	unlike($e, qr/statically linked/, '-d library: no warning about a static link') or diag($e);
}

# $^dso_NAME_path: a shared object named NAME.so, not libNAME.so (nginx's
# dynamic modules), among the -d paths; without one, the executable (the
# module built in), with no warning.
{
	my $mod = "$out/ngx_gx_module.so";
	unlink $mod;
	symlink($f->{gx}, $mod) or die "$mod: $!";
	my $script = 'probe begin { println("$^dso_ngx_gx_module_path $^dso_gx_path") }';
	my ($rc, $o, $e) = stapxx('-e', $script, '--exec', $f->{nolib}, '-d', $mod, '-d', $f->{gx}, '--dump-src');
	is($rc, 0, '$^dso_NAME_path: expands') or diag($e);
	like($o, qr/println\("\Q$mod $f->{nolib}\E"\)/,
		'$^dso_ngx_gx_module_path is the -d module; $^dso_gx_path is not libgx.so but the executable') or diag($o);
	unlike($e, qr/warning: .*(dso|gx_module|statically)/, '$^dso_NAME_path: no warning when it is the executable') or diag($e);
	($rc, $o, $e) = stapxx('-e', 'probe begin { println("$^dso__path") }', '--exec', $f->{nolib}, '--dump-src');
	isnt($rc, 0, '$^dso__path (no name) is refused');
	like($e, qr/unknown macro '\$\^dso__path'/, '$^dso__path: the error names it') or diag($e);
}

# $^vm_allocf*: LuaJIT's allocator in a running target (t/24 and t/62
# find it in a stripped luajit).  Never looked up in a dead branch; in a
# process without LuaJIT the error says no VM was found, once.
{
	my $script = 'probe begin { %( 0 == 1 %? println("$^vm_allocf_path $^vm_allocf", $^vm_allocd_to_G) %) }';
	my ($rc, $o, $e) = stapxx('-e', $script, '--exec', $f->{nolib}, '--dump-src');
	is($rc, 0, '$^vm_allocf*: a dead branch expands without a process') or diag($e);
	like($o, qr{println\("/dead dead", 0\)}, '$^vm_allocf*: ... to placeholders') or diag($o);
	($rc, $o, $e) = stapxx('-e', 'probe begin { println("$^vm_allocd_to_G") }', '--exec', $f->{nolib}, '--dump-src');
	isnt($rc, 0, '$^vm_allocd_to_G inside a string is refused');
	like($e, qr/^<command-line>:1: error: \$\^vm_allocd_to_G cannot be used inside a string$/m, '... saying so') or diag($e);
	($rc, $o, $e) = stapxx('-e', 'probe process("$^vm_allocf_path").function("$^vm_allocf") { println($^vm_allocd_to_G) }',
		'-x', $pid, '--dump-src');
	is($rc, 1, '$^vm_allocf*: a process without LuaJIT fails');
	my @err = $e =~ /^(.*error: .*)$/mg;
	is(scalar @err, 1, '$^vm_allocf*: ... with one error for the three macros') or diag($e);
	like($err[0] // '', qr/^(?:<command-line>:1: error: )?(?:no LuaJIT VM found in process $pid|.*no type 'lua_State')/,
		'$^vm_allocf*: ... which says there is no VM') or diag($e);
}

# What stap gets: -x for -x; for --master the master's PID as the module
# global stapxx_master (-G), never -x (with -x SystemTap follows only the
# master and its later children: workers that already run would be lost);
# nothing for --exec (staprun -x or stapxx_master=PID decide at run time)
# and --master -.
{
	my $log = "$out/fake.log";
	for my $c (
		[['-x', $pid], ['-x', $pid], 'pid() == target()'],
		[['--master', $master], ['-G', "stapxx_master=$master"], 'stapxx_master ? ppid() == stapxx_master'],
		[['--exec', $T], [], 'stapxx_master ? ppid() == stapxx_master : target() ? pid() == target()'],
		[['--exec', $T, '--master', '-'], [], 'stapxx_master ? ppid() == stapxx_master'],
		[['-c', "$T fork"], ['-c', "$T fork"], 'pid() == target()'],
	) {
		my ($targ, $want, $pidok) = @$c;
		my ($rc, $o, $e) = stapxx({ env => { STAPXX_STAP => "$G/fake-stap",
				FAKE_STAP_LOG => $log } },
			'-e', 'probe timer.profile { if ($^pid_ok) exit() }',
			@$targ, '-p2');
		is($rc, 0, "@$targ: runs") or diag($e);
		my $got = slurp($log);
		my @argv = $got =~ /^argv: (.*)$/mg;
		my @x;
		for my $i (0 .. $#argv - 1) {
			push @x, @argv[$i, $i + 1] if $argv[$i] =~ /^-[xcG]$/;
		}
		is_deeply(\@x, $want, "@$targ: stap gets (@$want)");
		like($got, qr/\Q$pidok\E/, "@$targ: \$^pid_ok is $pidok");
		ok((grep { $_ eq $f->{gx} } @argv), "@$targ: -d for libgx");
	}
}

# Errors about PIDs name the PID and the cause.
my $gone = fork() // die;
exit(0) if !$gone;
waitpid($gone, 0);
%subst = (%subst, $gone => '@GONE@');
for my $c (
	['pid-gone',   ['-x', $gone, '-e', 'probe begin {}', '--dump-src'], 1],
	['pid-kernel', ['-x', 2, '-e', 'probe begin {}', '--dump-src'], 1],
	['pid-master-gone', ['--master', $gone, '-e', 'probe begin {}', '--dump-src'], 1],
	['pid-sample-gone', ['--sample-pid', $gone, '-e', 'probe begin {}', '--dump-src'], 1],
	['pid-syntax', ['-x', '12abc', '-e', 'probe begin {}'], 2],
	['pid-zero',   ['--master', '0', '-e', 'probe begin {}'], 2],
	['pid-negative', ['--sample-pid', '-5', '-e', 'probe begin {}'], 2],
) {
	my ($name, $args, $want) = @$c;
	my ($rc, $o, $e) = stapxx(@$args);
	is($rc, $want, "$name: exit $want");
	golden($name, $args, $rc, $o, $e, \%subst);
}

# Not root: reading another user's process is refused, with a hint.
{
	my @args = ('-x', $pid, '-e', 'probe begin {}', '--dump-src');
	my ($rc, $o, $e) = run_cmd('setpriv', '--reuid=65534', '--regid=65534',
				   '--clear-groups', $STAPXX, @args);
	is($rc, 1, 'not root: exit 1');
	golden('pid-not-root', \@args, $rc, $o, $e, \%subst);
}

# A process whose executable was deleted after it started: a warning, and
# the path without " (deleted)".
{
	my $copy = "$out/victim";
	system('cp', $T, $copy) == 0 or die;
	pipe(my $r, my $w) or die;
	my $vp = fork() // die;
	if (!$vp) { close($r); open(STDOUT, '>&', $w); exec($copy) or die; }
	close($w);
	<$r>;
	push @procs, $vp;
	unlink($copy);
	my @args = ('-x', $vp, '-e', 'probe begin { println("$^exec_path") }', '--dump-src');
	my ($rc, $o, $e) = stapxx(@args);
	golden('target-deleted', \@args, $rc, $o, $e, { $vp => '@PID@' });
}

# --exec: the libraries come from the system's loader in ldd's trace
# mode, never from a loader the file names itself (stap++ runs as root,
# and PT_INTERP can name any program): a binary whose PT_INTERP is a
# static program that leaves a mark (a script would not do: the system's
# loader, tracing, stops its shell before it runs) still gets its
# libraries (from ldd), and that program never runs.
{
	my $mark = "$out/interp-ran";
	my $fake = "$out/fake-ld.so";
	spit("$out/fake-ld.c", "#include <fcntl.h>\nint main(void) { return open(\"$mark\", O_CREAT | O_WRONLY, 0644) < 0; }\n");
	spit("$out/interp.c", "int main(void) { return 0; }\n");
	my ($rc, $o, $e) = run_cmd('cc', '-static', '-o', $fake, "$out/fake-ld.c");
	is($rc, 0, 'a static program that leaves a mark builds') or diag($e);
	($rc, $o, $e) = run_cmd('cc', '-o', "$out/interp", "$out/interp.c", "-Wl,--dynamic-linker=$fake");
	is($rc, 0, 'a binary whose PT_INTERP is that program builds') or diag($e);
	unlink($mark);
	($rc, $o, $e) = stapxx('-e', 'probe begin { println("$^libc_path") }', '--exec', "$out/interp", '--dump-src');
	is($rc, 0, '--exec of it: expands') or diag($e);
	like($o, qr{^probe begin \{ println\("/\S*/libc\.so\.6"\) \}$}m, '... with its libraries (libc), from ldd') or diag($o);
	ok(!-e $mark, '... and its PT_INTERP never ran');
}

# Not root, own process: inspecting works, running the probes does not.
{
	my $sleeper = fork() // die;
	if (!$sleeper) {
		exec('setpriv', '--reuid=65534', '--regid=65534', '--clear-groups',
		     'sleep', '30') or die;
	}
	push @procs, $sleeper;
	for (1 .. 100) {
		last if (readlink("/proc/$sleeper/exe") // '') =~ /sleep$/;
		select(undef, undef, undef, 0.05);
	}
	my %s = ($sleeper => '@PID@');
	my @args = ('-x', $sleeper, '-e', 'probe begin { if ($^pid_ok) exit() }');
	my ($rc, $o, $e) = run_cmd('setpriv', '--reuid=65534', '--regid=65534',
				   '--clear-groups', $STAPXX, @args);
	is($rc, 1, 'not root, running: exit 1');
	golden('pid-not-root-run', \@args, $rc, $o, $e, \%s);
	($rc, $o, $e) = run_cmd('setpriv', '--reuid=65534', '--regid=65534',
				'--clear-groups', $STAPXX, @args, '--dump-src');
	is($rc, 0, 'not root, own process: --dump-src works') or diag($e);
}

kill('KILL', @procs, @kids);
done_testing();
