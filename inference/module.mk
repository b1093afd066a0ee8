# inference/: dlrt-infer, the fair-share batch inference pool on a job array
# (protocol, pool records, state, worker, coordinator, client commands: one
# folder each), and the runtime entry
# infer_runtime.c (the runtime table's `infer`, linked into the plugin from
# libdlrt.a like every other runtime). The models live in inference/models/
# (their own module.mk). See docs/inference.md.
# The folders below inference/ are layers (docs/ARCHITECTURE.md, "The pieces").
# The command line (inference/cli/: dlrt_infer_main.c and the cli_*.c files of
# its commands) is dlrt-infer's alone: it stays out of libdlrt.a.
INFER_LIB_DIRS := inference inference/proto inference/pool inference/state inference/worker \
                  inference/coord
INFER_CLI_SRCS := $(wildcard inference/cli/*.c)
INFER_SRCS := $(filter-out %_main.c,$(foreach d,$(INFER_LIB_DIRS),$(wildcard $(d)/*.c)))
LIB_SRCS   += $(INFER_SRCS)

BINS       += $(BUILD)/bin/dlrt-infer
$(eval $(call dlrt_program,$(BUILD)/bin/dlrt-infer,$(INFER_CLI_SRCS)))
$(eval $(call dlrt_may_link,$(BUILD)/bin/dlrt-infer,inference,it is the pool: its coordinator and workers run in it))

UNIT_TESTS += $(BUILD)/tests/test_infer_proto $(BUILD)/tests/test_infer_sched \
              $(BUILD)/tests/test_infer_liveness $(BUILD)/tests/test_infer_auth \
              $(BUILD)/tests/test_infer_journal $(BUILD)/tests/test_infer_tsvlog \
              $(BUILD)/tests/test_infer_gate $(BUILD)/tests/test_infer_poolarray \
              $(BUILD)/tests/test_infer_wire $(BUILD)/tests/test_infer_claim \
              $(BUILD)/tests/test_infer_prefetch
FUZZERS    += inferproto inferimage inferlive inferjournal infertsv inferarray inferclaim
MANPAGES   += docs/man/dlrt-infer.1

# The cluster's workers find the built-in models next to the installed binary
# (PREFIX/share/dlrt/models): train them once (make models caches them) and
# copy them into the cluster's prefix whenever the cluster is brought up.
.PHONY: infer-cluster-models
cluster-up: infer-cluster-models
infer-cluster-models: models
	install -d $$($(CLUSTER) prefix)/share/dlrt/models
	install -m 0644 $(DLRT_MODEL_DIR)/lenet5.dlrtw $(DLRT_MODEL_DIR)/deepcnn.dlrtw \
	    $$($(CLUSTER) prefix)/share/dlrt/models/
	install -d $$($(CLUSTER) prefix)/share/dlrt/examples
	install -m 0755 inference/models/examples/torch_model.py $$($(CLUSTER) prefix)/share/dlrt/examples/
