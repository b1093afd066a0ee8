#!/usr/bin/python3
"""torch_fashion_mnist.py - a small CNN on Fashion-MNIST with DistributedDataParallel.

A plain torch.distributed program: it reads only the env:// variables
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK) that
`--dl-runtime=torch` gives every task, so the job script is just

    #SBATCH --nodes=3 --ntasks-per-node=2 --dl-runtime=torch
    srun /usr/bin/python3 torch_fashion_mnist.py

It trains on CPU with the gloo backend, on a small slice of the training set
(each rank its own shard) for a bounded number of steps, and prints one line per
rank at the end:

    RESULT rank=R world=W loss_first=A loss_last=B eval_before=C eval_after=D params_sha256=H

loss_first/loss_last average the first and last few steps of this rank;
eval_before/eval_after are the loss on a fixed held-out batch (identical on all
ranks). params_sha256 hashes every parameter's bytes: DDP averages gradients
with an allreduce, so it must be the same on every rank.

Data: the Debian package dataset-fashion-mnist (IDX files, gzip), or --data DIR.
No torchvision is needed: the IDX reader is below.
"""
import argparse
import gzip
import hashlib
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path, count):
    """The first `count` records of an IDX file (uint8 data, big-endian header)."""
    with gzip.open(path, "rb") as f:
        zero, dtype, ndim = struct.unpack(">HBB", f.read(4))
        if zero != 0 or dtype != 0x08:
            sys.exit(f"{path}: not an IDX file of unsigned bytes; reinstall dataset-fashion-mnist")
        dims = struct.unpack(">" + "I" * ndim, f.read(4 * ndim))
        count = min(count, dims[0])
        rec = int(np.prod(dims[1:])) if ndim > 1 else 1
        data = np.frombuffer(f.read(count * rec), dtype=np.uint8)
        return data.reshape((count,) + tuple(dims[1:]))


def load(data_dir, prefix, count):
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"), count)
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"), count)
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    x = (x - 0.2860) / 0.3530  # Fashion-MNIST mean and std
    return x, torch.from_numpy(labels.astype(np.int64))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc1 = nn.Linear(16 * 7 * 7, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def params_sha256(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def env_int(name):
    v = os.environ.get(name, "")
    if not v:
        sys.exit(f"{name} is not set: run under `srun --dl-runtime=torch` (or torchrun)")
    return int(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=DEFAULT_DATA, help="folder with the IDX .gz files")
    ap.add_argument("--steps", type=int, default=40, help="optimizer steps (default 40)")
    ap.add_argument("--batch", type=int, default=32, help="batch size per rank (default 32)")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--timeout", type=int, default=120, help="process-group timeout, s")
    args = ap.parse_args()

    rank, world = env_int("RANK"), env_int("WORLD_SIZE")
    torch.set_num_threads(1)  # many ranks share few cores
    torch.manual_seed(0)      # same initial model everywhere (DDP broadcasts rank 0's anyway)

    t0 = time.monotonic()
    dist.init_process_group("gloo", init_method="env://",
                            timeout=__import__("datetime").timedelta(seconds=args.timeout))
    t_init = time.monotonic() - t0

    # Each rank trains on its own shard of the first steps*batch*world images.
    n = args.steps * args.batch * world
    x, y = load(args.data, "train", n)
    x, y = x[rank::world], y[rank::world]
    xe, ye = load(args.data, "t10k", 512)

    model = DDP(SmallCNN())
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    with torch.no_grad():
        eval_before = F.cross_entropy(model.module(xe), ye).item()

    losses = []
    for step in range(args.steps):
        lo = step * args.batch
        xb, yb = x[lo:lo + args.batch], y[lo:lo + args.batch]
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()  # DDP allreduces the gradients here
        opt.step()
        losses.append(loss.item())

    with torch.no_grad():
        eval_after = F.cross_entropy(model.module(xe), ye).item()
    k = max(1, args.steps // 8)
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    print(f"RESULT rank={rank} world={world} loss_first={first:.4f} loss_last={last:.4f} "
          f"eval_before={eval_before:.4f} eval_after={eval_after:.4f} "
          f"params_sha256={params_sha256(model.module)} "
          f"master={os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')} "
          f"init_s={t_init:.2f} host={os.uname().nodename}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
