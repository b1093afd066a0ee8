# dlrt top-level build.
#
# One non-recursive make: every folder contributes a `module.mk` fragment that
# appends to the variables below, so adding a component never edits this file.
#
#   make                 build the plugin, the commands and the test programs
#   make check           install dependencies, bring up the local cluster, run every test
#   make demo            install dependencies, bring up the local cluster, run an example job
#   make unit            unit tests only (plain and under ASan+UBSan), no cluster
#   make install PREFIX=/opt/dlrt/<version> DESTDIR=
#   make fuzz            build the libFuzzer targets (clang) and run each briefly
#   make bench           run the benchmarks (needs the cluster)
#
# BUILD selects the output folder, so several people (or helpers) can build in
# one tree at once without racing: `make BUILD=build-mine`.

VERSION     := 0.1.0
PREFIX      ?= /usr/local
DESTDIR     ?=
BUILD       ?= build
SLURM_LIBDIR ?= $(shell pkg-config --variable=libdir slurm 2>/dev/null || echo /usr/lib/x86_64-linux-gnu)/slurm

CC          ?= cc
CXX         ?= c++
PKGS        := pmix hwloc nettle
PKG_CFLAGS  := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS    := $(shell pkg-config --libs $(PKGS))

WARN        := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
               -Wformat=2 -Wno-format-nonliteral
CFLAGS      ?= -O2 -g
CFLAGS      += -std=gnu11 $(WARN) -fPIC -fstack-protector-strong
CPPFLAGS    += -D_GNU_SOURCE -D_FORTIFY_SOURCE=2 -DDLRT_VERSION=\"$(VERSION)\" \
               -Icommon -Ipmix-bridge $(PKG_CFLAGS) -MMD -MP
CXXFLAGS    ?= -O2 -g
CXXFLAGS    += -std=gnu++17 -Wall -Wextra -Werror
LDFLAGS     += -Wl,-z,noexecstack -Wl,-z,relro -Wl,-z,now

# Sanitizer flavour of the unit tests (make unit builds both).
SAN_FLAGS   := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

LIB         := $(BUILD)/libdlrt.a
SAN_BUILD   := $(BUILD)/asan

# Filled in by the module.mk fragments.
LIB_SRCS    :=           # C files of libdlrt.a: everything but main()s and SPANK glue
PLUGIN_SRCS :=           # C files of the SPANK plugin
BINS        :=           # installed commands: $(BUILD)/bin/<name>
LIBEXEC     :=           # installed helper programs: $(BUILD)/libexec/<name>
UNIT_TESTS  :=           # unit test programs (TAP): $(BUILD)/tests/<name>
TEST_PROGS  :=           # programs the cluster tests run inside jobs: $(BUILD)/testprogs/<name>
FUZZERS     :=           # fuzz target names (tests/fuzz/fuzz_<name>.c)
MANPAGES    :=           # docs/man/*.[1-8]

.PHONY: all
# Keep objects make considers intermediate, so `make unit` does not rebuild them every time.
.SECONDARY:
all:

# $(call dlrt_program,OUTPUT,SOURCES[,EXTRA_LIBS]): link a C program against libdlrt.a.
define dlrt_program
$(1): $(2:%.c=$(BUILD)/obj/%.o) $(LIB)
	@mkdir -p $$(@D)
	$$(CC) -o $$@ $$^ $$(LDFLAGS) $$(PKG_LIBS) $(3) -lm
endef

# $(call dlrt_cxx_program,OUTPUT,SOURCES,EXTRA_LIBS): a C++ test program (e.g. linking libgloo).
define dlrt_cxx_program
$(1): $(2)
	@mkdir -p $$(@D)
	$$(CXX) $$(CXXFLAGS) -o $$@ $$^ $(3)
endef

# MODULES can be narrowed to build a subset while other parts are mid-change.
MODULES ?= $(sort $(wildcard */module.mk */*/module.mk))
include $(MODULES)

LIB_OBJS    := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
PLUGIN      := $(BUILD)/dlrt.so
PLUGIN_OBJS := $(PLUGIN_SRCS:%.c=$(BUILD)/obj/%.o)

all: $(PLUGIN) $(BINS) $(LIBEXEC) $(UNIT_TESTS) $(TEST_PROGS)

$(BUILD)/obj/%.o: %.c Makefile
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

# The plugin exports only plugin_name/type/version and slurm_spank_* (spank/dlrt.lds).
# It does not link libslurm: slurmstepd, srun and sbatch provide the spank_* symbols.
$(PLUGIN): $(PLUGIN_OBJS) $(LIB) spank/dlrt.lds
	$(CC) -shared -o $@ $(PLUGIN_OBJS) $(LIB) $(LDFLAGS) \
	      -Wl,--version-script=spank/dlrt.lds $(PKG_LIBS)

# ---- unit tests: plain and sanitized -------------------------------------------------
SAN_TESTS := $(UNIT_TESTS:$(BUILD)/tests/%=$(SAN_BUILD)/tests/%)

$(SAN_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(SAN_FLAGS) -O1 -c $< -o $@

# TEST_LDFLAGS_<name> adds link flags for one test (e.g. -rdynamic for the fake SPANK host).
$(BUILD)/tests/test_%: $(BUILD)/obj/tests/unit/test_%.o $(LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LDFLAGS) $(PKG_LIBS) $(TEST_LDFLAGS_$*) -lm

$(SAN_BUILD)/libdlrt.a: $(LIB_SRCS:%.c=$(SAN_BUILD)/obj/%.o)
	rm -f $@ && $(AR) rcs $@ $^

$(SAN_BUILD)/tests/test_%: $(SAN_BUILD)/obj/tests/unit/test_%.o $(SAN_BUILD)/libdlrt.a
	@mkdir -p $(@D)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDFLAGS) $(PKG_LIBS) $(TEST_LDFLAGS_$*) -lm

.PHONY: unit
# UNIT=pattern runs only the unit tests whose name contains it (make unit UNIT=gpuplan).
UNIT_RUN     := $(if $(UNIT),$(foreach t,$(UNIT_TESTS),$(if $(findstring $(UNIT),$(notdir $(t))),$(t))),$(UNIT_TESTS))
SAN_RUN      := $(UNIT_RUN:$(BUILD)/tests/%=$(SAN_BUILD)/tests/%)
unit: $(UNIT_RUN) $(SAN_RUN) $(PLUGIN)
	DLRT_PLUGIN=$(abspath $(PLUGIN)) DLRT_SRCDIR=$(CURDIR) prove -f $(UNIT_RUN)
	DLRT_PLUGIN=$(abspath $(PLUGIN)) DLRT_SRCDIR=$(CURDIR) \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  prove -f $(SAN_RUN)

# ---- cluster, check, demo ----------------------------------------------------------
CLUSTER := tests/cluster/cluster.sh

.PHONY: deps cluster-up cluster-down check demo cluster-test
deps:
	tests/cluster/install-deps.sh

# The cluster loads dlrt from its own prefix; the programs the cluster tests run
# inside jobs go next to it (never into a real install).
cluster-up: all
	$(MAKE) install DESTDIR= PREFIX=$$($(CLUSTER) prefix)
	install -d $$($(CLUSTER) prefix)/libexec/dlrt-tests
	$(if $(TEST_PROGS),install -m 0755 $(TEST_PROGS) $$($(CLUSTER) prefix)/libexec/dlrt-tests/)
	$(CLUSTER) up

cluster-down:
	$(CLUSTER) down

cluster-test: cluster-up
	tests/cluster/run-tests.sh

check: deps
	$(MAKE) all
	$(MAKE) unit
	$(MAKE) fuzz-smoke
	$(MAKE) cluster-test

demo: deps
	$(MAKE) cluster-up
	examples/demo.sh

# ---- install -----------------------------------------------------------------------
# Layout under PREFIX (docs/ADMIN.md): lib/dlrt/dlrt.so, bin/, libexec/dlrt/,
# share/man/man{1,7,8}/, etc/plugstack.conf.d/dlrt.conf, etc/modulefiles/dlrt/VERSION.lua
# (Lmod) and etc/modulefiles-tcl/dlrt/VERSION (Environment Modules).
.PHONY: install uninstall
INSTALL_DIRS := lib/dlrt bin libexec/dlrt share/man/man1 share/man/man7 share/man/man8 \
                etc/plugstack.conf.d etc/modulefiles/dlrt etc/modulefiles-tcl/dlrt
INSTALL_SUBST = sed -e 's|@PLUGIN@|$(PREFIX)/lib/dlrt/dlrt.so|g' -e 's|@PREFIX@|$(PREFIX)|g' \
                    -e 's|@VERSION@|$(VERSION)|g'
man_dest = share/man/man$(subst .,,$(suffix $(1)))/$(notdir $(1))
INSTALLED := lib/dlrt/dlrt.so $(addprefix bin/,$(notdir $(BINS))) \
             $(addprefix libexec/dlrt/,$(notdir $(LIBEXEC))) \
             $(foreach m,$(MANPAGES),$(call man_dest,$(m))) etc/plugstack.conf.d/dlrt.conf \
             etc/modulefiles/dlrt/$(VERSION).lua etc/modulefiles-tcl/dlrt/$(VERSION)

install: all
	install -d $(addprefix $(DESTDIR)$(PREFIX)/,$(INSTALL_DIRS))
	install -m 0755 $(PLUGIN) $(DESTDIR)$(PREFIX)/lib/dlrt/dlrt.so
	$(if $(BINS),install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/bin/)
	$(if $(LIBEXEC),install -m 0755 $(LIBEXEC) $(DESTDIR)$(PREFIX)/libexec/dlrt/)
	$(foreach m,$(MANPAGES),install -m 0644 $(m) $(DESTDIR)$(PREFIX)/$(call man_dest,$(m));)
	$(INSTALL_SUBST) etc/plugstack.conf.d/dlrt.conf.in > $(DESTDIR)$(PREFIX)/etc/plugstack.conf.d/dlrt.conf
	$(INSTALL_SUBST) etc/modulefiles/dlrt.lua.in > $(DESTDIR)$(PREFIX)/etc/modulefiles/dlrt/$(VERSION).lua
	$(INSTALL_SUBST) etc/modulefiles/dlrt.tcl.in > $(DESTDIR)$(PREFIX)/etc/modulefiles-tcl/dlrt/$(VERSION)
	cd $(DESTDIR)$(PREFIX) && chmod 0644 etc/plugstack.conf.d/dlrt.conf \
	    etc/modulefiles/dlrt/$(VERSION).lua etc/modulefiles-tcl/dlrt/$(VERSION)

# Removes exactly the files install wrote, then the folders it leaves empty. Unlink
# the plugstack.conf.d entry first (docs/ADMIN.md, "Removal").
uninstall:
	cd $(DESTDIR)$(PREFIX) && rm -f $(INSTALLED)
	-cd $(DESTDIR)$(PREFIX) && rmdir -p --ignore-fail-on-non-empty $(INSTALL_DIRS) 2>/dev/null

# ---- fuzzing (clang libFuzzer) -----------------------------------------------------
FUZZ_CC    ?= clang
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -std=gnu11 -D_GNU_SOURCE \
              -Icommon -Ipmix-bridge $(PKG_CFLAGS)
FUZZ_BINS  := $(FUZZERS:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_SECONDS ?= 20

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(LIB_SRCS)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(LIB_SRCS) $(PKG_LIBS) -lm

.PHONY: fuzz fuzz-smoke
fuzz: $(FUZZ_BINS)
	@for f in $(FUZZ_BINS); do n=$${f##*/fuzz_}; mkdir -p $(BUILD)/fuzz/corpus-$$n; \
	  echo "== $$f ($(FUZZ_SECONDS) s)"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 $(BUILD)/fuzz/corpus-$$n tests/fuzz/seeds/$$n || exit 1; done

# make check runs each fuzzer briefly so a crash on the seed corpus fails the build.
fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=5

# ---- benchmarks --------------------------------------------------------------------
.PHONY: bench
bench: cluster-up
	bench/run-all.sh

.PHONY: clean
clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
