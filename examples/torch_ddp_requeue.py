#!/usr/bin/env python3
"""Plain PyTorch DDP that survives its time limit and preemption under dlrt.

    #SBATCH --time=60 --dl-runtime=torch --dl-signal=USR1@120 --dl-requeue=5
    srun python3 torch_ddp_requeue.py

All it does beyond training: save when told (SIGUSR1 from --dl-signal, or
SIGTERM, which Slurm sends at the start of a preemption's grace time), load
when present ($DLRT_CHECKPOINT_DIR/ckpt.pt). dlrt requeues the job; the next
attempt resumes and ends with exactly the parameters of an uninterrupted run
(the data of step s is a function of s and the rank, so nothing depends on
when the job was interrupted). docs/checkpoint.md explains each part.
"""
import argparse
import hashlib
import os
import signal
import time

import torch
import torch.distributed as dist

told = False


def save_when_told(signum, frame):
    # Only a flag: the ranks agree on the step to stop at (an allreduce
    # below), since each gets the signal at a slightly different moment.
    global told
    told = True


def batch(step, rank, n=32):
    g = torch.Generator().manual_seed(100003 * step + rank)
    x = torch.randn(n, 16, generator=g)
    y = (x[:, :4].sum(dim=1, keepdim=True) > 0).float()
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--sleep", type=float, default=0.0, help="seconds per step (tests)")
    ap.add_argument("--only-usr1", action="store_true",
                    help="save on SIGUSR1 only and ignore SIGTERM (a test of dlrt's warning)")
    args = ap.parse_args()

    signal.signal(signal.SIGUSR1, save_when_told)
    signal.signal(signal.SIGTERM, signal.SIG_IGN if args.only_usr1 else save_when_told)
    dist.init_process_group("gloo")  # env://: dlrt set MASTER_ADDR, RANK, ...
    rank, world = dist.get_rank(), dist.get_world_size()
    attempt = int(os.environ.get("DLRT_ATTEMPT", "0"))
    ckpt = os.path.join(os.environ["DLRT_CHECKPOINT_DIR"], "ckpt.pt")

    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    start = 0
    if os.path.exists(ckpt):  # load when present
        state = torch.load(ckpt)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        if rank == 0:
            print(f"resumed from step {start} attempt={attempt}", flush=True)

    loss_fn = torch.nn.BCEWithLogitsLoss()
    for step in range(start, args.steps):
        stop = torch.tensor([1.0 if told else 0.0])
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item():  # save when told
            if rank == 0:
                tmp = ckpt + ".tmp"
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(),
                            "step": step}, tmp)
                os.replace(tmp, ckpt)
                print(f"checkpointed at step {step} attempt={attempt}", flush=True)
            dist.barrier()
            dist.destroy_process_group()
            return
        x, y = batch(step, rank)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if rank == 0 and step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f} attempt={attempt}", flush=True)
        time.sleep(args.sleep)

    h = hashlib.sha256()
    for p in model.module.state_dict().values():
        h.update(p.detach().numpy().tobytes())
    if rank == 0:
        print(f"RESULT steps={args.steps} world={world} attempt={attempt} "
              f"params_sha256={h.hexdigest()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
