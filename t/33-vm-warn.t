#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# A job that makes the guest kernel log a warning fails dev/vm-run, which
# prints the kernel's lines.  The warning comes from a guru-mode module that
# calls WARN_ON(1) in its begin probe; the job itself succeeds.  In the same
# boot, lines written to /dev/kmsg check which kernel messages count as
# errors and which (module taint notes, SystemTap's load banner) do not.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use TestUtil;
use VM;
use Test::More;

my $vm = VM->new;
my $ko = $vm->build('warn_on', 't/fixtures/vm/warn_on.sxx', stap_args => ['-g']);
ok $ko, 'guru-mode WARN_ON module builds';
$vm->case(warn => 'staprun "$VM_JOB"/warn_on.ko; echo "staprun status $?"', files => [$ko]) if $ko;
my @benign = (
	'<4>stap_t33: loading out-of-tree module taints kernel.',
	'<5>stap_t33: module verification failed: signature and/or required key missing - tainting kernel',
	'<7>t33mod (t33.stp): systemtap: 4.8/0.188, base: ffffffffc0000000, memory: 1data/1text/1ctx/1net/1alloc kb, probes: 1',
	'<4>t33mod: module_layout: kernel tainted.',
	'<6>t33 an ordinary info line',
);
my @bad = (
	'<3>t33 a driver error at KERN_ERR',
	'<4>stap_t33: Unknown symbol t33_missing (err -2)',
	'<4>t33mod: cannot resolve a t33 symbol',   # t33mod: a module named by its banner
	'<6>BUG: t33 kernel NULL pointer dereference',
);
$vm->case(kmsg => join('', "echo on > /proc/sys/kernel/printk_devkmsg\n",
                       map { "echo " . VM::sh_quote($_) . " > /dev/kmsg\n" } @benign, @bad));
my $r = $vm->run;
like $r->{cases}{warn}{output}, qr/^warned\nstaprun status 0$/m, 'the module ran, staprun succeeded';
is $r->{cases}{warn}{status}, 0, 'the job succeeded';
is $r->{status}, 1, 'dev/vm-run fails anyway' or diag $r->{stderr};
like $r->{stderr}, qr/error: the guest kernel logged errors/, '... saying the kernel logged errors';
like $r->{stderr}, qr/^  \| \[ *[\d.]+\] WARNING: CPU: \d+ PID: \d+ at .*\[warn_on\]$/m,
	'... and printing the WARNING line';
like $r->{dmesg}, qr/WARNING: CPU/, 'the full dmesg is in the job dir';

is $r->{cases}{kmsg}{status}, 0, 'kernel log lines written';
for my $l (@bad) {
	(my $text = $l) =~ s/^<\d>//;
	like $r->{stderr}, qr/^  \| \[ *[\d.]+\] \Q$text\E$/m, "reported: $text";
}
for my $l (@benign) {
	(my $text = $l) =~ s/^<\d>//;
	unlike $r->{stderr}, qr/\Q$text\E/, "not reported: $text";
}

done_testing;
