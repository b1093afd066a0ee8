# tests/cluster: programs the cluster tests run inside jobs.
TEST_PROGS += $(BUILD)/testprogs/mpi_allreduce

$(BUILD)/testprogs/mpi_allreduce: tests/cluster/progs/mpi_allreduce.c
	@mkdir -p $(@D)
	mpicc -std=gnu11 -O2 -Wall -Wextra -Werror -o $@ $<
