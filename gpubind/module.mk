# gpubind/: the GPU/NIC plan from hwloc's topology (docs/gpu-binding.md): the
# topology reader, the planner, the --dl-gpu-bind parser and the printers.
# Its command dlrt-topo is built by tools/module.mk; its fixtures' tests by
# tests/fixtures/module.mk.
LIB_SRCS += $(wildcard gpubind/*.c)
