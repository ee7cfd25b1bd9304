# SPDX-License-Identifier: GPL-2.0-or-later
package VM;

=head1 NAME

VM - end-to-end tests in a real Debian kernel: build SystemTap modules on the
host with stap++, run them next to their targets in one VM boot, get the
output back.

=head1 SYNOPSIS

    use strict; use warnings;
    use FindBin;
    use lib "$FindBin::Bin/lib";
    use TestUtil;
    use Test::More;
    use VM;

    my $vm = VM->new;                      # scratch dir t/out/<test name>/
    my $ko = $vm->build('prof', 't/fixtures/vm/prof.sxx',
                        exec => 'build/luajit-gc64/bin/luajit');
    ok $ko, 'module builds' or diag $vm->build_log;

    $vm->case(gc64 => VM::staprun_sh(
        target => "$ROOT/build/luajit-gc64/bin/luajit $ROOT/t/fixtures/vm/busy.lua",
        module => 'prof.ko'), files => [$ko]);
    $vm->case(other => 'echo hello; uname -r');

    my $r = $vm->run;                      # one boot for every case
    is $r->{status}, 0, 'vm-run succeeded' or diag $r->{stderr};
    like $r->{cases}{gc64}{output}, qr/faults=0/;
    is $r->{cases}{other}{status}, 0;
    done_testing;

=head1 DESCRIPTION

Everything here runs real things: C<./stap++ ... -p4 -r build/kernel/KREL -m NAME> on the
host (with stap++'s SystemTap runtime fixes), then C<dev/vm-run> boots
Debian's kernel (see C<dev/vm-run --kernel-release>) once and runs the
queued cases one after the other.  Inside the guest the host's files are at
the same paths (read-only), so targets are started by their host paths
(C<$ROOT/build/...>, C<$ROOT> from TestUtil.pm); the job dir C<$VM_JOB> is writable; C</tmp> is a
tmpfs; C<lo> is up.

Each case is a shell script run with C<sh> as root, in its own writable
directory C<$CASE> (= C<$VM_JOB/NAME>, also the current directory), with
C<$VM_JOB> holding every file given with C<< files => >>.  Its stdout and
stderr (merged) and its exit status come back per case.  A case that runs
longer than its timeout is killed (status 124).

=head1 FUNCTIONS AND METHODS

=over 4

=item C<< VM->new(%opts) >>

Options: C<name> (default: the test file's name without C<.t>), scratch dir
C<t/out/NAME/> (a fresh one, from TestUtil's C<scratch>).  Reads the guest kernel release once.

=item C<< $vm->krel >>, C<< $vm->out >>

The guest kernel release; the absolute scratch dir.

=item C<< $vm->ktree >>

The absolute path of the guest kernel's build tree, C<build/kernel/KREL>
(dev/deps: links to the headers, the real System.map and vmlinux), for
C<stap++ -r DIR> (return probes, kernel probes).  When it is incomplete, a
failed test that says to run make deps, and C<undef>.

=item C<< $vm->build(NAME, SCRIPT, %opts) >>

Builds C<NAME.ko> in the scratch dir with
C<./stap++ -p4 -r TREE -m NAME [--exec EXEC] [ARGS...] SCRIPT [-- STAP_ARGS...]>,
TREE being C<< $vm->ktree >> (its few tracepoint headers keep a first
C<kernel.trace> build to about a minute).
SCRIPT is a path (relative to the repository or absolute), or C<undef> with
C<< source => TEXT >> (written to C<NAME.sxx> in the scratch dir).  Options:
C<exec> (the target executable, relative to the repository or absolute),
C<args> (array ref of more stap++ options, before SCRIPT, e.g.
C<['--arg', 'x=1']>), C<stap_args> (array ref of options passed to stap
itself, after C<-->, e.g. C<['-g']> for guru mode).  The module is built
without SystemTap's overload guard (C<VM::no_guard>) unless C<args> define
an C<STP_OVERLOAD_*> or C<STP_NO_OVERLOAD> of their own.  Returns the absolute path of the module, or C<undef>
when the build failed (the output is in C<< $vm->build_log >>, and is shown
with C<diag>).

=item C<< $vm->builds([NAME, SCRIPT, %opts], ...) >>

Builds several modules as C<build> does, C<$STAPXX_BUILD_JOBS> (default 2)
at a time, and returns their paths (or C<undef>) in order.  A failed build's
output is shown with C<diag>.  A build that ended without stap++ failing
(its process killed by a signal, or gone without a log) is said, with the
host's memory, disks and load, and run once more: C<make test> prints such
builds at its end, whether it passed or not.  Under C<make test> (C<$STAPXX_MODULE_CACHE>)
a module is built once a run for each command line: tests that build the
same script for the same target with the same options and module name
share it.

=item C<VM::no_guard()>

The stap++ options that build a module without SystemTap's overload guard
(C<-D STP_NO_OVERLOAD>), for every module a test runs in the VM.  The
guard stops a module whose probes take over half of the cycles of an
interval, and under TCG those cycles run on while the host runs other
jobs instead of the guest's vCPU: on a loaded host a sample seemed to
take 350 us (110 to 160 on a quiet one) and the guard ended t/40, t/41,
t/42, t/46, t/47, t/56 and make demo in some runs.  What it measured
was the host's load, not the probes, whose cost the samples print and
the benchmarks report.  t/62 keeps a guard that trips on purpose.

=item C<< $vm->build_log >>

stap++'s output (stdout and stderr) of the last C<build> (with C<builds>:
of the last module in the list).

=item C<< $vm->case(NAME, SHELL, %opts) >>

Queues a case.  NAME: letters, digits, C<_>, C<->.  SHELL: the script text.
Options: C<files> (array ref of host files copied into C<$VM_JOB>; the same
file given twice is copied once; dies if one is undefined or not a file, so
guard cases with the result of C<build>), C<timeout> (seconds, default 120).

=item C<< $vm->run(%opts) >>

Boots the VM once and runs every queued case in order (then forgets them).
Options: C<timeout> (seconds for the whole VM, default: the cases' timeouts
plus 60), C<cpus>, C<mem>.  Returns a hash ref:

    status   dev/vm-run's exit status (0: every case ran and the guest
             kernel logged no oops/BUG/WARNING/SystemTap error)
    stdout   dev/vm-run's output (every case's output, with headers)
    stderr   dev/vm-run's own messages (timeouts, dmesg errors)
    dmesg    the guest kernel log
    job      the job dir copied back (t/out/NAME/vm)
    cases    { NAME => { status => exit status (undef if it never ended),
                         output => stdout+stderr, dir => its dir on the host } }

=item C<VM::staprun_sh(%opts)>

Returns shell text for the common case "start a target, run a module on it,
stop the target": starts C<target> (a shell command line) in the background
with its output in C<$CASE/target.log>, runs C<ready> (shell, default
C<sleep 0.5>; C<$pid> is the target's pid), then
C<staprun [OPTS] -x $pid MODULE> in the foreground, then kills the target.
Options: C<target>, C<module> (file name in C<$VM_JOB>), C<ready>,
C<staprun_opts> (string), C<params> (the module's parameters, after it:
C<stapxx_lines=1>), C<timeout> (seconds staprun may run before it is
stopped with SIGINT, which makes the module's C<end> probes run; default 30),
C<samples> (a module of lj-lua-stacks built without C<time> samples until
its output holds that many samples, with C<sample_sh> and C<stop>; C<taken>
counts the samples taken instead, without C<stop> unless C<< stop => 1 >>
is given too (for a module that prints fewer samples than it takes, as
with maxstacks, rather than one that drops them), and C<hz> is the
module's rate, as C<sample_sh> takes them; C<timeout> then defaults to
120: give the case 60 s more).
The case's status is staprun's (124 when it had to be stopped).

=item C<VM::lua_ready(MS)>

Shell text for C<staprun_sh>'s C<ready>: waits until the target (C<$pid>)
runs its Lua code, then until it has used MS more milliseconds of CPU
time (at most 10 s of wall time), so that the sample starts in the
workload's loop, past the luajit CLI's start.  The signal is the file
C<$LJ_READY> (C<staprun_sh> sets it), which the apps make with
t/apps/go.lua's C<started()>; a target that exits first, or gives no
signal within 60 s, ends the case with status 1 and says so.  CPU time
alone is no signal: on a loaded host the guest's clock runs while its
vCPU waits, so a target 300 ms of CPU time old can still be reading its
script in C, and those samples have no Lua frame.

=item C<VM::sample_sh(CMD, PIDS, SAMPLES [, TIMEOUT [, taken => 1] [, hz => HZ] [, stop => 1]])>

Shell text that runs CMD (a staprun of lj-lua-stacks built without
C<time>: it samples until SIGINT) until its output holds SAMPLES samples
(the sum of its stacks' counts; with C<taken>, of the samples its
statistics say were taken, for options that drop samples).  A session runs in the background.  The
processes PIDS (shell words, evaluated each time, e.g. C<$pid> or
C<$(kids $master; echo $kids)>: C<kids> is in the case preamble) wait,
stopped (SIGSTOP), while its module loads and starts: under TCG that takes the guest about a second of CPU time,
which a spinning target would double for nothing.  Once its start line
("...; press Ctrl-C to stop", at most 60 s) has come (or the session
has ended), they go on (SIGCONT), and the session is stopped with SIGINT when the processes PIDS have used the CPU time
the samples still missing take at the rate seen so far (with a fifth
more; before the first session, 85% of the module's rate, C<hz> samples a
second of CPU time, default 1,000, with a tenth more).  Under TCG a loaded host
gives the guest's timer fewer ticks per second of the target's CPU time
(380 to 850 of 1,000 measured), so when a session falls short another
one samples the rest, up to 4, each after a C<# session N> line (which
LjStacks::parse reads), until TIMEOUT (default 120) seconds of wall
time.  With C<stop>, CMD is a staprun of lj-lua-stacks and each session
gets C<stapxx_samples=MISSING> (a hundredth more): the module stops
itself once it has taken them, so no CPU time is guessed (the session
still ends at TIMEOUT).  Prints the sessions' output (stdout and stderr), then
C<# sampled: N ns of CPU time, W ns of wall time in M s, K sessions, C CPUs>
(the target's CPU time from the start lines to the SIGINTs, and the
wall time from each session's start to its end, more than it sampled;
summed over the sessions; M: the whole; C: the guest's CPUs online, in
/proc/stat); the last session's
status (or the first failed one's) is in C<$rc> (and C<$?>).

=item C<$VM::SAMPLE_DESIGN>

The design effect (Stats) of the guest's CPU samples: every share of
timer samples taken in the VM is asserted with C<< design => $VM::SAMPLE_DESIGN >>
(4), and its claim's floor counts that many samples as one.  The
guest's clock is the host's, so a host that deschedules the qemu thread
that runs the target moves the guest's sampling timer against the
target's work, and the samples come in clusters.  On an idle host they
spread less than independent ones (t/40's gc64 nojit case, 4,400
samples: foo's share had a standard deviation of 0.43 points over 8
sessions, 0.71 binomial); under a build loop on both host cores plus a
CPU spinner on the host and one in the guest, 2.2 times the binomial
variance over 16 sessions and 3 times over 9, and CI's own load
(session 19) moved two of its cases 3.4 points, 4.8 binomial sigmas.
4 bounds what was measured with room; a walker that loses or swaps a
frame moves foo's share by 16.7 points or more (2/3 to
1/2).  Counts of events (calls,
waits, bytes) are exact, not sampled: no design effect.

=item C<VM::nginx_up(%opts)>, C<VM::nginx_down()>

Shell text that starts the debug nginx (C<build/nginx/sbin/nginx>) in the
case dir, waits until it answers, and sets C<$master> and C<$worker> (its
first worker); and shell text that stops it (SIGQUIT to the master) and waits
for it.  Options: C<conf> (the config file, default C<t/apps/nginx.conf>),
C<workers> (default 1; it waits for that many), C<url> (the path it polls,
default C</>), C<env> (shell run first, e.g. C<export HEAVY_N=1000>;
C<TEST_APP_DIR> is already set to C<t/apps>), C<nginx> (another nginx
binary, e.g. Debian's C</usr/sbin/nginx>: its error log goes to the case
dir too).  nginx's own output goes to C<$CASE/nginx.out>.  When nginx
does not answer in 150 tries (30 s and more), or has fewer workers than
asked 5 s later, the case ends there, nginx stopped, with status
C<$VM::NGINX_DOWN> (97) after a line C<# nginx did not answer ...> or
C<# nginx did not start ...> and nginx's output as C<#> notes: the case
fails with its cause, not later on a staprun without a worker's pid.

=item C<VM::stock_d()>

The C<-d> options a module for Debian's stock nginx is built with (it is
built with C<--exec /usr/sbin/nginx>, no process to read): the lua
module nginx loads and its libluajit2, both stripped.

=item C<VM::get_sh(URL [, OUT])>

Shell text that fetches URL in the guest and writes its body to OUT (a
file; standard output by default), exiting 0 on a 2xx response, with no
message on stderr: busybox's wget, which is static (a fork and exec costs about 20 ms under TCG; curl,
with its shared libraries, 350 ms on an idle host and a second on a loaded
one, taken from the target).

=item C<VM::under_wrk(WRK, CMD)>

Shell text that runs CMD (e.g. a staprun) while C<wrk WRK> loads nginx: wrk
starts a second before CMD and is stopped (SIGINT, so it still prints its
C<Requests/sec> line, copied as a C<#> note) when CMD ends, however late the
module starts on a loaded host.  CMD's status is in C<$rc>.

=item C<VM::sh_quote(STRING)>

Quotes a string for sh.

=back

=cut

use strict;
use warnings;
use File::Basename qw(basename);
use File::Path qw(remove_tree);
use Cwd ();
use Digest::SHA ();
use Fcntl ();
use POSIX ();
use Time::HiRes ();
use Test::More ();
use TestUtil;

my $krel_cache;

sub stock_d {
	return ('-d', '/usr/lib/nginx/modules/ngx_http_lua_module.so',
		'-d', Cwd::abs_path('/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2'));
}

sub get_sh {
	my ($url, $out) = @_;
	# (-q does not quiet its errors, e.g. while nginx is not up yet)
	return 'busybox wget -q -O ' . sh_quote($out // '-') . ' ' . sh_quote($url) . ' 2>/dev/null';
}

sub sh_quote {
	my ($s) = @_;
	$s =~ s/'/'\\''/g;
	return "'$s'";
}

sub new {
	my ($class, %o) = @_;
	my $name = $o{name} // basename($0, '.t');
	die "VM->new: bad name '$name'\n" unless $name =~ /^[\w.-]+$/;
	my $out = scratch($name);
	unless (defined $krel_cache) {
		$krel_cache = `$ROOT/dev/vm-run --kernel-release`;
		die "VM: dev/vm-run --kernel-release failed\n" if $? != 0;
		chomp $krel_cache;
	}
	return bless { name => $name, out => $out, krel => $krel_cache, cases => [],
	               build_log => '' }, $class;
}

sub krel      { $_[0]{krel} }
sub out       { $_[0]{out} }

sub ktree {
	my ($self) = @_;
	my $t = "$ROOT/build/kernel/$self->{krel}";
	return $t if -f "$t/System.map" && -f "$t/vmlinux";
	Test::More::fail("no $t with System.map and vmlinux: run make deps (dev/deps step 7)");
	return undef;
}
sub build_log { $_[0]{build_log} }

sub _abs {
	my ($p) = @_;
	return $p =~ m{^/} ? $p : "$ROOT/$p";
}

sub no_guard { return ('-D', 'STP_NO_OVERLOAD') }

# stap arguments for every test module: kbuild without the kernel's -g.
# Debian's kernel sets CONFIG_DEBUG_INFO, so gcc writes DWARF for the
# ~1 MB of C that stap generates, and stap strips it from the .ko: the
# module's sections and machine code are the same without it, and a build
# takes 25% less of gcc's time (lj-lua-stacks: 15.5 s -> 11.6 s, about 4 s
# of the ~60 builds' CPU time each; session 8 in docs/development.md).
# And at -O1 (KCFLAGS comes last on gcc's command line): a build of
# lj-lua-stacks takes 11.5 s of CPU time instead of 13.7 (16%, on each
# of the ~64 builds of a make test), while the sampling probe costs the same in the guest (42 to
# 46 us a sample against 35 to 49 at -O2, three sessions of each, one VM
# boot, 2026-12-06).  The tests check what the module does, not how gcc
# compiles it.  stap keys its configuration cache (stapconf) on these, so
# every build of a run passes the same.
sub quick_build {
	return ('-B', 'CONFIG_DEBUG_INFO=', '-B', 'CONFIG_DEBUG_INFO_BTF_MODULES=', '-B', 'KCFLAGS=-O1');
}

# Where the VM tests' time goes: one line per build batch, VM job and case,
# appended to t/out/times.log (make test starts it anew; dev/test-times
# sums it up per test file).
sub _times {
	my ($self, $kind, $secs, $what) = @_;
	my $f = "$ROOT/t/out/times.log";
	open(my $fh, '>>', $f) or return;
	printf $fh "%s %s %s %.1f %s\n", POSIX::strftime('%H:%M:%S', localtime),
	       $self->{name}, $kind, $secs, $what;
	close $fh;
	return;
}

sub build {
	my ($self, $name, $script, %o) = @_;
	my ($ko) = $self->builds([$name, $script, %o]);
	return $ko;
}

# The stap++ command line that builds NAME.ko.
sub _build_argv {
	my ($self, $tree, $name, $script, %o) = @_;
	die "build: bad module name '$name'\n" unless $name =~ /^\w+$/;
	if (!defined $script) {
		die "build: no script and no source\n" unless defined $o{source};
		$script = "$self->{out}/$name.sxx";
		spit($script, $o{source});
	}
	my @argv = ("$ROOT/stap++", '-p4', '-r', $tree, '-m', $name);
	push @argv, '--exec', _abs($o{exec}) if defined $o{exec};
	push @argv, no_guard() unless grep { /^STP_(?:NO_)?OVERLOAD/ } @{ $o{args} || [] };
	push @argv, @{ $o{args} || [] };
	push @argv, _abs($script);
	push @argv, '--', quick_build(), @{ $o{stap_args} || [] };
	return \@argv;
}

# SystemTap's configuration tests (stapconf: about 33 s of CPU time) are
# computed by the first build with a given runtime and options, and
# cached; builds that start before that one ends compute them too (make
# test starts four at once, and CI always starts with an empty cache).
# warm_stapconf(TREE) makes sure they are cached for the test modules'
# options, once a run (t/out/.stapconf-warm): the first caller builds a
# module of one line under a lock the others wait on.  t/15 calls it too,
# to copy the result into its own cache.
sub warm_stapconf {
	my ($tree) = @_;
	my $warm = "$ROOT/t/out/.stapconf-warm";
	return if -e $warm;
	File::Path::make_path("$warm.d");
	open(my $lk, '>>', "$warm.lock") or return;
	flock($lk, Fcntl::LOCK_EX) or return;
	unless (-e $warm) {
		my ($rc, $log) = run_cmd({ cwd => "$warm.d", merge => 1 }, "$ROOT/stap++", '-p4', '-r', $tree,
		                         '-m', 'stapxx_warm', no_guard(), '-e', 'probe begin { exit() }',
		                         '--', quick_build());
		Test::More::diag("warming SystemTap's cache failed (status $rc):\n$log") if $rc;
		spit($warm, '');
	}
	close $lk;
	return;
}

# Runs the build ARGV of module NAME in the scratch dir; returns its status
# and output.  With $STAPXX_MODULE_CACHE (make test sets it to a dir it
# empties first), a module that another test of the run built with the
# very same command line (module name, script, target, options: stap -m
# NAME never uses SystemTap's own cache) is linked from there instead:
# the first to ask builds it while the others wait on its lock.  A script
# written from source => TEXT lies in the scratch dir, so its command line
# is the test's own.
sub _build_shared {
	my ($self, $name, $argv) = @_;
	my $dir = $ENV{STAPXX_MODULE_CACHE};
	return run_cmd({ cwd => $self->{out}, merge => 1 }, @$argv) unless $dir;
	my $ko = "$self->{out}/$name.ko";
	my $key = Digest::SHA::sha1_hex(join("\0", @$argv));
	File::Path::make_path($dir);
	open(my $lk, '>>', "$dir/$key.lock") or return (255, "cannot open $dir/$key.lock: $!");
	flock($lk, Fcntl::LOCK_EX) or return (255, "cannot lock $dir/$key.lock: $!");
	if (-f "$dir/$key.ko") {
		my $from = slurp("$dir/$key.from") // '?';
		return link("$dir/$key.ko", $ko) ? (0, "stap++: the module built by $from for the same command\n")
		                                  : (255, "cannot link $dir/$key.ko to $ko: $!");
	}
	my ($rc, $log) = run_cmd({ cwd => $self->{out}, merge => 1 }, @$argv);
	if ($rc == 0 && -f $ko) {
		# (the cache is a convenience: a build never fails on it)
		link($ko, "$dir/$key.ko") if eval { spit("$dir/$key.from", $self->{name}); 1 };
	}
	close $lk;
	return ($rc, $log);
}

# One build in a child process: its status and output in
# $out/.build-K.log ("STATUS\nOUTPUT"), whatever happens in it (a die is
# the log's text, status 255).
sub _build_child {
	my ($self, $k, $name, $argv) = @_;
	my ($rc, $log) = eval { $self->_build_shared($name, $argv) };
	($rc, $log) = (255, "the build's process died: " . ($@ || "no error\n")) unless defined $rc;
	eval { spit("$self->{out}/.build-$k.log", "$rc\n$log"); 1 }
		or print STDERR "VM::builds: $name: cannot write its log: $@";
	POSIX::_exit(0);
}

# What the host looked like when a build failed without saying why (its
# process killed, or no log): memory, disks, load, the kernel's OOM killer.
sub _host_state {
	my $s = '';
	for my $cmd ('uptime', 'free -m', "df -h $ROOT/t/out /tmp", 'cat /proc/sys/kernel/pid_max; ls /proc | grep -c "^[0-9]"',
		'dmesg 2>/dev/null | grep -iE "oom|killed process" | tail -n 5') {
		$s .= "\$ $cmd\n" . (`$cmd 2>&1` // '');
	}
	return $s;
}

# A build run again (builds) is said at the end of make test, passed or
# failed (t/out/.diag/retried.txt, printed by dev/test-digest): what made it
# fail is never hidden.
sub _note_retry {
	my ($msg) = @_;
	my $test = $0 =~ m{([\w.-]+)\.t$} ? $1 : $0;
	open(my $fh, '>>', "$ROOT/t/out/.diag/retried.txt") or return;
	print $fh "--- t/$test.t\n$msg";
	close $fh;
}

# Builds SPECS ([module name, script, %options] each) on the host,
# $STAPXX_BUILD_JOBS (default 2) at a time; returns each one's .ko path,
# undef for a build that failed (its log in a diag).  A build whose
# process ended without a log or was killed by a signal did not fail in
# stap++: that is said, with the host's state, and the build is run once
# more on its own.
sub builds {
	my ($self, @specs) = @_;
	my $tree = $self->ktree or return map { undef } @specs;
	my @argv = map { $self->_build_argv($tree, @$_) } @specs;
	my $jobs = $ENV{STAPXX_BUILD_JOBS} || 2;
	my $t0 = Time::HiRes::time();
	warm_stapconf($tree);
	my %running;
	my @todo = (0 .. $#specs);
	my (%tried, @ko, @logs);
	while (@todo || %running) {
		while (@todo && keys(%running) < $jobs) {
			my $k = shift @todo;
			unlink "$self->{out}/$specs[$k][0].ko", "$self->{out}/.build-$k.log";
			my $pid = fork() // die "fork: $!";
			$self->_build_child($k, $specs[$k][0], $argv[$k]) unless $pid;
			$running{$pid} = $k;
		}
		my $pid = waitpid(-1, 0);
		last if $pid < 0;
		my $k = delete $running{$pid} // next;
		my $status = $?;
		my $name = $specs[$k][0];
		my $raw = slurp("$self->{out}/.build-$k.log");
		unlink "$self->{out}/.build-$k.log";
		my ($rc, $log) = defined $raw && $raw =~ /\A(\d+)\n(.*)\z/s ? ($1, $2)
			: (255, "the build's process (pid $pid) left no log; its wait status: $status\n");
		my $why = !defined $raw || $rc >= 128 ? "not stap++'s failure" : '';
		$logs[$k] = "\$ @{ $argv[$k] }\n$log";
		my $ko = "$self->{out}/$name.ko";
		if ($rc == 0 && -f $ko) {
			$ko[$k] = $ko;
		} elsif ($why && !$tried{$k}++) {
			my $msg = "module '$name' did not build (status $rc, $why), built again:\n$logs[$k]" . _host_state();
			Test::More::diag($msg);
			_note_retry($msg);
			push @todo, $k;
		} else {
			Test::More::diag("module '$name' failed to build (status $rc):\n$logs[$k]"
				. ($why ? _host_state() : ''));
		}
	}
	$self->{build_log} = $logs[-1];
	$self->_times('build', Time::HiRes::time() - $t0, join(',', map { $_->[0] } @specs));
	return map { $ko[$_] } 0 .. $#specs;
}

sub case {
	my ($self, $name, $shell, %o) = @_;
	die "case: bad name '$name'\n" unless $name =~ /^[\w-]+$/;
	die "case: duplicate name '$name'\n" if grep { $_->{name} eq $name } @{ $self->{cases} };
	for my $f (@{ $o{files} || [] }) {
		die "case $name: a file is undefined (a failed build?)\n" unless defined $f;
		die "case $name: '$f' is not a file\n" unless -f _abs($f);
	}
	push @{ $self->{cases} }, { name => $name, shell => $shell,
								files => $o{files} || [], timeout => $o{timeout} // 120 };
	return;
}

sub staprun_sh {
	my (%o) = @_;
	die "staprun_sh: need target and module\n" unless defined $o{target} && defined $o{module};
	my $ready = $o{ready} // 'sleep 0.5';
	my $opts  = $o{staprun_opts} // '';
	my $mod   = sh_quote($o{module});
	$mod .= " $o{params}" if defined $o{params};
	my $run;
	if (defined $o{samples}) {
		$run = sample_sh(qq{staprun $opts -x \$pid "\$VM_JOB"/$mod}, '$pid', $o{samples}, $o{timeout},
			taken => $o{taken}, hz => $o{hz}, stop => $o{stop} // !$o{taken});
	} else {
		my $t = $o{timeout} // 30;
		$run = qq{timeout -s INT -k 10 $t staprun $opts -x \$pid "\$VM_JOB"/$mod\nrc=\$?\n};
	}
	return <<"SH";
export LJ_READY="\$CASE/lua.ready"
rm -f "\$LJ_READY"
$o{target} > "\$CASE/target.log" 2>&1 &
pid=\$!
$ready
${run}kill \$pid 2>/dev/null
kill -CONT \$pid 2>/dev/null
wait \$pid 2>/dev/null
exit \$rc
SH
}

sub lua_ready {
	my ($ms) = @_;
	die "lua_ready: bad milliseconds '$ms'\n" unless $ms =~ /^[1-9][0-9]*$/;
	return <<"SH";
i=0; until [ -e "\$LJ_READY" ]; do
	kill -0 \$pid 2>/dev/null && [ \$i -lt 600 ] || { echo "VM test: the target did not start its Lua code (no \$LJ_READY)" >&2; kill \$pid 2>/dev/null; exit 1; }
	i=\$((i + 1)); sleep 0.1
done
v0=0; { read -r v0 x < /proc/\$pid/schedstat; } 2>/dev/null
i=0; until { read -r v x < /proc/\$pid/schedstat; } 2>/dev/null && [ \$(((v - v0) / 1000000)) -ge $ms ]; do i=\$((i + 1)); [ \$i -ge 100 ] && break; sleep 0.1; done
SH
}

# the design effect of the guest's CPU samples (see the POD)
our $SAMPLE_DESIGN = 4;

sub sample_sh {
	my ($cmd, $pids, $samples, $timeout, %o) = @_;
	$timeout //= 120;
	# the samples printed (their stacks' counts), or taken (the statistics)
	my $count = $o{taken}
		? q{sed -n 's/^WARNING: lj-lua-stacks: \([0-9]*\) samples taken,.*/\1/p' "$1" | awk '{ n += $1 } END { printf "%d\n", n }'}
		: q{awk '/^\t[0-9]+$/ { n += substr($0, 2) } END { printf "%d\n", n }' "$1"};
	my $kill = $timeout + 30;
	# stop: the module stops itself once the samples missing are taken
	# (lj-lua-stacks' stapxx_samples), so a session neither overshoots
	# nor falls short when the guest's timer ticks less than guessed
	# (a hundredth more: stacks dropped as inconsistent are not printed,
	# and a second session for a handful of samples costs seconds)
	my $stop = $o{stop} ? ' stapxx_samples=$(((' . $samples . ' - got) * 101 / 100 + 2))' : '';
	my $cpu_stop = $o{stop} ? ': the module stops itself' : '[ $u -ge $ns ] && break';
	# the first session's guess: 85% of the module's rate per second of
	# the target's CPU time (880 to 1,150 of 1,000 seen in a loaded make
	# test; a session that falls short costs a second one, about 4 s)
	my $guess = int(0.85 * ($o{hz} // 1000));
	# (centiseconds from up_cs, integer arithmetic: no fork but sleep's,
	# see the case preamble in run)
	my $guess_ns = 'ns=$((11 * (' . $samples . ' - got) * 100000000 / ' . $guess . '))';
	return <<"SH";
cpu_ns() { cpu=0; for p in $pids; do { read -r v x < /proc/\$p/schedstat && cpu=\$((cpu + v)); } 2>/dev/null; done; }
counted() { $count; }
: > "\$CASE/sample.out"
up_cs; w0=\$up_cs
got=0 used=0 wall=0 k=0 rc=0
while [ \$got -lt $samples ] && [ \$k -lt 4 ] && [ \$rc -eq 0 ] && { up_cs; [ \$((up_cs - w0)) -lt \$((100 * $timeout)) ]; }; do
	k=\$((k + 1))
	# CPU ns for the samples missing: the guess at first (a tenth more), then the rate seen (60 at least; a fifth more)
	if [ \$got -gt 0 ]; then
		r=\$((used / got)); [ \$r -gt 16666666 ] && r=16666666
		ns=\$((12 * ($samples - got) * r / 10))
	else
		$guess_ns
	fi
	[ \$k -gt 1 ] && echo "# session \$k" >> "\$CASE/sample.out"
	up_cs; t0=\$up_cs
	left=\$(($timeout - (up_cs - w0) / 100))
	# the targets wait, stopped, while the module loads and starts
	kill -STOP $pids 2>/dev/null
	timeout -s INT -k 10 $kill $cmd$stop > "\$CASE/s\$k.out" 2>&1 &
	sp=\$!
	i=0
	until started "\$CASE/s\$k.out"; do
		kill -0 \$sp 2>/dev/null || break
		i=\$((i + 1)); [ \$i -ge 600 ] && break
		sleep 0.1
	done
	kill -CONT $pids 2>/dev/null
	cpu_ns; c0=\$cpu
	u=0 i=0
	# 4 polls a second: the time left is counted in them
	while kill -0 \$sp 2>/dev/null; do
		cpu_ns; u=\$((cpu - c0))
		$cpu_stop
		i=\$((i + 1)); [ \$i -ge \$((4 * left)) ] && break
		sleep 0.25
	done
	kill -INT \$sp 2>/dev/null
	wait \$sp
	rc=\$?
	up_cs; wall=\$((wall + (up_cs - t0) * 10000000))
	cat "\$CASE/s\$k.out" >> "\$CASE/sample.out"
	used=\$((used + u))
	got=\$((got + \$(counted "\$CASE/s\$k.out")))
done
cat "\$CASE/sample.out"
ncpu=0
while read -r l _; do case \$l in cpu[0-9]*) ncpu=\$((ncpu + 1));; esac; done < /proc/stat
up_cs; echo "# sampled: \$used ns of CPU time, \$wall ns of wall time in \$(((up_cs - w0) / 100)) s, \$k sessions, \$ncpu CPUs"
(exit \$rc)
SH
}

# nginx_up's status when nginx never answered or its workers never came
our $NGINX_DOWN = 97;

sub nginx_up {
	my (%o) = @_;
	my $conf = _abs($o{conf} // 't/apps/nginx.conf');
	my $n    = $o{workers} // 1;
	my $url  = $o{url} // '/';
	my $env  = $o{env} // ':';
	# (Debian's stock nginx opens its built-in error log before the
	# config: -e gives it the prefix's)
	my $nginx = $o{nginx} ? "$o{nginx} -e logs/error.log" : "$ROOT/build/nginx/sbin/nginx";
	return <<"SH";
mkdir -p logs
export TEST_APP_DIR=$ROOT/t/apps
$env
$nginx -p "\$CASE" -c $conf -g 'worker_processes $n;' > nginx.out 2>&1 &
ngx=\$!
up=
for i in \$(seq 1 150); do @{[ get_sh("http://127.0.0.1:8080$url", '/dev/null') ]} && up=1 && break; sleep 0.2; done
master=; { read -r master < logs/nginx.pid; } 2>/dev/null
if [ -z "\$up" ] || [ -z "\$master" ]; then
	echo "# nginx did not answer on http://127.0.0.1:8080$url in 150 tries"
	sed 's/^/# nginx.out: /' nginx.out; tail -n 5 logs/error.log 2>/dev/null | sed 's/^/# error.log: /'
	kill \$ngx 2>/dev/null; wait
	exit $NGINX_DOWN
fi
for i in \$(seq 1 50); do kids \$master; [ \$nkids -ge $n ] && break; sleep 0.1; done
kids \$master
if [ \$nkids -lt $n ]; then
	echo "# nginx did not start $n worker(s) in 5 s (\$nkids running)"
	kill \$master; wait
	exit $NGINX_DOWN
fi
worker=\${kids%% *}
SH
}

sub under_wrk {
	my ($wrk, $cmd) = @_;
	return <<"SH";
wrk -d 600s $wrk > wrk.txt 2>&1 &
wp=\$!
sleep 1
$cmd
rc=\$?
kill -INT \$wp 2>/dev/null
wait \$wp
grep -h 'Requests/sec' wrk.txt | sed 's/^/# /'
SH
}

sub nginx_down {
	return "kill -QUIT \$master\nwait\n";
}

# Every job and case script starts with these.  Under TCG an exec of a
# dynamic binary costs the guest about 90 ms of CPU time (ld.so and
# libc's relocations), taken from the target or from staprun's start;
# busybox's static one about 35.  So the scripts read the clock from
# /proc/uptime (up_cs: centiseconds since boot, a shell builtin).
use constant UP_CS => <<'SH';
up_cs() { read -r up_cs _ < /proc/uptime; up_cs=$((${up_cs%.*} * 100 + 1${up_cs#*.} - 100)); }
busy_cs() { read -r _ u n s _ _ q sq _ < /proc/stat; busy_cs=$((u + n + s + q + sq)); }
SH
# The case scripts wait in loops for a line in a file, for a session's
# start, for workers, and they ask again every 0.1 s.  Under TCG an exec
# of grep costs the guest about 90 ms of CPU time, of pgrep about 280
# (procps and its libraries), so they ask with builtins:
# - has GLOB FILE: FILE has a line that the case pattern GLOB matches
#   ('ready' is the line "ready", 'ready*' a line that starts with it);
# - started FILE: FILE has a sample's start line ("...; press Ctrl-C to
#   stop");
# - kids PID: the PIDs of PID's children (those its main thread forked:
#   nginx's workers) in $kids, their number in $nkids, from
#   /proc/PID/task/PID/children.
# (HAS_SH alone: for shell text that the host runs too, LjWait::ngx_until)
use constant HAS_SH => <<'SH';
has() { [ -f "$2" ] && while IFS= read -r __l; do case $__l in $1) return 0;; esac; done < "$2"; return 1; }
SH
# The case scripts run in busybox's sh (static: an exec of it costs the
# guest about 35 ms, dash's about 90), whose read takes a timeout in
# fractions of a second: their sleep is a read that times out on a FIFO
# that nobody writes, without a fork.  Busybox's sleep cost the guest
# 21 ms of CPU time a call (40 calls of 0.1 s: 0.85 s busy, against
# 0.06 s so), and the poll loops call it 4 to 10 times a second for as
# long as a case runs.
use constant CASE_PREAMBLE => UP_CS . HAS_SH . <<'SH';
__nap=/tmp/.nap.$$; [ -p "$__nap" ] || mkfifo "$__nap"
sleep() { read -t "$1" __x <> "$__nap"; return 0; }
started() { has '*; press Ctrl-C to stop' "$1"; }
kids() { kids=; { read -r kids < "/proc/$1/task/$1/children"; } 2>/dev/null; set -- $kids; nkids=$#; }
SH
sub run {
	my ($self, %o) = @_;
	my @cases = @{ $self->{cases} };
	$self->{cases} = [];
	my $vmdir  = "$self->{out}/vm";
	my $script = "$self->{out}/job.sh";
	my (%seen, @files);
	my $total = 0;
	# (the cases' dirs made by one mkdir: an exec costs the guest 90 ms)
	my $job = "# generated by t/lib/VM.pm for $self->{name}\n"
		. (@cases ? 'mkdir -p ' . join(' ', map { "\"\$VM_JOB/$_->{name}\"" } @cases) . "\n" : '');
	for my $c (@cases) {
		for my $f (@{ $c->{files} }) {
			my $a = _abs($f);
			next if $seen{$a}++;
			push @files, $a;
		}
		my $n = $c->{name};
		$total += $c->{timeout};
		spit("$self->{out}/case-$n.sh", CASE_PREAMBLE . $c->{shell});
		push @files, "$self->{out}/case-$n.sh";
		$job .= <<"SH";
echo "== case $n"
up_cs; t0=\$up_cs; busy_cs; b0=\$busy_cs
(cd "\$VM_JOB/$n" && CASE="\$VM_JOB/$n" exec timeout -k 5 $c->{timeout} busybox sh "\$VM_JOB/case-$n.sh") > "\$VM_JOB/$n/output" 2>&1
rc=\$?
echo \$rc > "\$VM_JOB/$n/status"
cat "\$VM_JOB/$n/output"
up_cs; busy_cs; echo "== case $n: status \$rc (\$(((up_cs - t0) / 100)) s, guest busy \$(((busy_cs - b0) / 100)) s)"
SH
	}
	spit($script, UP_CS . "${job}exit 0\n");

	remove_tree($vmdir);
	my @argv = ("$ROOT/dev/vm-run", '--timeout', $o{timeout} // $total + 60, '--out', $vmdir);
	push @argv, '--cpus', $o{cpus} if $o{cpus};
	push @argv, '--mem', $o{mem} if $o{mem};
	push @argv, $script, @files;

	my $t0 = Time::HiRes::time();
	my ($rc, $stdout, $stderr) = run_cmd({ stdout => "$self->{out}/vm.stdout",
	                                       stderr => "$self->{out}/vm.stderr" }, @argv);
	# A guest that hung while booting, before the job started, ran nothing
	# (qemu's TCG has hung there too: a soft lockup in cryptomgr_test in
	# one CI run): boot once more, and say so.  A hang in the job fails.
	if ($rc != 0 && (slurp("$vmdir/.vm/console.log") // '') !~ /^==stap\+\+ vm-run: job start==/m) {
		Test::More::diag("dev/vm-run: the guest never started the job; booting again\n" . ($stderr =~ s/\s+$//r));
		remove_tree($vmdir);
		($rc, $stdout, $stderr) = run_cmd({ stdout => "$self->{out}/vm.stdout",
		                                    stderr => "$self->{out}/vm.stderr" }, @argv);
	}
	my %r = (status => $rc, stdout => $stdout, stderr => $stderr,
	         dmesg => slurp("$vmdir/.vm/dmesg"), job => $vmdir, cases => {});
	for my $c (@cases) {
		my $d = "$vmdir/$c->{name}";
		my $st = slurp("$d/status");
		chomp $st if defined $st;
		$r{cases}{ $c->{name} } = {
			status => (defined $st && $st =~ /^\d+$/) ? $st + 0 : undef,
			output => slurp("$d/output") // '',
			dir    => $d,
		};
	}
	Test::More::note("dev/vm-run: " . ($r{stderr} =~ s/\s+$//r));
	my $ticks = slurp("$vmdir/.vm/cpu_ticks");
	$self->_times('vm', Time::HiRes::time() - $t0, scalar(@cases) . ' cases' .
	              (defined $ticks && $ticks =~ /^(\d+)/ ? sprintf(', guest cpu %.1f s', $1 / 100) : ''));
	# (guest busy: the guest's own CPU time over its vCPUs, /proc/stat)
	$self->_times('case', $2, "$1 busy $3") while $stdout =~ /^== case (\S+): status \d+ \((\d+) s, guest busy (\d+) s\)/mg;
	return \%r;
}

1;
