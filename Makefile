# SPDX-License-Identifier: GPL-2.0-or-later
# stap++ - Lua-land flame graphs of live LuaJIT/OpenResty processes.
#
#   make                 build ./stap++, util/fold, util/flamegraph
#   make V=1             show the commands
#   make SANITIZE=address,undefined
#   make test            run every test (unit, golden, end-to-end in the VM);
#                        PROVE_JOBS=1 runs them one at a time
#   make regen-golden    rewrite t/golden/ from the current output (review it)
#   make check           run the host-only tests: every t/*.t without "-vm"
#                        in its name (no VM boots; PROVE_FLAGS= as for test)
#   make test REPEAT=N   run the VM and eBPF tests N times; failures per file
#                        (RESUME=1: go on with an interrupted run)
#   make test CPU=1      and the CPU time of each test file (dev/test-cpu)
#   make test-fresh      make demo and make test in a fresh Debian 12 root
#   make deps            install packages and build the debug targets (root)
#   make demo            draw a Lua flame graph of the seed app (root;
#                        make demo and make test run make deps first)
#   make bench           stap++ preprocessing + DWARF resolution time
#   make bench-overhead  sampling overhead on the seed app, in the VM
#   make bench-offcpu    lj-lua-off-cpu's overhead on the seed app, in the VM
#   make bench-flamegraph  fold + render 200,000 stacks
#   make bench-overhead-bpf  eBPF sampling overhead on the seed app, natively
#   make bench-gc        walk rate and stall of lj-gc-objs/lj-gco-ref, in the VM
#   make bench-alloc     a uprobe trap per allocation (lj-lua-alloc), natively (eBPF)
#   make bench-sample-cost  an eBPF sample's cost and reads on real Lua code
#                        (BENCH_BEFORE=path/to/older/stap++: side by side)
#   make fuzz            build and briefly run the fuzz targets (FUZZ_SECONDS=30 each)
#   make soak            lj-lua-stacks --master under load for 10 min, in the VM
#                        (MINUTES=, SOAK_FLAGS='-D MAXSKIPPED=100000')
#   make install PREFIX=/usr/local DESTDIR=

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share/stap++
CC      ?= cc
CFLAGS  ?= -g -O2
WARN    := -Wall -Wextra
CPPFLAGS += -Ilib -D_GNU_SOURCE -DSTAPXX_DATADIR='"$(DATADIR)"'
LDLIBS_DW := -ldw -lelf
VERSION := 0.1.0
CPPFLAGS += -DSTAPXX_VERSION='"$(VERSION)"'

ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE)
endif

ifeq ($(V),1)
Q :=
quiet = @:
else
Q := @
quiet = @printf '  %-8s %s\n'
endif

# Rebuild everything when the compiler or its flags change (e.g. SANITIZE=).
FLAGS_STAMP := .build-flags
FLAGS_NOW := $(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(LDLIBS)
ifneq ($(file <$(FLAGS_STAMP)),$(FLAGS_NOW))
$(file >$(FLAGS_STAMP),$(FLAGS_NOW))
endif

# lib/ holds one folder per component (lib/README.md), each built into a
# static archive lib/C/libstapxx-C.a from its *.c files (a BPF program,
# *.bpf.c, is not one of them).  A component uses only those to its right
# in COMPONENTS, the order the linker needs them in.
COMPONENTS := driver bpf expand dwarf target base
comp_srcs = $(filter-out %.bpf.c,$(wildcard $(foreach c,$(1),lib/$(c)/*.c)))
comp_libs = $(foreach c,$(1),lib/$(c)/libstapxx-$(c).a)
LIB_SRCS := $(call comp_srcs,$(COMPONENTS))
LIB_OBJS := $(LIB_SRCS:.c=.o)
FLAME_COMMON := util/flame.c $(call comp_libs,base)
PROGS := stap++ util/fold util/flamegraph util/pprof

all: $(PROGS)

stap++: $(call comp_libs,$(COMPONENTS))
	$(quiet) LINK $@
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_DW) $(LDLIBS_BPF) $(LDLIBS)

# Each archive holds its folder's objects (rebuilt whole, so a removed
# source leaves no stale member).
$(foreach c,$(COMPONENTS),$(eval $(call comp_libs,$(c)): $(patsubst %.c,%.o,$(call comp_srcs,$(c)))))
lib/%.a:
	$(quiet) AR $@
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# The eBPF backend (--runtime=bpf): lib/bpf/*.bpf.c built with clang
# -target bpf against lib/bpf/lj_bpf.h and libbpf's headers only (no
# kernel headers: the few kernel types are declared there and relocated by
# CO-RE against the running kernel's BTF at load time), and a bpftool
# skeleton.
CLANG   ?= clang
BPFTOOL ?= $(or $(wildcard /usr/sbin/bpftool),bpftool)
LDLIBS_BPF := -lbpf -lelf -lz
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
lib/bpf/%.bpf.o: lib/bpf/%.bpf.c lib/bpf/lj_walk.bpf.h lib/bpf/lj_read.bpf.h lib/bpf/lj_wait.bpf.h lib/bpf/lj_bpf.h Makefile
	$(quiet) CLANG $@
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall $(if $(MULTIARCH),-I/usr/include/$(MULTIARCH)) -Ilib/bpf -c -o $@ $<
lib/bpf/%.skel.h: lib/bpf/%.bpf.o
	$(quiet) SKEL $@
	$(Q)$(BPFTOOL) gen skeleton $< name $* > $@.tmp && mv $@.tmp $@
lib/bpf/lj_stacks_user.o: lib/bpf/lj_stacks.skel.h
lib/bpf/lj_offcpu_user.o: lib/bpf/lj_offcpu.skel.h
lib/bpf/lj_fio_user.o: lib/bpf/lj_fio.skel.h
lib/bpf/lj_yield_user.o: lib/bpf/lj_yield.skel.h
lib/bpf/lj_alloc_user.o: lib/bpf/lj_alloc.skel.h
lib/bpf/lj_exectime_user.o: lib/bpf/lj_exectime.skel.h
lib/bpf/sample_bt_user.o: lib/bpf/sample_bt.skel.h
lib/bpf/lj_gcwalk_user.o: lib/bpf/lj_gcwalk.skel.h

# Headers: each object's .d file (-MMD) lists those it includes.
lib/%.o: lib/%.c Makefile $(FLAGS_STAMP)
	$(quiet) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -MMD -MP -c -o $@ $<
-include $(LIB_OBJS:.o=.d)

util/fold: util/fold.c $(FLAME_COMMON) util/flame.h $(wildcard lib/base/*.h) Makefile $(FLAGS_STAMP)
	$(quiet) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(LDFLAGS) -o $@ util/fold.c $(FLAME_COMMON) $(LDLIBS)

util/flamegraph: util/flamegraph.c $(FLAME_COMMON) util/flame.h $(wildcard lib/base/*.h) Makefile $(FLAGS_STAMP)
	$(quiet) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(LDFLAGS) -o $@ util/flamegraph.c $(FLAME_COMMON) $(LDLIBS) -lm

# util/pprof: pprof profiles; util/profile.pb-c.[ch] are generated by protoc-c.
PPROF_SRCS := util/pprof.c util/pprof_input.c util/pprof_profile.c util/profile.pb-c.c
util/profile.pb-c.c: util/profile.proto
	$(quiet) PROTOC $@
	$(Q)protoc-c --proto_path=util --c_out=util util/profile.proto
util/profile.pb-c.h: util/profile.pb-c.c
util/pprof: $(PPROF_SRCS) util/profile.pb-c.h $(wildcard util/pprof*.h) $(FLAME_COMMON) util/flame.h $(wildcard lib/base/*.h) Makefile $(FLAGS_STAMP)
	$(quiet) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(LDFLAGS) -o $@ $(PPROF_SRCS) $(FLAME_COMMON) $(LDLIBS) -lprotobuf-c -lz

# Four jobs: the tests with -vm in their name in three chains, and the
# host tests in a fourth.  The VM chains take turns on the one VM
# (dev/vm-run's lock), and two chains build their modules while the
# third one's VM runs (a VM test keeps about 1.4 of the 2 cores busy).
# Each test in a chain builds, then runs on the VM: once the guest's
# scripts stopped spending most of a VM case's time in execs (3683270),
# two chains left the VM idle 600 s of make test's 1,818 while they
# built, and each chain took about as long as the whole run.  The chains
# are of about equal length by make test's times (the tests of a chain
# run in the order of their numbers, each chain starts with a test that
# builds little); t/30 (its own VMs) and t/31 (builds only) are in them
# too: in the host chain, with t/82 and t/86, they made it end 10
# minutes after the VM chains.  (With 'par=**' for the host tests, prove
# would start the VM chains only once every host test had started.)
# PROVE_JOBS=1: one test at a time.
PROVE_JOBS ?= 4
VM_CHAIN_A := 30 42 43 44 46 48 56 63 64
VM_CHAIN_B := 22 31 33 36 40 41 45 60 65 82
VM_CHAIN_C := $(filter-out $(VM_CHAIN_A) $(VM_CHAIN_B),$(foreach t,$(wildcard t/*-vm*.t),$(firstword $(subst -, ,$(notdir $(t))))))
empty :=
space := $(empty) $(empty)
comma := ,
prove_chain = t/{$(subst $(space),$(comma),$(strip $(1)))}-*.t
# make demo and make test are the README's first commands, so on a fresh
# machine they install what is missing (dev/deps: idempotent, a few seconds
# when nothing is) before anything is built: 'all' needs cc, clang and
# libbpf, which dev/deps installs.  REPEAT=N runs the VM and eBPF tests N
# times and prints each file's failures (dev/test-repeat).  When a test
# fails, dev/test-digest ends the run with what each failed test said.
# STAPXX_VM_SERVER=1: the VM tests share one VM, booted once (dev/vm-run).
# STAPXX_MODULE_CACHE: a module built with the same command line by two
# tests is built once a run (t/lib/VM.pm).
# STAPXX_HOST_NICE: the host tests run at nice 5, after the VM tests'
# builds (t/lib/TestUtil.pm).
PROVE_RULES = --rules='seq=$(call prove_chain,$(VM_CHAIN_A))' \
	--rules='seq=$(call prove_chain,$(VM_CHAIN_B))' \
	--rules='seq=$(call prove_chain,$(VM_CHAIN_C))' --rules='seq=**'
# (dev/test-repeat asks for them when make does not pass them)
print-prove-rules:
	@echo "$(PROVE_RULES)"
test:
	dev/deps
	$(MAKE) all
ifeq ($(REPEAT),)
	@mkdir -p t/out/.diag && touch t/out/.diag/.start && rm -rf t/out/times.log t/out/.stapconf-warm t/out/.modules \
		t/out/.diag/retried.txt
	$(if $(CPU),dev/test-cpu start)
	STAPXX_VM_SERVER=1 STAPXX_MODULE_CACHE=$(CURDIR)/t/out/.modules STAPXX_HOST_NICE=5 prove -j$(PROVE_JOBS) --timer $(PROVE_RULES) \
		$(if $(CPU),--exec 'dev/test-cpu exec') $(PROVE_FLAGS) t/ || \
		{ dev/vm-run --stop-server; dev/test-times | head -n 12; $(if $(CPU),dev/test-cpu report;) dev/test-digest; exit 1; }
	dev/vm-run --stop-server
	dev/test-times | head -n 12
	$(if $(CPU),dev/test-cpu report)
	@dev/test-digest --retried
else
	STAPXX_VM_SERVER=1 STAPXX_PROVE_RULES="$(PROVE_RULES)" dev/test-repeat -n $(REPEAT) -j $(PROVE_JOBS) $(if $(RESUME),--resume) || \
		{ dev/vm-run --stop-server; exit 1; }
	dev/vm-run --stop-server
endif

# Tests that boot the VM have "-vm" in their name; the rest run on the host.
HOST_TESTS = $(strip $(foreach t,$(sort $(wildcard t/*.t)),$(if $(findstring -vm,$(t)),,$(t))))

# Five at a time, the longest first (their times in make check on
# 2026-12-08), the rest in their numbers' order.  A third of the tests
# mostly wait (off-CPU, yield and exec-time workloads are blocked by
# design): more of them at once keep both cores busy while they wait,
# and a long test started last would end the run alone.  On this 2-core
# host, longest first: 4 at a time 180 s, 5 178 s, 6 176 s (about 310 s
# of CPU time each).
CHECK_FIRST = $(addprefix t/,70-bpf-luajit.t 85-bpf-jit-frames.t 71-bpf-nginx.t 91-bpf-lj-gc-objs.t \
	78-bpf-lj-lua-alloc.t 74-bpf-lj-lua-off-cpu.t 80-bpf-containers.t 75-bpf-states.t \
	84-resty-memory.t 76-bpf-trace-exits.t 78-bpf-ngx-lua-yield.t 88-bpf-ngx-lua-exec-time.t \
	24-layouts.t 15-stap.t 89-bpf-sample-bt.t 73-bpf-ngx-coroutines.t 23-debuginfod.t \
	87-stap-symbols.t 34-deps.t 20-dwarf.t 58-flame-fuzz.t 17-fuzz.t 83-bpf-tail-call-names.t \
	35-scripts.t 57-pprof.t 24-targets.t 72-bpf-errors.t 90-bpf-real-code.t)
check: all
	prove -j5 $(PROVE_FLAGS) $(filter $(HOST_TESTS),$(CHECK_FIRST)) $(filter-out $(CHECK_FIRST),$(HOST_TESTS))

# Golden files: the tests only compare; a differing run leaves its output
# in t/out/golden-new/, which this copies over t/golden/ (review the diff).
LPAREN := (
GOLDEN_TESTS = $(shell grep -l 'golden$(LPAREN)' t/*.t)
regen-golden: all
	rm -rf t/out/golden-new
	-prove $(GOLDEN_TESTS)
	@if [ -d t/out/golden-new ]; then cp -v t/out/golden-new/*.out t/golden/; \
	else echo 'regen-golden: every golden file matches'; fi

deps:
	dev/deps

demo:
	dev/deps
	$(MAKE) all
	dev/demo

# The README's two commands as a new user runs them: in a fresh Debian 12
# root made by debootstrap (minbase, plus git and make), in a mount
# namespace.  Not part of 'make test': it downloads and builds everything
# again (make deps alone took 20 min in the first run, 2026-11-26; see
# docs/development.md, 'A fresh machine').
test-fresh:
	dev/test-fresh

bench: all
	dev/bench-stap++

bench-overhead: all
	dev/bench-overhead

bench-flamegraph: all
	dev/bench-flamegraph

bench-overhead-bpf: all
	dev/bench-overhead-bpf

bench-gc: all
	dev/bench-gc

bench-gc-bpf: all
	dev/bench-gc-bpf

bench-alloc:
	dev/bench-alloc

bench-sample-cost: all
	dev/bench-sample-cost $(if $(BENCH_BEFORE),-b $(BENCH_BEFORE))

# make bench-probe: lj-lua-stacks' shares and time per sample in each
# configuration, in the VM (dev/bench-probe --bpf: natively).  make
# bench-all: every benchmark, one after another; rewrites the generated
# section of docs/benchmarks.md (BENCH_FLAGS='--full', '--only probe,gc').
.PHONY: bench-probe bench-all
bench-probe: all
	dev/bench-probe

bench-all: all
	dev/bench-all $(BENCH_FLAGS)

MINUTES ?= 10
soak: all
	dev/soak -m $(MINUTES) $(SOAK_FLAGS)

bench-offcpu: all
	dev/bench-offcpu

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)
	install -m 0755 stap++ $(DESTDIR)$(BINDIR)/stap++
	install -m 0755 util/fold $(DESTDIR)$(BINDIR)/stap++-fold
	install -m 0755 util/flamegraph $(DESTDIR)$(BINDIR)/stap++-flamegraph
	install -m 0755 util/pprof $(DESTDIR)$(BINDIR)/stap++-pprof
	cp -R tapset samples layouts $(DESTDIR)$(DATADIR)/

clean:
	rm -f $(PROGS) lib/*/*.[oad] util/*.o util/profile.pb-c.[ch] $(FLAGS_STAMP)
	rm -f lib/bpf/*.skel.h lib/bpf/*.skel.h.tmp
	rm -rf t/out

# Fuzz targets (libFuzzer; need clang and libclang-rt-14-dev): the expander
# and the flame graph input parsers (fold, flamegraph, pprof).
FUZZ_SECONDS ?= 30
FUZZCFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_RUN = -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=1024 -close_fd_mask=2 -artifact_prefix=fuzz/out/
# The fuzz targets are built from their components' sources (clang with
# the sanitizers, not the archives' objects).  The expander uses expand,
# dwarf and base.
FUZZ_COMPONENTS := expand dwarf base
FUZZ_SRCS := fuzz/expand_fuzz.c $(call comp_srcs,$(FUZZ_COMPONENTS))
fuzz/out/expand_fuzz: $(FUZZ_SRCS) $(wildcard $(foreach c,$(FUZZ_COMPONENTS),lib/$(c)/*.h)) Makefile
	$(quiet) FUZZCC $@
	$(Q)mkdir -p fuzz/out
	$(Q)clang $(CPPFLAGS) $(FUZZCFLAGS) -o $@ $(FUZZ_SRCS) $(LDLIBS_DW)

# util/fold's and util/flamegraph's reader, util/pprof's input and profile
FUZZ_FLAME_SRCS := fuzz/flame_fuzz.c util/pprof_input.c util/pprof_profile.c util/profile.pb-c.c util/flame.c $(call comp_srcs,base)
fuzz/out/flame_fuzz: $(FUZZ_FLAME_SRCS) util/profile.pb-c.h $(wildcard util/*.h) $(wildcard lib/base/*.h) Makefile
	$(quiet) FUZZCC $@
	$(Q)mkdir -p fuzz/out
	$(Q)clang $(CPPFLAGS) -DFLAME_CHUNK_SIZE=256 $(FUZZCFLAGS) -o $@ $(FUZZ_FLAME_SRCS) -lprotobuf-c -lz

fuzz: fuzz/out/expand_fuzz fuzz/out/flame_fuzz
	mkdir -p fuzz/out/corpus fuzz/out/flame-corpus
	fuzz/out/expand_fuzz $(FUZZ_RUN) fuzz/out/corpus fuzz/corpus
	fuzz/out/flame_fuzz $(FUZZ_RUN) fuzz/out/flame-corpus fuzz/flame-corpus

.PHONY: all test test-fresh print-prove-rules check regen-golden deps demo bench fuzz bench-overhead bench-flamegraph bench-overhead-bpf bench-gc bench-gc-bpf bench-offcpu bench-alloc bench-sample-cost soak install clean
