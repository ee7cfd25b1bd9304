#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# samples/ngx-lua-exec-time.sxx in the VM (one boot, one module, built
# against the kernel build tree: return probes need the guest's System.map):
# a debug nginx with three content_by_lua locations of known cost — /spin
# busy-loops 2 ms of CPU time (os.clock), /fast only says "ok", /sleep
# yields in ngx.sleep(0.2) — and an exact number of requests (busybox wget);
# then master mode with two workers (the same module, stapxx_master=PID at
# load time), and /spin on Debian's stripped nginx.
use strict;
use warnings;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjWait;
use Bpf;
use ExecTime;
use File::Path ();

my $R = $ROOT;
my $vm = VM->new;
my $out = $vm->out;
$vm->ktree or do { done_testing(); exit };
my $nginx = "$R/build/nginx/sbin/nginx";


# the app (t/apps/exectime.conf; t/88 runs it on eBPF)
spit("$out/nginx.conf", slurp("$R/t/apps/exectime.conf"));

# Debian's stock nginx, with the lua module (which exports the handlers)
# and libluajit2, stripped: the same app, loaded as the lua module's docs
# say (issue 21)
File::Path::make_path("$out/stock");
spit("$out/stock/nginx.conf", Bpf::stock_conf(slurp("$out/nginx.conf"), 'nginx.conf'));

# the modules at once, as the other VM tests build theirs (VM::builds)
# (the first one for master mode too: 'staprun MOD.ko stapxx_master=MASTER')
my ($ko, $kos) = $vm->builds(['exectime', "$R/samples/ngx-lua-exec-time.sxx", exec => $nginx],
	['exectime_s', "$R/samples/ngx-lua-exec-time.sxx", exec => '/usr/sbin/nginx',
	 args => [VM::stock_d()]]);
ok $ko, 'ngx-lua-exec-time builds against the tree' or diag $vm->build_log;
ok $kos, 'ngx-lua-exec-time builds for Debian\'s stripped nginx and its lua module' or diag $vm->build_log;

# nginx (nginx, conf: another binary and config) with workers workers
# (default 1); staprun run on them while busybox wget makes reqs (a list
# of "COUNT PATH"), then Ctrl-C.  The requests start once the uprobes are
# in every worker, not at the start line: SystemTap prints it from the
# begin probe, before it registers the uprobes, and a request that came
# in between would not be timed.  Each request is timed by the shell
# around the client ("# took PATH US"): the handler runs inside it.  The
# clock is the kernel's, in ns, read from /proc/timer_list by a builtin
# (now_ns): two execs of date a request cost the guest about 180 ms of
# CPU time under TCG.  The spinning code's own time is asked for last
# ("# spun N US MIN"; /spun is a call too, once the session is over).
sub ngx_case {
	my (%o) = @_;
	my @reqs = @{$o{reqs}};
	my $get = join "\n", map { my ($n, $p) = split / /;
		"for i in \$(seq 1 $n); do now_ns; t0=\$now_ns; " . VM::get_sh("http://127.0.0.1:8080$p", '/dev/null')
		. "; now_ns; echo \"# took $p \$(( (now_ns - t0) / 1000 ))\"; done" } @reqs;
	return VM::nginx_up(conf => $o{conf} // "$out/nginx.conf", nginx => $o{nginx}, workers => $o{workers} // 1,
			url => '/fast') . <<"SH"
now_ns() { { read -r _; read -r _; read -r _ _ now_ns _; } < /proc/timer_list; }
staprun $o{run} > stap.out 2> stap.err &
sp=\$!
for i in \$(seq 1 300); do started stap.err && break; sleep 0.2; done
@{[ LjWait::uprobes_placed('$(kids $master; echo $kids)') ]}$get
sleep 1
kill -INT \$sp
wait \$sp
rc=\$?
echo "# \$(@{[ VM::get_sh('http://127.0.0.1:8080/spun') ]})"
SH
		. VM::nginx_down() . "cat stap.err stap.out\nexit \$rc\n";
}

if ($ko) {
	my $x = '-x $worker "$VM_JOB"/exectime.ko';
	$vm->case(spin => ngx_case(run => $x, reqs => ['20 /spin']), files => [$ko], timeout => 120);
	$vm->case(fast => ngx_case(run => $x, reqs => ['30 /fast', '5 /sleep']), files => [$ko], timeout => 120);
}
$vm->case(master => ngx_case(workers => 2, run => '"$VM_JOB"/exectime.ko stapxx_master=$master', reqs => ['40 /fast']),
		  files => [$ko], timeout => 120) if $ko;
$vm->case(stock => ngx_case(run => '-x $worker "$VM_JOB"/exectime_s.ko', reqs => ['20 /spin'],
		  conf => "$out/stock/nginx.conf", nginx => '/usr/sbin/nginx'), files => [$kos], timeout => 120) if $kos;
my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};

# The requests came once the uprobes were in every worker (the case's
# own lines say so).
sub placed_ok {
	my ($name, $o, $n) = @_;
	my @in = $o =~ /^# uprobes placed in (\d+)$/mg;
	ok @in == $n && $o !~ /^# uprobes not placed/m, "$name: the requests came once the uprobes were in the $n worker(s)"
		or diag $o;
}

my %p;
sub check_spin {
	my ($name) = @_;
	my $c = $r->{cases}{$name} or do { fail("no $name case"); return undef };
	my $o = $c->{output};
	is $c->{status}, 0, "$name: staprun status 0" or diag $o;
	placed_ok($name, $o, 1);
	like $o, qr/^WARNING: ngx-lua-exec-time: timing the Lua content, rewrite and access handlers; press Ctrl-C to stop$/m,
		"$name: says what it times on stderr";
	my $p = ExecTime::check_spin($name, $o);
	unlike $o, qr/^(ERROR|WARNING):(?! ngx-lua-exec-time: )/m, "$name: no SystemTap errors or warnings" or diag $o;
	return $p;
}

$p{spin} = check_spin('spin');
# Debian's stripped nginx: the same, the handlers found by their exported
# symbols in the lua module and their return value from its register
check_spin('stock');

CASE: {
	my $c = $r->{cases}{fast} or do { fail('no fast case'); last CASE };
	my $o = $c->{output};
	is $c->{status}, 0, 'fast: staprun status 0' or diag $o;
	placed_ok('fast', $o, 1);
	ExecTime::check_fast('fast', $o, $p{spin});
	unlike $o, qr/^(ERROR|WARNING):(?! ngx-lua-exec-time: )/m, 'fast: no SystemTap errors or warnings' or diag $o;
}
CASE: {
	my $c = $r->{cases}{master} or do { fail('no master case'); last CASE };
	my $o = $c->{output};
	is $c->{status}, 0, 'master: staprun status 0' or diag $o;
	placed_ok('master', $o, 2);
	my $p = ExecTime::parse($o);
	is "@$p{qw(calls done yielded)}", '40 40 0', 'master: the 40 requests to either of 2 workers' or diag $o;
	is $p->{hist}, 40, 'master: the histogram holds the 40 calls' or diag $o;
}

done_testing;
