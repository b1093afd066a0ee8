#!/usr/bin/python3
"""jax_contract.py NTASKS < lines: checks what jax.distributed.initialize()
with no arguments would use in every task of a step.

JAX is not installed on the test cluster, so its lookup is re-implemented
here step by step from its source (jax-ml/jax):
  jax/_src/distributed.py, State.initialize:
    coordinator_address = coordinator_address or os.environ.get('JAX_COORDINATOR_ADDRESS')
    if local_device_ids is None and (env_ids := os.environ.get('JAX_LOCAL_DEVICE_IDS')):
        local_device_ids = list(map(int, env_ids.split(",")))   (newer releases only)
    then, when any of the four is still None,
    clusters.ClusterEnv.auto_detect_unset_distributed_params(...)
  jax/_src/clusters/cluster.py, auto_detect_unset_distributed_params: the
    first class in _cluster_types (declaration order in
    jax/_src/clusters/__init__.py: OmpiCluster, SlurmCluster, Mpi4pyCluster
    (opt-in only), the Cloud TPU clusters) whose is_env_present() is true
    fills only the parameters that are still None; local_device_ids becomes
    [env.get_local_process_id()] when that is not None (never on a TPU VM).
  jax/_src/clusters/ompi_cluster.py: present iff OMPI_MCA_orte_hnp_uri is set.
  jax/_src/clusters/slurm_cluster.py: present iff SLURM_JOB_ID is set;
    count SLURM_NTASKS, id SLURM_PROCID, local id SLURM_LOCALID; coordinator
    the first host of SLURM_STEP_NODELIST and port
    SLURM_JOB_ID % 2**12 + 65535 - 2**12 + 1.
Each input line is "CONTRACT <json>" from contract_task.py. Prints problems,
one per line, then a summary line "coordinator=... devices=..."; exits 1 on
any problem.
"""
import ipaddress
import json
import sys


def slurm_coordinator(env):
    port = int(env["SLURM_JOB_ID"]) % 2**12 + (65535 - 2**12 + 1)
    nl = env["SLURM_STEP_NODELIST"]
    ind = next((i for i, ch in enumerate(nl) if ch in {",", "["}), len(nl))
    if ind == len(nl) or nl[ind] == ",":
        return f"{nl[:ind]}:{port}"
    suffix = nl[ind + 1:]
    ind2 = next((i for i, ch in enumerate(suffix) if ch in {",", "-"}), None)
    return f"{nl[:ind]}{suffix[:ind2]}:{port}"


def initialize_no_args(env, reads_local_device_ids=True):
    """(coordinator_address, num_processes, process_id, local_device_ids)"""
    coordinator = env.get("JAX_COORDINATOR_ADDRESS")
    num = pid = ids = None
    if reads_local_device_ids and env.get("JAX_LOCAL_DEVICE_IDS"):
        ids = list(map(int, env["JAX_LOCAL_DEVICE_IDS"].split(",")))
    if None in (coordinator, num, pid, ids):
        if "OMPI_MCA_orte_hnp_uri" in env:
            raise SystemExit("OmpiCluster would be detected first: not an srun step")
        if "SLURM_JOB_ID" in env:
            if coordinator is None:
                coordinator = slurm_coordinator(env)
            num = int(env["SLURM_NTASKS"])
            pid = int(env["SLURM_PROCID"])
            if ids is None:
                ids = [int(env["SLURM_LOCALID"])]
    return coordinator, num, pid, ids


def main():
    ntasks = int(sys.argv[1])
    tasks = [json.loads(l.split(" ", 1)[1]) for l in sys.stdin if l.startswith("CONTRACT ")]
    bad = []
    if len(tasks) != ntasks:
        bad.append(f"{len(tasks)} of {ntasks} tasks printed their environment")
    got = {}
    for t in tasks:
        env = t["env"]
        coord, num, pid, ids = initialize_no_args(env)
        got[pid] = (t, coord, num, ids)
        if num != ntasks:
            bad.append(f"task {env.get('SLURM_PROCID')}: num_processes {num}, want {ntasks}")
        if env.get("JAX_NUM_PROCESSES") != str(num) or env.get("JAX_PROCESS_ID") != str(pid):
            bad.append(f"task {pid}: JAX_NUM_PROCESSES/JAX_PROCESS_ID differ from SlurmCluster's")
        if coord == slurm_coordinator(env):
            bad.append(f"task {pid}: JAX would use SlurmCluster's unchecked {coord}")
        cvd = [c for c in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if c]
        if "JAX_LOCAL_DEVICE_IDS" in env and ids != list(range(len(cvd))):
            bad.append(f"task {pid}: local_device_ids {ids} with CUDA_VISIBLE_DEVICES={cvd}")
    if sorted(got) != list(range(ntasks)):
        bad.append(f"process ids {sorted(got)} are not 0..{ntasks - 1}")
    coords = {c for _, c, _, _ in got.values()}
    if len(coords) != 1:
        bad.append(f"tasks disagree on the coordinator: {sorted(map(str, coords))}")
    t0 = got.get(0, (None,))[0]
    coord = next(iter(coords)) if coords else None
    if t0 and coord:
        host, _, port = coord.rpartition(":")
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            bad.append(f"coordinator host '{host}' is not a numeric IPv4 address")
        if host != t0["env"].get("DLRT_NODE_ADDR"):
            bad.append(f"coordinator {host} is not process 0's node address")
        if t0["bound"] != coord or t0["bind"] != "ok":
            bad.append(f"process 0 could not bind {coord} on {t0['host']}: {t0['bind']}")
    print(*bad, sep="\n") if bad else None
    devs = sorted({",".join(map(str, d or [])) for _, _, _, d in got.values()})
    print(f"coordinator={coord} devices={'|'.join(devs)} host0={t0 and t0['host']}")
    return 1 if bad else 0


sys.exit(main())
