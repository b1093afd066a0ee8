# dlrt top-level build.
#
# One non-recursive make: every folder contributes a `module.mk` fragment that
# appends to the variables below, so adding a component never edits this file.
#
#   make                 build the plugin, the commands and the test programs
#   make check           install dependencies, bring up the local cluster, run every test
#   make check-debian13  the same on Debian 13 (Slurm 24.11) in a debootstrapped root;
#                        check-debian13-core: its core set (tests/debian13/check.sh)
#   make check-sid       the same on Debian unstable (Slurm 26.05); check-sid-core: its
#                        smaller core set
#   make check-scale     bring up a 16-node cluster, run t/82-scale.t across it, take it down
#   make demo            install dependencies, build and start the local cluster, run the
#                        example jobs (only what they use: no test program, no model training)
#   make check-layout    the folder rules: no folder includes one above it nor links one its
#                        sources do not include, no file over 900 lines, no function over
#                        150, docs/ARCHITECTURE.md's file tables match the tree, no file
#                        calls up the layers, no circle of files but the designed ones
#   make unit            unit tests only (plain and under ASan+UBSan): no cluster, no
#                        root; the packager's test
#   make product         only what make install installs (no test-only dependency)
#   make install PREFIX=/opt/dlrt/<version> DESTDIR=   (GNU directories: see below)
#   make deb, make rpm   the packages (debian/, dlrt.spec; docs/ADMIN.md)
#   make fuzz            build the libFuzzer targets (clang) and run each briefly
#   make bench           run the benchmarks (needs the cluster)
#
# BUILD selects the output folder, so several people (or helpers) can build in
# one tree at once without racing: `make BUILD=build-mine`.

VERSION     := 0.1.0
BUILD       ?= build
DESTDIR     ?=

# Install directories (GNU names). The plugin compiles in where its services,
# dlrt-kv and the models are (common/instpath.c), so set them when building,
# not only when installing. The defaults are the module layout under PREFIX
# (docs/ADMIN.md); debian/rules and dlrt.spec set the distribution layout.
PREFIX        ?= /usr/local
prefix        ?= $(PREFIX)
exec_prefix   ?= $(prefix)
bindir        ?= $(exec_prefix)/bin
libdir        ?= $(exec_prefix)/lib
libexecdir    ?= $(exec_prefix)/libexec
pkglibexecdir ?= $(libexecdir)/dlrt
plugindir     ?= $(libdir)/dlrt
datarootdir   ?= $(prefix)/share
datadir       ?= $(datarootdir)
pkgdatadir    ?= $(datadir)/dlrt
mandir        ?= $(datarootdir)/man
sysconfdir    ?= $(prefix)/etc
plugstackdir  ?= $(sysconfdir)/plugstack.conf.d
# Lmod and Tcl modulefiles: for the module layout only (empty = not installed).
modulefilesdir ?= $(sysconfdir)/modulefiles

CC          ?= cc
CXX         ?= c++
PKGS        := pmix hwloc nettle
PKG_CFLAGS  := $(shell pkg-config --cflags $(PKGS))
# Debian's pmix.pc adds an RPATH to its private folder; libpmix.so.2 is also in
# the linker's default path, and a packaged program must not carry an RPATH.
PKG_LIBS    := $(shell pkg-config --libs $(PKGS) | sed -e 's/-Wl,-rpath -Wl,[^ ]*//g' \
                 -e 's/-Wl,--enable-new-dtags//g')

# The flags the code needs live in DLRT_*; CFLAGS, CPPFLAGS, CXXFLAGS and
# LDFLAGS belong to whoever builds (make CFLAGS=-O0, a distribution's
# hardening flags) and are added after them. WERROR=0 for a distribution
# build with a newer compiler; development and CI keep -Werror.
WERROR      ?= 1
WARN        := -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -Wshadow -Wstrict-prototypes \
               -Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral
CFLAGS      ?= -O2 -g
DLRT_CFLAGS := -std=gnu11 $(WARN) -fPIC -fstack-protector-strong
DLRT_CPPFLAGS := -D_GNU_SOURCE -D_FORTIFY_SOURCE=2 -DDLRT_VERSION=\"$(VERSION)\" \
               -I. -I$(BUILD)/gen $(PKG_CFLAGS) -MMD -MP
CXXFLAGS    ?= -O2 -g
DLRT_CXXFLAGS := -std=gnu++17 -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror)
DLRT_LDFLAGS := -Wl,-z,noexecstack -Wl,-z,relro -Wl,-z,now
ALL_CFLAGS   = $(DLRT_CPPFLAGS) $(CPPFLAGS) $(DLRT_CFLAGS) $(CFLAGS)
ALL_LDFLAGS  = $(DLRT_LDFLAGS) $(LDFLAGS)

# Sanitizer flavour of the unit tests (make unit builds both).
SAN_FLAGS   := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

LIB         := $(BUILD)/libdlrt.a
SAN_BUILD   := $(BUILD)/asan
# Test-only code the unit tests, the fuzzers and the test programs share (never installed).
TEST_LIB    := $(BUILD)/libdlrt-tests.a
SAN_TEST_LIB := $(SAN_BUILD)/libdlrt-tests.a

# Filled in by the module.mk fragments.
LIB_SRCS    :=           # C files of libdlrt.a: everything but main()s and SPANK glue
TEST_LIB_SRCS :=         # C files of libdlrt-tests.a: test-only code (e.g. a test's codec)
PLUGIN_SRCS :=           # C files of the SPANK plugin
BINS        :=           # installed commands: $(BUILD)/bin/<name>
LIBEXEC     :=           # installed helper programs: $(BUILD)/libexec/<name>
PYTHON_SHIM :=           # installed Python files of the torch tasks: pkglibexecdir/python/
UNIT_TESTS  :=           # unit test programs (TAP): $(BUILD)/tests/<name>
TEST_PROGS  :=           # programs the cluster tests run inside jobs: $(BUILD)/testprogs/<name>
FUZZERS     :=           # fuzz target names (tests/fuzz/fuzz_<name>.c)
MANPAGES    :=           # docs/man/*.[1-8]

.PHONY: all
# Keep objects make considers intermediate, so `make unit` does not rebuild them every time.
.SECONDARY:
all:

# $(call dlrt_program,OUTPUT,SOURCES[,EXTRA_LIBS]): link a C program against libdlrt.a.
# The program's sources are recorded for check-layout's link rule.
define dlrt_program
DLRT_PROGRAMS += $(1)
DLRT_PROGRAM_SRCS_$(1) := $(2)
$(1): $(2:%.c=$(BUILD)/obj/%.o) $(LIB)
	@mkdir -p $$(@D)
	$$(CC) -o $$@ $$^ $$(ALL_LDFLAGS) $$(PKG_LIBS) $(3) -lm
endef

# $(call dlrt_may_link,OUTPUT,FOLDERS,WHY): OUTPUT, a program other than the plugin, may
# link FOLDERS of launchers/, gpubind/, runtime/ and inference/, which every other one must
# not (make check-layout; WHY in words without a comma, shown beside the program's rule).
define dlrt_may_link
DLRT_MAY_LINK_$(1) := $(2): $(3)
endef

# $(call dlrt_cxx_program,OUTPUT,SOURCES,EXTRA_LIBS): a C++ test program (e.g. linking libgloo).
define dlrt_cxx_program
$(1): $(2)
	@mkdir -p $$(@D)
	$$(CXX) -I. $$(DLRT_CXXFLAGS) $$(CXXFLAGS) -o $$@ $$^ $(3)
endef

# MODULES can be narrowed to build a subset while other parts are mid-change.
MODULES ?= $(sort $(wildcard */module.mk */*/module.mk))
include $(MODULES)

LIB_OBJS    := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
PLUGIN      := $(BUILD)/dlrt.so
PLUGIN_OBJS := $(PLUGIN_SRCS:%.c=$(BUILD)/obj/%.o)

# product: what `make install` installs, and nothing that needs a test-only
# dependency (gloo, MPI, redis); all: the product and every test program.
.PHONY: product
product: $(PLUGIN) $(BINS) $(LIBEXEC)
all: product $(UNIT_TESTS) $(TEST_PROGS)

$(BUILD)/obj/%.o: %.c Makefile
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(TEST_LIB): $(TEST_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

# The plugin exports only plugin_name/type/version and slurm_spank_* (spank/dlrt.lds).
# It does not link libslurm: slurmstepd, srun and sbatch provide the spank_* symbols.
$(PLUGIN): $(PLUGIN_OBJS) $(LIB) spank/dlrt.lds
	$(CC) -shared -o $@ $(PLUGIN_OBJS) $(LIB) $(ALL_LDFLAGS) \
	      -Wl,--version-script=spank/dlrt.lds $(PKG_LIBS)

# ---- unit tests: plain and sanitized -------------------------------------------------
SAN_TESTS := $(UNIT_TESTS:$(BUILD)/tests/%=$(SAN_BUILD)/tests/%)

$(SAN_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) -O1 -c $< -o $@

# TEST_LDFLAGS_<name> adds link flags for one test (e.g. -rdynamic for the fake SPANK host).
$(BUILD)/tests/test_%: $(BUILD)/obj/tests/unit/test_%.o $(TEST_LIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(PKG_LIBS) $(TEST_LDFLAGS_$*) -lm

$(SAN_BUILD)/libdlrt.a: $(LIB_SRCS:%.c=$(SAN_BUILD)/obj/%.o)
	rm -f $@ && $(AR) rcs $@ $^

$(SAN_TEST_LIB): $(TEST_LIB_SRCS:%.c=$(SAN_BUILD)/obj/%.o)
	rm -f $@ && $(AR) rcs $@ $^

$(SAN_BUILD)/tests/test_%: $(SAN_BUILD)/obj/tests/unit/test_%.o $(SAN_TEST_LIB) $(SAN_BUILD)/libdlrt.a
	@mkdir -p $(@D)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(ALL_LDFLAGS) $(PKG_LIBS) $(TEST_LDFLAGS_$*) -lm

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

.PHONY: deps cluster-start cluster-up cluster-down check demo cluster-test
deps:
	tests/cluster/install-deps.sh

# cluster-start: what the demo needs, dlrt built for the cluster's own prefix, installed
# there, and the cluster up. It builds once, for that prefix (make install builds
# what it installs); nothing else: no test program, no trained model.
cluster-start:
	$(MAKE) install DESTDIR= PREFIX=$$($(CLUSTER) prefix)
	$(CLUSTER) up

# cluster-up: what the tests need on top, every test program (all) next to dlrt in the
# cluster's prefix (never into a real install), and dlrt-infer's trained built-in models
# (inference/module.mk adds them as a prerequisite). cluster-start is a second make, run
# after `all` is built: its install rebuilds for the cluster's prefix in the same BUILD.
cluster-up: all
	$(MAKE) cluster-start
	install -d $$($(CLUSTER) prefix)/libexec/dlrt-tests
	$(if $(TEST_PROGS),install -m 0755 $(TEST_PROGS) $$($(CLUSTER) prefix)/libexec/dlrt-tests/)

cluster-down:
	$(CLUSTER) down

cluster-test: cluster-up
	tests/cluster/run-tests.sh

# The folder rules (layers, file size, function size, the docs' file tables):
# docs/ARCHITECTURE.md. The link rules read the built programs: every installed
# one and the plugin, each with its own sources, and what dlrt_may_link allows;
# the files' graph (no arrow up, no circle but the designed ones) reads the objects.
.PHONY: check-layout
LAYOUT_PROGRAMS = $(filter $(BINS) $(LIBEXEC),$(DLRT_PROGRAMS))
layout_quote = '$(subst ','\'',$(1))'
check-layout: product
	tests/layout/check-layout.py --build $(BUILD) \
	  $(foreach p,$(LAYOUT_PROGRAMS),--program '$(p)=$(DLRT_PROGRAM_SRCS_$(p))' \
	    $(if $(DLRT_MAY_LINK_$(p)),--may-link $(call layout_quote,$(p)=$(DLRT_MAY_LINK_$(p))))) \
	  --plugin '$(PLUGIN)=$(PLUGIN_SRCS)'

# Debian 12's whole suite on the host, then Debian 13's core set in its root, made in the
# background meanwhile (tests/check.sh).
check: deps
	MAKE='$(MAKE)' tests/check.sh

# Debian 13 (Slurm 24.11, PMIx 5, Open MPI 5, hwloc 2.12, gcc 14, torch 2.6): a root made
# by debootstrap from the same package registry and cached (tests/debian13/root.sh), a
# clean copy of this tree built in it and tested on the root's own cluster, in its own
# mount, network and PID namespaces. check-debian13-core: a core set of
# cluster tests (every runtime, both exchanges, MPI, containers, packages);
# check-debian13: the unit tests and every cluster test. The host's trained models are
# taken along (make models), so the root does not train them again.
.PHONY: debian13-root check-debian13 check-debian13-core
debian13-root:
	tests/debian13/root.sh build
check-debian13-core: debian13-root models
	tests/debian13/root.sh run tests/debian13/check.sh core
check-debian13: debian13-root models
	tests/debian13/root.sh run tests/debian13/check.sh all

# Debian unstable (Slurm 26.05, PMIx 7, Open MPI 6, gcc 16, torch 2.14) the same way, in its
# own cache (tests/debian13/root.sh --release sid). check-sid-core: sid's core set, smaller
# than Debian 13's (every runtime once, both exchanges, MPI, the packages: check.sh says which).
.PHONY: sid-root check-sid check-sid-core
sid-root:
	tests/debian13/root.sh --release sid build
check-sid-core: sid-root models
	tests/debian13/root.sh --release sid run tests/debian13/check.sh core
check-sid: sid-root models
	tests/debian13/root.sh --release sid run tests/debian13/check.sh all

# The 16-node test (t/82-scale.t) on its own 16-node cluster, taken down afterwards whatever
# the result: too heavy for CI's 2 cores next to `make check`, which keeps its 3 nodes.
SCALE_CLUSTER_ID ?= $(or $(DLRT_CLUSTER_ID),8)
.PHONY: check-scale
check-scale: all
	export DLRT_CLUSTER_ID=$(SCALE_CLUSTER_ID) DLRT_CLUSTER_NODES=16; \
	$(MAKE) cluster-up && tests/cluster/run-tests.sh t/82-scale.t; rc=$$?; \
	$(CLUSTER) down; exit $$rc

# The demo serves the model its own job trains (examples/demo.sh): it builds and starts
# only what it runs (cluster-start), on every core unless make was given -j.
demo: deps
	$(MAKE) $(if $(filter -j%,$(MAKEFLAGS)),,-j$$(nproc)) cluster-start
	examples/demo.sh

# ---- install -----------------------------------------------------------------------
# Default layout under PREFIX, the module layout (docs/ADMIN.md): lib/dlrt/dlrt.so, bin/,
# libexec/dlrt/, share/man/man{1,7,8}/, etc/plugstack.conf.d/dlrt.conf,
# etc/modulefiles/dlrt/VERSION.lua (Lmod) and etc/modulefiles-tcl/dlrt/VERSION
# (Environment Modules). The packages set the directory variables instead
# (debian/rules, dlrt.spec) and leave modulefilesdir empty.
.PHONY: install uninstall
INSTALL_SUBST = sed -e 's|@PLUGIN@|$(plugindir)/dlrt.so|g' -e 's|@PREFIX@|$(prefix)|g' \
                    -e 's|@VERSION@|$(VERSION)|g' -e 's|@BINDIR@|$(bindir)|g' \
                    -e 's|@MANDIR@|$(mandir)|g' -e 's|@PKGLIBEXECDIR@|$(pkglibexecdir)|g'
man_dest = $(mandir)/man$(subst .,,$(suffix $(1)))/$(notdir $(1))
MODULEFILES := $(if $(modulefilesdir),$(modulefilesdir)/dlrt/$(VERSION).lua \
               $(modulefilesdir)-tcl/dlrt/$(VERSION))
INSTALLED := $(plugindir)/dlrt.so $(addprefix $(bindir)/,$(notdir $(BINS))) \
             $(addprefix $(pkglibexecdir)/,$(notdir $(LIBEXEC))) \
             $(addprefix $(pkglibexecdir)/python/,$(notdir $(PYTHON_SHIM))) \
             $(foreach m,$(MANPAGES),$(call man_dest,$(m))) $(plugstackdir)/dlrt.conf $(MODULEFILES)
INSTALL_DIRS := $(sort $(dir $(INSTALLED)))

install: product
	install -d $(addprefix $(DESTDIR),$(INSTALL_DIRS))
	install -m 0755 $(PLUGIN) $(DESTDIR)$(plugindir)/dlrt.so
	$(if $(BINS),install -m 0755 $(BINS) $(DESTDIR)$(bindir)/)
	$(if $(LIBEXEC),install -m 0755 $(LIBEXEC) $(DESTDIR)$(pkglibexecdir)/)
	$(if $(PYTHON_SHIM),install -m 0644 $(PYTHON_SHIM) $(DESTDIR)$(pkglibexecdir)/python/)
	$(foreach m,$(MANPAGES),install -m 0644 $(m) $(DESTDIR)$(call man_dest,$(m));)
	$(INSTALL_SUBST) etc/plugstack.conf.d/dlrt.conf.in > $(DESTDIR)$(plugstackdir)/dlrt.conf
	chmod 0644 $(DESTDIR)$(plugstackdir)/dlrt.conf
ifneq ($(modulefilesdir),)
	$(INSTALL_SUBST) etc/modulefiles/dlrt.lua.in > $(DESTDIR)$(modulefilesdir)/dlrt/$(VERSION).lua
	$(INSTALL_SUBST) etc/modulefiles/dlrt.tcl.in > $(DESTDIR)$(modulefilesdir)-tcl/dlrt/$(VERSION)
	chmod 0644 $(addprefix $(DESTDIR),$(MODULEFILES))
endif

# Removes exactly the files install wrote, then the folders it leaves empty. Unlink
# the plugstack.conf.d entry first (docs/ADMIN.md, "Removal").
# A folder goes only when empty, and never prefix itself or anything above it.
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-for d in $(INSTALL_DIRS:%/=%); do d=$(DESTDIR)$$d; \
	  while [ "$$d" != "$(DESTDIR)$(prefix)" ] && rmdir "$$d" 2>/dev/null; do d=$${d%/*}; done; done

# ---- compiled-in install paths ----------------------------------------------------
# common/instpath.c looks in these directories first; for a tree that was moved
# as a whole (the module layout copied elsewhere, packages extracted into a folder)
# it falls back to the same relative place next to the running file. Rewritten
# only when a value changes, so a rebuild follows a new prefix and nothing else.
rel_path = $(shell realpath -m --relative-to=$(1) $(2))
PATHS_H  := $(BUILD)/gen/dlrt_paths.h
PATHS_LINES = '/* Generated by make from the install directories; do not edit. */' \
	'\#define DLRT_PLUGINDIR "$(plugindir)"' \
	'\#define DLRT_PKGLIBEXECDIR "$(pkglibexecdir)"' \
	'\#define DLRT_MODELDIR "$(pkgdatadir)/models"' \
	'\#define DLRT_PLUGIN_TO_PKGLIBEXEC "$(call rel_path,$(plugindir),$(pkglibexecdir))"' \
	'\#define DLRT_BINDIR "$(bindir)"' \
	'\#define DLRT_PLUGIN_TO_BIN "$(call rel_path,$(plugindir),$(bindir))"' \
	'\#define DLRT_BIN_TO_MODELDIR "$(call rel_path,$(bindir),$(pkgdatadir)/models)"'
.PHONY: paths-force
$(PATHS_H): paths-force
	@mkdir -p $(@D)
	@printf '%s\n' $(PATHS_LINES) | cmp -s - $@ || printf '%s\n' $(PATHS_LINES) > $@
$(BUILD)/obj/common/instpath.o $(SAN_BUILD)/obj/common/instpath.o: $(PATHS_H)

# ---- fuzzing (clang libFuzzer) -----------------------------------------------------
# Every fuzzer links one instrumented library (the product's and the test-only
# code, built once with coverage and sanitizers), not its own copy of the sources.
FUZZ_CC    ?= clang
FUZZ_SAN   := -fsanitize=address,undefined
FUZZ_CFLAGS := -g -O1 $(FUZZ_SAN) -std=gnu11 -D_GNU_SOURCE -I. -I$(BUILD)/gen \
              $(PKG_CFLAGS)
FUZZ_BINS  := $(FUZZERS:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_LIB   := $(BUILD)/fuzz/libdlrt-fuzz.a
FUZZ_SECONDS ?= 20

$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
$(BUILD)/fuzz/obj/common/instpath.o: $(PATHS_H)

$(FUZZ_LIB): $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(TEST_LIB_SRCS) $(LIB_SRCS))
	rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB) $(PKG_LIBS) -lm

.PHONY: fuzz fuzz-smoke
fuzz: $(FUZZ_BINS)
	@for f in $(FUZZ_BINS); do n=$${f##*/fuzz_}; mkdir -p $(BUILD)/fuzz/corpus-$$n; \
	  echo "== $$f ($(FUZZ_SECONDS) s)"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 $(BUILD)/fuzz/corpus-$$n tests/fuzz/seeds/$$n || exit 1; done

# make check runs each fuzzer briefly so a crash on the seed corpus fails the build.
fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=5

# ---- packages ------------------------------------------------------------------------
# make deb: the Debian packages dlrt, dlrt-tools and dlrt-infer (debian/), in
# $(BUILD)/packages. make rpm: the same split as RPMs (dlrt.spec). Both build
# from the files git knows (tracked, or new and not ignored), never from build output.
# DEB_BUILD_OPTIONS=nocheck skips `make unit` inside the package build.
PKG_OUT := $(abspath $(BUILD))/packages
.PHONY: deb rpm dist
dist:
	@mkdir -p $(PKG_OUT)
	rm -rf $(PKG_OUT)/dlrt-$(VERSION) && mkdir -p $(PKG_OUT)/dlrt-$(VERSION)
	git ls-files -z --cached --others --exclude-standard | xargs -0 cp -p --parents -t $(PKG_OUT)/dlrt-$(VERSION)
	tar -C $(PKG_OUT) -czf $(PKG_OUT)/dlrt-$(VERSION).tar.gz dlrt-$(VERSION)

deb: dist
	cd $(PKG_OUT)/dlrt-$(VERSION) && dpkg-buildpackage -us -uc -b
	lintian --fail-on error $(PKG_OUT)/dlrt_$(VERSION)_*.changes

rpm: dist
	rpmbuild -bb --nodeps --define '_topdir $(PKG_OUT)/rpmbuild' \
	  --define '_sourcedir $(PKG_OUT)' dlrt.spec

# ---- benchmarks --------------------------------------------------------------------
.PHONY: bench
bench: cluster-up
	bench/run-all.sh

.PHONY: clean
clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -path $(BUILD)/packages -prune -o -type f -name '*.d' -print 2>/dev/null)
