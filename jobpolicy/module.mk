# jobpolicy/: pure job policy, which knows no runtime: when --dl-signal warns and
# --dl-requeue requeues (lifecycle.c), --dl-signal's syntax (warnsig.c), the hang
# report's comparison (hangwhere.c), and the checks of the step's command: a
# container cut off from its node (contcheck.c), a trainer's own launcher
# (launchcheck.c). dlrt-lifecycle links these and nothing of runtime/.
LIB_SRCS   += $(wildcard jobpolicy/*.c)
UNIT_TESTS += $(BUILD)/tests/test_contcheck $(BUILD)/tests/test_launchcheck \
              $(BUILD)/tests/test_lifecycle $(BUILD)/tests/test_hangwhere
FUZZERS    += contcheck # the task's srun command (spank/stepd.c)
FUZZERS    += hangwhere # gdb's backtrace and the position lines nodes share (dlrt-lifecycle)
