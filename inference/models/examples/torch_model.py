#!/usr/bin/python3
"""An external dlrt-infer model in PyTorch (Debian's python3-torch).

dlrt-infer starts an external model command once per worker and job and
keeps it running; the command speaks the protocol of
docs/inference-models.md on stdin/stdout:

  stdout  "READY <name>\n" once loaded
  stdin   "BATCH <task_id> <n> <bytes_per_query>\n" + n * bytes_per_query bytes
  stdout  "<query_index> <prediction> <score>\n" per query, then "END <task_id>\n"
  stdin closed -> exit 0

This one classifies 28x28 Fashion-MNIST images (784 uint8 bytes per query).
With --weights it loads a .dlrtw file written by dlrt-train (lenet5 or
deepcnn) into the same network in PyTorch, so its answers match the
built-in C model's; without, it runs an untrained LeNet-5 (for protocol
tests only). Usage in a job:

  dlrt-infer submit --model 'ext:/usr/bin/python3 .../torch_model.py \
      --weights $DLRT_MODEL_DIR/lenet5.dlrtw' --inputs ...
"""
import argparse
import struct
import sys
import zlib

import torch
from torch import nn

MAGIC = b"DLRTW\r\n\x1a"
MEAN, STD = 0.2860, 0.3530  # dlrt_model_normalize_u8
LINE_MAX = 4096


def lenet5():
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10))


def deepcnn():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Flatten(),
        nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


KINDS = {1: ("lenet5", lenet5), 2: ("deepcnn", deepcnn)}


def read_dlrtw(path):
    """Returns (name, network) from a .dlrtw file, checked like the C loader."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 44 or data[:8] != MAGIC:
        sys.exit(f"{path}: not a dlrt weights file (bad magic)")
    version, kind, ntensors = struct.unpack_from("<III", data, 8)
    if version != 1 or kind not in KINDS:
        sys.exit(f"{path}: unsupported version {version} or kind {kind}")
    (crc,) = struct.unpack_from("<I", data, len(data) - 4)
    if zlib.crc32(data[:-4]) != crc:
        sys.exit(f"{path}: CRC-32 mismatch, the file is corrupt")
    name, build = KINDS[kind]
    net = build()
    params = list(net.parameters())
    if ntensors != len(params):
        sys.exit(f"{path}: {ntensors} tensors, {name} has {len(params)}")
    off = 40
    with torch.no_grad():
        for p in params:
            (ndim,) = struct.unpack_from("<I", data, off)
            dims = struct.unpack_from(f"<{ndim}I", data, off + 4)
            off += 4 + 4 * ndim
            if tuple(dims) != tuple(p.shape):
                sys.exit(f"{path}: tensor shape {dims}, expected {tuple(p.shape)}")
            n = p.numel()
            vals = torch.frombuffer(bytearray(data[off:off + 4 * n]),
                                    dtype=torch.float32)
            p.copy_(vals.view(p.shape))
            off += 4 * n
    return name, net.eval()


def read_exact(f, n):
    chunks, left = [], n
    while left:
        b = f.read(left)
        if not b:
            return None
        chunks.append(b)
        left -= len(b)
    return b"".join(chunks)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--weights", help=".dlrtw file from dlrt-train")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads (default 1: one worker, one core)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.weights:
        name, net = read_dlrtw(args.weights)
    else:
        print("torch_model: no --weights, running an untrained LeNet-5",
              file=sys.stderr)
        torch.manual_seed(0)
        name, net = "lenet5-untrained", lenet5().eval()
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    out.write(f"READY torch-{name}\n".encode())
    out.flush()
    while True:
        line = inp.readline(LINE_MAX + 1)
        if not line:
            return 0  # stdin closed: the job is done
        f = line.split()
        if len(f) != 4 or f[0] != b"BATCH" or not line.endswith(b"\n"):
            out.write(b"ERROR malformed BATCH header\n")
            out.flush()
            return 1
        task, n, bpq = int(f[1]), int(f[2]), int(f[3])
        if bpq != 28 * 28 or n < 1:
            out.write(f"ERROR expected 784 bytes per query (28x28 images), "
                      f"got {bpq}\n".encode())
            out.flush()
            return 1
        data = read_exact(inp, n * bpq)
        if data is None:
            return 1  # the worker went away mid-batch
        x = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        x = (x.float().view(n, 1, 28, 28) / 255.0 - MEAN) / STD
        with torch.no_grad():
            score, pred = torch.softmax(net(x), dim=1).max(dim=1)
        res = "".join(f"{i} {int(pred[i])} {float(score[i]):.6f}\n"
                      for i in range(n))
        out.write((res + f"END {task}\n").encode())
        out.flush()


if __name__ == "__main__":
    sys.exit(main())
