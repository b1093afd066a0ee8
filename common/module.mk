# common/: the core every other folder builds on: errors, buffers, the clock,
# hashing and MACs, environment blocks, hostlists and the step layout, numeric
# addresses, processes, private folders, the intrusive list and the compiled-in install
# paths.
# It includes nothing from another dlrt folder (tests/check-layout.sh).
LIB_SRCS += $(filter-out %_main.c,$(wildcard common/*.c))
