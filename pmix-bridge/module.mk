# pmix-bridge: step-wide key/value exchange over PMIx, and dlrt-kv for job scripts.
LIB_SRCS += pmix-bridge/pmix_bridge.c
BINS += $(BUILD)/bin/dlrt-kv
$(eval $(call dlrt_program,$(BUILD)/bin/dlrt-kv,pmix-bridge/dlrt_kv_main.c,-lpthread))
MANPAGES += docs/man/dlrt-kv.1
