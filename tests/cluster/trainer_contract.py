#!/usr/bin/python3
"""trainer_contract.py TRAINER [OPTIONS]: in one task of a step, find the world the
way DeepSpeed, Hugging Face Accelerate or Lightning does on Slurm, join it with
torch.distributed (gloo) as that trainer does, check it, and print one line:

  CONTRACT trainer=T path=P rank=R world=W local_rank=L node_rank=N master=A:P sum=S host=H

None of the three is packaged in Debian, so their world discovery is re-implemented
here step by step from their sources (file, function and commit named at each
mode). A mismatch prints "PROBLEM <what>" and exits 1; an error the trainer itself
would raise prints "TRAINER-ERROR <its message>" and exits 2, before any
init_process_group (as the trainer would stop there).

  deepspeed                 deepspeed.init_distributed() with its defaults
  accelerate [--cpu]        accelerate.PartialState(cpu=...) (Accelerator(cpu=...) or
                            ACCELERATE_USE_CPU=1 in the environment)
  lightning --devices D --num-nodes N
                            Trainer/Fabric(devices=D, num_nodes=N, strategy="ddp")
"""
import argparse
import datetime
import os
import re
import socket
import sys

import torch
import torch.distributed as dist

TIMEOUT = datetime.timedelta(seconds=120)


def problem(msg):
    print(f"PROBLEM {msg}", flush=True)
    sys.exit(1)


def trainer_error(msg):
    print(f"TRAINER-ERROR {msg}", flush=True)
    sys.exit(2)


def visible_gpus():
    """How many GPUs CUDA would show this process (None: no CUDA_VISIBLE_DEVICES)."""
    v = os.environ.get("CUDA_VISIBLE_DEVICES")
    return None if v is None else len([d for d in v.split(",") if d != ""])


# ---- DeepSpeed -------------------------------------------------------------------
# deepspeedai/DeepSpeed @ edaa7221267243c7be7fb49c5d5f5c4fb97b4641
#  deepspeed/comm/comm.py, init_distributed(dist_backend=None, auto_mpi_discovery=True,
#    distributed_port=TORCH_DISTRIBUTED_DEFAULT_PORT (29500), init_method=None, rank=-1,
#    world_size=-1): required_env = ["RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
#    "LOCAL_RANK"]; when any is missing it tries, in order, in_aml() and not in_dlts()
#    (AZUREML_EXPERIMENT_ID, DLTS_JOB_ID) -> patch_aml_env_for_torch_nccl_backend,
#    in_aws_sm() (SM_TRAINING_ENV) -> patch_aws_sm_env_for_torch_nccl_backend, else
#    mpi_discovery() (mpi4py; MASTER_ADDR from `hostname -I` of rank 0, port 29500).
#    Then TorchBackend(dist_backend, timeout, init_method, rank, world_size).
#  deepspeed/comm/torch.py, TorchBackend.init_process_group:
#    torch.distributed.init_process_group(backend, timeout=, init_method=None, rank=-1,
#    world_size=-1) (env://), with device_id=cuda:LOCAL_RANK on CUDA (torch >= 2.3).
#  deepspeed/runtime/engine.py, _set_distributed_vars: set_device(LOCAL_RANK).
def deepspeed(_args):
    required_env = ["RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"]
    missing = [v for v in required_env if v not in os.environ]
    if missing:
        if "AZUREML_EXPERIMENT_ID" in os.environ and "DLTS_JOB_ID" not in os.environ:
            path = "patch_aml_env"
        elif "SM_TRAINING_ENV" in os.environ:
            path = "patch_aws_sm_env"
        else:
            path = "mpi_discovery"
        problem(f"{' '.join(missing)} unset: init_distributed would take {path} "
                "(mpi4py, rank 0's `hostname -I`, port 29500)")
    gpus = visible_gpus()
    local_rank = int(os.environ["LOCAL_RANK"])
    if gpus is not None and local_rank >= gpus:
        problem(f"set_device(LOCAL_RANK={local_rank}) but CUDA_VISIBLE_DEVICES names {gpus} "
                "GPU(s): DeepSpeed needs every GPU of the node visible (--dl-gpu-bind=none)")
    dist.init_process_group("gloo", timeout=TIMEOUT, init_method=None, rank=-1, world_size=-1)
    return "env", dist.get_rank(), dist.get_world_size(), local_rank, int(os.environ.get("GROUP_RANK", -1))


# ---- Accelerate ------------------------------------------------------------------
# huggingface/accelerate @ 16cb6eb80dd9aa8b4df1a63ef57863e455d53b83
#  src/accelerate/state.py, PartialState._prepare_backend: LOCAL_RANK != -1 and not cpu
#    and CUDA available -> MULTI_GPU ("nccl"); else, only with cpu, LOCAL_RANK != -1 or
#    get_int_from_env(["PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE",
#    "WORLD_SIZE"], 1) > 1 -> MULTI_CPU, backend "mpi" if
#    torch.distributed.is_mpi_available() and the backend asked for is None or "mpi"
#    (PartialState(backend=...), Accelerator's InitProcessGroupKwargs(backend=...)) else
#    that backend or "gloo"; otherwise NO (one process).
#  PartialState.__init__, MULTI_CPU: get_cpu_distributed_information()
#    (src/accelerate/utils/environment.py: rank from RANK, PMI_RANK, OMPI_COMM_WORLD_RANK,
#    MV2_COMM_WORLD_RANK; world size WORLD_SIZE, PMI_SIZE, ...; local rank LOCAL_RANK,
#    MPI_LOCALRANKID, ...; local world size LOCAL_WORLD_SIZE, MPI_LOCALNRANKS, ...; each
#    the first value >= 0, see get_int_from_env), written back to RANK, WORLD_SIZE,
#    LOCAL_RANK, LOCAL_WORLD_SIZE; MASTER_PORT = 29500 if unset; multi-node without
#    MASTER_ADDR raises ValueError; init_process_group(backend, rank=, world_size=).
#  MULTI_GPU: init_process_group(backend="nccl") (env://); set_device: cuda index
#    local_process_index % device_count(), so one visible GPU per task works.
#  AcceleratorState.__init__: ACCELERATE_USE_CPU in the environment means cpu=True.
def get_int_from_env(env_keys, default):
    for e in env_keys:
        val = int(os.environ.get(e, -1))
        if val >= 0:
            return val
    return default


def accelerate(args):
    cpu = args.cpu or os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true", "yes")
    cuda = torch.cuda.is_available()
    if int(os.environ.get("LOCAL_RANK", -1)) != -1 and not cpu and cuda:
        kind, backend = "MULTI_GPU", "nccl"
    elif cpu and (int(os.environ.get("LOCAL_RANK", -1)) != -1 or get_int_from_env(
            ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "WORLD_SIZE"], 1) > 1):
        kind = "MULTI_CPU"
        backend = "mpi" if args.backend in (None, "mpi") and dist.is_mpi_available() else (args.backend or "gloo")
        if backend == "mpi":
            problem("PartialState would take the mpi backend (this torch is built with MPI), whose "
                    "world comes from an MPI launch, not from dlrt: pass "
                    "Accelerator(kwargs_handlers=[InitProcessGroupKwargs(backend=\"gloo\")])")
    else:
        problem("PartialState would take DistributedType.NO (every task trains alone): on nodes "
                "without GPUs pass Accelerator(cpu=True) or export ACCELERATE_USE_CPU=1")
    if kind == "MULTI_GPU":
        dist.init_process_group(backend, timeout=TIMEOUT)
        return kind, dist.get_rank(), dist.get_world_size(), int(os.environ["LOCAL_RANK"]), -1
    rank = get_int_from_env(["RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK"], 0)
    world = get_int_from_env(["WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE"], 1)
    local = get_int_from_env(["LOCAL_RANK", "MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK",
                              "MV2_COMM_WORLD_LOCAL_RANK"], 0)
    local_world = get_int_from_env(["LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                    "MV2_COMM_WORLD_LOCAL_SIZE"], 1)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(local),
                      LOCAL_WORLD_SIZE=str(local_world))
    if not os.environ.get("MASTER_PORT"):
        os.environ["MASTER_PORT"] = "29500"
    if not os.environ.get("MASTER_ADDR") and local_world != world and backend != "mpi":
        trainer_error("Tried to launch on distributed with multinode, but `MASTER_ADDR` env was "
                      "not set, please try exporting rank 0's hostname as `MASTER_ADDR`")
    dist.init_process_group(backend, timeout=TIMEOUT, rank=rank, world_size=world)
    return kind, dist.get_rank(), dist.get_world_size(), local, -1


# ---- Lightning -------------------------------------------------------------------
# Lightning-AI/pytorch-lightning @ 7f0c3436cd3f6ad3753125672024fc415cbcb414
#  src/lightning/fabric/connector.py (and pytorch/trainer/connectors/
#    accelerator_connector.py), _choose_and_init_cluster_environment: the first of
#    TorchElasticEnvironment, SLURMEnvironment, LSFEnvironment, MPIEnvironment whose
#    detect() is true, else LightningEnvironment.
#  plugins/environments/torchelastic.py: detect() = torch.distributed.
#    is_torchelastic_launched() (TORCHELASTIC_RUN_ID set); world WORLD_SIZE, rank RANK,
#    local LOCAL_RANK, node GROUP_RANK, MASTER_ADDR/MASTER_PORT; validate_settings:
#    devices * num_nodes must equal WORLD_SIZE.
#  plugins/environments/slurm.py, SLURMEnvironment: detect() = "SLURM_NTASKS" set and job
#    name not "bash"/"interactive"; __init__ -> _validate_srun_variables (SLURM_NTASKS > 1
#    without SLURM_NTASKS_PER_NODE raises RuntimeError); world SLURM_NTASKS, rank
#    SLURM_PROCID, local SLURM_LOCALID, node SLURM_NODEID; main_address MASTER_ADDR else
#    the first host of SLURM_NODELIST; main_port MASTER_PORT else 15000 + the job id's
#    last 4 digits; validate_settings: SLURM_NTASKS_PER_NODE == devices and
#    SLURM_NNODES == num_nodes, else ValueError.
#  utilities/distributed.py, _init_dist_connection: MASTER_ADDR/MASTER_PORT from the
#    environment object, init_process_group(backend, rank=global_rank, world_size=).
#  The CUDA accelerator uses devices [0, devices) and rank local_rank's: it needs
#    `devices` GPUs visible to every task.
def lightning(args):
    job_name = os.environ.get("SLURM_JOB_NAME")
    if os.environ.get("TORCHELASTIC_RUN_ID") is not None:
        path = "TorchElasticEnvironment"
        world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
        local, node = int(os.environ["LOCAL_RANK"]), int(os.environ["GROUP_RANK"])
        if args.devices * args.num_nodes != world:
            trainer_error(f"You set `devices={args.devices}` and `num_nodes={args.num_nodes}` in "
                          f"Lightning, but the product ({args.devices} * {args.num_nodes}) does not "
                          f"match the world size ({world}).")
        addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    elif "SLURM_NTASKS" in os.environ and job_name not in ("bash", "interactive"):
        path = "SLURMEnvironment"
        ntasks = int(os.environ.get("SLURM_NTASKS", "1"))
        if ntasks > 1 and "SLURM_NTASKS_PER_NODE" not in os.environ:
            trainer_error(f"You set `--ntasks={ntasks}` in your SLURM bash script, but this variable "
                          f"is not supported. HINT: Use `--ntasks-per-node={ntasks}` instead.")
        per_node = os.environ.get("SLURM_NTASKS_PER_NODE")
        if per_node is not None and int(per_node) != args.devices:
            trainer_error(f"You set `devices={args.devices}` in Lightning, but the number of tasks "
                          f"per node configured in SLURM `--ntasks-per-node={per_node}` does not "
                          f"match. HINT: Set `devices={per_node}`.")
        nnodes = os.environ.get("SLURM_NNODES")
        if nnodes is not None and int(nnodes) != args.num_nodes:
            trainer_error(f"You set `num_nodes={args.num_nodes}` in Lightning, but the number of "
                          f"nodes configured in SLURM `--nodes={nnodes}` does not match. HINT: Set "
                          f"`num_nodes={nnodes}`.")
        world, rank = ntasks, int(os.environ["SLURM_PROCID"])
        local, node = int(os.environ["SLURM_LOCALID"]), int(os.environ["SLURM_NODEID"])
        addr = os.environ.get("MASTER_ADDR")
        if addr is None:
            nodes = os.environ.get("SLURM_NODELIST", "127.0.0.1")
            nodes = re.sub(r"\[(.*?)[,-].*\]", "\\1", nodes)
            nodes = re.sub(r"\[(.*?)\]", "\\1", nodes)
            addr = nodes.split(" ")[0].split(",")[0]
        if "MASTER_PORT" in os.environ:
            port = int(os.environ["MASTER_PORT"])
        else:
            job_id = os.environ.get("SLURM_JOB_ID")
            port = int(job_id[-4:]) + 15000 if job_id is not None else 12910
    else:
        problem("no SLURM_NTASKS and no TORCHELASTIC_RUN_ID: Lightning would take "
                "LightningEnvironment and start its own processes")
    gpus = visible_gpus()
    if gpus is not None and gpus < args.devices:
        problem(f"devices={args.devices} but CUDA_VISIBLE_DEVICES names {gpus} GPU(s): Lightning "
                "needs them all visible to every task (--dl-gpu-bind=none)")
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = addr, str(port)
    dist.init_process_group("gloo", timeout=TIMEOUT, rank=rank, world_size=world)
    return path, rank, world, local, node


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trainer", choices=["deepspeed", "accelerate", "lightning"])
    ap.add_argument("--cpu", action="store_true", help="accelerate: PartialState(cpu=True)")
    ap.add_argument("--backend", help="accelerate: PartialState(backend=)")
    ap.add_argument("--devices", type=int, default=1, help="lightning: devices=")
    ap.add_argument("--num-nodes", type=int, default=1, help="lightning: num_nodes=")
    args = ap.parse_args()
    path, rank, world, local, node = globals()[args.trainer](args)

    # The world the trainer formed must be Slurm's: every task once, at its own rank.
    if dist.get_rank() != rank or dist.get_world_size() != world:
        problem(f"torch says rank {dist.get_rank()} of {dist.get_world_size()}, "
                f"the trainer {rank} of {world}")
    if os.environ.get("TORCHELASTIC_RUN_ID") is not None:
        # A torchrun worker: Slurm's task is its agent; torchrun numbers the workers.
        want = (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"]))
    else:
        want = (int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"]),
                int(os.environ.get("SLURM_LOCALID", -1)))
    if (rank, world, local) != want:
        problem(f"rank {rank} of {world}, local {local}; the launcher's task is {want[0]} of "
                f"{want[1]}, local {want[2]}")
    t = torch.tensor([rank], dtype=torch.int64)
    dist.all_reduce(t)
    hosts = [None] * world
    dist.all_gather_object(hosts, socket.gethostname())
    if len(set(hosts)) != int(os.environ.get("SLURM_STEP_NUM_NODES", os.environ.get("SLURM_NNODES", 1))):
        problem(f"the world spans {sorted(set(hosts))}, not the step's nodes")
    print(f"CONTRACT trainer={args.trainer} path={path} rank={rank} world={world} "
          f"local_rank={local} node_rank={node} "
          f"master={os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')} "
          f"sum={int(t.item())} host={socket.gethostname()}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
