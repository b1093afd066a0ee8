# launchers/jax/: the runtime-table entry is jax_runtime.c (listed by
# launchers/module.mk); its contract test is test_jax. See docs/jax.md.
UNIT_TESTS += $(BUILD)/tests/test_jax
