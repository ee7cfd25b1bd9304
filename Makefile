# stap++ - Lua-land flame graphs of live LuaJIT/OpenResty processes.
#
#   make                 build ./stap++, util/fold, util/flamegraph
#   make V=1             show the commands
#   make SANITIZE=address,undefined
#   make test            run every test (unit, golden, end-to-end in the VM)
#   make deps            install packages and build the debug targets (root)
#   make demo            draw a Lua flame graph of the seed app (root)
#   make bench           stap++ preprocessing + DWARF resolution time
#   make bench-overhead  sampling overhead on the seed app, in the VM
#   make bench-flamegraph  fold + render 200,000 stacks
#   make fuzz            build and briefly run the expander fuzz target
#   make install PREFIX=/usr/local DESTDIR=

PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share/stap++
CC      ?= cc
CFLAGS  ?= -g -O2
WARN    := -Wall -Wextra
CPPFLAGS += -D_GNU_SOURCE -DSTAPXX_DATADIR='"$(DATADIR)"'
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

LIB_SRCS := $(wildcard lib/*.c)
LIB_OBJS := $(LIB_SRCS:.c=.o)
FLAME_COMMON := util/flame.c lib/error.c
PROGS := stap++ util/fold util/flamegraph

all: $(PROGS)

stap++: $(LIB_OBJS)
	$(quiet) LINK $@
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(LIB_OBJS) $(LDLIBS_DW) $(LDLIBS)

lib/%.o: lib/%.c $(wildcard lib/*.h) Makefile $(FLAGS_STAMP)
	$(quiet) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -c -o $@ $<

util/fold: util/fold.c $(FLAME_COMMON) util/flame.h lib/error.h Makefile $(FLAGS_STAMP)
	$(quiet) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(LDFLAGS) -o $@ util/fold.c $(FLAME_COMMON) $(LDLIBS)

util/flamegraph: util/flamegraph.c $(FLAME_COMMON) util/flame.h lib/error.h Makefile $(FLAGS_STAMP)
	$(quiet) CC $@
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(LDFLAGS) -o $@ util/flamegraph.c $(FLAME_COMMON) $(LDLIBS) -lm

test: all
	prove $(PROVE_FLAGS) t/

deps:
	util/deps

demo: all
	util/demo

bench: all
	util/bench-stap++

bench-overhead: all
	util/bench-overhead

bench-flamegraph: all
	util/bench-flamegraph

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DATADIR)
	install -m 0755 stap++ $(DESTDIR)$(BINDIR)/stap++
	install -m 0755 util/fold $(DESTDIR)$(BINDIR)/stap++-fold
	install -m 0755 util/flamegraph $(DESTDIR)$(BINDIR)/stap++-flamegraph
	cp -R tapset samples $(DESTDIR)$(DATADIR)/

clean:
	rm -f $(PROGS) lib/*.o util/*.o $(FLAGS_STAMP)
	rm -rf t/out

# Expander fuzz target (libFuzzer; needs clang and libclang-rt-14-dev).
FUZZ_SECONDS ?= 30
FUZZ_SRCS := fuzz/expand_fuzz.c lib/expand.c lib/source.c lib/error.c lib/dwarf.c
fuzz/out/expand_fuzz: $(FUZZ_SRCS) $(wildcard lib/*.h) Makefile
	$(quiet) FUZZCC $@
	$(Q)mkdir -p fuzz/out
	$(Q)clang $(CPPFLAGS) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -o $@ $(FUZZ_SRCS) $(LDLIBS_DW)

fuzz: fuzz/out/expand_fuzz
	mkdir -p fuzz/out/corpus
	fuzz/out/expand_fuzz -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=1024 -close_fd_mask=2 -artifact_prefix=fuzz/out/ fuzz/out/corpus fuzz/corpus

.PHONY: all test deps demo bench fuzz bench-overhead bench-flamegraph install clean
