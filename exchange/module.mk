# exchange/: the task's side of the step's address exchange: the client of
# srun's rendezvous (rdvclient.c), the reader of its answers (exchange_reply.c)
# and which programs take the exchange at all (elfneeds.c).
LIB_SRCS   += $(wildcard exchange/*.c)
UNIT_TESTS += $(BUILD)/tests/test_exchange_reply $(BUILD)/tests/test_rdvclient \
              $(BUILD)/tests/test_elfneeds
# test_rdvclient runs the store srun starts for the step's rendezvous.
$(BUILD)/tests/test_rdvclient $(SAN_BUILD)/tests/test_rdvclient: | $(BUILD)/libexec/dlrt-c10d-store
FUZZERS    += rdvclient exchange_reply elfneeds
