#!/usr/bin/python3
"""torch_init.py - the wire-up of a torch.distributed job and nothing else:
init_process_group("gloo", env://), one barrier, exit. bench/torch-wireup.sh
times it under srun --dl-runtime=torch and under a plain srun whose job script
sets the env:// variables by hand, as users do without dlrt."""
import os
import time

t0 = time.monotonic()
import torch.distributed as dist  # noqa: E402  (the import is part of what a job pays)

t1 = time.monotonic()
dist.init_process_group("gloo", init_method="env://")
dist.barrier()
t2 = time.monotonic()
# The store's own round trip, once every rank is up (the init above is bounded by
# the slowest rank's import): ADD on a shared counter and a GET, as barriers do.
store = dist.distributed_c10d._get_default_store()
OPS = 50
t3 = time.monotonic()
for i in range(OPS):
    store.add("bench-counter", 1)
    store.get("bench-counter")
t4 = time.monotonic()
dist.barrier()
if dist.get_rank() == 0:
    print(f"rank0 import_s={t1 - t0:.2f} init_barrier_s={t2 - t1:.2f} "
          f"store_op_us={(t4 - t3) * 1e6 / (2 * OPS):.0f} "
          f"master={os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)
dist.destroy_process_group()
