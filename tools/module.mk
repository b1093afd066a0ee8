# tools/: user commands that are not part of one runtime.
#   dlrt-logs   list or merge a job's exported task logs (--dl-log-dir; docs/debugging.md)
BINS     += $(BUILD)/bin/dlrt-logs
MANPAGES += docs/man/dlrt-logs.1
MANPAGES += docs/man/dlrt-relay.8
FUZZERS  += logline
$(eval $(call dlrt_program,$(BUILD)/bin/dlrt-logs,tools/dlrt_logs_main.c))
# dlrt-relay: the node relay of a step with a service (services/relay.c; started
# by spank/service.c on every node of such a step).
LIBEXEC    += $(BUILD)/libexec/dlrt-relay
$(eval $(call dlrt_program,$(BUILD)/libexec/dlrt-relay,tools/dlrt_relay_main.c))
# dlrt-topo: the GPU/NIC plan of a node or a fixture (gpubind/; docs/gpu-binding.md).
BINS       += $(BUILD)/bin/dlrt-topo
MANPAGES   += docs/man/dlrt-topo.1
$(eval $(call dlrt_program,$(BUILD)/bin/dlrt-topo,tools/dlrt_topo_main.c))
$(eval $(call dlrt_may_link,$(BUILD)/bin/dlrt-topo,gpubind,it prints the GPU/NIC plan of a node or a fixture))
# bench/gpuplan.sh runs this (plan time and quality on the fixtures).
$(eval $(call dlrt_program,$(BUILD)/bench/bench_gpuplan,bench/bench_gpuplan.c))
.PHONY: bench-gpuplan
bench-gpuplan: $(BUILD)/bench/bench_gpuplan
	BUILD=$(BUILD) bench/gpuplan.sh
# dlrt-oci-run: oci.conf's RunTimeRun wrapper for Slurm 22.05's srun --container
# (docs/containers.md): each task's own config.json (tools/ocitask.c, tools/ocijson.c),
# crun's state folder checked first (tools/ocistate.c); with --user, oci.conf's
# RunTimeQuery/Kill/Delete as the job's user (tools/ociuser.c).
LIB_SRCS   += tools/ocijson.c tools/ocitask.c tools/ocistate.c tools/ociuser.c
LIBEXEC    += $(BUILD)/libexec/dlrt-oci-run
MANPAGES   += docs/man/dlrt-oci-run.8
FUZZERS    += ocijson
UNIT_TESTS += $(BUILD)/tests/test_ocitask $(BUILD)/tests/test_ocistate $(BUILD)/tests/test_ociuser
$(eval $(call dlrt_program,$(BUILD)/libexec/dlrt-oci-run,tools/dlrt_oci_run_main.c))
# the unit test runs the program too
$(BUILD)/tests/test_ocitask $(SAN_BUILD)/tests/test_ocitask: | $(BUILD)/libexec/dlrt-oci-run
# dlrt-lifecycle: the per-node watcher of --dl-signal, --dl-requeue and
# --dl-hang-timeout (started by spank/lifecycle.c): its two jobs (tools/lcwarn.c,
# tools/lchang.c) in one process per node, the job's times asked of slurmctld by
# one node per step and shared through srun's rendezvous (tools/lcshare.c). The
# parts with a unit test or a fuzzer are in the library: the /proc reader, the
# nodes' progress files, the times' wire format.
LIB_SRCS   += tools/lcproc.c tools/lcprogress.c tools/lctimes.c
LIBEXEC    += $(BUILD)/libexec/dlrt-lifecycle
MANPAGES   += docs/man/dlrt-lifecycle.8
FUZZERS    += lctimes
UNIT_TESTS += $(BUILD)/tests/test_lcwatch
LIFECYCLE_SRCS := tools/dlrt_lifecycle_main.c tools/lcwatch.c tools/lcwarn.c tools/lchang.c \
                  tools/lcshare.c
$(eval $(call dlrt_program,$(BUILD)/libexec/dlrt-lifecycle,$(LIFECYCLE_SRCS),-lslurm))
# dlrt-preflight: one node's part of --dl-preflight (preflight/; started by
# spank/preflight.c in srun as a helper step, one task per node).
LIBEXEC    += $(BUILD)/libexec/dlrt-preflight
MANPAGES   += docs/man/dlrt-preflight.8
$(eval $(call dlrt_program,$(BUILD)/libexec/dlrt-preflight,tools/dlrt_preflight_main.c,-pthread))
$(eval $(call dlrt_may_link,$(BUILD)/libexec/dlrt-preflight,gpubind,it checks the GPU devices of the step's allocation: Slurm's GPU list read by the GPU plan's own parser))
