# logs/: the log pipeline: one task's output cut into lines (logline.c), the
# per-node relay into --dl-log-dir (logrelay.c) and the --dl-retries history
# (retrylog.c, read by spank/requeue.c).
LIB_SRCS   += $(wildcard logs/*.c)
UNIT_TESTS += $(BUILD)/tests/test_retrylog $(BUILD)/tests/test_logs
FUZZERS    += logline retrylog
