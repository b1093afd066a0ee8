# tests/unit: the unit tests of common/ and the plugin (other folders list theirs in their
# module.mk).
# Test-only code every unit test may use: where a program of this build is.
TEST_LIB_SRCS += tests/unit/buildpath.c
UNIT_TESTS += $(BUILD)/tests/test_hostlist $(BUILD)/tests/test_plugin_load \
              $(BUILD)/tests/test_crypto $(BUILD)/tests/test_proc \
              $(BUILD)/tests/test_instpath $(BUILD)/tests/test_env \
              $(BUILD)/tests/test_privdir $(BUILD)/tests/test_dlist \
              $(BUILD)/tests/test_argv $(BUILD)/tests/test_errline \
              $(BUILD)/tests/test_plugin_share
# A heterogeneous step's layout (common/hetlayout.c) and its roles by component; srun's
# --mpi from its command line (common/srunargs.c), which chooses its carrier.
UNIT_TESTS += $(BUILD)/tests/test_hetlayout $(BUILD)/tests/test_srunargs
# The fake SPANK host exports spank_* so the dlopen'ed plugin binds to it.
TEST_LDFLAGS_plugin_load := -rdynamic -ldl
TEST_LDFLAGS_plugin_share := -rdynamic -ldl
$(BUILD)/tests/test_plugin_load $(SAN_BUILD)/tests/test_plugin_load: $(PLUGIN)
$(BUILD)/tests/test_plugin_share $(SAN_BUILD)/tests/test_plugin_share: $(PLUGIN)
FUZZERS += slurmenv srunargs
# The fake SPANK host shared by the tests that drive the real dlrt.so.
FAKE_SPANK_TESTS := test_plugin_load test_plugin_gpu test_plugin_share
$(FAKE_SPANK_TESTS:%=$(BUILD)/tests/%): $(BUILD)/obj/tests/unit/fake_spank.o
$(FAKE_SPANK_TESTS:%=$(SAN_BUILD)/tests/%): $(SAN_BUILD)/obj/tests/unit/fake_spank.o
