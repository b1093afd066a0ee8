# launchers/caffe2/: the Caffe2 runtime's helper store (dlrt-store, a RESP
# key/value server) and its tests. The runtime-table entry and the plugin
# glue that starts the store live with the lead's code.
LIB_SRCS   += launchers/caffe2/resp.c launchers/caffe2/kvstore.c \
              launchers/caffe2/kvcmd.c launchers/caffe2/kvttl.c launchers/caffe2/kvtx.c \
              launchers/caffe2/store_session.c
LIBEXEC    += $(BUILD)/libexec/dlrt-store
UNIT_TESTS += $(BUILD)/tests/test_resp $(BUILD)/tests/test_resp_kv $(BUILD)/tests/test_resp_tx
FUZZERS    += resp
MANPAGES   += docs/man/dlrt-store.8

$(eval $(call dlrt_program,$(BUILD)/libexec/dlrt-store,launchers/caffe2/dlrt_store_main.c))
$(eval $(call dlrt_may_link,$(BUILD)/libexec/dlrt-store,launchers/caffe2,it is the Caffe2 runtime's helper store and serves its commands))

# $(BUILD)/testprogs/gloo_redis_allreduce: tests/progs/caffe2 (tests/progs/module.mk).
# The real-client test (redis-cli, redis-server, gloo) runs with `make unit`
# through a generated wrapper: against the plain store, and against a store
# built with ASan+UBSan for the sanitized pass.
UNIT_TESTS += $(BUILD)/tests/test_resp_redis_cli

$(BUILD)/tests/test_resp_redis_cli: tests/unit/resp_redis_cli.sh $(BUILD)/libexec/dlrt-store \
		$(BUILD)/testprogs/gloo_redis_allreduce
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec %s %s %s\n' $(abspath tests/unit/resp_redis_cli.sh) \
	  $(abspath $(BUILD)/libexec/dlrt-store) $(abspath $(BUILD)/testprogs/gloo_redis_allreduce) > $@
	chmod +x $@

$(SAN_BUILD)/libexec/dlrt-store: $(SAN_BUILD)/obj/launchers/caffe2/dlrt_store_main.o $(SAN_BUILD)/libdlrt.a
	@mkdir -p $(@D)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(ALL_LDFLAGS) $(PKG_LIBS) -lm

$(SAN_BUILD)/tests/test_resp_redis_cli: tests/unit/resp_redis_cli.sh $(SAN_BUILD)/libexec/dlrt-store \
		$(BUILD)/testprogs/gloo_redis_allreduce
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec %s %s %s\n' $(abspath tests/unit/resp_redis_cli.sh) \
	  $(abspath $(SAN_BUILD)/libexec/dlrt-store) $(abspath $(BUILD)/testprogs/gloo_redis_allreduce) > $@
	chmod +x $@
