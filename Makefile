# liveprof - one build: BPF objects -> skeletons -> liveprof.
#
#   make            build ./liveprof (runs `make deps` first if a tool is missing)
#   make deps       install the Debian packages the build and the tests need
#   make test       build, then run every test (unit, fuzz, layers, end-to-end, TUI)
#   make unit       build the unit tests (build/tests/test_*)
#   make fuzzers    build the libFuzzer harnesses (build-fuzz/fuzz_*)
#   make bench-bins build the benchmark programs (build/tests/bench/*)
#   make demo       profile the built-in demo workload and write flamegraphs
#   make bench      run the benchmarks and write BENCHMARKS.md
#   make format     apply .clang-format
#   V=1             show the full commands

.DELETE_ON_ERROR:
.SECONDARY:
.SUFFIXES:

# Build with every CPU unless told otherwise (make -jN): make test's build
# is two minutes of it on the 2-core CI machine.
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

Q := $(if $(V),,@)
msg = $(if $(V),,@printf '  %-8s %s\n' "$(1)" "$(2)";)

OUT      := build
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
ARCH     := x86
PYTHON   := /usr/bin/python3

# Debian packages needed to build and to test. `make deps` is idempotent.
DEB_BUILD := clang llvm libbpf-dev libelf-dev libdw-dev zlib1g-dev libjansson-dev \
	libncurses-dev libmicrohttpd-dev bpftool pkg-config make gcc
DEB_BUILD += libdebuginfod-dev
DEB_TEST  := python3 python3-pytest python3-pytest-xdist tmux chromium elfutils linux-perf bpftrace \
	golang-go ruby xz-utils libclang-rt-14-dev procps libc6-dbg prometheus nodejs valgrind
# tests/workloads/throws.cc: C++ exceptions through traced functions
DEB_TEST  += g++
DEB_TEST  += debuginfod
# <sys/sdt.h>: the USDT probes of tests/workloads/usdt.c
DEB_TEST  += systemtap-sdt-dev
# the DWARF of /usr/bin/python3.11 (by build-id): where --trace py: probes
DEB_TEST  += python3.11-dbg
# test_serve_hostile's check that no descriptor is closed twice
DEB_TEST  += strace
# tests/kernels: Debian's 6.1 and 6.12 booted in QEMU (TCG) with a busybox initramfs
DEB_TEST  += qemu-system-x86 busybox-static
DEPS_STAMP := $(OUT)/.deps-ok

CFLAGS_COMMON := -g -O2 -Wall -Wextra -Werror -std=gnu11 -D_GNU_SOURCE \
	-I$(OUT) -I. -MMD -MP
CFLAGS  ?=
LDLIBS  := -lbpf -ldw -lelf -ljansson -lncursesw -lmicrohttpd -lz -lpthread -lm

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRCS))

# One archive per layer, linked from the top down; `make check-layers` checks
# every include and every symbol reference against these arrows:
#   user/cli -> {ui-tui, user/serve} -> user/session -> user/profile
#            -> {dwarf, bpf} -> user/util      (user/synth -> user/profile)
LAYERS     := util dwarf profile session synth serve tui
util_DIR    := user/util
dwarf_DIR   := dwarf
profile_DIR := user/profile
session_DIR := user/session
synth_DIR   := user/synth
serve_DIR   := user/serve
tui_DIR     := ui-tui
layer_objs   = $(patsubst %.c,$(2)/%.o,$(wildcard $($(1)_DIR)/*.c))
LAYER_LIBS  := $(foreach l,tui serve synth session profile dwarf util,$(OUT)/lib$(l).a)
CLI_OBJS    := $(patsubst %.c,$(OUT)/%.o,$(wildcard user/cli/*.c))
# The composition root without main(), so unit tests can reach options.c.
CLI_LIB     := $(OUT)/libcli.a

UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
UNIT_BINS  := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))
BENCH_BINS := $(patsubst tests/bench/%.c,$(OUT)/tests/bench/%,\
	$(filter-out %.bpf.c,$(wildcard tests/bench/*.c)))
WL_SRCS    := $(wildcard tests/workloads/*.c)

# libFuzzer harnesses: clang with coverage, ASan and UBSan. The layers they
# reach are compiled again into build-fuzz/ with the same instrumentation:
# a parser built without it would be fuzzed blind and unchecked.
FUZZ_OUT    := build-fuzz
FUZZ_LAYERS := serve synth profile dwarf util
FUZZ_CFLAGS := -g -O1 -std=gnu11 -D_GNU_SOURCE -I. -MMD -MP -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_LIBS   := $(foreach l,$(FUZZ_LAYERS),$(FUZZ_OUT)/lib$(l).a)
FUZZ_BINS   := $(patsubst tests/fuzz/%.c,$(FUZZ_OUT)/%,$(wildcard tests/fuzz/fuzz_*.c))

.PHONY: all deps test-deps test unit fuzzers fuzz bench-bins demo bench format clean workloads check-tools \
	check-layers
all: liveprof

# ---- dependencies -------------------------------------------------------
# Run deps automatically when a tool or header the build needs is missing.
$(DEPS_STAMP):
	$(Q)mkdir -p $(OUT)
	$(Q)if ! command -v $(CLANG) >/dev/null || ! command -v $(BPFTOOL) >/dev/null || \
	     ! test -f /usr/include/bpf/libbpf.h || ! test -f /usr/include/elfutils/libdw.h || \
	     ! test -f /usr/include/jansson.h || ! test -f /usr/include/gelf.h || \
	     ! test -f /usr/include/ncursesw/curses.h || ! test -f /usr/include/microhttpd.h || \
	     ! test -f /usr/include/elfutils/debuginfod.h; then \
		$(MAKE) --no-print-directory deps; \
	fi
	$(Q)touch $@

# make test also needs what only the tests use (pytest-xdist, chromium,
# prometheus ...): a machine with the build tools alone gets them here.
test-deps: | $(DEPS_STAMP)
	$(Q)for p in $(DEB_TEST); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || \
		{ $(MAKE) --no-print-directory deps; break; }; \
	done

deps:
	@if [ "$$(id -u)" != 0 ]; then echo "make deps: run as root (it calls apt-get)" >&2; exit 1; fi
	@missing=""; for p in $(DEB_BUILD) $(DEB_TEST); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else echo "all Debian packages present"; fi
	@# puppeteer-core (no browser download: the tests drive Debian's chromium)
	@# Debian's nodejs comes without npm; nodesource's has its own (they conflict)
	@command -v npm >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm
	@$(MAKE) --no-print-directory $(WEB_DEPS)
	@# the kernel matrix's packages, unpacked into a cache outside the checkout
	@$(PYTHON) tests/kernels/vm.py fetch
	@mkdir -p $(OUT) && touch $(DEPS_STAMP)

# ---- kernel types -------------------------------------------------------
vmlinux/vmlinux.h: | $(DEPS_STAMP)
	$(Q)if [ ! -r /sys/kernel/btf/vmlinux ]; then \
		echo "error: this kernel has no BTF (/sys/kernel/btf/vmlinux); liveprof needs CONFIG_DEBUG_INFO_BTF=y" >&2; exit 1; fi
	$(call msg,BTF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

# ---- BPF ----------------------------------------------------------------
$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c vmlinux/vmlinux.h | $(DEPS_STAMP)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Ibpf -I. \
		-MMD -MP -MF $(@:.o=.d) -MT $@ -c $< -o $@.raw.o
	$(Q)$(BPFTOOL) gen object $@ $@.raw.o && rm -f $@.raw.o

$(OUT)/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

# The benchmarks' own BPF (tests/bench/*.bpf.c), built the same way.
$(OUT)/bpf/%.bpf.o: tests/bench/%.bpf.c vmlinux/vmlinux.h | $(DEPS_STAMP)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) -g -O2 -Wall -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Ibpf -I. \
		-MMD -MP -MF $(@:.o=.d) -MT $@ -c $< -o $@.raw.o
	$(Q)$(BPFTOOL) gen object $@ $@.raw.o && rm -f $@.raw.o

# ---- user space ---------------------------------------------------------
$(OUT)/%.o: %.c $(BPF_SKELS) | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -c $< -o $@

# The web UI's files, embedded in the serve layer as C arrays.
ASSETS     := $(sort $(wildcard user/serve/assets/*))
serve_EXTRA := $(OUT)/user/serve/assets_gen.o
$(OUT)/user/serve/assets_gen.c: $(ASSETS) user/serve/gen_assets.sh
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)user/serve/gen_assets.sh $@ $(ASSETS)
$(OUT)/user/serve/assets_gen.o: $(OUT)/user/serve/assets_gen.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -c $< -o $@

# The kernel types the BPF object's CO-RE relocations need, embedded in the
# session layer (user/session/min_btf.h). A bpftool that cannot cut them
# leaves an empty file: liveprof then reads the whole kernel BTF.
session_EXTRA := $(OUT)/user/session/min_btf_gen.o
$(OUT)/liveprof.min.btf: $(OUT)/bpf/liveprof.bpf.o
	$(call msg,BTF,$@)
	$(Q)$(BPFTOOL) gen min_core_btf /sys/kernel/btf/vmlinux $@ $< 2>/dev/null || : >$@
$(OUT)/user/session/min_btf_gen.c: $(OUT)/liveprof.min.btf user/session/gen_min_btf.sh
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)user/session/gen_min_btf.sh $@ $<
$(OUT)/user/session/min_btf_gen.o: $(OUT)/user/session/min_btf_gen.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -c $< -o $@

# layer_rule LAYER,DIR: DIR/libLAYER.a from DIR/<the layer's folder>/*.o (and,
# in the main build, the layer's generated objects)
define layer_rule
$(2)/lib$(1).a: $(call layer_objs,$(1),$(2)) $(if $(filter $(OUT),$(2)),$($(1)_EXTRA))
	$$(call msg,AR,$$@)
	$$(Q)mkdir -p $$(@D) && rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rule,$(l),$(OUT))))
$(foreach l,$(FUZZ_LAYERS),$(eval $(call layer_rule,$(l),$(FUZZ_OUT))))

$(CLI_LIB): $(filter-out $(OUT)/user/cli/main.o,$(CLI_OBJS))
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D) && rm -f $@ && ar rcs $@ $^

liveprof: $(CLI_OBJS) $(LAYER_LIBS)
	$(call msg,LD,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $(CLI_OBJS) $(LAYER_LIBS) $(LDLIBS)

check-layers: liveprof
	$(Q)$(PYTHON) tests/layers/check_layers.py --root . --build $(OUT)

# ---- tests --------------------------------------------------------------
# Every test program is built here; the pytest drivers (each beside its
# tests) only run what the Makefile built. Unit tests link against the
# layer archives; `make test` also builds an ASan+UBSan copy of them.
$(OUT)/tests/%: tests/unit/%.c tests/unit/unit.h $(CLI_LIB) $(LAYER_LIBS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -Itests/unit -o $@ $< $(CLI_LIB) $(LAYER_LIBS) $(LDLIBS)

$(OUT)/tests/bench/multi_floor: $(OUT)/latency_floor.skel.h
$(OUT)/tests/bench/%: tests/bench/%.c $(LAYER_LIBS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $< $(LAYER_LIBS) $(LDLIBS)

$(FUZZ_OUT)/%.o: %.c | $(DEPS_STAMP)
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_OUT)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIBS)
	$(call msg,LD-FUZZ,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIBS) $(LDLIBS)

workloads: | $(DEPS_STAMP)
	$(Q)$(MAKE) --no-print-directory -C tests/workloads

unit: $(UNIT_BINS)
fuzzers: $(FUZZ_BINS)
bench-bins: $(BENCH_BINS)

# puppeteer-core for the browser test (tests/e2e/test_web.py), from the
# committed lock file; without npm or network the test is skipped.
WEB_DEPS := tests/web/node_modules/.package-lock.json
$(WEB_DEPS): tests/web/package.json tests/web/package-lock.json
	$(call msg,NPM,tests/web)
	$(Q)cd tests/web && npm ci --no-audit --no-fund --loglevel=error || \
		echo "warning: npm ci failed in tests/web: the browser test will be skipped" >&2

# Two pytest workers, one file each at a time: most tests wait on a
# profile of fixed length, so two at once fill the 2 cores of the CI
# machine; no check depends on the load (tolerances come from counts).
TEST_WORKERS ?= 2

test: test-deps liveprof unit fuzzers bench-bins workloads check-layers $(WEB_DEPS)
	$(Q)$(MAKE) --no-print-directory -f Makefile OUT=build-san \
		CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
		build-san/liveprof-unit-san
	$(Q)$(PYTHON) -m pytest -p no:cacheprovider -rfEs --durations=25 -n $(TEST_WORKERS) \
		--dist loadfile tests

# Longer fuzzing than make test's 4 s per harness.
fuzz: fuzzers
	$(Q)LIVEPROF_FUZZ_SECONDS=$${LIVEPROF_FUZZ_SECONDS:-120} $(PYTHON) -m pytest -p no:cacheprovider \
		-rfE tests/fuzz

# ASan/UBSan build of the unit tests only; they run as part of pytest.
build-san/liveprof-unit-san: $(UNIT_BINS)
	$(Q)touch $@

demo: liveprof workloads
	$(Q)tests/demo.sh

bench: liveprof workloads bench-bins
	$(Q)$(PYTHON) tests/bench/run_bench.py

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(OUT) build-san $(FUZZ_OUT) liveprof tests/build

-include $(shell find $(OUT) $(FUZZ_OUT) -name '*.d' 2>/dev/null)
