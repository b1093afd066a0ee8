# etc/: the installed site files (plugstack.conf.d/dlrt.conf.in, modulefiles/dlrt.{lua,tcl}.in,
# substituted by the top-level install rule) and the core's man pages.
MANPAGES   += docs/man/dlrt.7 docs/man/dlrt-kv.1 docs/man/dlrt-train.1 docs/man/dlrt-model-bench.1
# Every plugstack key the parser knows is documented in dlrt.conf.in (and its example parses).
UNIT_TESTS += $(BUILD)/tests/test_conf_doc
