#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# Fuzz the flame graph input parsers (fuzz/flame_fuzz.c: util/fold's and
# util/flamegraph's stack reader, util/pprof's input and profile; libFuzzer
# + ASan + UBSan) for a bounded time, from the seed corpus
# fuzz/flame-corpus: it must finish without a crash, leak, hang or exit,
# and every input the readers accept must read back from fold's output.
# STAPXX_FUZZ_SECONDS (default 10) sets the budget; `make fuzz` runs it by
# hand (FUZZ_SECONDS=...).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Fuzz;
use Test::More;

fuzz_ok('flame_fuzz', 'fuzz/flame-corpus', '58-flame-fuzz');
done_testing();
