# launchers/tensorflow/: the runtime-table entry is tensorflow_runtime.c (listed
# by launchers/module.mk); its contract test is test_tensorflow. The per-task
# ports it needs come from the exchange (spank/exchange.c). See docs/tensorflow.md.
UNIT_TESTS += $(BUILD)/tests/test_tensorflow
