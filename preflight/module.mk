# preflight/: --dl-preflight's pure parts: the option's spec (pfspec.c), a node's
# local checks (pfcheck.c), its network probes and their authenticated server
# (pfnet.c), the one result line a node prints (pfline.c, fuzzed: it crosses the
# network) and the verdict srun draws from all of them (pfdecide.c). The node
# program is tools/dlrt_preflight_main.c; srun's side is spank/preflight.c.
LIB_SRCS   += $(wildcard preflight/*.c)
UNIT_TESTS += $(BUILD)/tests/test_preflight
FUZZERS    += pfline
