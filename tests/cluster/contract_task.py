#!/usr/bin/python3
"""contract_task.py jax|tensorflow DIR: run as every task of a step (t/38, t/39).

Writes DIR/<task id>, one line "CONTRACT <json>" (a file per task: srun may
split long lines of several tasks into each other): the task's environment that the framework
reads, its node, and whether the task itself could bind, on its own node, the
address the framework would listen on: the JAX coordinator (process 0 only)
or the task's own TF_CONFIG entry. The bind is what the framework's server
does first (JAX's coordination service, TensorFlow's gRPC server); it is
done here, inside the step, before the task exits, so a port that is not
free on the task's node fails the test.
"""
import json
import os
import socket
import sys

KEEP = ("SLURM_", "JAX_", "TF_CONFIG", "CUDA_VISIBLE_DEVICES", "OMPI_", "DLRT_")


def try_bind(hostport, any_address=False):
    host, _, port = hostport.rpartition(":")
    if any_address:
        host = "0.0.0.0"
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((host, int(port)))
        s.listen(1)
        return "ok"
    except (OSError, ValueError) as e:
        return f"{type(e).__name__}: {e}"
    finally:
        s.close()


def main():
    which = sys.argv[1]
    env = {k: v for k, v in os.environ.items() if k.startswith(KEEP)}
    out = {"host": socket.gethostname(), "env": env, "bind": None, "bound": None}
    if which == "jax":
        if env.get("SLURM_PROCID") == "0" and "JAX_COORDINATOR_ADDRESS" in env:
            out["bound"] = env["JAX_COORDINATOR_ADDRESS"]
            out["bind"] = try_bind(out["bound"])
    else:
        try:
            cfg = json.loads(env.get("TF_CONFIG", ""))
            me = cfg["cluster"][cfg["task"]["type"]][cfg["task"]["index"]]
            out["bound"] = me
            # GrpcServer::Init binds "0.0.0.0:" + the port of its own entry.
            out["bind"] = try_bind(me, any_address=True)
        except (ValueError, KeyError, IndexError, TypeError) as e:
            out["bind"] = f"no own address in TF_CONFIG: {e!r}"
    path = os.path.join(sys.argv[2], env.get("SLURM_PROCID", "x"))
    with open(path + ".tmp", "w") as f:
        f.write("CONTRACT " + json.dumps(out, sort_keys=True) + "\n")
    os.rename(path + ".tmp", path)


main()
