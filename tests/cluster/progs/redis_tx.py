#!/usr/bin/python3
"""redis_tx.py - one task of a caffe2 step using redis-py (Debian's python3-redis)
against the job's store at $REDIS_HOST:$REDIS_PORT (the node relay), the way
a job script, a data loader or a monitoring hook would.

Every task of the step:
  - adds 1 to a shared counter 100 times with redis-py's transaction()
    helper (WATCH, GET, MULTI, SET, EXEC, retried on WatchError): with the
    tasks on different nodes racing, the counter must end at exactly
    100 x tasks, and the task reports how many retries it took;
  - runs the default pipeline() (MULTI ... EXEC in one write) and
    pipeline(transaction=False), both with an error inside, and a
    transaction with an unknown command (aborted: nothing written);
  - sets keys with short and long times to live and checks them after the
    short ones have passed.
Prints "ok - DESC" or "not ok - DESC: detail" per check, prefixed with the
rank. Every wait is bounded (60 s for the others to finish counting).
"""
import os
import sys
import time

import redis

rank = int(os.environ["SLURM_PROCID"])
ntasks = int(os.environ["SLURM_NTASKS"])
run = os.environ.get("RUN_ID", "run")
r = redis.Redis(host=os.environ["REDIS_HOST"], port=int(os.environ["REDIS_PORT"]),
                socket_timeout=30)
failed = 0


def check(ok, desc, detail=""):
    global failed
    print("task %d: %s - %s%s" % (rank, "ok" if ok else "not ok", desc,
                                   "" if ok else ": " + str(detail)), flush=True)
    failed += not ok


def key(name):
    return "%s/%s" % (run, name)


# 1. Optimistic locking across nodes.
retries = [0]
counter = key("counter")


def add_one(pipe):
    v = int(pipe.get(counter) or 0)
    pipe.multi()
    pipe.set(counter, v + 1)


for _ in range(100):
    while True:
        try:
            with r.pipeline() as p:
                p.watch(counter)
                add_one(p)
                p.execute()
                break
        except redis.WatchError:
            retries[0] += 1
print("task %d: retries after a WATCH conflict: %d" % (rank, retries[0]), flush=True)
r.incr(key("done"))
deadline = time.monotonic() + 60
while int(r.get(key("done")) or 0) < ntasks and time.monotonic() < deadline:
    time.sleep(0.05)
check(int(r.get(counter)) == 100 * ntasks,
      "%d WATCH/MULTI/EXEC increments from %d tasks on several nodes: none lost" %
      (100 * ntasks, ntasks), r.get(counter))

# 2. Pipelines with an error inside.
mine = lambda n: key("r%d/%s" % (rank, n))  # noqa: E731
r.set(mine("text"), "not a number")
p = r.pipeline()  # transaction=True
p.set(mine("a"), 1).incr(mine("text")).set(mine("b"), 2)
res = p.execute(raise_on_error=False)
check(res[0] is True and isinstance(res[1], redis.ResponseError) and res[2] is True
      and r.mget(mine("a"), mine("b")) == [b"1", b"2"],
      "transaction with a run-time error: it fails alone, the rest is applied", res)
p = r.pipeline(transaction=False)
p.set(mine("c"), 1).incr(mine("text")).set(mine("d"), 2)
res = p.execute(raise_on_error=False)
check(res[0] is True and isinstance(res[1], redis.ResponseError) and res[2] is True,
      "pipeline(transaction=False) with an error", res)
p = r.pipeline()
p.set(mine("e"), 1).execute_command("NOSUCHCOMMAND").set(mine("f"), 1)
try:
    p.execute()
    check(False, "a transaction with an unknown command is aborted", "no exception")
except redis.RedisError as e:
    # redis-py raises the queued command's error (EXECABORT behind it).
    check(r.exists(mine("e"), mine("f")) == 0 and "unknown command" in str(e),
          "a transaction with an unknown command is aborted, nothing written", repr(e))

# 3. Expiry.
p = r.pipeline()
p.set(mine("short"), "v", px=50).set(mine("long"), "v", ex=1000).setex(mine("sx"), 1000, "v")
p.pexpire(mine("sx"), 60).ttl(mine("long"))
res = p.execute()
check(res[:4] == [True, True, True, True] and 0 < res[4] <= 1000,
      "SET PX/EX, SETEX, PEXPIRE and TTL in a transaction", res)
time.sleep(0.3)
check(r.get(mine("short")) is None and r.exists(mine("short"), mine("sx")) == 0
      and r.ttl(mine("sx")) == -2 and r.get(mine("long")) == b"v",
      "keys with 50-60 ms to live are gone 300 ms later, the 1000 s one is not")
check(r.persist(mine("long")) and r.ttl(mine("long")) == -1, "PERSIST")
sys.exit(1 if failed else 0)
