# launchers/mxnet/: the runtime-table entry (mxnet_runtime.c) is built by
# launchers/module.mk. The ps-lite contract test (its wire format, the
# scheduler/server/worker program and its unit tests) is test code and lives in
# tests/progs/mxnet/ (tests/progs/module.mk). See docs/mxnet.md.
