# runtime/: the one interface every runtime implements (runtime.h), the role
# model and the plan, the --dl-* options and plugstack.conf keys, the dry-run
# table, the fail-fast rule. The list of runtimes is launchers/runtimes.c; job
# policy that knows no runtime is in jobpolicy/.
LIB_SRCS   += $(wildcard runtime/*.c)
UNIT_TESTS += $(BUILD)/tests/test_roles $(BUILD)/tests/test_opts
