# inference/models/: the built-in CNN models of dlrt-infer (engine, weights
# files, trainer), the IDX reader and the external-model stdin/stdout protocol.
# See docs/inference-models.md.

MODELS_SRCS := $(filter-out %_main.c,$(wildcard inference/models/*.c))
LIB_SRCS    += $(MODELS_SRCS)

# idx.c reads Debian's gzip'd Fashion-MNIST files through zlib. Everything
# that links libdlrt (and every fuzzer, which compiles all of LIB_SRCS) may
# pull it in; --as-needed keeps libz out of binaries that do not use it.
PKG_LIBS    += -Wl,--as-needed -lz -Wl,--no-as-needed

# The engine is written for the auto-vectorizer: -O3 for the model code, and
# reassociation for the dot products in nn_hot.c only (see nn_hot.h).
$(BUILD)/obj/inference/models/%.o: CFLAGS += -O3
$(BUILD)/obj/inference/models/nn_hot.o: DLRT_CFLAGS += -fno-trapping-math \
	-fno-signed-zeros -fassociative-math

BINS        += $(BUILD)/bin/dlrt-train
$(eval $(call dlrt_program,$(BUILD)/bin/dlrt-train,inference/models/dlrt_train_main.c))
$(eval $(call dlrt_may_link,$(BUILD)/bin/dlrt-train,inference/models,it trains the built-in models))
LIBEXEC     += $(BUILD)/libexec/dlrt-model-bench
$(eval $(call dlrt_program,$(BUILD)/libexec/dlrt-model-bench,inference/models/dlrt_model_bench_main.c))
$(eval $(call dlrt_may_link,$(BUILD)/libexec/dlrt-model-bench,inference/models,it measures the built-in models))

UNIT_TESTS  += $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_models*.c))
FUZZERS     += idx extproto weights

# ---- make models: train the built-in models once, cache the weights -------------
# The weights depend on the trainer's sources, the data and the training options,
# not on the dlrt-train binary (order-only), so an unrelated change to libdlrt.a
# does not retrain. DLRT_MODEL_DIR selects where they go.
FMNIST_DIR     ?= /usr/share/datasets/fashion-mnist
DLRT_MODEL_DIR ?= $(BUILD)/models
MODELS_DATA    := $(addprefix $(FMNIST_DIR)/,train-images-idx3-ubyte.gz \
                  train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz \
                  t10k-labels-idx1-ubyte.gz)
MODELS_TRAIN_SRCS := $(filter-out inference/models/extproto.% inference/models/model.c \
                  inference/models/dlrt_model_bench_main.c, $(wildcard inference/models/*.[ch]))
TRAIN_OPTS_lenet5  ?= --epochs 3 --lr 0.02
TRAIN_OPTS_deepcnn ?= --epochs 2 --lr 0.02

.PHONY: models models-force
models: $(DLRT_MODEL_DIR)/lenet5.dlrtw $(DLRT_MODEL_DIR)/deepcnn.dlrtw

# Rewritten only when the options change, so it is a prerequisite that
# changes exactly when the training command does.
$(DLRT_MODEL_DIR)/%.opts: models-force
	@mkdir -p $(@D)
	@echo '$(TRAIN_OPTS_$*)' | cmp -s - $@ || echo '$(TRAIN_OPTS_$*)' > $@

$(DLRT_MODEL_DIR)/%.dlrtw: $(DLRT_MODEL_DIR)/%.opts $(MODELS_TRAIN_SRCS) $(MODELS_DATA) \
		| $(BUILD)/bin/dlrt-train
	$(BUILD)/bin/dlrt-train --model $* $(TRAIN_OPTS_$*) --data $(FMNIST_DIR) \
	    --out $@ > $(@:.dlrtw=.log) || { cat $(@:.dlrtw=.log); exit 1; }
	@cat $(@:.dlrtw=.log)

.PRECIOUS: $(DLRT_MODEL_DIR)/%.opts

# Not part of `make install` (training takes minutes): run it after install
# (same directories and DESTDIR); workers find the weights in the compiled-in
# $(pkgdatadir)/models. The packages run it at build time.
.PHONY: install-models
install-models: models
	install -d $(DESTDIR)$(pkgdatadir)/models $(DESTDIR)$(pkgdatadir)/examples
	install -m 0644 $(DLRT_MODEL_DIR)/lenet5.dlrtw $(DLRT_MODEL_DIR)/deepcnn.dlrtw \
	    $(DESTDIR)$(pkgdatadir)/models/
	install -m 0755 inference/models/examples/torch_model.py $(DESTDIR)$(pkgdatadir)/examples/
