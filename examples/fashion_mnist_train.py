#!/usr/bin/python3
"""fashion_mnist_train.py - train LeNet-5 on Fashion-MNIST, data-parallel over the step's tasks.

A plain torch.distributed program (DistributedDataParallel, gloo, CPUs): it reads only
the env:// variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) that
`--dl-runtime=torch` gives every task, or torchrun gives its workers, so the job
script is just (examples/train.sbatch)

    #SBATCH --nodes=3 --ntasks-per-node=1 --dl-runtime=torch
    srun /usr/bin/python3 fashion_mnist_train.py --out model.dlrtw

Each epoch every rank trains on its own shard of the 60,000 training images; DDP
averages the gradients, so all ranks hold the same model. Rank 0 prints a progress
line while it trains and, per epoch, the training loss, the accuracy on the 10,000
test images (each rank tests a share; the counts are summed), the time and the nodes
that took part:

    epoch 1/2: loss 0.6120, test accuracy 84.31% (8431/10000), 41.2 s, 3 ranks on n1 n2 n3

The model is LeNet-5 exactly as dlrt-infer's built-in `lenet5` lays it out, so rank 0
saves it as a dlrt weights file (--out, docs/inference-models.md) that the pool
serves with its C engine:

    dlrt-infer submit --model $PWD/model.dlrtw --inputs .../t10k-images-idx3-ubyte.gz --batch 100

Data: Debian's dataset-fashion-mnist (IDX files, gzip), or --data DIR. No torchvision.
"""
import argparse
import datetime
import gzip
import os
import socket
import struct
import sys
import time
import zlib

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530  # the dataset's; dlrt-infer normalizes its inputs the same way
DLRTW_MAGIC = b"DLRTW\r\n\x1a"
DLRTW_LENET5 = 1


def read_idx(path):
    """An IDX file of unsigned bytes (gzip'd or plain) as a numpy array."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            zero, dtype, ndim = struct.unpack(">HBB", f.read(4))
            if zero != 0 or dtype != 0x08:
                sys.exit(f"{path}: not an IDX file of unsigned bytes; reinstall dataset-fashion-mnist")
            dims = struct.unpack(">" + "I" * ndim, f.read(4 * ndim))
            data = np.frombuffer(f.read(), dtype=np.uint8)
    except OSError as e:
        sys.exit(f"cannot read {path}: {e.strerror or e}: install dataset-fashion-mnist or pass --data DIR")
    if data.size != int(np.prod(dims)):
        sys.exit(f"{path}: {data.size} bytes of data, the header says {int(np.prod(dims))}")
    return data.reshape(dims)


def load(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    return (x - MEAN) / STD, torch.from_numpy(labels.astype(np.int64))


def lenet5():
    """dlrt-infer's lenet5 (inference/models/arch.c), layer for layer."""
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10))


def save_dlrtw(net, path, seed, epochs, samples, accuracy):
    """Writes the weights file dlrt-infer reads (docs/inference-models.md, "The weights
    file"): header, every layer's weight then bias as ndim, dims, floats, CRC-32.
    Written to a temporary file and renamed, so a reader never sees half a file."""
    params = [p.detach().contiguous() for p in net.parameters()]
    out = bytearray(DLRTW_MAGIC)
    out += struct.pack("<IIIIIIfI", 1, DLRTW_LENET5, len(params), seed, epochs, samples,
                       accuracy, 0)
    for p in params:
        out += struct.pack(f"<I{p.dim()}I", p.dim(), *p.shape)
        out += p.numpy().astype("<f4").tobytes()
    out += struct.pack("<I", zlib.crc32(out))
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(out)
    os.replace(tmp, path)


def env_int(name):
    v = os.environ.get(name, "")
    if not v:
        sys.exit(f"{name} is not set: run under `srun --dl-runtime=torch` (or torchrun)")
    return int(v)


def evaluate(net, xt, yt, rank, world):
    """Correct answers on this rank's share of the test set, summed over all ranks."""
    net.eval()
    correct = 0
    with torch.no_grad():
        for lo in range(rank * 500, len(xt), world * 500):
            correct += (net(xt[lo:lo + 500]).argmax(1) == yt[lo:lo + 500]).sum().item()
    net.train()
    t = torch.tensor([correct], dtype=torch.int64)
    dist.all_reduce(t)
    return int(t.item())


def train_epoch(model, opt, x, y, args, epoch, rank, world):
    """One pass over this rank's shard; returns the mean loss over all ranks."""
    g = torch.Generator().manual_seed(args.seed * 1000 + epoch)
    n = min(args.samples, len(x)) // world * world  # every rank takes the same number of steps
    shard = torch.randperm(len(x), generator=g)[:n][rank::world]
    steps = len(shard) // args.batch
    total, t0, next_report = 0.0, time.monotonic(), 1
    for step in range(steps):
        idx = shard[step * args.batch:(step + 1) * args.batch]
        opt.zero_grad()
        loss = F.cross_entropy(model(x[idx]), y[idx])
        loss.backward()  # DDP averages the gradients over all ranks here
        opt.step()
        total += loss.item()
        if rank == 0 and (step + 1) * 10 >= next_report * steps:
            print(f"  epoch {epoch}: {100 * (step + 1) // steps:3d}% ({step + 1}/{steps} steps "
                  f"of {args.batch} x {world} images), loss {total / (step + 1):.4f}, "
                  f"{time.monotonic() - t0:.0f} s", flush=True)
            next_report += 1
    t = torch.tensor([total, float(steps)], dtype=torch.float64)
    dist.all_reduce(t)
    return t[0].item() / t[1].item(), n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=DEFAULT_DATA, help="folder with the IDX .gz files")
    ap.add_argument("--epochs", type=int, default=2, help="passes over the training set (default 2)")
    ap.add_argument("--samples", type=int, default=60000,
                    help="training images per epoch, all ranks together (default all 60000)")
    ap.add_argument("--batch", type=int, default=32, help="images per step and rank (default 32)")
    ap.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (default 0.05)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="model.dlrtw", help="weights file rank 0 writes (default model.dlrtw)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per rank (default 1)")
    ap.add_argument("--timeout", type=int, default=600, help="process-group timeout, s (default 600)")
    args = ap.parse_args()

    rank, world = env_int("RANK"), env_int("WORLD_SIZE")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)  # the same initial model everywhere (DDP broadcasts rank 0's)
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=args.timeout))
    hosts = [None] * world
    dist.all_gather_object(hosts, socket.gethostname())
    nodes = " ".join(sorted(set(hosts)))
    if rank == 0:
        print(f"training LeNet-5 on Fashion-MNIST: {world} ranks on {nodes}, "
              f"{args.epochs} epochs, batch {args.batch} per rank, lr {args.lr}", flush=True)

    x, y = load(args.data, "train")
    xt, yt = load(args.data, "t10k")
    net = lenet5()
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    start = time.monotonic()
    acc = -1.0
    for epoch in range(1, args.epochs + 1):
        t0 = time.monotonic()
        loss, n = train_epoch(model, opt, x, y, args, epoch, rank, world)
        correct = evaluate(net, xt, yt, rank, world)
        acc = correct / len(xt)
        if rank == 0:
            print(f"epoch {epoch}/{args.epochs}: loss {loss:.4f}, test accuracy {100 * acc:.2f}% "
                  f"({correct}/{len(xt)}), {time.monotonic() - t0:.1f} s, "
                  f"{world} ranks on {nodes}", flush=True)
    if rank == 0:
        save_dlrtw(net, args.out, args.seed, args.epochs, n, acc)
        print(f"saved {args.out}: LeNet-5, test accuracy {100 * acc:.2f}%, trained in "
              f"{time.monotonic() - start:.0f} s", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
