# launchers/horovod/: Horovod gloo-mode rendezvous driver.
#
#   libexec/dlrt-hvd-driver      the HTTP rendezvous server (Horovod's protocol)
#   testprogs/gloo_hvd_allreduce a real libgloo job whose store speaks that protocol
#                                (tests/progs/horovod, built by tests/progs/module.mk)
#   bench/bench_hvd_driver       requests/s under concurrent clients (bench/hvd-driver.sh)

HVD_DIR := launchers/horovod

LIB_SRCS += $(HVD_DIR)/http.c $(HVD_DIR)/hvd_plan.c $(HVD_DIR)/hvd_elastic.c $(HVD_DIR)/hvd_watch.c \
            $(HVD_DIR)/rendezvous.c

LIBEXEC += $(BUILD)/libexec/dlrt-hvd-driver
# hvd_steppids.c calls libslurm (elastic Horovod: which nodes still run the
# step): linked into the driver only, never into libdlrt.a.
$(eval $(call dlrt_program,$(BUILD)/libexec/dlrt-hvd-driver,$(HVD_DIR)/dlrt_hvd_driver_main.c $(HVD_DIR)/hvd_steppids.c,-lslurm))
$(eval $(call dlrt_may_link,$(BUILD)/libexec/dlrt-hvd-driver,$(HVD_DIR),it is the Horovod runtime's driver: its rendezvous and elastic rounds))

UNIT_TESTS += $(BUILD)/tests/test_hvd_http $(BUILD)/tests/test_hvd_store \
              $(BUILD)/tests/test_hvd_plan $(BUILD)/tests/test_hvd_driver_loopback \
              $(BUILD)/tests/test_hvd_gloo_local $(BUILD)/tests/test_hvd_elastic

# The loopback test forks the real driver binary (found next to the plugin,
# see the test), so the driver must be built first. Order-only: the pattern
# rule links $^ and must not see the binary.
$(BUILD)/tests/test_hvd_driver_loopback $(SAN_BUILD)/tests/test_hvd_driver_loopback: | \
	$(BUILD)/libexec/dlrt-hvd-driver
# ... and the gloo test runs tests/unit/hvd_gloo_local.sh with the driver and the test program.
$(BUILD)/tests/test_hvd_gloo_local $(SAN_BUILD)/tests/test_hvd_gloo_local: | \
	$(BUILD)/libexec/dlrt-hvd-driver $(BUILD)/testprogs/gloo_hvd_allreduce
# ... and the elastic one tests/unit/hvd_elastic_local.sh with gloo_hvd_elastic.
$(BUILD)/tests/test_hvd_elastic $(SAN_BUILD)/tests/test_hvd_elastic: | \
	$(BUILD)/libexec/dlrt-hvd-driver $(BUILD)/testprogs/gloo_hvd_elastic

FUZZERS += http hvdpids hvdround

# Section 1: the install rule creates man1 and man7 only.
MANPAGES += docs/man/dlrt-hvd-driver.1

all: $(BUILD)/bench/bench_hvd_driver
$(eval $(call dlrt_program,$(BUILD)/bench/bench_hvd_driver,bench/bench_hvd_driver.c))

.PHONY: bench-hvd-driver
bench-hvd-driver: $(BUILD)/bench/bench_hvd_driver $(BUILD)/libexec/dlrt-hvd-driver
	bench/hvd-driver.sh $(BUILD)
