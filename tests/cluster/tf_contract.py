#!/usr/bin/python3
"""tf_contract.py NTASKS < lines: checks every task's TF_CONFIG the way
TensorFlow's MultiWorkerMirroredStrategy reads it.

TensorFlow is not installed on the test cluster, so its steps are
re-implemented here from its source (tensorflow/tensorflow):
  python/distribute/cluster_resolver/tfconfig_cluster_resolver.py:
    _load_tf_config: json.loads(os.environ.get('TF_CONFIG', '{}'))
    cluster_spec(): ClusterSpec({}) without 'cluster', else ClusterSpec(tf_config['cluster'])
    task_type: str(task['type']) if 'type' in task else None
    task_id: int(task['index']) if 'index' in task else None
    rpc_layer: tf_config.get('rpc_layer') (None: the strategy uses grpc)
  python/training/server_lib.py, ClusterSpec.__init__: a job's list becomes
    {i: address for i, address in enumerate(list)}; a dict {int(i): address};
    anything else is a TypeError.
  python/distribute/multi_worker_util.py: _validate_cluster_spec (type in
    chief/worker/evaluator/ps, present in the cluster, at most one chief and
    one evaluator, task_id < number of tasks of the type), is_chief (no
    "chief" job: worker 0), worker_count (chief + workers), id_in_cluster.
  core/distributed_runtime/rpc/grpc_server_lib.cc, GrpcServer::Init: the
    task's server listens on "0.0.0.0:" + the port after the last ':' of its
    own entry.
Input lines are "CONTRACT <json>" from contract_task.py. Prints problems,
one per line, then a summary; exits 1 on any problem.
"""
import ipaddress
import json
import sys
from collections import defaultdict


def cluster_spec(tf_config):
    if "cluster" not in tf_config:
        return {}
    spec = {}
    for job, tasks in tf_config["cluster"].items():
        if isinstance(tasks, (list, tuple)):
            spec[job] = {i: t for i, t in enumerate(tasks)}
        elif isinstance(tasks, dict):
            spec[job] = {int(i): t for i, t in tasks.items()}
        else:
            raise TypeError(f"The tasks for job {job!r} must be a list or a dictionary")
    return spec


def as_dict(spec):
    out = {}
    for job, tasks in spec.items():
        idx = sorted(tasks)
        out[job] = [tasks[i] for i in idx] if idx and max(idx) + 1 == len(idx) else tasks
    return out


def validate(spec, task_type, task_id):
    spec = as_dict(spec)
    if task_type not in ("chief", "worker", "evaluator", "ps"):
        raise ValueError(f"Unrecognized task_type: {task_type!r}")
    if task_type and task_type not in spec:
        raise ValueError(f"`task_type` {task_type!r} not found in cluster_spec.")
    if len(spec.get("chief", [])) > 1:
        raise ValueError("There must be at most one 'chief' job.")
    if len(spec.get("evaluator", [])) > 1:
        raise ValueError("There must be at most one 'evaluator' job.")
    if task_id >= len(spec[task_type]):
        raise ValueError(f"The `task_id` {task_id} exceeds the maximum id of {task_type}.")


def resolve(env):
    """What the strategy learns: (spec, type, id, is_chief, worker_count, own address)."""
    tf_config = json.loads(env.get("TF_CONFIG", "{}"))
    task = tf_config["task"] if "task" in tf_config else {}
    task_type = str(task["type"]) if "type" in task else None
    task_id = int(task["index"]) if "index" in task else None
    spec = cluster_spec(tf_config)
    validate(spec, task_type, task_id)
    d = as_dict(spec)
    chief = task_type in ("chief", "evaluator") or (
        "chief" not in d and task_type == "worker" and task_id == 0)
    count = len(d.get("chief", [])) + len(d.get("worker", []))
    if tf_config.get("rpc_layer") not in (None, "grpc"):
        raise ValueError(f"rpc_layer {tf_config['rpc_layer']!r}")
    return d, task_type, task_id, chief, count, spec[task_type][task_id]


def main():
    ntasks = int(sys.argv[1])
    tasks = [json.loads(l.split(" ", 1)[1]) for l in sys.stdin if l.startswith("CONTRACT ")]
    bad = []
    if len(tasks) != ntasks:
        bad.append(f"{len(tasks)} of {ntasks} tasks printed their environment")
    specs, by_node = set(), defaultdict(list)
    for t in tasks:
        env = t["env"]
        procid = int(env["SLURM_PROCID"])
        try:
            d, ttype, tid, chief, count, me = resolve(env)
        except (ValueError, TypeError, KeyError) as e:
            bad.append(f"task {procid}: TF_CONFIG rejected: {e!r}")
            continue
        specs.add(json.dumps(d, sort_keys=True))
        if (ttype, tid) != ("worker", procid):
            bad.append(f"task {procid}: type/index {ttype}/{tid}, want worker/{procid}")
        if chief != (procid == 0):
            bad.append(f"task {procid}: is_chief {chief}")
        if count != ntasks:
            bad.append(f"task {procid}: worker_count {count}, want {ntasks}")
        host, _, port = me.rpartition(":")
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            bad.append(f"task {procid}: address '{host}' is not numeric IPv4")
        if host != env.get("DLRT_NODE_ADDR"):
            bad.append(f"task {procid}: {host} is not its node's address {env.get('DLRT_NODE_ADDR')}")
        by_node[host].append(int(port))
        if t["bound"] != me or t["bind"] != "ok":
            bad.append(f"task {procid} on {t['host']}: cannot bind 0.0.0.0:{port}: {t['bind']}")
    if len(specs) > 1:
        bad.append(f"tasks disagree on the cluster: {len(specs)} different specs")
    for host, ports in by_node.items():
        if len(set(ports)) != len(ports):
            bad.append(f"node {host}: ports {sorted(ports)} are not distinct")
    print(*bad, sep="\n") if bad else None
    print(f"nodes={len(by_node)} " + " ".join(
        f"{h}:{','.join(map(str, sorted(p)))}" for h, p in sorted(by_node.items())))
    return 1 if bad else 0


sys.exit(main())
