# tests/progs/: programs the tests run (inside cluster jobs, and in the unit
# tests' loopback jobs), one folder per runtime. None is installed by
# `make install`; `make cluster-up` copies them into the test cluster's prefix.

# mxnet: the ps-lite contract test. pslite_msg.c is its wire format; it goes
# into the test library (TEST_LIB_SRCS), so the unit test and the fuzzer get it
# and libdlrt.a does not.
TEST_LIB_SRCS += tests/progs/mxnet/pslite_msg.c
PSLITE_PROG_SRCS := $(addprefix tests/progs/mxnet/,pslite_contract.c pslite_sched.c \
                    pslite_node.c pslite_net.c)
TEST_PROGS += $(BUILD)/testprogs/pslite_contract
$(BUILD)/testprogs/pslite_contract: $(PSLITE_PROG_SRCS:%.c=$(BUILD)/obj/%.o) $(TEST_LIB) $(LIB)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(ALL_LDFLAGS) $(PKG_LIBS) -lm
FUZZERS    += pslite

# Unit tests: the codec, and the loopback job. test_pslite_local runs
# tests/unit/pslite_local.sh against the program of its own flavour (plain or
# ASan+UBSan), so the sanitized run checks the sanitized program.
UNIT_TESTS += $(BUILD)/tests/test_pslite_msg $(BUILD)/tests/test_pslite_local
$(SAN_BUILD)/testprogs/pslite_contract: $(PSLITE_PROG_SRCS:%.c=$(SAN_BUILD)/obj/%.o) \
		$(SAN_TEST_LIB) $(SAN_BUILD)/libdlrt.a
	@mkdir -p $(@D)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(ALL_LDFLAGS) $(PKG_LIBS) -lm
# Order-only: the test pattern rule links $^ and must not see the program.
$(BUILD)/tests/test_pslite_local: | $(BUILD)/testprogs/pslite_contract
$(SAN_BUILD)/tests/test_pslite_local: | $(SAN_BUILD)/testprogs/pslite_contract

# horovod: a real libgloo job whose store speaks the driver's HTTP protocol.
TEST_PROGS += $(BUILD)/testprogs/gloo_hvd_allreduce
$(eval $(call dlrt_cxx_program,$(BUILD)/testprogs/gloo_hvd_allreduce,tests/progs/horovod/gloo_hvd_allreduce.cc,-lgloo -lpthread))
# ... and elastic Horovod's worker loop (reset, GET rank_and_size, new round).
TEST_PROGS += $(BUILD)/testprogs/gloo_hvd_elastic
$(eval $(call dlrt_cxx_program,$(BUILD)/testprogs/gloo_hvd_elastic,tests/progs/horovod/gloo_hvd_elastic.cc,-lgloo -lpthread))

# caffe2: a gloo allreduce that rendezvouses through gloo::rendezvous::RedisStore
# (Debian's libgloo is built with GLOO_USE_REDIS) on the helper store.
TEST_PROGS += $(BUILD)/testprogs/gloo_redis_allreduce
$(eval $(call dlrt_cxx_program,$(BUILD)/testprogs/gloo_redis_allreduce,tests/progs/caffe2/gloo_redis_allreduce.cc,-DHIREDIS_NESTED_INCLUDE -lgloo -lhiredis -pthread))

# infer: a worker that re-sends answers and checks the coordinator never
# dispatches their tasks again before recording them (t/80-infer-group-commit.t).
TEST_PROGS += $(BUILD)/testprogs/infer_resend_race
$(eval $(call dlrt_program,$(BUILD)/testprogs/infer_resend_race,tests/progs/infer/infer_resend_race.c))

# pmix: what another user of a node can do with a step's PMIx server
# (t/90-pmix-stranger.t): a real libpmix client that claims a rank of someone
# else's step, and a preload shim that makes PMIx's native credential state
# the uid and gid in STATED_UID/STATED_GID.
TEST_PROGS += $(BUILD)/testprogs/pmix-stranger $(BUILD)/testprogs/stated_id.so
$(eval $(call dlrt_program,$(BUILD)/testprogs/pmix-stranger,tests/progs/pmix/pmix_stranger.c))
$(BUILD)/testprogs/stated_id.so: $(BUILD)/obj/tests/progs/pmix/stated_id.o
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $^ $(ALL_LDFLAGS)

# preflight: one simulated node's wall clock put off (t/99b-preflight.t's clock check).
TEST_PROGS += $(BUILD)/testprogs/clock_skew.so
$(BUILD)/testprogs/clock_skew.so: $(BUILD)/obj/tests/progs/preflight/clock_skew.o
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $^ $(ALL_LDFLAGS)
