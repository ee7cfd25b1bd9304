# SPDX-License-Identifier: GPL-2.0-or-later
package Bpf;

=head1 NAME

Bpf - run the eBPF backend of lj-lua-stacks (--runtime=bpf) on this host
against real targets, for the t/7*.t tests.

=head1 FUNCTIONS

=over 4

=item C<spawn([{ stdout => FILE },] CMD...)>

Starts CMD in the background (stdout and stderr to /dev/null, or stdout
to FILE); returns its pid once CMD runs (the child has exec'd it: a
close-on-exec pipe tells), so /proc/PID/exe is CMD's, never perl's.
Dies if the exec fails.

=item C<wait_end(H, SECONDS)>

Waits at most SECONDS for the session H (of C<start>) to end by itself
(a target that exits ends it); returns whether it did.

=item C<stacks(TARGET, ARGS...)>

Runs C<./stap++ --runtime=bpf samples/lj-lua-stacks.sxx TARGET ARGS> (TARGET:
C<['-x', PID]> or C<['--master', PID]>; ARGS: --arg values as NAME=VALUE).
Returns (status, stdout, stderr, parsed), parsed by LjStacks::parse from
stdout and stderr.

=item C<stacks_cpu(TARGET, PIDS, CPU, ARGS...)>

As C<stacks>, but until the processes PIDS (array ref: the target, or the
workers of --master) have used CPU more seconds of CPU time after the start
line ("...; press Ctrl-C to stop"; the session has time=0 and is stopped
with SIGINT then): a case's samples follow from the work its target did,
not from the wall clock of a host that other tests keep busy.  Gives up
(SIGINT all the same) after 60 s without a start line or 30 s plus 20
times CPU of wall time.  Returns (status, stdout, stderr, parsed, the CPU
seconds used, the wall seconds).

=item C<stacks_samples(TARGET, PIDS, SAMPLES, ARGS...)>

As C<stacks_cpu>, until the sessions printed SAMPLES samples (the sum of
their stacks' counts): each session gets C<samples=MISSING> (a hundredth
more) and stops itself once it has taken them, bounded by three times
the CPU time they take (at 1,000 a second at first, then at the rate
seen); when it falls short, another one samples the rest, up to 4.  Their outputs are parsed together (LjStacks::parse, separated by
C<# session N> lines); returns what C<stacks_cpu> returns, the status
the last session's and the outputs concatenated.

=item C<start(TARGET, ARGS...)>, C<finish(H [, SIGNAL])>

The two halves of C<stacks>: C<start> runs the session in the background
and waits (at most 60 s) for its start line; it returns a handle, whose
C<started> is true when the line came.  C<start_sample(SAMPLE, TARGET,
ARGS...)> does the same for another sample (SAMPLE: its name, e.g.
C<lj-lua-off-cpu>); C<run(SAMPLE, TARGET, ARGS...)> runs one to its end
and returns (status, stdout, stderr).  C<finish> sends SIGNAL (e.g.
C<'INT'>) unless the session has ended, waits for it and returns what
C<stacks> returns.

=item C<go_session(%o)>

Runs o{cmd} (an array ref: a workload that prints C<ready>, then waits
for the file named by its argument C<GO>, a placeholder in o{cmd}, before
its first event) under a session of o{sample} with --arg values o{args}:
the session starts before the workload's first event, and ends when the
workload exits (at most 10 s later; else SIGINT).  o{after}: a sub run
once the workload was told to go, given the session's handle and the
workload's pid.  Returns
a hash ref: status, out, err (the session's), app (the workload's
stdout), started, ended (by itself).

=item C<ready(PID)>

Waits (at most 60 s) until the process PID has used 0.1 s of CPU time:
past its dynamic loader (whose /etc/ld.so.cache mapping a session that
starts too early warns about) and into its Lua code.  Returns whether it
did.

=item C<cpu(PIDS...)>

The CPU time (seconds) the processes PIDS have used (/proc/PID/schedstat;
a process gone counts as 0).

=item C<stripped(PATH [, NAME [, DWARF]])>

A copy of the binary PATH as a distribution ships it (C<strip --strip-all>):
only the exported C<.dynsym> remains, no symbol table and no DWARF, so a
LuaJIT's layouts come from the layout database (layouts/).  With DWARF
true the debug sections stay (C<--keep-section=.debug_*>), as with a
-dbgsym package: for nginx, whose own types the database does not hold.
Made once per test file in t/out, named NAME (a library's soname) or
after PATH; dies unless C<readelf> shows C<.dynsym>, no C<.symtab>, and
DWARF only when asked for.

=item C<check_reads(NAME, TEXT, TOOL, EVENT, MAX)>

What a stack taken at each EVENT (wait, call, yield, sampled
allocation) read of the target's memory (issue 26), from TOOL's line in
TEXT: on average more than 0 and at most MAX reads (counts that do not
depend on the machine, so a bound holds them), the 99th percentile at
least the average.  Returns the average.

=item C<check_cost(NAME, TEXT, TOOL, EVENTS, PROBE)>

TOOL's line in TEXT on the time its PROBE took (issue 26): half of the
EVENTS at most M us, 99% at most P us, with 0 < M <= P (either may be
"(over)" the histogram's last bucket, then P is too).  Returns (M, P).

=item C<check_accounted(NAME, PARSED, NOVM)>

The statistics account for every sample taken: the Lua stacks, those not
running Lua, before the VM was found, skipped and dropped add up to the
samples taken, which the per-process line counts too.  With NOVM (a
target without the symbols that name its VM), at most 1% of the samples
came before the VM was found: it is looked for in the process's memory
as the session starts.

=item C<nginx(%o)>

Starts the seed nginx app (o{conf}, default t/apps/nginx.conf, on a free
port, prefix under t/out; a copy named nginx.conf, which names its chunks;
it answers on o{url}, default /) with o{workers}, o{nojit}, o{heavy}, o{nginx} (the
binary, default build/nginx/sbin/nginx), o{libs} (a directory for
LD_LIBRARY_PATH: the libluajit it loads); returns { master, workers
(array ref), port, prefix } once it answers.  C<nginx_stop(N)> stops it.
The nginx is build/nginx, or with o{stock} Debian's stripped /usr/sbin/nginx
with its ndk and lua modules loaded (Debian's C<load_module> lines before the
config).

=item C<stock_conf(TEXT, FILE)>

The config TEXT (of FILE, for errors) for Debian's stock nginx: its
C<load_module> lines on top, and the temporary files in the prefix (the
VM tests run the stock nginx with it too).

=item C<load(PORT, URL [, CONNS])>

Starts wrk on the URL with CONNS connections (default 4) until it is
stopped (C<load_stop(PID)>, after the session: never a duration that a
slow start of the session could outlast); returns its pid.

=item C<trickle(PORT, URL, PER_SECOND)>

Starts a process that sends GET URL about PER_SECOND times a second, each
on a connection of its own (the kernel spreads connections over the
workers by hash), until it is stopped (C<load_stop(PID)>): events for
idle workers' event loops at a small cost, where wrk would keep both
cores busy.  Returns its pid.

=back

=cut

use strict;
use warnings;
use POSIX ();
use File::Path qw(make_path);
use Time::HiRes qw(time sleep);
use List::Util ();
use TestUtil;
use LjStacks;
use Test::More ();

sub spawn {
	my $o = ref $_[0] eq 'HASH' ? shift : {};
	my @cmd = @_;
	# (perl opens pipes close-on-exec: the parent reads EOF at the exec)
	pipe(my $r, my $w) or die "pipe: $!";
	my $pid = fork() // die "fork: $!";
	if (!$pid) {
		close $r;
		open(STDIN, '<', '/dev/null');
		open(STDOUT, '>', $o->{stdout} // '/dev/null');
		open(STDERR, '>', '/dev/null');
		{ exec { $cmd[0] } @cmd; }
		syswrite $w, "exec $cmd[0]: $!";
		POSIX::_exit(127);
	}
	close $w;
	my $n = sysread($r, my $err, 512);
	close $r;
	die "Bpf::spawn: $err\n" if $n;
	return $pid;
}

sub run {
	my ($sample, $target, @args) = @_;
	return run_cmd($STAPXX, '--runtime=bpf', "$ROOT/samples/$sample.sxx",
		@$target, map { ('--arg', $_) } @args);
}

sub stacks {
	my ($target, @args) = @_;
	my ($st, $out, $err) = run('lj-lua-stacks', $target, @args);
	return ($st, $out, $err, LjStacks::parse("$out\n$err"));
}

sub cpu {
	my $ns = 0;
	for my $pid (@_) {
		my $s = slurp("/proc/$pid/schedstat") // next;
		$ns += (split ' ', $s)[0];
	}
	return $ns / 1e9;
}

my $sessions = 0;

sub start {
	return start_sample('lj-lua-stacks', @_);
}

sub start_sample {
	my ($sample, $target, @args) = @_;
	my $base = "$ROOT/t/out/.bpf.$$." . ++$sessions;
	make_path("$ROOT/t/out");
	my $pid = fork() // die "fork: $!";
	if (!$pid) {
		open(STDIN, '<', '/dev/null');
		open(STDOUT, '>', "$base.out");
		open(STDERR, '>', "$base.err");
		my @cmd = ($STAPXX, '--runtime=bpf', "$ROOT/samples/$sample.sxx", @$target,
			map { ('--arg', $_) } @args);
		{ exec { $cmd[0] } @cmd; }
		POSIX::_exit(127);
	}
	my $h = { pid => $pid, base => $base, started => 0 };
	my $t0 = time;
	while (!_ended($h) && time - $t0 <= 60) {
		return $h if $h->{started} = (slurp("$base.err") // '') =~ /; press Ctrl-C to stop$/m;
		sleep 0.05;
	}
	return $h;
}

# Whether the session H has ended (its status kept).
sub _ended {
	my ($h) = @_;
	return 1 if defined $h->{status};
	return 0 unless waitpid($h->{pid}, POSIX::WNOHANG()) == $h->{pid};
	$h->{status} = $? & 127 ? 128 + ($? & 127) : $? >> 8;
	return 1;
}

sub wait_end {
	my ($h, $secs) = @_;
	my $t0 = time;
	until (_ended($h)) {
		return 0 if time - $t0 > $secs;
		sleep 0.05;
	}
	return 1;
}

sub finish {
	my ($h, $sig) = @_;
	if (!_ended($h)) {
		kill $sig, $h->{pid} if $sig;
		waitpid($h->{pid}, 0);
		$h->{status} = $? & 127 ? 128 + ($? & 127) : $? >> 8;
	}
	my ($out, $err) = map { slurp("$h->{base}.$_") // '' } qw(out err);
	unlink "$h->{base}.out", "$h->{base}.err";
	return ($h->{status}, $out, $err, LjStacks::parse("$out\n$err"));
}

sub go_session {
	my (%o) = @_;
	my ($go, $app) = map { "$ROOT/t/out/go.$$.$_" } qw(go app);
	unlink $go, $app;
	make_path("$ROOT/t/out");
	my $pid = spawn({ stdout => $app }, map { $_ eq 'GO' ? $go : $_ } @{ $o{cmd} });
	my $t0 = time;
	sleep 0.02 until (slurp($app) // '') =~ /^ready$/m || time - $t0 > 30;
	my $h = start_sample($o{sample}, ['-x', $pid], @{ $o{args} // [] });
	open(my $fh, '>', $go) or die "$go: $!";
	close $fh;
	$o{after}->($h, $pid) if $o{after};
	waitpid($pid, 0);
	my %r = (started => $h->{started}, ended => wait_end($h, 10));
	@r{qw(status out err)} = finish($h, 'INT');
	$r{app} = slurp($app) // '';
	unlink $go, $app;
	return \%r;
}

sub ready {
	my ($pid) = @_;
	my $t0 = time;
	while (time - $t0 < 60) {
		return 1 if cpu($pid) >= 0.1;
		sleep 0.02;
	}
	return 0;
}

sub stacks_cpu {
	my ($target, $pids, $cpu, @args) = @_;
	my $h = start($target, 'time=0', @args);
	my ($used, $w0) = (0, time);
	if ($h->{started}) {
		my $c0 = cpu(@$pids);
		until (_ended($h)) {
			$used = cpu(@$pids) - $c0;
			last if $used >= $cpu || time - $w0 > 30 + 20 * $cpu;
			sleep 0.05;
		}
	}
	return (finish($h, 'INT'), $used, time - $w0);
}

sub stacks_samples {
	my ($target, $pids, $samples, @args) = @_;
	my ($got, $used, $wall, $st, $out, $err, @all) = (0, 0, 0, 0, '', '');
	for my $k (1 .. 4) {
		# the sample stops itself once it has taken the samples missing
		# (a hundredth more: inconsistent stacks are not printed); the
		# CPU time they take, 1,000 a second at first, then the rate seen
		# (at most 10 times slower), three times over, is only a bound
		my $missing = $samples - $got;
		my $cpu = 3 * $missing * ($got ? List::Util::min($used / $got, 0.01) : 1 / 1000);
		my ($s, $o, $e, $p, $u, $w) = stacks_cpu($target, $pids, $cpu, @args,
			'samples=' . (int($missing * 1.01) + 2));
		($st, $out, $err) = ($s, $out . $o, $err . $e);
		push @all, ($k > 1 ? "# session $k\n" : '') . "$o\n$e";
		($got, $used, $wall) = ($got + $p->{total}, $used + $u, $wall + $w);
		# (a session that printed nothing would size the next one by 0)
		last if $s != 0 || $got >= $samples || !$p->{total};
	}
	return ($st, $out, $err, LjStacks::parse(join("\n", @all)), $used, $wall);
}

my $stripped_dir;
END { File::Path::remove_tree($stripped_dir) if $stripped_dir }

sub stripped {
	my ($path, $name, $dwarf) = @_;
	my $dir = $stripped_dir = "$ROOT/t/out/stripped.$$";
	make_path($dir);
	if (!defined $name) {
		($name = $path) =~ s{^\Q$ROOT\E/}{};
		$name =~ s{/}{_}g;
	}
	make_path("$dir/" . ($dwarf ? 'dwarf' : 'bare'));
	my $copy = "$dir/" . ($dwarf ? 'dwarf' : 'bare') . "/$name";
	return $copy if -x $copy;
	system('strip', '--strip-all', $dwarf ? ('--keep-section=.debug_*') : (), '-o', $copy, $path) == 0
		or die "strip $path: $?\n";
	my $sections = `readelf -S -W $copy`;
	die "$copy: not stripped as expected\n" unless $sections =~ /\.dynsym/ && $sections !~ /\.symtab/
		&& ($sections =~ /\.debug_info/ xor !$dwarf);
	return $copy;
}

sub check_reads {
	my ($name, $text, $tool, $event, $max) = @_;
	my ($avg, $bytes, $over, $p99) = $text =~ /^WARNING: \Q$tool\E: (\d+\.\d) reads of the target's memory per \Q$event\E on average \((\d+) bytes\), 99% of the \Q$event\Es at most (\(over\) )?(\d+)$/m;
	Test::More::ok(defined $avg && $avg > 0 && $avg <= $max && ($over || $p99 >= $avg),
		sprintf('%s: %s reads of the target\'s memory per %s on average (%s bytes; at most %d), 99%% at most %s',
			$name, $avg // '?', $event, $bytes // '?', $max, $over ? 'over' : $p99 // '?'))
		or Test::More::diag(join("\n", grep { /^WARNING: \Q$tool\E: / } split /\n/, $text));
	return $avg;
}

sub check_cost {
	my ($name, $text, $tool, $events, $probe) = @_;
	my ($om, $m, $op, $p) = $text =~ /^WARNING: \Q$tool\E: half of the \Q$events\E at most (\(over\) )?(\d+\.\d) us in the \Q$probe\E, 99% at most (\(over\) )?(\d+\.\d) us$/m;
	Test::More::ok(defined $m && $m > 0 && ($op || (!$om && $m <= $p)),
		sprintf('%s: half of the %s at most %s us in the %s, 99%% at most %s us', $name, $events,
			$om ? 'over' : $m // '?', $probe, $op ? 'over' : $p // '?'))
		or Test::More::diag(join("\n", grep { /^WARNING: \Q$tool\E: / } split /\n/, $text));
	Test::More::note($_) for grep { /^WARNING: \Q$tool\E: .* (?:in the \Q$probe\E|reads of the target's memory)/ } split /\n/, $text;
	return ($m, $p);
}

sub check_accounted {
	my ($name, $p, $novm) = @_;
	my $st = $p->{stats} // {};
	my $sum = 0;
	$sum += $st->{$_} // 0 for qw(lua nolua novm skipped dropped);
	Test::More::is($sum, $st->{samples} // -1, "$name: every sample taken is counted in one class ($sum)");
	my $per = List::Util::sum(0, values %{ $p->{pids} // {} });
	Test::More::is($per, $st->{samples} // -1, "$name: and in the per-process line ($per)");
	Test::More::ok(defined $st->{novm} && $st->{novm} <= 0.01 * ($st->{samples} // 0),
		"$name: the VM found from the start, all but 1% of the samples at most (" . ($st->{novm} // '?')
		. ' before it)') if $novm;
}

sub stock_conf {
	my ($conf, $file) = @_;
	$conf = join('', map { "load_module /usr/lib/nginx/modules/$_.so;\n" } qw(ndk_http_module ngx_http_lua_module))
		. $conf;
	# (its temporary files in the prefix, not in the system's /var/lib/nginx,
	# whose owner nginx would change to the workers' user)
	$conf =~ s/^http \{\n/"http {\n" . join('', map { "    ${_}_temp_path ${_}_temp;\n" }
		qw(client_body proxy fastcgi uwsgi scgi))/me or die "$file: no http block\n";
	return $conf;
}

sub nginx {
	my (%o) = @_;
	my $port = TestUtil::free_port();
	my $prefix = "$ROOT/t/out/bpf-nginx.$$";
	make_path("$prefix/logs");
	my $file = $o{conf} // 't/apps/nginx.conf';
	my $conf = slurp("$ROOT/$file");
	$conf =~ s/127\.0\.0\.1:8080/127.0.0.1:$port/ or die "$file: no listen line\n";
	$conf = stock_conf($conf, $file) if $o{stock};
	open my $fh, '>', "$prefix/nginx.conf" or die "$prefix/nginx.conf: $!";
	print $fh $conf;
	close $fh;
	local $ENV{TEST_APP_DIR} = "$ROOT/t/apps";
	local $ENV{HEAVY_N} = $o{heavy} // 2000000;
	local $ENV{LJ_NOJIT} = $o{nojit} ? 1 : undef;
	delete $ENV{LJ_NOJIT} unless $o{nojit};
	my $w = $o{workers} // 1;
	local $ENV{LD_LIBRARY_PATH} = $o{libs} if $o{libs};
	spawn($o{nginx} // ($o{stock} ? '/usr/sbin/nginx' : "$ROOT/build/nginx/sbin/nginx"), '-p', $prefix, '-c', "$prefix/nginx.conf",
		'-g', "worker_processes $w;");
	my ($master, @workers);
	for (1 .. 100) {
		select(undef, undef, undef, 0.1);
		$master = slurp("$prefix/logs/nginx.pid") // next;
		chomp $master;
		next unless $master =~ /^\d+$/;    # (created, not written yet)
		@workers = split ' ', `pgrep -P $master`;
		last if @workers >= $w && system("curl -s -o /dev/null http://127.0.0.1:$port" . ($o{url} // '/')) == 0;
	}
	return { master => $master, workers => \@workers, port => $port, prefix => $prefix };
}

sub nginx_stop {
	my ($n) = @_;
	return unless $n->{master};
	kill 'QUIT', $n->{master};
	for (1 .. 50) {
		last unless kill 0, $n->{master};
		select(undef, undef, undef, 0.1);
	}
}

sub load {
	my ($port, $url, $conns) = @_;
	return spawn('wrk', '-t2', '-c' . ($conns // 4), '-d3600s', "http://127.0.0.1:$port$url");
}

sub trickle {
	my ($port, $url, $rate) = @_;
	my $pid = fork() // die "fork: $!";
	return $pid if $pid;
	require IO::Socket::INET;
	while (1) {
		# a connection each: the kernel spreads them over the workers'
		# reuseport sockets by hash, so every worker gets requests (one
		# kept-alive connection gave all of them to one worker)
		my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Proto => 'tcp');
		if ($s && print $s "GET $url HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n") {
			1 while defined <$s>;
		}
		close $s if $s;
		select(undef, undef, undef, 1 / $rate);
	}
}

sub load_stop {
	my ($pid) = @_;
	kill 'TERM', $pid;
	waitpid($pid, 0);
}

1;
