# spank/: the SPANK plugin dlrt.so (one file per context, dispatched by dispatch.c).
PLUGIN_SRCS += $(wildcard spank/*.c)
