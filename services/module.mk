# services/: what every node service is built from: the event loop, the TCP
# server with its per-client bounds, the challenge/response authentication,
# peer credentials, the node relay and the start of a service for a step.
LIB_SRCS   += $(wildcard services/*.c)
FUZZERS    += portrange  # SrunPortRange in the slurm.conf at $SLURM_CONF (service.c)
UNIT_TESTS += $(BUILD)/tests/test_service $(BUILD)/tests/test_tcpserver \
              $(BUILD)/tests/test_service_run $(BUILD)/tests/test_evloop \
              $(BUILD)/tests/test_relay $(BUILD)/tests/test_svchold
TEST_LDFLAGS_relay := -lpthread
