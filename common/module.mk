# common/: code every part of dlrt shares (pure C, no SPANK symbols).
LIB_SRCS += $(filter-out %_main.c,$(wildcard common/*.c))
FUZZERS += rdvclient  # common/rdvclient.c: srun's rendezvous, as a task reads it
UNIT_TESTS += $(BUILD)/tests/test_exchange_reply
FUZZERS += exchange_reply  # common/exchange_reply.c: the exchange's answers, as a task reads them
