# launchers/mxnet/: the ps-lite contract test (issue 3). The runtime-table entry
# (mxnet_runtime.c) is built by launchers/module.mk. See docs/mxnet.md.
#
#   launchers/mxnet/pslite_msg.c   the test's wire format (library, so the fuzzer gets it)
#   testprogs/pslite_contract      scheduler/server/worker of a ps-lite job, run by the
#                                  cluster tests under srun --dl-runtime=mxnet
#   tests/unit/pslite_local.sh     the same job on loopback, plus the failure cases

LIB_SRCS   += launchers/mxnet/pslite_msg.c

PSLITE_PROG_SRCS := $(addprefix launchers/mxnet/testprog/,pslite_contract.c pslite_sched.c \
                    pslite_node.c pslite_net.c)
TEST_PROGS += $(BUILD)/testprogs/pslite_contract
$(eval $(call dlrt_program,$(BUILD)/testprogs/pslite_contract,$(PSLITE_PROG_SRCS)))

FUZZERS    += pslite

# Unit tests: the codec, and the loopback job. test_pslite_local runs
# tests/unit/pslite_local.sh against the program of its own flavour (plain or
# ASan+UBSan), so the sanitized run checks the sanitized program.
UNIT_TESTS += $(BUILD)/tests/test_pslite_msg $(BUILD)/tests/test_pslite_local
$(SAN_BUILD)/testprogs/pslite_contract: $(PSLITE_PROG_SRCS:%.c=$(SAN_BUILD)/obj/%.o) \
		$(SAN_BUILD)/libdlrt.a
	@mkdir -p $(@D)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LDFLAGS) $(PKG_LIBS) -lm
# Order-only: the test pattern rule links $^ and must not see the program.
$(BUILD)/tests/test_pslite_local: | $(BUILD)/testprogs/pslite_contract
$(SAN_BUILD)/tests/test_pslite_local: | $(SAN_BUILD)/testprogs/pslite_contract
