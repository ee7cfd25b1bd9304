#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# lj-lua-stacks in OpenResty: a coroutine.wrap function and an
# ngx.thread.spawn light thread, resumed by ngx_lua's C scheduler (not
# lj_vm_resume), go on after [resume] in the handler that resumed them
# (t/apps/co.lua under wrk, the debug nginx, in the VM: one build, one
# boot, the JIT on).  The thread's samples after ngx.sleep (the
# event loop resumed it) end at the thread's function.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use LjStacks;
use NgxCo;
use Test::More;

my $vm = VM->new;
my $T = 3;    # seconds of sampling per case
my $ko = $vm->build('ljs_ngx_co', 'samples/lj-lua-stacks.sxx', exec => 'build/nginx/sbin/nginx',
	args => ['--arg', "time=$T"]);
ok $ko, 'lj-lua-stacks builds for nginx' or diag $vm->build_log;

sub co_case {
	my (%o) = @_;
	return VM::nginx_up(conf => 't/apps/nginx-co.conf',
		env => "export HEAVY_N=$o{heavy}") . <<"SH" . VM::nginx_down();
echo "# master: \$master worker: \$worker"
@{[ VM::under_wrk('-t2 -c8 http://127.0.0.1:8080/', 'timeout -s INT -k 10 40 staprun -x $worker "$VM_JOB"/ljs_ngx_co.ko') ]}grep -E '\\[(alert|emerg|crit|error)\\]' logs/error.log | head -5 | sed 's/^/# /'
SH
}

# the JIT on (the interpreter's start of the walk is the same as without
# coroutines, and t/73 runs both modes with the eBPF backend)
$vm->case(jit => co_case(heavy => 1000000) . "exit \$rc\n", files => [$ko], timeout => 60) if $ko;
my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
for my $name (qw(jit)) {
	my $case = $r->{cases}{$name} or next;
	is $case->{status}, 0, "$name: staprun status 0" or diag $case->{output};
	unlike $case->{output}, qr/\[(alert|emerg|crit|error)\]/, "$name: no errors in error.log";
	my $p = LjStacks::parse($case->{output});
	my @pct = NgxCo::check("nginx coroutines $name", $p, "nginx-co.conf");
	note sprintf('%s: co_burn %.1f%% th_burn %.1f%% late_burn %.1f%%, %s us per sample',
		$name, @pct, $p->{stats}{cost_us} // '?');
}

done_testing;
