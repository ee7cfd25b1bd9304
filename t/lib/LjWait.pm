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
for C<go_case>.

=item C<ngx_until(URL, N, CONNS)>

Shell for a C<load>: wrk with CONNS connections on URL until N responses
came (a wrk script ends it then: no polling loads the guest meanwhile),
then the requests still in the app waited for (its C</acct> says
C<active 0>), so that no wait is cut by the end of the session.

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
US CALLS BYTES> of t/apps/wait.lua): { NAME => { us, calls, bytes } }.

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
graph at least COVER percent of the app's time in them (the rest is on
CPU); DIAG is shown when the coverage fails.

=item C<check_writes(NAME, P, ACCT, TEXT, ROUNDS, CLAIM)>

lj-lua-fio on wait.lua's mixed case (t/64, t/77), weighted by bytes:
read2() and write1() within CLAIM points of the app's bytes, nothing
under piped(), and the pipe's calls (2 a round, ROUNDS rounds) counted
on stderr (in TEXT) as not regular files.

=back

=cut

use strict;
use warnings;
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
	grep -q 'press Ctrl-C to stop\$' stap.err && break
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
for i in \$(seq 1 600); do grep -q '^ready\$' target.log && break; sleep 0.1; done
SH
: > \$go
$after
wait \$sp
rc=\$?
kill \$pid 2>/dev/null
wait \$pid
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
curl -s http://127.0.0.1:8080/acct | sed 's/^/# app: /'
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
	return VM::nginx_up(conf => 't/apps/wait.conf', url => '/acct')
		. "curl -s -o /dev/null http://127.0.0.1:8080/reset\n"
		. _staprun_started($o{run}, $t) . ($o{uprobes} ? uprobes_placed('$worker') : '')
		. $after . VM::nginx_down() . $print;
}

sub ngx_until {
	my ($url, $n, $conns) = @_;
	return <<"SH";
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
wrk -t1 -c$conns -d 600s -s until.lua http://127.0.0.1:8080$url > wrk.txt 2>&1
grep -h 'responses\$' wrk.txt
for i in \$(seq 1 300); do curl -s http://127.0.0.1:8080/acct | grep -qx 'active 0' && break; sleep 0.1; done
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
	while ($text =~ /^# app: acct (\S+) (\d+) (\d+) (\d+)$/mg) {
		$a{$1} = { us => $2, calls => $3, bytes => $4 };
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

1;
