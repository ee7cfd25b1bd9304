#!/usr/bin/perl
# SPDX-License-Identifier: GPL-2.0-or-later
# Fuzz the macro expander (fuzz/expand_fuzz.c, libFuzzer + ASan + UBSan)
# for a bounded time: it must finish without a crash, leak, hang or exit.
# STAPXX_FUZZ_SECONDS (default 10) sets the budget; `make fuzz` runs it by
# hand (FUZZ_SECONDS=...).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Fuzz;
use Test::More;

fuzz_ok('expand_fuzz', 'fuzz/corpus', '17-fuzz');
done_testing();
