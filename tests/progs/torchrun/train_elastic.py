"""A tiny data-parallel training loop for the torchrun runtime's cluster test.

Run by torchrun's workers (gloo, CPU). Each rank fits a linear model to its
own shard of a fixed synthetic problem, averaging gradients with allreduce,
and prints one RESULT line with the world it trained in and its parameters
(equal on every rank of one world up to rounding: gloo's ring allreduce adds
the ranks' gradients in a different order on each rank, so the last bits may
differ).

--pause-at STEP --flag DIR: in the first attempt only
(TORCHELASTIC_RESTART_COUNT=0), every worker writes DIR/pids.<host> ("<agent
pid> <worker pid>") at STEP and waits (bounded) for DIR/go, so a test can
kill one node's agent mid-training. The survivors' next allreduce then fails,
their agents re-form the group and the run starts again with fewer nodes.
"""
import argparse
import datetime
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--pause-at", type=int, default=-1)
p.add_argument("--flag", default="")
a = p.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
host = socket.gethostname()
torch.manual_seed(0)
w_true = torch.arange(1.0, 9.0)
model = torch.nn.Linear(8, 1, bias=False)
torch.nn.init.zeros_(model.weight)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(1000 + rank)
loss_first = None
for step in range(a.steps):
    if step == a.pause_at and attempt == 0 and a.flag:
        tmp = os.path.join(a.flag, ".pids.%s" % host)
        with open(tmp, "w") as f:
            f.write("%d %d\n" % (os.getppid(), os.getpid()))
        os.rename(tmp, os.path.join(a.flag, "pids.%s" % host))
        for _ in range(1200):
            if os.path.exists(os.path.join(a.flag, "go")):
                break
            time.sleep(0.1)
    x = torch.randn(32, 8, generator=g)
    y = x @ w_true
    loss = ((model(x).squeeze(1) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    for prm in model.parameters():
        dist.all_reduce(prm.grad)
        prm.grad /= world
    opt.step()
    if loss_first is None:
        loss_first = loss.item()
params = ",".join("%.9e" % v for v in model.weight.detach().flatten().tolist())
# The node's workers share the agent's stdout pipe: the line and its newline go
# out in one write (under PIPE_BUF, so atomic), never as print()'s text and
# end in two writes that another worker's line can come between.
sys.stdout.flush()
os.write(1, ("RESULT host=%s rank=%d world=%d group_world=%s attempt=%d rdzv=%s agent_store=%s "
             "loss_first=%.4f loss_last=%.4f params=%s\n" % (host, rank, world,
             os.environ.get("GROUP_WORLD_SIZE"), attempt, os.environ.get("PET_RDZV_ENDPOINT"),
             os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "unset"),
             loss_first, loss.item(), params)).encode())
dist.barrier()
dist.destroy_process_group()
