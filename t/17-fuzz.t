#!/usr/bin/perl
# Fuzz the macro expander (fuzz/expand_fuzz.c, libFuzzer + ASan + UBSan)
# for a bounded time: it must finish without a crash, leak, hang or exit.
# STAPXX_FUZZ_SECONDS (default 20) sets the budget; `make fuzz` runs it by
# hand (FUZZ_SECONDS=...).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Golden;
use Test::More;

my $secs = $ENV{STAPXX_FUZZ_SECONDS} || 20;
my ($rc, $o, $e) = run_cmd('make', '-s', 'fuzz/out/expand_fuzz');
is($rc, 0, 'fuzz target builds (clang -fsanitize=fuzzer,address,undefined)')
	or BAIL_OUT("cannot build the fuzz target:\n$o$e");

my $work = scratch('17-fuzz');
mkdir("$work/corpus");
($rc, $o, $e) = run_cmd('fuzz/out/expand_fuzz', "-max_total_time=$secs",
	'-timeout=10', '-rss_limit_mb=1024', '-close_fd_mask=2',
	"-artifact_prefix=$work/", "$work/corpus", 'fuzz/corpus');
is($rc, 0, "no crash, leak or hang in $secs s of fuzzing");
my ($runs) = ($o . $e) =~ /Done (\d+) runs/;
ok($runs && $runs > 1000, "fuzzer ran (" . ($runs // 0) . " inputs)");
if ($rc) {
	# stderr was closed for the target during the run: replay the
	# failing input with it open, so the report shows the stack.
	for my $crash (glob("$work/{crash,leak,timeout,oom}-*")) {
		my (undef, $ro, $re) = run_cmd('fuzz/out/expand_fuzz', $crash);
		diag("$crash:\n$ro$re");
	}
}
done_testing();
