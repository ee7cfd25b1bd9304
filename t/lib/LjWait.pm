# SPDX-License-Identifier: GPL-2.0-or-later
package LjWait;

=head1 NAME

LjWait - read the output of the waiting-time samples (lj-lua-off-cpu,
lj-lua-fio, ngx-lua-yield) in t/63-t/65.

=head1 FUNCTIONS

=over 4

=item C<parse(TEXT, TOOL)>

LjStacks::parse of the stacks (weights in the counts), plus the tool's
summary lines on stderr (C<WARNING: TOOL: ...>) in C<stats>: C<traced_us>,
C<graph_us> (the weight with a Lua stack), C<waits>, C<nolua_us>,
C<nolua>, C<open>, C<open_us>, C<short>, C<skipped>, C<exited> (the pid
of "process N exited"), and C<lines> (every such line).

=item C<share(P, FRAME)>

Percentage of the printed weight in stacks that hold FRAME.

=item C<go_case(%o)>

Shell for a VM case whose workload starts once the sample has: C<target>
(a command line; C<$go> in it is the path of a file that does not exist
yet, e.g. t/apps/wait-run.lua's GO) starts in the background, prints
C<ready> and polls for that file without a pause (no wait: SystemTap's
attach interrupts a blocked system call, which then blocks again in the
session); then C<staprun -x PID MODULE PARAMS> (C<module>, C<params>)
starts, and once its stderr has the sample's start line the file is
made: the workload runs, and the session ends when it exits (the
samples end themselves when their -x target does).  C<after> (shell, default none)
runs after the signal, C<$sp> being staprun's pid (e.g. C<sleep 2; kill
-INT $sp>).  C<timeout>: seconds staprun may run before it is stopped
with SIGINT (default 60).  The case's output: staprun's stderr, the
target's output as C<# app: LINE> notes, staprun's stdout; its status is
staprun's.

=item C<ngx_go_case(%o)>

Shell for a VM case on nginx with t/apps/wait.conf (one worker): the
app's accounting cleared (C</reset>), C<staprun RUN> (C<run>, e.g. C<-x
$worker "$VM_JOB"/MOD.ko>) in the background; once its stderr has the
sample's start line (and with C<< uprobes => 1 >> once its uprobes are in the
worker: C<uprobes_placed>), C<load> (shell) runs; then the app's accounting
(C</acct>) as C<# app: LINE> notes, staprun stopped with SIGINT, nginx
stopped.  The output: nginx's alerts and errors as C<# > notes,
staprun's stderr and stdout; the status is staprun's.  C<timeout> as
for C<go_case>; C<conf> and C<nginx> as for C<VM::nginx_up> (Debian's
stock nginx with a config from C<Bpf::stock_conf>).

=item C<ngx_until(URL, N, CONNS [, PORT])>

Shell for a C<load>: wrk with CONNS connections on URL until N responses
came (a wrk script ends it then: no polling loads the guest meanwhile),
then the requests still in the app waited for (its C</acct> says
C<active 0>), so that no wait is cut by the end of the session.  PORT:
the server's (default 8080).  It writes until.lua and wrk.txt in the
current directory.

=item C<uprobes_placed(PIDS)>

Shell that waits (at most 30 s) until every process of PIDS (shell
words, e.g. C<$worker>) has a breakpoint in its code: SystemTap runs the
begin probe, which prints the start line, before it registers its
uprobes, and a process that is already running gets them when it next
runs (the task finder interrupts it).  A uprobe's breakpoint replaces a
page of the file's text with an anonymous copy, which
C</proc/PID/smaps> counts (C<Anonymous:> of an C<r-xp> file mapping,
0 kB otherwise).  Prints C<# uprobes placed in PID> or C<# uprobes not
placed in PID>.

=item C<acct(TEXT)>

The app's own accounting among a case's notes (lines C<# app: acct NAME
US CALLS BYTES LONG> of t/apps/wait.lua): { NAME => { us, calls, bytes,
long } } (long: the calls that took 100 ms or more).

=item C<calls_with_bytes(P, ACCT)>

lj-lua-fio: the calls of a session (P, from C<parse>) that moved bytes:
the calls on stderr but the one at the end of each file read2() and
read1() read (ACCT, the app's accounting, counts their reads).

=item C<app_share(ACCT, KEY, NAME, OTHERS...)>

Percentage of KEY (us or bytes) of NAME in NAME and OTHERS, from C<acct>;
undef when they hold none.

=item C<check_abc(NAME, P, ACCT, WAITS, CLAIM, COVER, DIAG)>

lj-lua-off-cpu on wait.lua's 1:2:3 sleeps (t/63, t/74): the shares of
a(), b() and c() within CLAIM points of the app's own (from ACCT, on
WAITS waits), the blocking call as the leaf of 90% of the time, and the
graph at least COVER percent of
the app's time in them (the rest is on CPU); DIAG is shown when the
coverage fails.

=item C<check_writes(NAME, P, ACCT, TEXT, ROUNDS, CLAIM)>

lj-lua-fio on wait.lua's mixed case (t/64, t/77), weighted by bytes:
read2() and write1() within CLAIM points of the app's bytes, nothing
under piped(), and the pipe's calls (2 a round, ROUNDS rounds) counted
on stderr (in TEXT) as not regular files.

=item C<bpf_ngx_session(N, URL, REQS, CONNS, ARGS...)>

ngx-lua-yield --runtime=bpf on this host (t/78) against the worker of
N (Bpf::nginx with t/apps/wait.conf): the app's accounting cleared, the
session started (--arg time=0 and ARGS), then C<ngx_until(URL, REQS,
CONNS)> on N's port, the app's accounting read, the session stopped
with SIGINT.  Returns (its status, the text C<check_yield> reads: its
stderr, the accounting as C<# app: > lines, its stdout).

=item C<bpf_ngx_session_of(SAMPLE, N, URL, REQS, CONNS, ARGS...)>

The same with another sample (lj-lua-off-cpu on /offcpu: t/80).

=item C<yield_reqs(CLAIM)>

ngx-lua-yield on wait.conf's /yield (t/65, t/78): the requests that
reach the floor of sleep2()'s share (2/3) within CLAIM points, with a
margin (a request yields twice).

=item C<check_yield(NAME, TEXT, REQS, CLAIM [, CONF [, unnamed => 1]])>

ngx-lua-yield on /yield (t/65, t/78), TEXT being the session's stdout,
its stderr and the app's accounting (C<# app: > lines) after REQS
requests: the type=us header, well-formed stacks of well-formed frames,
the graph's total on stderr, every yield under C:ngx_http_lua_ngx_sleep
and rooted at the content_by_lua chunk, none still open, and sleep2()
and sleep1()'s shares within CLAIM points of the app's own timers and of
the 2:1 asked for (with the bias the overrun the app measured makes).
CONF: the name of nginx's configuration file, which names the chunk
(default wait.conf).  unnamed: the C function it waited on has no
symbol (a stripped lua module): one function, named from the module's
C<.eh_frame_hdr> as C<C:ngx_http_lua_module.so+0xADDR>.  Returns
LjWait::parse's result.

=item C<check_waits(NAME, TEXT)>

ngx-lua-yield on /waits (t/65, t/78), TEXT as for C<check_yield>: the
cosocket's receive, ngx.thread.wait and the light thread (continued in
its spawner after [resume]) each named by what it waited on, and the
cosocket the longer of the first two as the app's timers say.

=back

=cut

use strict;
use warnings;
use POSIX ();
use File::Path ();
use TestUtil ();
use Bpf ();
use LjStacks;
use Stats;
use VM ();

sub parse {
	my ($text, $tool) = @_;
	my $p = LjStacks::parse($text);
	my %s;
	for my $l (grep { /^WARNING: \Q$tool\E: / } split /\n/, $text) {
		push @{ $s{lines} }, $l;
		if ($l =~ /traced for (\d+) us; (\d+) us (?:\S.*? )?in (\d+) \w+ with a Lua stack/) {
			@s{qw(traced_us graph_us waits)} = ($1, $2, $3);
		}
		if ($l =~ /(\d+) us in (\d+) waits without a Lua stack/) {
			@s{qw(nolua_us nolua)} = ($1, $2);
		}
		if ($l =~ /in (\d+) \w+ skipped \(faults\)/) {
			$s{skipped} = $1;
		}
		if ($l =~ /(\d+) \w+ shorter than min_us/) {
			$s{short} = $1;
		}
		if ($l =~ /(\d+) \w+ still open at the end, counted up to it: (\d+) us/) {
			@s{qw(open open_us)} = ($1, $2);
		}
		if ($l =~ /process (\d+) exited/) {
			$s{exited} = $1;
		}
	}
	$p->{wait} = \%s;
	return $p;
}

sub share {
	my ($p, $frame) = @_;
	return 0 unless $p->{total};
	return 100 * LjStacks::count_with($p, sub { grep { $_ eq $frame } @_ }) / $p->{total};
}

# Shell: staprun RUN in the background ($sp), its stdout in stap.out and
# stderr in stap.err, stopped with SIGINT after T seconds; returns once
# stderr has the sample's start line (or staprun ended).
sub _staprun_started {
	my ($run, $t) = @_;
	return <<"SH";
timeout -s INT -k 10 $t staprun $run > stap.out 2> stap.err &
sp=\$!
for i in \$(seq 1 900); do
	started stap.err && break
	kill -0 \$sp 2>/dev/null || break
	sleep 0.1
done
SH
}

sub go_case {
	my (%o) = @_;
	my $t = $o{timeout} // 60;
	my $params = $o{params} // '';
	my $after = $o{after} // ':';
	return <<"SH" . _staprun_started(qq{-x \$pid "\$VM_JOB"/$o{module} $params}, $t) . <<"SH2";
go=\$(mktemp -u /tmp/go.XXXXXX)
$o{target} > target.log 2>&1 &
pid=\$!
for i in \$(seq 1 600); do has ready target.log && break; sleep 0.1; done
SH
: > \$go
$after
wait \$sp
rc=\$?
kill \$pid 2>/dev/null
wait \$pid 2>/dev/null    # (no "Terminated" in the output: a frame to the parser)
cat stap.err
sed 's/^/# app: /' target.log
cat stap.out
exit \$rc
SH2
}

sub ngx_go_case {
	my (%o) = @_;
	my $t = $o{timeout} // 60;
	my $after = <<"SH";
$o{load}
@{[ VM::get_sh('http://127.0.0.1:8080/acct') ]} | sed 's/^/# app: /'
kill -INT \$sp
wait \$sp
rc=\$?
SH
	my $print = <<'SH';
grep -E '\[(alert|emerg|crit|error)\]' logs/error.log | sed 's/^/# /'
cat stap.err
cat stap.out
exit $rc
SH
	return VM::nginx_up(conf => $o{conf} // 't/apps/wait.conf', url => '/acct', nginx => $o{nginx})
		. VM::get_sh('http://127.0.0.1:8080/reset', '/dev/null') . "\n"
		. _staprun_started($o{run}, $t) . ($o{uprobes} ? uprobes_placed('$worker') : '')
		. $after . VM::nginx_down() . $print;
}

sub ngx_until {
	my ($url, $n, $conns, $port) = @_;
	$port //= 8080;
	return VM::HAS_SH . <<"SH";
cat > until.lua <<'EOF'
local n = 0
function response()
	n = n + 1
	if n >= $n then
		io.write("# ", n, " responses\\n")
		os.exit(0)
	end
end
EOF
wrk -t1 -c$conns -d 600s -s until.lua http://127.0.0.1:$port$url > wrk.txt 2>&1
grep -h 'responses\$' wrk.txt
for i in \$(seq 1 300); do @{[ VM::get_sh("http://127.0.0.1:$port/acct", 'acct.txt') ]} && has 'active 0' acct.txt && break; sleep 0.1; done
SH
}

sub uprobes_placed {
	my ($pids) = @_;
	return <<"SH";
for p in $pids; do
	ok=
	for i in \$(seq 1 300); do
		awk '/^[0-9a-f]+-[0-9a-f]+ / { x = (\$2 == "r-xp" && \$6 ~ /^\\//) } x && /^Anonymous:/ && \$2 > 0 { f = 1 } END { exit !f }' /proc/\$p/smaps && ok=1 && break
		sleep 0.1
	done
	if [ -n "\$ok" ]; then echo "# uprobes placed in \$p"; else echo "# uprobes not placed in \$p"; fi
done
SH
}

sub acct {
	my ($text) = @_;
	my %a;
	while ($text =~ /^# app: acct (\S+) (\d+) (\d+) (\d+) (\d+)$/mg) {
		$a{$1} = { us => $2, calls => $3, bytes => $4, long => $5 };
	}
	return \%a;
}

sub calls_with_bytes {
	my ($p, $acct) = @_;
	my $eof = 0;
	$eof += ($acct->{$_} // {})->{calls} // 0 for qw(read2 read1);
	return ($p->{wait}{waits} // 0) - $eof;
}

sub app_share {
	my ($acct, $key, $name, @others) = @_;
	my $all = 0;
	$all += ($acct->{$_} // {})->{$key} // 0 for $name, @others;
	return undef unless $all;
	return 100 * (($acct->{$name} // {})->{$key} // 0) / $all;
}

sub check_abc {
	my ($name, $p, $acct, $waits, $claim, $cover, $diag) = @_;
	my @f = qw(a b c);
	for my $i (0 .. 2) {
		my @others = grep { $_ ne $f[$i] } @f;
		Stats::share_ok("$name: $f[$i]", share($p, "wait.lua:$f[$i]"),
			app_share($acct, 'us', $f[$i], @others) // 0, $waits, claim => $claim)
			or Test::More::diag(LjStacks::dump_stacks($p, 8));
	}
	my $leaf = LjStacks::count_with($p, sub { $_[0] =~ /^C:\w*(?:nanosleep|usleep)/ });
	Test::More::ok($leaf >= 0.9 * $p->{total}, "$name: the blocking call is the leaf ($leaf of $p->{total} us)")
		or Test::More::diag(LjStacks::dump_stacks($p, 8));
	my $app = 0;
	$app += ($acct->{$_} // {})->{us} // 0 for @f;
	my $cov = $app ? 100 * $p->{total} / $app : 0;
	Test::More::ok($cov >= $cover && $cov <= 100,
		sprintf("%s: the graph accounts for %.1f%% of the app's time in a(), b() and c() (%d-100)", $name, $cov, $cover))
		or Test::More::diag($diag);
}

sub check_writes {
	my ($name, $p, $acct, $text, $rounds, $claim) = @_;
	my ($r2, $w1, $pipe) = map { share($p, "wait.lua:$_") } qw(read2 write1 piped);
	my $n = calls_with_bytes($p, { read2 => $acct->{read2} });
	Stats::share_ok("$name: read2", $r2, app_share($acct, 'bytes', 'read2', 'write1'), $n, claim => $claim)
		or Test::More::diag(LjStacks::dump_stacks($p, 8));
	Stats::share_ok("$name: write1", $w1, app_share($acct, 'bytes', 'write1', 'read2'), $n, claim => $claim);
	Test::More::is($pipe, 0, "$name: nothing under piped() (a pipe is not file I/O)")
		or Test::More::diag(LjStacks::dump_stacks($p, 8));
	my ($other) = $text =~ /(\d+) calls on files that are not regular \(not counted\)/;
	Test::More::ok($other && $other >= 2 * $rounds,
		"$name: the pipe's reads and writes counted on stderr as not regular files (" . ($other // '?') . ', 2 a round)')
		or Test::More::diag($text);
}

sub bpf_ngx_session {
	return bpf_ngx_session_of('ngx-lua-yield', @_);
}

sub bpf_ngx_session_of {
	my ($sample, $n, $url, $reqs, $conns, @args) = @_;
	my $base = "http://127.0.0.1:$n->{port}";
	TestUtil::run_cmd('curl', '-s', '-o', '/dev/null', "$base/reset");
	my $h = Bpf::start_sample($sample, ['-x', $n->{workers}[0]], 'time=0', @args);
	Test::More::ok($h->{started}, "$sample on $url: the session started")
		or Test::More::diag(TestUtil::slurp("$h->{base}.err") // '(no stderr)');
	my $dir = TestUtil::scratch("yield.$$");
	TestUtil::run_cmd({ cwd => $dir }, 'sh', '-c', ngx_until($url, $reqs, $conns, $n->{port}));
	my (undef, $acct) = TestUtil::run_cmd('curl', '-s', "$base/acct");
	File::Path::remove_tree($dir);
	my ($st, $out, $err) = Bpf::finish($h, 'INT');
	return ($st, $err . join('', map { "# app: $_\n" } split /\n/, $acct) . $out);
}

sub yield_reqs {
	my ($claim) = @_;
	# (the independent events of a share of the time yielded are the
	# yields: a /yield request makes two)
	return POSIX::ceil(1.1 * Stats::floor(2 / 3, $claim) / 2);
}

# The yield's overrun: each lasts longer than it asks for (nginx's
# timers, the event loop, the probes), 0.45 to 0.7 ms on an idle host,
# 4.5 ms in a loaded CI run under TCG, 19 ms on a host loaded far more.
# The app measures it; with the same overrun o on both, sleep2() gets
# (20 + o) / (30 + 2o) of the time: the bias, in points, off 66.7.
sub _overrun_bias { my ($o) = @_; return abs(100 * (2 / 3 - (20 + $o) / (30 + 2 * $o))) }

sub check_yield {
	my ($name, $o, $reqs, $claim, $conf, %opt) = @_;
	$conf //= 'wait.conf';
	my $ngx_frame_re = qr/^(?:[\w-]+\.lua(?::\w+)?|content_by_lua\(\Q$conf\E:\d+\)(?::\d+)?|trace#\d+:\S+:\d+|$LjStacks::C_FRAME|builtin(?::\w+|#\d+))$/;
	my $p = parse($o, 'ngx-lua-yield');
	my $w = $p->{wait};
	my $acct = acct($o);
	Test::More::like($o, qr/^# stap\+\+ type=us$/m, "$name: the output's header gives the unit (type=us)");
	Test::More::is_deeply(LjStacks::bad($p, $name), [], "$name: well-formed lj-lua-stacks output");
	my @garbage = grep { $_ !~ $ngx_frame_re } map { @{ $_->{frames} } } @{ $p->{stacks} };
	Test::More::is_deeply(\@garbage, [], "$name: every frame is a well-formed name") or Test::More::diag($o);
	Test::More::ok($p->{total} > 0 && $p->{total} == ($w->{graph_us} // -1),
		"$name: the graph's total is the time on stderr ($p->{total} us)") or Test::More::diag($o);
	if ($opt{unnamed}) {
		# (a stripped lua module: its function named by its address)
		my %addr;
		$addr{ $_->{frames}[0] } += $_->{count}
			for grep { $_->{frames}[0] =~ /^C:ngx_http_lua_module\.so\+0x[0-9a-f]+$/ } @{ $p->{stacks} };
		Test::More::ok(keys(%addr) == 1 && (values %addr)[0] == $p->{total},
			"$name: every yield is under one C function, named by its address in the stripped module ("
			. join(' ', sort keys %addr) . ')')
			or Test::More::diag(LjStacks::dump_stacks($p, 8));
	} else {
		my $leaf = LjStacks::count_with($p, sub { $_[0] eq 'C:ngx_http_lua_ngx_sleep' });
		Test::More::is($leaf, $p->{total}, "$name: every yield is under C:ngx_http_lua_ngx_sleep, what it waited on")
			or Test::More::diag(LjStacks::dump_stacks($p, 8));
	}
	my ($n2, $n1) = map { ($acct->{$_} // {})->{calls} // 0 } qw(sleep2 sleep1);
	Test::More::ok($n1 >= $reqs && $n2 == $n1, "$name: the app counted its sleeps ($n2, $n1; at least $reqs)")
		or Test::More::diag($o);
	Test::More::is($w->{open} // 0, 0, "$name: no yield still open at the end (the requests in flight were waited for)")
		or Test::More::diag($o);
	my ($s2, $s1) = map { share($p, "wait.lua:$_") } qw(sleep2 sleep1);
	Stats::share_ok("$name: sleep2 against the app's timers", $s2, app_share($acct, 'us', 'sleep2', 'sleep1') // 0,
		$w->{waits}, claim => $claim) or Test::More::diag(LjStacks::dump_stacks($p, 8));
	Stats::share_ok("$name: sleep1 against the app's timers", $s1, app_share($acct, 'us', 'sleep1', 'sleep2') // 0,
		$w->{waits}, claim => $claim);
	# the overrun, as the app measured it: its time beyond what it asked
	my $over = $n1 ? ((($acct->{sleep2}{us} // 0) - 20000 * $n2) + (($acct->{sleep1}{us} // 0) - 10000 * $n1)) / (2 * $n1) / 1000 : 0;
	Test::More::ok($n1 && $over > -1, sprintf("%s: each yield lasted %.2f ms more than it asked for on average (the app's clock)", $name, $over))
		or Test::More::diag($o);
	Stats::share_ok("$name: sleep2 against the 2:1 asked for", $s2, 100 * 2 / 3, $w->{waits}, claim => $claim,
		bias => _overrun_bias($over),
		why => sprintf('a yield overran by %.1f ms on average, which pulls the split toward 1:1', $over));
	my $root = LjStacks::count_with($p, sub { $_[-1] =~ /^content_by_lua\(\Q$conf\E:\d+\)$/ });
	Test::More::is($root, $p->{total}, "$name: every stack rooted at the content_by_lua chunk");
	Test::More::note(sprintf('%s: sleep2 %.1f%% sleep1 %.1f%% of %d us in %d yields; the app: sleep2 %d us, sleep1 %d us in %d requests',
		$name, $s2, $s1, $p->{total}, $w->{waits} // 0, $acct->{sleep2}{us} // 0, $acct->{sleep1}{us} // 0, $n1));
	return $p;
}

sub check_waits {
	my ($name, $o) = @_;
	my $p = parse($o, 'ngx-lua-yield');
	Test::More::is_deeply(LjStacks::bad($p, $name), [], "$name: well-formed lj-lua-stacks output");
	# the light thread's function is named by its line (no caller's
	# bytecode names it), continued into its spawner after [resume]
	my $napper = LjStacks::line_of("$TestUtil::ROOT/t/apps/wait.lua", qr/^local function napper\(\)/);
	my %us;
	for my $k (['cosocket', 'C:ngx_http_lua_socket_tcp_receive', 'wait.lua:cosocket'],
		   ['thread.wait', 'C:ngx_http_lua_uthread_wait', 'wait.lua:waiter'],
		   ['the light thread', 'C:ngx_http_lua_ngx_sleep', "wait.lua:$napper", '[resume]',
		    'C:ngx_http_lua_uthread_spawn', 'wait.lua:waiter']) {
		my ($what, @seq) = @$k;
		$us{$what} = LjStacks::count_with($p, sub { $_[0] eq $seq[0] && LjStacks::has_seq(\@_, @seq) });
		Test::More::ok($us{$what} > 0, "$name: $what: " . join(' <- ', @seq) . " ($us{$what} us)")
			or Test::More::diag(LjStacks::dump_stacks($p, 10));
	}
	# which waits longer, the cosocket (a 2 ms request) or thread.wait
	# (1 ms)?  The app's timers say (their overruns make it close)
	my $acct = acct($o);
	my ($cos, $wt) = map { ($acct->{$_} // {})->{us} // 0 } qw(cosocket waiter);
	Test::More::ok($cos && $wt && ($us{cosocket} > $us{'thread.wait'}) == ($cos > $wt),
		"$name: the cosocket waits longer than thread.wait as the app's timers say ($us{cosocket} vs $us{'thread.wait'} us; the app: $cos vs $wt us)")
		or Test::More::diag(LjStacks::dump_stacks($p, 10));
	Test::More::note(sprintf('%s: %s', $name, join ', ', map { "$_ $us{$_} us" } sort keys %us));
	return $p;
}

1;
