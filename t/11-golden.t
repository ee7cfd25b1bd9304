#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# The macro dialect, through ./stap++ --dump-src (and --args): every macro,
# nested @use, defaults, and every script error, against golden files in
# t/golden/ (make regen-golden rewrites them; review the diff).  Plus the
# line-number invariant checked directly on the output.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Golden;
use Test::More;

ok(-x $STAPXX, 'stap++ is built') or BAIL_OUT('run make first');
my $f = fixture();
my $T = $f->{target};
my @I = ('-I', 't/golden/tapset');
my $C = 't/golden/cases';

my @cases = (
	# name                  args
	['basic',               [@I, "$C/basic.sxx", '--exec', $T, '--dump-src']],
	['basic-master',        [@I, "$C/basic.sxx", '--exec', $T, '--master', '-', '--dump-src', '--arg', 'secs=1']],
	['basic-cmd',           [@I, "$C/basic.sxx", '-c', "$T fork", '--dump-src']],
	['lines',               [@I, "$C/lines.sxx", '--exec', $T, '--dump-src']],
	['args-list',           [@I, "$C/args.sxx", '--args']],
	['args-list-none',      ["$C/dwarf.sxx", '--args']],
	['args-values',         [@I, "$C/args.sxx", '--exec', $T, '--dump-src',
				 '--arg', 'time=10', '--arg', "label=say \"hi\"\\n and\n\ttab\\",
				 '--arg', 'name=x"; system("rm -rf /"); "',
				 '--arg', 'mode=slow', '--arg', 'probe=process("/bin/true").function("main")']],
	['args-missing',        [@I, "$C/args.sxx", '--exec', $T, '--dump-src']],
	['args-unused',         [@I, "$C/args.sxx", '--exec', $T, '--dump-src',
				 '--arg', 'time=1', '--arg', 'label=x', '--arg', 'nosuch=1', '--arg', 'other=2']],
	['args-last-wins',      [@I, "$C/args.sxx", '--exec', $T, '--dump-src',
				 '--arg', 'time=1', '--arg', 'label=x', '--arg', 'time=2']],
	['dwarf',               ["$C/dwarf.sxx", '--exec', $T, '--dump-src']],
	['default-macros',      ["$C/default-macros.sxx", '--exec', $T, '--dump-src']],
	['default-macros-arg',  ["$C/default-macros.sxx", '--exec', $T, '--dump-src', '--arg', 'n=3']],
	['e-script',            ['-e', 'probe @pfunc(main) { println("$^exec_path", $^arg_n :default(2)) }',
				 '--exec', $T, '--dump-src']],
	['lib-dashed',          ['-e', 'probe begin { println("$^libgx-1.2_path $^libgx-1.2.so_path.x $^libgxtra_path-x") }',
				 '--exec', $T, '--dump-src']],
	['e-script-error',      ['-e', "probe begin {\n\t\$^oops }", '--dump-src']],
	['module-header-mismatch', [@I, "$C/module-header-mismatch.sxx", '--exec', $T, '--dump-src']],
	['target-in-string',    ["$C/target-in-string.sxx", '--exec', $T, '--dump-src']],
	['var-context',         ["$C/var-context.sxx", '--exec', $T, '--dump-src']],
	['var-shadow',          ["$C/var-shadow.sxx", '--exec', $T, '--dump-src']],
	['err-dwarf',           ["$C/err-dwarf.sxx", '--exec', $T, '--dump-src']],
	['err-dwarf-module',    ["$C/err-dwarf-module.sxx", '--exec', $T, '--dump-src']],
	['err-no-target',       ["$C/err-no-target.sxx", '--dump-src']],
	['err-dwarf-no-target', ["$C/err-dwarf-no-target.sxx", '--dump-src']],
	['err-no-script',       ["$C/no-such-file.sxx", '--dump-src']],
	['err-script-is-dir',   [$C, '--dump-src']],
	(map { [$_, [@I, "$C/$_.sxx", '--exec', $T, '--dump-src']] } qw(
		err-unknown-macro err-no-module err-module-header
		err-in-module err-use-empty err-use-name
		err-use-junk err-star-unbound err-star-unbalanced
		err-star-empty err-default-unterminated err-pid-ok-in-string
		err-pfunc-args err-pfunc-unterminated err-conflicting-default
		err-missing-arg err-caret-empty err-arg-empty
		err-offsetof-args err-default-loop err-error err-error-args)),
);

for my $c (@cases) {
	my ($name, $args) = @$c;
	my ($rc, $out, $err) = stapxx(@$args);
	golden($name, $args, $rc, $out, $err);
	if ($name =~ /^err-/) {
		isnt($rc, 0, "$name: fails");
		like($err, qr/error: /, "$name: says error");
	}
}

# A script with a NUL byte is rejected, not truncated.
{
	my $dir = scratch('11-golden');
	spit("$dir/nul.sxx", "probe begin {\n\tprintln(1)\0\n}\n");
	my ($rc, $out, $err) = stapxx("$dir/nul.sxx", '--dump-src');
	is($rc, 1, 'NUL byte: exit 1');
	like($err, qr{nul\.sxx:2: error: NUL byte}, 'NUL byte: located error');
}

# Line numbers: every "// @N" marker of lines.sxx is on line N of the
# expanded output, and the output has as many lines as the input, but for
# the declaration of stapxx_master that follows the last one.
{
	my ($rc, $out, $err) = stapxx(@I, "$C/lines.sxx", '--exec', $T,
				      '--dump-src');
	is($rc, 0, 'lines.sxx expands');
	my ($main) = split(/\n\/\/ ---- module /, $out);
	my @lines = split(/\n/, $main, -1);
	pop @lines if @lines && $lines[-1] eq '';
	is_deeply([ splice(@lines, -2) ], ['', 'global stapxx_master = 0  /* stap++ --master */'],
		'the declaration of stapxx_master after the last line');
	my $in = slurp("$C/lines.sxx");
	is(scalar @lines, ($in =~ tr/\n//), 'same number of lines');
	my $checked = 0;
	for my $i (0 .. $#lines) {
		while ($lines[$i] =~ m{// \@(\d+)}g) {
			is($1, $i + 1, "marker \@$1 on line " . ($i + 1));
			$checked++;
		}
	}
	is($checked, 11, 'all 11 markers outside macros seen');
	unlike($main, qr/\$\^|\$\*|\@pfunc|\@use/, 'no macro left');
}

# Every module of the nested @use chain is expanded exactly once, in
# first-use order, and keeps its own line count.
{
	my ($rc, $out) = stapxx(@I, "$C/basic.sxx", '--exec', $T, '--dump-src');
	my @mods = $out =~ m{^// ---- module (\S+): }mg;
	is_deeply(\@mods, [qw(gt.a gt.b gt.c)], 'nested @use: each once, in order');
	for my $m (@mods) {
		my ($text) = $out =~ m{^// ---- module \Q$m\E: \S+ ----\n(.*?)(?=\n// ---- module |\z)}ms;
		(my $path = $m) =~ s{\.}{/}g;
		my $src = slurp("t/golden/tapset/$path.sxx");
		is(($text =~ tr/\n//), ($src =~ tr/\n//), "$m keeps its line count");
	}
}

done_testing();
