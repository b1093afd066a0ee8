# tools/: user commands that are not part of one runtime.
#   dlrt-logs   list or merge a job's exported task logs (--dl-log-dir; docs/debugging.md)
BINS     += $(BUILD)/bin/dlrt-logs
MANPAGES += docs/man/dlrt-logs.1
FUZZERS  += logline
UNIT_TESTS += $(BUILD)/tests/test_logs $(BUILD)/tests/test_privdir
$(eval $(call dlrt_program,$(BUILD)/bin/dlrt-logs,tools/dlrt_logs_main.c))
# --dl-retries' readers (common/retrylog.c, used by spank/requeue.c).
FUZZERS    += retrylog
UNIT_TESTS += $(BUILD)/tests/test_retrylog
