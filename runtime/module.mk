# runtime/: the one interface every runtime implements (runtime.h), the role
# model and the plan, the --dl-* options and plugstack.conf keys, the dry-run
# table, the fail-fast rule, the check of a container's command line
# (contcheck.c) and of a trainer's own launcher as the command (launchcheck.c). The list of runtimes is launchers/runtimes.c.
LIB_SRCS   += $(wildcard runtime/*.c)
UNIT_TESTS += $(BUILD)/tests/test_roles $(BUILD)/tests/test_opts $(BUILD)/tests/test_contcheck \
              $(BUILD)/tests/test_launchcheck $(BUILD)/tests/test_lifecycle \
              $(BUILD)/tests/test_hangwhere
FUZZERS    += contcheck # the task's srun command (spank/stepd.c)
FUZZERS    += hangwhere # gdb's backtrace and the position lines nodes share (dlrt-lifecycle)
