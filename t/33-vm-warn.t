#!/usr/bin/perl
# A job that makes the guest kernel log a warning fails util/vm-run, which
# prints the kernel's lines.  The warning comes from a guru-mode module that
# calls WARN_ON(1) in its begin probe; the job itself succeeds.
use strict;
use warnings;
use Test::More;
use lib 't/lib';
use VM;

my $vm = VM->new;
my $ko = $vm->build('warn_on', 't/fixtures/vm/warn_on.sxx', stap_args => ['-g']);
ok $ko, 'guru-mode WARN_ON module builds';
$vm->case(warn => 'staprun "$VM_JOB"/warn_on.ko; echo "staprun status $?"', files => [$ko]) if $ko;
my $r = $vm->run;
like $r->{cases}{warn}{output}, qr/^warned\nstaprun status 0$/m, 'the module ran, staprun succeeded';
is $r->{cases}{warn}{status}, 0, 'the job succeeded';
is $r->{status}, 1, 'util/vm-run fails anyway' or diag $r->{stderr};
like $r->{stderr}, qr/error: the guest kernel logged errors/, '... saying the kernel logged errors';
like $r->{stderr}, qr/^  \| \[ *[\d.]+\] WARNING: CPU: \d+ PID: \d+ at .*\[warn_on\]$/m,
    '... and printing the WARNING line';
like $r->{dmesg}, qr/WARNING: CPU/, 'the full dmesg is in the job dir';

done_testing;
