#!/usr/bin/python3
"""check_roles.py RUNTIME [SERVERS] < lines

Each input line is one task's environment as "K=V K=V ..." (printed inside a real
Slurm step). Checks dlrt's variables against what Slurm itself says about the
task (SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID, SLURMD_NODENAME), recomputing
every expected value independently of dlrt's C code. Prints problems, one per
line; exits 1 if there are any.
"""
import sys
from collections import Counter, defaultdict

runtime = sys.argv[1]
servers = int(sys.argv[2]) if len(sys.argv) > 2 else None
tasks = []
for line in sys.stdin:
    kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
    if "SLURM_PROCID" in kv:
        tasks.append(kv)
problems = []


def expect(cond, msg):
    if not cond:
        problems.append(msg)


n = len(tasks)
expect(n > 0, "no task printed its environment")
per_node = Counter(t["SLURM_NODEID"] for t in tasks)
nodes = sorted(per_node, key=int)
# Horovod's get_host_assignments: cross rank = index among nodes (in node order) that
# have a task of this local rank.
has_local = defaultdict(list)
for node in nodes:
    for lr in range(per_node[node]):
        has_local[lr].append(node)

for t in tasks:
    r, lr, node = int(t["SLURM_PROCID"]), int(t["SLURM_LOCALID"]), t["SLURM_NODEID"]
    tag = f"task {r}"
    expect(t.get("DLRT_RUNTIME") == runtime, f"{tag}: DLRT_RUNTIME={t.get('DLRT_RUNTIME')}")
    expect(t.get("DLRT_RANK") == str(r), f"{tag}: DLRT_RANK={t.get('DLRT_RANK')}")
    expect(t.get("DLRT_WORLD_SIZE") == str(n), f"{tag}: DLRT_WORLD_SIZE")
    expect(t.get("DLRT_LOCAL_RANK") == str(lr), f"{tag}: DLRT_LOCAL_RANK={t.get('DLRT_LOCAL_RANK')} != SLURM_LOCALID {lr}")
    expect(t.get("DLRT_LOCAL_SIZE") == str(per_node[node]), f"{tag}: DLRT_LOCAL_SIZE")
    expect(t.get("DLRT_NODE_RANK") == node, f"{tag}: DLRT_NODE_RANK={t.get('DLRT_NODE_RANK')} != SLURM_NODEID {node}")
    expect(t.get("DLRT_NODE_NAME") == t["SLURMD_NODENAME"] == t.get("HOST"), f"{tag}: DLRT_NODE_NAME")
    expect(t.get("DLRT_NUM_NODES") == str(len(nodes)), f"{tag}: DLRT_NUM_NODES")
    cr, cs = has_local[lr].index(node), len(has_local[lr])
    expect(t.get("DLRT_CROSS_RANK") == str(cr), f"{tag}: DLRT_CROSS_RANK={t.get('DLRT_CROSS_RANK')} want {cr}")
    expect(t.get("DLRT_CROSS_SIZE") == str(cs), f"{tag}: DLRT_CROSS_SIZE={t.get('DLRT_CROSS_SIZE')} want {cs}")

roles = Counter(t.get("DLRT_ROLE") for t in tasks)
by_role = defaultdict(list)
for t in sorted(tasks, key=lambda t: int(t["SLURM_PROCID"])):
    by_role[t.get("DLRT_ROLE")].append(t)
for role, ts in by_role.items():
    for i, t in enumerate(ts):
        expect(t.get("DLRT_ROLE_INDEX") == str(i), f"task {t['SLURM_PROCID']}: {role} index {t.get('DLRT_ROLE_INDEX')} want {i}")
        expect(t.get("DLRT_ROLE_SIZE") == str(len(ts)), f"task {t['SLURM_PROCID']}: DLRT_ROLE_SIZE")

if runtime == "mxnet":
    s = servers if servers else min(len(nodes), n - 2)
    expect(roles["scheduler"] == 1 and by_role["scheduler"][0]["SLURM_PROCID"] == "0", "scheduler is task 0 alone")
    expect(roles["server"] == s, f"{roles['server']} servers, want {s}")
    expect(roles["worker"] == n - 1 - s, f"{roles['worker']} workers, want {n - 1 - s}")
    # Spread: no node has two servers while a node with a free non-scheduler task has none.
    srv_nodes = Counter(t["SLURM_NODEID"] for t in by_role["server"])
    free = {nd for nd in nodes if per_node[nd] - (1 if nd == tasks[0]["SLURM_NODEID"] and False else 0) > 0}
    cap = {nd: per_node[nd] - sum(1 for t in by_role["scheduler"] if t["SLURM_NODEID"] == nd) for nd in nodes}
    if srv_nodes and max(srv_nodes.values()) > 1:
        expect(all(srv_nodes[nd] >= 1 for nd in nodes if cap[nd] > 0), f"servers doubled up before spreading: {dict(srv_nodes)}")
    for t in tasks:
        expect(t.get("DMLC_ROLE") == t.get("DLRT_ROLE"), f"task {t['SLURM_PROCID']}: DMLC_ROLE")
        expect(t.get("DMLC_NUM_SERVER") == str(s), "DMLC_NUM_SERVER")
        expect(t.get("DMLC_NUM_WORKER") == str(n - 1 - s), "DMLC_NUM_WORKER")
        expect("DMLC_RANK" not in t, "dlrt must not set DMLC_RANK")
elif runtime == "horovod":
    for t in tasks:
        for a, b in [("RANK", "RANK"), ("SIZE", "WORLD_SIZE"), ("LOCAL_RANK", "LOCAL_RANK"),
                     ("LOCAL_SIZE", "LOCAL_SIZE"), ("CROSS_RANK", "CROSS_RANK"), ("CROSS_SIZE", "CROSS_SIZE")]:
            expect(t.get("HOROVOD_" + a) == t.get("DLRT_" + b), f"task {t['SLURM_PROCID']}: HOROVOD_{a}")
        expect(t.get("HOROVOD_HOSTNAME") == t["SLURMD_NODENAME"], "HOROVOD_HOSTNAME is the node name")
    # Gloo mode (the default): every task reaches the driver (on task 0's node)
    # through its own node's relay on loopback: one port per node.
    if any("HOROVOD_CONTROLLER" in t for t in tasks):
        expect(all(t.get("HOROVOD_GLOO_RENDEZVOUS_ADDR") == "127.0.0.1" for t in tasks),
               "every task reaches the driver through its node's relay on 127.0.0.1")
        ports = {}
        for t in tasks:
            ports.setdefault(t["SLURM_NODEID"], set()).add(t.get("HOROVOD_GLOO_RENDEZVOUS_PORT"))
        expect(all(len(p) == 1 and None not in p for p in ports.values()),
               f"one relay port per node: {ports}")
        t0 = next(t for t in tasks if t["SLURM_PROCID"] == "0")
        expect(all(t.get("DLRT_NODE_ADDR") != t0.get("DLRT_NODE_ADDR") or t["SLURM_NODEID"] == t0["SLURM_NODEID"]
                   for t in tasks), "node addresses distinct across nodes")
        for t in tasks:
            for k, v in [("HOROVOD_CONTROLLER", "gloo"), ("HOROVOD_CPU_OPERATIONS", "gloo")]:
                expect(t.get(k) == v, f"task {t['SLURM_PROCID']}: {k}={t.get(k)}")
            expect(t.get("HOROVOD_GLOO_IFACE"), f"task {t['SLURM_PROCID']}: HOROVOD_GLOO_IFACE")
            if "NCCL_SOCKET_IFNAME" in t:  # printed by some tests only
                expect(t["NCCL_SOCKET_IFNAME"] == t["HOROVOD_GLOO_IFACE"],
                       f"task {t['SLURM_PROCID']}: NCCL_SOCKET_IFNAME")
            expect(int(t.get("HOROVOD_GLOO_TIMEOUT_SECONDS", "0")) > 0, "HOROVOD_GLOO_TIMEOUT_SECONDS")
elif runtime == "torch":
    for t in tasks:
        expect(t.get("RANK") == t["SLURM_PROCID"], "RANK")
        expect(t.get("WORLD_SIZE") == str(n), "WORLD_SIZE")
        expect(t.get("LOCAL_RANK") == t["SLURM_LOCALID"], "LOCAL_RANK")
        expect(t.get("LOCAL_WORLD_SIZE") == str(per_node[t["SLURM_NODEID"]]), "LOCAL_WORLD_SIZE")
        expect(t.get("GROUP_RANK") == t["SLURM_NODEID"], "GROUP_RANK")
        expect(t.get("GROUP_WORLD_SIZE") == str(len(nodes)), "GROUP_WORLD_SIZE")
        expect(t.get("ROLE_RANK") == t["SLURM_PROCID"] and t.get("ROLE_WORLD_SIZE") == str(n), "ROLE_*")
        # dlrt's store through the node's relay: loopback, one port per node.
        expect(t.get("MASTER_ADDR") == "127.0.0.1", f"MASTER_ADDR={t.get('MASTER_ADDR')} (the node relay)")
        expect(t.get("TORCHELASTIC_USE_AGENT_STORE") == "True", "TORCHELASTIC_USE_AGENT_STORE")
        expect((t.get("TORCHELASTIC_RESTART_COUNT") or "").isdigit(), "TORCHELASTIC_RESTART_COUNT")
    ports = {}
    for t in tasks:
        ports.setdefault(t["SLURM_NODEID"], set()).add(t.get("MASTER_PORT"))
    expect(all(len(v) == 1 for v in ports.values()), f"one MASTER_PORT per node: {ports}")
elif runtime == "torchrun":
    # One agent per node; torchrun's own arguments, no worker variables.
    expect(len(nodes) == n, f"one task per node: {n} tasks on {len(nodes)} nodes")
    job, step = tasks[0]["SLURM_JOB_ID"], tasks[0].get("SLURM_STEP_ID")
    for t in tasks:
        tag = f"task {t['SLURM_PROCID']}"
        expect(t.get("PET_NNODES") == str(len(nodes)), f"{tag}: PET_NNODES={t.get('PET_NNODES')}")
        expect(t.get("PET_NPROC_PER_NODE") == "1", f"{tag}: PET_NPROC_PER_NODE")
        expect(t.get("PET_RDZV_BACKEND") == "c10d", f"{tag}: PET_RDZV_BACKEND")
        expect((t.get("PET_RDZV_ENDPOINT") or "").startswith("127.0.0.1:"),
               f"{tag}: PET_RDZV_ENDPOINT={t.get('PET_RDZV_ENDPOINT')} (the node relay)")
        expect(t.get("PET_RDZV_CONF") == "is_host=0", f"{tag}: PET_RDZV_CONF")
        expect(t.get("PET_RDZV_ID") == f"dlrt-{job}.{step}.0", f"{tag}: PET_RDZV_ID={t.get('PET_RDZV_ID')}")
        expect(t.get("PET_MAX_RESTARTS") == "0", f"{tag}: PET_MAX_RESTARTS")
        expect(t.get("TORCH_DISABLE_SHARE_RDZV_TCP_STORE") == "1",
               f"{tag}: TORCH_DISABLE_SHARE_RDZV_TCP_STORE={t.get('TORCH_DISABLE_SHARE_RDZV_TCP_STORE')}")
        expect("RANK" not in t and "MASTER_ADDR" not in t, f"{tag}: worker variables set for an agent")
elif runtime == "caffe2":
    expect(roles["master"] == 1 and by_role["master"][0]["SLURM_PROCID"] == "0", "task 0 is the master")
    run_ids = {t.get("RUN_ID") for t in tasks}
    expect(len(run_ids) == 1 and tasks[0]["SLURM_JOB_ID"] in next(iter(run_ids)), f"one RUN_ID with the job id: {run_ids}")
    for t in tasks:
        expect(t.get("SHARD_ID") == t["SLURM_PROCID"], "SHARD_ID")
        expect(t.get("NUM_SHARDS") == str(n), "NUM_SHARDS")
        expect('"task":{"type":"%s"' % t.get("DLRT_ROLE") in t.get("CAFFE2_CONFIG", ""), "CAFFE2_CONFIG task type")

for p in problems[:20]:
    print(p)
sys.exit(1 if problems else 0)
