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
# co_burn's share of co_burn + th_burn within 8 points: 2,223 of them,
# about 3,000 samples (VM::sample_sh), at the design effect of the guest's
# samples ($VM::SAMPLE_DESIGN): 4 points on independent ones, not t/73's
# 3: the VM's time is what the whole test suite waits for.
my $CLAIM = 8;
my $ko = $vm->build('ljs_ngx_def', 'samples/lj-lua-stacks.sxx', exec => 'build/nginx/sbin/nginx');
ok $ko, 'lj-lua-stacks builds for nginx' or diag $vm->build_log;

sub co_case {
	my (%o) = @_;
	my $sample = VM::sample_sh('staprun -x $worker "$VM_JOB"/ljs_ngx_def.ko', '$worker', NgxCo::samples($CLAIM, $VM::SAMPLE_DESIGN), undef, stop => 1);
	return VM::nginx_up(conf => 't/apps/nginx-co.conf',
		env => "export HEAVY_N=$o{heavy}") . <<"SH" . VM::nginx_down();
echo "# master: \$master worker: \$worker"
@{[ VM::under_wrk('-t2 -c8 http://127.0.0.1:8080/', $sample) ]}grep -E '\\[(alert|emerg|crit|error)\\]' logs/error.log | head -5 | sed 's/^/# /'
SH
}

# the JIT on (the interpreter's start of the walk is the same as without
# coroutines, and t/73 runs both modes with the eBPF backend)
$vm->case(jit => co_case(heavy => 1000000) . "exit \$rc\n", files => [$ko], timeout => 180) if $ko;
my $r = $vm->run;
is $r->{status}, 0, 'dev/vm-run: every case ran, no kernel errors' or diag $r->{stderr};
for my $name (qw(jit)) {
	my $case = $r->{cases}{$name};
	ok $case, "$name: the case ran" or next;
	is $case->{status}, 0, "$name: staprun status 0" or diag $case->{output};
	unlike $case->{output}, qr/\[(alert|emerg|crit|error)\]/, "$name: no errors in error.log";
	my $p = LjStacks::parse($case->{output});
	my @pct = NgxCo::check("nginx coroutines $name", $p, "nginx-co.conf", claim => $CLAIM, design => $VM::SAMPLE_DESIGN);
	note sprintf('%s: co_burn %.1f%% th_burn %.1f%% late_burn %.1f%%, %s us per sample, %d samples in %.1f s of CPU time',
		$name, @pct, $p->{stats}{cost_us} // '?', $p->{stats}{samples} // 0, $p->{cpu} // 0);
}

done_testing;
