# launchers/torchrun/: one torchrun agent per node (docs/torchrun.md). The
# runtime-table entry is torchrun_runtime.c (listed by launchers/module.mk); the
# rendezvous store is launchers/torch/'s dlrt-c10d-store.
LIB_SRCS   += launchers/torchrun/torchrun_opts.c
UNIT_TESTS += $(BUILD)/tests/test_torchrun
