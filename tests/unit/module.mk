# tests/unit: the core's own unit tests (components list theirs in their module.mk).
UNIT_TESTS += $(BUILD)/tests/test_hostlist $(BUILD)/tests/test_roles $(BUILD)/tests/test_opts \
              $(BUILD)/tests/test_plugin_load $(BUILD)/tests/test_service \
              $(BUILD)/tests/test_crypto $(BUILD)/tests/test_proc $(BUILD)/tests/test_tcpserver \
              $(BUILD)/tests/test_instpath $(BUILD)/tests/test_env $(BUILD)/tests/test_service_run \
              $(BUILD)/tests/test_evloop $(BUILD)/tests/test_rdvclient
# test_rdvclient runs the store srun starts for the step's rendezvous.
$(BUILD)/tests/test_rdvclient $(SAN_BUILD)/tests/test_rdvclient: | $(BUILD)/libexec/dlrt-c10d-store
# The fake SPANK host exports spank_* so the dlopen'ed plugin binds to it.
TEST_LDFLAGS_plugin_load := -rdynamic -ldl
$(BUILD)/tests/test_plugin_load $(SAN_BUILD)/tests/test_plugin_load: $(PLUGIN)
FUZZERS += slurmenv
# The fake SPANK host shared by the tests that drive the real dlrt.so.
FAKE_SPANK_TESTS := test_plugin_load test_plugin_gpu
$(FAKE_SPANK_TESTS:%=$(BUILD)/tests/%): $(BUILD)/obj/tests/unit/fake_spank.o
$(FAKE_SPANK_TESTS:%=$(SAN_BUILD)/tests/%): $(SAN_BUILD)/obj/tests/unit/fake_spank.o
