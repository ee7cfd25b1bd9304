# SPDX-License-Identifier: GPL-2.0-or-later
# Fuzz.pm - run a libFuzzer target of fuzz/ for a bounded time, as a test.
#
#   use Fuzz;
#   fuzz_ok('expand_fuzz', 'fuzz/corpus', '17-fuzz');
#
# Builds fuzz/out/TARGET (make; clang -fsanitize=fuzzer,address,undefined),
# runs it for $STAPXX_FUZZ_SECONDS (default 10) from a fresh scratch corpus
# plus the seed CORPUS, and checks: it builds, it ends without a crash,
# leak, hang or exit, and it ran more than 1000 inputs.  A failing input is
# replayed with stderr open, so the report shows the stack.  10 s is a
# smoke test beside the seed corpus (expand_fuzz ran 61,701 inputs and
# flame_fuzz 20,809 in 10 s on 2026-12-07; 20 s cost make check a tenth
# of its CPU time); `make fuzz` searches longer.
package Fuzz;
use strict;
use warnings;
use Test::More ();
use TestUtil;
use Exporter 'import';
our @EXPORT = qw(fuzz_ok);

sub fuzz_ok {
	my ($target, $corpus, $name) = @_;
	my $secs = $ENV{STAPXX_FUZZ_SECONDS} || 10;
	my $bin = "fuzz/out/$target";
	my ($rc, $o, $e) = run_cmd('make', '-s', $bin);
	Test::More::is($rc, 0, "$target builds (clang -fsanitize=fuzzer,address,undefined)")
		or Test::More::BAIL_OUT("cannot build $bin:\n$o$e");

	my $work = scratch($name);
	mkdir("$work/corpus");
	($rc, $o, $e) = run_cmd($bin, "-max_total_time=$secs",
		'-timeout=10', '-rss_limit_mb=1024', '-close_fd_mask=2',
		"-artifact_prefix=$work/", "$work/corpus", $corpus);
	Test::More::is($rc, 0, "no crash, leak or hang in $secs s of fuzzing");
	my ($runs) = ($o . $e) =~ /Done (\d+) runs/;
	Test::More::ok($runs && $runs > 1000, "fuzzer ran (" . ($runs // 0) . " inputs)");
	return unless $rc;
	# stderr was closed for the target during the run: replay the
	# failing input with it open, so the report shows the stack.
	for my $crash (glob("$work/{crash,leak,timeout,oom}-*")) {
		my (undef, $ro, $re) = run_cmd($bin, $crash);
		Test::More::diag("$crash:\n$ro$re");
	}
}

1;
