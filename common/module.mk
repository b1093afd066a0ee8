# common/: code every part of dlrt shares (pure C, no SPANK symbols).
LIB_SRCS += $(filter-out %_main.c,$(wildcard common/*.c))
