# tests/cluster: programs the cluster tests run inside jobs.
TEST_PROGS += $(BUILD)/testprogs/mpi_allreduce

$(BUILD)/testprogs/mpi_allreduce: tests/cluster/progs/mpi_allreduce.c
	@mkdir -p $(@D)
	mpicc -std=gnu11 -O2 -Wall -Wextra -Werror -o $@ $<

# Horovod driver conformance client (t/21-hvd-driver.t): a script, installed as is.
TEST_PROGS += $(BUILD)/testprogs/hvd_proto.py
$(BUILD)/testprogs/hvd_proto.py: tests/cluster/progs/hvd_proto.py
	@mkdir -p $(@D)
	install -m 0755 $< $@

# srun for Open MPI programs, once more after Open MPI's own MPI_Init crash (see the script).
TEST_PROGS += $(BUILD)/testprogs/mpi-step
$(BUILD)/testprogs/mpi-step: tests/cluster/progs/mpi-step
	@mkdir -p $(@D)
	install -m 0755 $< $@

# redis-py pipelines and transactions against the job's store (t/36-caffe2-redispy.t).
TEST_PROGS += $(BUILD)/testprogs/redis_tx.py
$(BUILD)/testprogs/redis_tx.py: tests/cluster/progs/redis_tx.py
	@mkdir -p $(@D)
	install -m 0755 $< $@
