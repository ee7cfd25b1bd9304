# SPDX-License-Identifier: GPL-2.0-or-later
package LjGc;

=head1 NAME

LjGc - the Lua memory tests' shared parts (t/60, t/61, t/62): VM case
scripts for the leak app (t/apps/leak) and parsers of lj-gc-objs output.

=head1 FUNCTIONS

=over 4

=item C<leak_ngx_case(%o)>

Shell for a VM case: nginx with the leak app (one worker), C<load>
seconds of wrk on C</go?n=N> (C<n>), after C</go?n=0> (loads the module)
and C</count> (C<# count base: BYTES>), then C</count> (printed as
C<# count before: BYTES>), then C<staprun -x WORKER MODULE> (C<module>)
while wrk on C</ping> (no Lua, one connection) gives the idle worker events, then
C</count> again (C<# count after: BYTES>).  The case's status is staprun's.
C<up>: shell that starts the nginx instead (setting C<$master> and
C<$worker>: Container::guest_sh), on port C<port> (default 8080).
C<conf> and C<nginx>: another config and nginx binary (Debian's stock
one: VM::nginx_up).  C<kick>: staprun runs in the background, and once
its uprobes are in the worker one request runs Lua code (C</count>,
printed as C<# count kick: BYTES>): a stripped nginx's VM is found at
its lua_resume (tapset luajit_gcwalk).

=item C<stock_case(VM)>

The options of C<leak_ngx_case> that run the leak app in Debian's stock
nginx instead (stripped): its config (written under the VM's out dir,
loading the lua module), the binary, and the kick.

=item C<check_load(NAME, TEXT)>

The load on C</go> of a case's output TEXT ran (wrk's C<# N requests
in> line) and every request succeeded (no C<# Non-2xx> line): an app
that fails (a worker that cannot read it) grows nothing.

=item C<check_leak(NAME, P, BASE, BEFORE, TEXT)>

The leak app's truths in a walk's parsed paths P (t/61, t/82): the
heaviest path is GC roots, registry, ._LOADED, .demo, .go, [upvalue] foo,
string; foo holds at least half the bytes, and within 10% of the app's
growth (BEFORE minus BASE, its C</count>s) without the string table's own
path.  TEXT is shown when the last fails.

=item C<leak_master_case(%o)>

Shell for a VM case: nginx with the leak app and two workers (their pids
printed as C<# master: PID workers: PID PID>); C</go?n=0> 20 times (both
workers load the module), then C</countpid> up to 40 times (each worker's last
answer printed as C<# count base PID: BYTES>; it stops once both
answered: each answer is a full collection, seconds under TCG), C<load> seconds of wrk with
32 connections on C</go?n=N>, the counts again (C<# count before PID:
BYTES>); then C<staprun MODULE stapxx_master=MASTER> (C<module>, built
with C<--master ->; C<args>: more staprun arguments) while wrk with 32
connections on C</ping> gives both idle workers events, then the counts again (C<# count
after PID: BYTES>).  With C<< counts => 0 >>: no counts and no load
before staprun, only the load on C</go?n=N> during it.  C<conf> and C<nginx>
(C<stock_case>'s) run another nginx.  Connections go to the workers by the hash of their
ports (reuseport): 40 requests miss a worker once in 2^39 runs.

=item C<counts(TEXT, WHEN)>

The counts of C<leak_master_case>: { PID => BYTES } for WHEN (base,
before or after).

=item C<cli_case(%o)>

Shell for a VM case: C<target> (a command line) in the background, its
output in the case's output; waits until it printed a line matching
C<ready> (a shell case pattern, default C<count*>), then runs
C<staprun -x PID MODULE>, then stops the target.

Both print the module's stderr, then the case's own lines, then a line
C<== stdout> and the module's stdout (see C<stdout_of>).

=item C<stdout_of(TEXT)>

The module's stdout in a case's output: what follows the line C<== stdout>.

=item C<parse_census(TEXT)>

Parses lj-gc-objs output: C<total> (GC-managed total), C<sum> (walked
bytes with the string table and VM state), C<type> (name => { count,
bytes, pct }), C<order> (type names, most bytes first), C<faults>,
C<stall_us>, C<slices>.

=item C<check_census(NAME, TEXT, TRUTH)>

The truths of a census (lj-gc-objs's output TEXT, either backend) whose
heap the app measured at TRUTH bytes (its C<collectgarbage("count")>):
the walk completes with no fault, the GC-managed total and the census
(objects, string table, VM state) within 5% of TRUTH, Lua and C functions
counted apart, the longest stall printed, and LuaJIT's allocator mapped at
least the string bytes.  Returns the parsed census (C<parse_census>).

=item C<check_leak_census(NAME, P, TEXT, REQS)>

The leak app's census P (TEXT) after REQS requests on C</go?n=100>:
strings, then tables and the string table hold the most bytes (strings
and tables at least 60% of the total), at least 100 strings per request,
the biggest strings and tables listed, the biggest table foo's.

=item C<bpf_heap_census(BIN, SECS)>

lj-gc-objs C<--runtime=bpf> on this host (no VM) against the luajit CLI
BIN running t/apps/leak/heap.lua for SECS seconds, once it printed its
first count; returns its status, stdout, stderr and the app's counts (an
array ref: the first is the heap the walk saw).

=back

=cut

use strict;
use warnings;
use TestUtil;
use VM ();
use LjStacks ();
use LjWait ();
use Bpf ();
use File::Path ();
use Time::HiRes ();
use Test::More ();

sub leak_ngx_case {
	my (%o) = @_;
	my $load = $o{load} // 3;
	my $n = $o{n} // 100;
	my $conf = "$ROOT/t/apps/leak/nginx.conf";
	my $run = $o{run} // qq{timeout -s INT -k 10 90 staprun -x \$worker "\$VM_JOB"/$o{module}};
	my $sh = ($o{up} // VM::nginx_up(conf => $o{conf} // $conf, nginx => $o{nginx}, url => '/ping',
					  env => "export LEAK_APP_DIR=$ROOT/t/apps/leak")) . <<"SH";
@{[ VM::get_sh('http://127.0.0.1:8080/go?n=0', '/dev/null') ]}
echo "# count base: \$(@{[ VM::get_sh('http://127.0.0.1:8080/count') ]})"
wrk -t1 -c4 -d ${load}s 'http://127.0.0.1:8080/go?n=$n' > wrk.txt 2>&1
grep -hE 'Requests/sec|requests in|Non-2xx' wrk.txt | sed 's/^ */# /'
echo "# count before: \$(@{[ VM::get_sh('http://127.0.0.1:8080/count') ]})"
wrk -t1 -c1 -d 120s http://127.0.0.1:8080/ping > /dev/null 2>&1 &
ping=\$!
SH
	my $kick = $o{kick} && LjWait::uprobes_placed('$worker')
		. 'echo "# count kick: $(' . VM::get_sh('http://127.0.0.1:8080/count') . ')"' . "\n";
	$sh .= _stop_and_print($run, 'echo "# count after: $(' . VM::get_sh('http://127.0.0.1:8080/count') . ')"', $kick);
	$sh =~ s/127\.0\.0\.1:8080/127.0.0.1:$o{port}/g if $o{port};
	return $sh;
}

sub stock_case {
	my ($vm) = @_;
	my $conf = $vm->out . '/stock/leak.conf';
	File::Path::make_path($vm->out . '/stock');
	spit($conf, Bpf::stock_conf(slurp("$ROOT/t/apps/leak/nginx.conf"), 't/apps/leak/nginx.conf'));
	return (conf => $conf, nginx => '/usr/sbin/nginx', kick => 1);
}

# Shell: RUN (staprun) with its stdout in stap.out (in the background
# while KICK runs, if given), then stop the $ping load, run POST, stop
# nginx, and print stderr, nginx's alerts and "== stdout".
# For a read the walk could not do (an address in stap.err): the
# workers' mapping holding it and its page's /proc/PID/pagemap entry
# (bit 63 present, 62 swapped), to tell a page briefly not present from
# a bad address when a test fails on it (docs/lj-gco-ref.md).
use constant PAGES_SH => <<'SH';
for a in $(grep -o 'at 0x[0-9a-f]*' stap.err | cut -c4- | sort -u | head -5); do
	kids $master
	for w in $kids; do
		m=$(while read -r r rest; do case $r in ffffffff*) continue;; esac; lo=0x${r%-*}; hi=0x${r#*-}; [ $((a)) -ge $((lo)) ] && [ $((a)) -lt $((hi)) ] && echo "$r $rest"; done < /proc/$w/maps)
		e=$(dd if=/proc/$w/pagemap bs=8 skip=$((a / 4096)) count=1 2>/dev/null | od -An -tx8 | tr -d ' ')
		echo "# address $a in worker $w: mapping ${m:-none}; pagemap entry ${e:-unreadable}"
	done
done
SH

sub _stop_and_print {
	my ($run, $post, $kick) = @_;
	my $wait = $kick ? "&\nsp=\$!\n${kick}wait \$sp" : '';
	return <<"SH";
$run > stap.out 2> stap.err $wait
rc=\$?
cat stap.err
@{[ PAGES_SH ]}kill \$ping
wait \$ping 2>/dev/null
$post
kill -QUIT \$master
wait
grep -E '\\[(alert|emerg|crit)\\]' logs/error.log | sed 's/^/# /'
echo "== stdout"
cat stap.out
exit \$rc
SH
}

sub leak_master_case {
	my (%o) = @_;
	my $load = $o{load} // 2;
	my $n = $o{n} // 100;
	my $conf = $o{conf} // "$ROOT/t/apps/leak/nginx.conf";
	my $args = $o{args} // '';
	my $counts = $o{counts} // 1;
	my $url = $counts ? '/ping' : "/go?n=$n";
	my $pre = $counts ? <<"SH" : '';
curl -s -H 'Connection: close' 'http://127.0.0.1:8080/go?n=0&i=[1-20]' > /dev/null
counts base
wrk -t1 -c32 -d ${load}s 'http://127.0.0.1:8080/go?n=$n' > wrk.txt 2>&1
grep -hE 'Requests/sec|requests in|Non-2xx' wrk.txt | sed 's/^ */# /'
counts before
SH
	my $post = $counts ? 'counts after' : '';
	my $sh = VM::nginx_up(conf => $conf, nginx => $o{nginx}, url => '/ping', workers => 2,
			      env => "export LEAK_APP_DIR=$ROOT/t/apps/leak") . <<"SH";
kids \$master; echo "# master: \$master workers: \$kids"
counts() {
	: > counts.txt
	for i in \$(seq 1 40); do
		@{[ VM::get_sh('http://127.0.0.1:8080/countpid') ]} >> counts.txt
		[ \$(cut -d' ' -f1 counts.txt | sort -u | wc -l) -ge 2 ] && break
	done
	awk -v w="\$1" '{ c[\$1] = \$2 } END { for (p in c) print "# count " w " " p ": " c[p] }' counts.txt
}
$pre
wrk -t1 -c32 -d 120s 'http://127.0.0.1:8080$url' > /dev/null 2>&1 &
ping=\$!
SH
	return $sh . _stop_and_print(qq{timeout -s INT -k 10 90 staprun "\$VM_JOB"/$o{module} stapxx_master=\$master $args}, $post);
}

sub counts {
	my ($text, $when) = @_;
	my %c;
	$c{$1} = $2 while $text =~ /^# count $when (\d+): (\d+)$/mg;
	return \%c;
}

sub cli_case {
	my (%o) = @_;
	my $ready = $o{ready} // 'count*';
	my $t = $o{timeout} // 60;
	return <<"SH";
$o{target} > target.log 2>&1 &
pid=\$!
for i in \$(seq 1 600); do has '$ready' target.log && break; sleep 0.1; done
timeout -s INT -k 10 $t staprun -x \$pid "\$VM_JOB"/$o{module} > stap.out 2> stap.err
rc=\$?
cat stap.err
kill \$pid 2>/dev/null
wait \$pid
cat target.log
echo "== stdout"
cat stap.out
exit \$rc
SH
}

sub stdout_of {
	my ($text) = @_;
	return $text =~ /^== stdout\n(.*)\z/ms ? $1 : '';
}

sub parse_census {
	my ($text) = @_;
	my %p = (type => {}, order => [], faults => undef, stall_us => 0);
	for my $l (split /\n/, $text) {
		if ($l =~ /^GC-managed total: (\d+) bytes$/) {
			$p{total} = $1;
		} elsif ($l =~ /^walked: (\d+) objects, (\d+) bytes, with the string table and the VM state (\d+) bytes/) {
			@p{qw(objs walked sum)} = ($1, $2, $3);
		} elsif ($l =~ /^([a-zA-Z][\w ]*): (\d+) objects, (\d+) bytes \(([\d.]+)%\)$/) {
			$p{type}{$1} = { count => $2, bytes => $3, pct => $4 };
			push @{ $p{order} }, $1;
		} elsif ($l =~ /^cost: (\d+) slices of at most \d+ objects, longest stall (\d+) us/) {
			@p{qw(slices stall_us)} = ($1, $2);
		} elsif ($l =~ /^faults: (\d+)$/) {
			$p{faults} = $1;
		} elsif ($l =~ /^read again: (\d+) slices/) {
			$p{read_again} = $1;
		}
	}
	return \%p;
}

sub bpf_heap_census {
	my ($bin, $secs) = @_;
	my $log = "$ROOT/t/out/heap.$$.log";
	File::Path::make_path("$ROOT/t/out");
	unlink $log;
	my $pid = Bpf::spawn({ stdout => $log }, $bin, "$ROOT/t/apps/leak/heap.lua", $secs);
	my $t0 = Time::HiRes::time();
	Time::HiRes::sleep(0.05) until (slurp($log) // '') =~ /^count \d+$/m || Time::HiRes::time() - $t0 > 30;
	my ($st, $out, $err) = Bpf::run('lj-gc-objs', ['-x', $pid], 'gap=5');
	kill 'TERM', $pid;
	waitpid($pid, 0);
	my @counts = (slurp($log) // '') =~ /^count (\d+)$/mg;
	unlink $log;
	return ($st, $out, $err, \@counts);
}

# TRUTH: the app's collectgarbage("count") of the heap the walk saw
sub check_census {
	my ($name, $o, $truth) = @_;
	my $p = parse_census($o);
	Test::More::like($o, qr/walk complete/, "$name: the walk completes") or Test::More::diag($o);
	Test::More::is($p->{faults}, 0, "$name: no faults") or Test::More::diag($o);
	Test::More::note("$name: read again: $p->{read_again} slices (docs/lj-gc-objs.md)") if $p->{read_again};
	Test::More::ok($p->{total} && abs($p->{total} - $truth) <= 0.05 * $truth,
		"$name: GC-managed total " . ($p->{total} // '?') . " within 5% of collectgarbage(\"count\") $truth")
		or Test::More::diag($o);
	Test::More::ok($p->{sum} && abs($p->{sum} - $truth) <= 0.05 * $truth,
		"$name: census (objects, string table, VM state) " . ($p->{sum} // '?')
		. " within 5% of collectgarbage(\"count\") $truth") or Test::More::diag($o);
	# every heap has both: the app's closures, the libraries' C functions
	my ($lf, $cf) = map { $p->{type}{$_}{count} // 0 } 'Lua function', 'C function';
	Test::More::ok($lf > 0 && $cf > 0, "$name: Lua and C functions counted apart ($lf, $cf)") or Test::More::diag($o);
	Test::More::ok(!exists $p->{type}{function}, "$name: no line for functions of either kind");
	Test::More::ok($p->{stall_us} > 0, "$name: the longest stall printed ($p->{stall_us} us)");
	# LuaJIT's own allocator: every string of these apps is far below
	# 128 KB, so all string bytes lie in its segments
	my ($arena, $segs) = $o =~ /^LuaJIT allocator: (\d+) bytes mapped in (\d+) segments/m;
	my $strings = $p->{type}{string}{bytes} // 0;
	Test::More::ok($arena && $segs && $segs >= 1 && $arena >= $strings,
		"$name: LuaJIT's allocator mapped at least the string bytes (" . ($arena // '?') .
		' in ' . ($segs // '?') . " segments, strings $strings)") or Test::More::diag($o);
	Test::More::note("$name: $_") for grep { /^(?:GC-managed|walked|cost|\w[\w ]*: \d+ objects)/ } split /\n/, $o;
	return $p;
}

# The leak app's census P (TEXT, after REQS requests of 100 strings each)
sub check_leak_census {
	my ($name, $p, $o, $reqs) = @_;
	my @order = @{ $p->{order} };
	# strings first; then tables and the string table, in either order: both
	# grow by powers of two (foo's array part, the hash array), so which is
	# bigger depends on how many requests the load made
	Test::More::is_deeply([$order[0] // '', sort grep { defined } @order[1, 2]], ['string', 'string table', 'table'],
		"$name: strings, then tables and the string table hold the most bytes") or Test::More::diag($o);
	my $st = ($p->{type}{string}{bytes} // 0) + ($p->{type}{table}{bytes} // 0);
	Test::More::ok($p->{total} && $st >= 0.6 * $p->{total},
		"$name: strings and tables hold at least 60% of the total") or Test::More::diag($o);
	my $n = $p->{type}{string}{count} // 0;
	Test::More::ok($reqs && $n >= 100 * $reqs,
		"$name: at least the app's strings (100 per request, " . ($reqs // 0) . " requests: $n)");
	Test::More::like($o, qr/^  string 0x[0-9a-f]+: \d+ bytes "/m, "$name: biggest strings listed");
	Test::More::like($o, qr/^  table 0x[0-9a-f]+: \d+ bytes \(array (\d+) slots/m, "$name: biggest tables listed");
	my ($asize) = $o =~ /^  table 0x[0-9a-f]+: \d+ bytes \(array (\d+) slots/m;
	Test::More::ok($asize && $asize >= $n * 0.5, "$name: the biggest table is foo (" . ($asize // 0) . ' array slots)');
}

# The leak app's truths: the heaviest path, and the bytes under foo against
# the app's growth (collectgarbage("count") before the walk minus base).
sub check_load {
	my ($name, $o) = @_;
	my ($reqs) = $o =~ /^# (\d+) requests in/m;
	my ($bad) = $o =~ /^# Non-2xx or 3xx responses: (\d+)/m;
	Test::More::ok($reqs && !$bad, sprintf('%s: the load on /go: %s requests, %s failed', $name, $reqs // 'no',
		$bad // 'none')) or Test::More::diag($o);
}

sub check_leak {
	my ($name, $p, $base, $before, $o) = @_;
	check_load($name, $o);
	my $top = $p->{stacks}[0] // { frames => [], count => 0 };
	my @want = ('string', '[upvalue] foo', '.go', '.demo', '._LOADED', 'registry', 'GC roots');
	Test::More::is_deeply($top->{frames}, \@want,
		"$name: the heaviest path: GC roots, registry, ._LOADED, .demo, .go, [upvalue] foo, string")
		or Test::More::diag(LjStacks::dump_stacks($p, 5));
	my $foo = LjStacks::count_with($p, sub { my @f = reverse @_;
		LjStacks::has_seq(\@f, 'GC roots', 'registry', '._LOADED', '.demo', '.go', '[upvalue] foo') });
	Test::More::ok($foo >= 0.5 * $p->{total}, "$name: foo holds at least 50% of the bytes ($foo of $p->{total})");
	# The app's growth includes the global string table's growth (its
	# array doubles with the number of strings), which foo does not hold:
	# the walk prints the table's size; its size at the base (a few KB,
	# under 1% of the growth) is left in the truth.
	my $strtab = LjStacks::count_with($p, sub { $_[0] eq 'string table' });
	Test::More::ok($strtab > 0, "$name: the string table as its own path ($strtab bytes)");
	my $truth = ($before // 0) - ($base // 0) - $strtab;
	Test::More::ok($truth > 0 && abs($foo - $truth) <= 0.1 * $truth,
		"$name: bytes under foo $foo within 10% of the app's growth without the string table's $truth")
		or Test::More::diag($o);
}

1;
