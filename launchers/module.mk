# launchers/: one folder per runtime (launchers/<runtime>/), each filling the
# interface of runtime/runtime.h in <runtime>_runtime.c; its services have their
# own module.mk. runtimes.c is the list of runtimes (dlrt-infer's entry is
# inference/infer_runtime.c, built by inference/module.mk).
LIB_SRCS += launchers/runtimes.c $(wildcard launchers/*/*_runtime.c)
