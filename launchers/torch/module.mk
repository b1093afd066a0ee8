# launchers/torch/: torch's c10d store hosted by dlrt (dlrt-c10d-store, the
# TCPStore protocols of torch 1.x and 2.x) and its tests; python/: the
# sitecustomize the torch and torchrun tasks get (spank/stepd.c, python_shim). The runtime-table entry is
# torch_runtime.c (listed by launchers/module.mk).
LIB_SRCS   += launchers/torch/tcpstore.c
LIBEXEC    += $(BUILD)/libexec/dlrt-c10d-store
UNIT_TESTS += $(BUILD)/tests/test_tcpstore
FUZZERS    += tcpstore
MANPAGES   += docs/man/dlrt-c10d-store.8
PYTHON_SHIM += launchers/torch/python/sitecustomize.py

$(eval $(call dlrt_program,$(BUILD)/libexec/dlrt-c10d-store,launchers/torch/dlrt_c10d_store_main.c))
$(eval $(call dlrt_may_link,$(BUILD)/libexec/dlrt-c10d-store,launchers/torch,it is torch's c10d store: its wire is launchers/torch/tcpstore.c))
