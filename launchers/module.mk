# launchers/: each runtime's entry in the runtime table (common/runtime.c) lives in
# launchers/<runtime>/<runtime>_runtime.c (dlrt-infer's in inference/, built by
# inference/module.mk); its services have their own module.mk.
LIB_SRCS += $(wildcard launchers/*/*_runtime.c)
