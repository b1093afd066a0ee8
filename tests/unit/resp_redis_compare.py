#!/usr/bin/python3
"""resp_redis_compare.py - dlrt-store against a real redis-server, reply for
reply and state for state: transactions (MULTI/EXEC/DISCARD, WATCH), SET's
expiry options and the expiry commands.

    resp_redis_compare.py STORE_PORT REDIS_PORT

Both servers listen on 127.0.0.1. Every scenario starts with FLUSHALL on both,
runs the same requests on each, and compares
  - the raw reply bytes of every request (RESP, read reply by reply), and
  - the resulting key space: every key, its value and whether and roughly
    how long it lives (TTL -2/-1 exactly; a positive TTL must be positive on
    both and at most what was set, since the two clocks are read at
    different instants).
The redis-py scenarios use the library's default pipeline() with
transaction=True (MULTI ... EXEC in one write) and transaction=False, and
compare results and raised exceptions (type and text).

Prints one line per check: "ok - DESC" or "not ok - DESC", then "#" lines
with the difference. No check depends on how fast anything runs: expired
keys are looked at after sleeping past their expiry, never before.
"""
import socket
import sys
import time

import redis

STORE, REAL = int(sys.argv[1]), int(sys.argv[2])
failed = 0


def report(ok, desc, *detail):
    global failed
    print(("ok - " if ok else "not ok - ") + desc)
    if not ok:
        failed += 1
        for d in detail:
            print("#   " + d)
    sys.stdout.flush()


# ---- raw RESP ------------------------------------------------------------


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def send(self, cmds):
        out = b""
        for c in cmds:
            c = [a if isinstance(a, bytes) else str(a).encode() for a in c]
            out += b"*%d\r\n" % len(c) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in c)
        self.s.sendall(out)

    def _line(self, pos):
        while True:
            i = self.buf.find(b"\r\n", pos)
            if i >= 0:
                return i
            d = self.s.recv(65536)
            if not d:
                raise EOFError("connection closed")
            self.buf += d

    def _need(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("connection closed")
            self.buf += d

    def _reply_end(self, pos):
        """Offset just past the complete reply starting at pos."""
        i = self._line(pos)
        t, head = self.buf[pos:pos + 1], self.buf[pos + 1:i]
        end = i + 2
        if t in (b"+", b"-", b":"):
            return end
        if t == b"$":
            n = int(head)
            if n < 0:
                return end
            self._need(end + n + 2)
            return end + n + 2
        if t == b"*":
            for _ in range(max(int(head), 0)):
                end = self._reply_end(end)
            return end
        raise ValueError("not RESP: %r" % self.buf[pos:pos + 40])

    def reply(self):
        end = self._reply_end(0)
        r, self.buf = self.buf[:end], self.buf[end:]
        return r

    def close(self):
        self.s.close()


def normalize(cmd, rep):
    """A positive TTL/PTTL depends on the instant it is read: keep the sign."""
    name = cmd[0].upper() if isinstance(cmd[0], str) else cmd[0].decode().upper()
    if name in ("TTL", "PTTL") and rep.startswith(b":") and int(rep[1:]) > 0:
        return b":<positive>\r\n"
    return rep


def run_raw(port, cmds):
    c = Conn(port)
    c.send(cmds)  # all in one write, as a pipelining client sends them
    reps = []
    for cmd in cmds:
        try:
            reps.append(normalize(cmd, c.reply()))
        except (EOFError, OSError) as e:
            reps.append(("closed", str(e)))
            break
    c.close()
    return reps


def state(port):
    r = redis.Redis(host="127.0.0.1", port=port)
    out = []
    for k in sorted(r.keys("*")):
        ttl = r.pttl(k)
        out.append((k, r.get(k), ttl if ttl < 0 else "<positive>"))
    r.close()
    return out


def flush(port):
    r = redis.Redis(host="127.0.0.1", port=port)
    r.flushall()
    r.close()


def compare_raw(desc, cmds, sleep_before_state=0.0):
    flush(STORE)
    flush(REAL)
    a, b = run_raw(STORE, cmds), run_raw(REAL, cmds)
    bad = [("%d %s" % (i, " ".join(map(str, cmds[i]))), x, y)
           for i, (x, y) in enumerate(zip(a, b)) if x != y]
    report(not bad and len(a) == len(b), "raw: " + desc,
           *["request %s: dlrt-store %r, redis-server %r" % t for t in bad[:5]],
           "replies: dlrt-store %d, redis-server %d" % (len(a), len(b)))
    if sleep_before_state:
        time.sleep(sleep_before_state)
    sa, sb = state(STORE), state(REAL)
    report(sa == sb, "raw: %s: same keys, values and TTL state" % desc,
           "dlrt-store:   %r" % (sa,), "redis-server: %r" % (sb,))


S = lambda line: line.split()  # noqa: E731

TRANSCRIPTS = [
    ("EXEC/DISCARD without MULTI, nested MULTI, empty EXEC",
     [S("EXEC"), S("DISCARD"), S("MULTI"), S("MULTI"), S("EXEC"), S("MULTI"), S("DISCARD"),
      S("EXEC")]),
    ("a transaction runs all its commands, replies in one array",
     [S("MULTI"), S("SET a 1"), S("INCR a"), S("GET a"), S("MSET b 2 c 3"), S("MGET a b c"),
      S("DEL c"), S("EXEC"), S("GET a")]),
    ("a run-time error fails alone, the others run",
     [S("SET s notanumber"), S("MULTI"), S("SET x 1"), S("INCR s"), S("SET y 2"),
      S("SET z 1 EX foo"), S("SET z 1 NX XX"), S("EXEC"), S("MGET x y z")]),
    ("an unknown command or wrong arity aborts the whole transaction",
     [S("MULTI"), S("SET a 1"), S("NOSUCH x y"), S("SET b 2"), S("EXEC"), S("EXISTS a b"),
      S("MULTI"), S("SET a 1"), S("GET"), S("EXEC"), S("EXISTS a")]),
    ("EXEC with arguments discards the transaction",
     [S("MULTI"), S("SET a 1"), S("EXEC x"), S("EXEC"), S("EXISTS a")]),
    ("DISCARD, MULTI x, DISCARD x inside MULTI",
     [S("MULTI"), S("SET a 1"), S("DISCARD"), S("EXISTS a"), S("MULTI"), S("MULTI x"),
      S("SET a 1"), S("EXEC"), S("EXISTS a")]),
    ("WATCH inside MULTI is an error that does not abort",
     [S("MULTI"), S("WATCH a"), S("SET a 1"), S("EXEC"), S("GET a")]),
    ("WATCH/UNWATCH arity, UNWATCH queued inside MULTI",
     [S("WATCH"), S("UNWATCH x"), S("UNWATCH"), S("MULTI"), S("UNWATCH"), S("PING"), S("EXEC")]),
    ("WATCH: the client's own change before MULTI aborts EXEC",
     [S("SET w 1"), S("WATCH w"), S("SET w 2"), S("MULTI"), S("SET w 3"), S("EXEC"), S("GET w"),
      S("MULTI"), S("SET w 4"), S("EXEC"), S("GET w")]),
    ("WATCH then UNWATCH: EXEC runs",
     [S("WATCH w"), S("SET w 2"), S("UNWATCH"), S("MULTI"), S("SET w 3"), S("EXEC"), S("GET w")]),
    ("WATCH of a missing key: DEL of nothing is no change; FLUSHALL of nothing neither",
     [S("WATCH nokey"), S("DEL nokey"), S("FLUSHALL"), S("MULTI"), S("SET nokey 1"), S("EXEC"),
      S("GET nokey")]),
    ("WATCH then EXPIRE/PERSIST changes the key",
     [S("SET w 1"), S("WATCH w"), S("EXPIRE w 100"), S("MULTI"), S("SET w 2"), S("EXEC"),
      S("WATCH w"), S("PERSIST w"), S("MULTI"), S("SET w 3"), S("EXEC"), S("GET w"), S("TTL w")]),
    ("QUIT inside MULTI runs at once",
     [S("MULTI"), S("SET q 1"), S("QUIT")]),
    ("SET options: EX/PX/EXAT/PXAT/NX/XX/GET/KEEPTTL and their errors",
     [S("SET k v EX 100"), S("TTL k"), S("SET k v2 KEEPTTL"), S("TTL k"), S("SET k v3"), S("TTL k"),
      S("SET k v PX 100000 GET"), S("PTTL k"), S("SET k v EX 0"), S("SET k v EX -1"),
      S("SET k v PX 0"), S("SET k v EX foo"), S("SET k v EX 1.5"), S("SET k v EX 01"),
      S("SET k v EX"), S("SET k v EX 1 PX 1"), S("SET k v KEEPTTL EX 1"), S("SET k v EX 1 KEEPTTL"),
      S("SET k v NX XX"), S("SET k v EX 10 EX 20"), S("TTL k"),
      S("SET k v EX 9223372036854775"), S("SET k v EX 9223372036854776"),
      S("SET k v PX 9223372036854775807"), S("SET k v EXAT -1"), S("SET k v EXAT 1"),
      S("EXISTS k"), S("SET k v PXAT 1 GET"), S("SET k v EXAT 99999999999"), S("TTL k"),
      S("SET k v"), S("SET k v EXAT 1 GET"), S("EXISTS k"), S("SET k x EX 100 NX GET"),
      S("SETEX k 100 v"), S("TTL k"), S("PSETEX k 100000 v"), S("PTTL k"), S("SETEX k 0 v"),
      S("PSETEX k -1 v"), S("SETEX k x v"), S("SETEX k 9223372036854775 v"), S("SETEX k 1"),
      S("SET n 1 xx"), S("SET n 1 nx ex 100 get"), S("TTL n"), S("SET n 2 NX GET"), S("SET k v FOO")]),
    ("EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT, TTL/PTTL/PERSIST and the NX/XX/GT/LT flags",
     [S("SET k v"), S("TTL k"), S("PTTL k"), S("TTL nokey"), S("PTTL nokey"),
      S("EXPIRE nokey 10"), S("PERSIST nokey"), S("PERSIST k"),
      S("EXPIRE k 100 XX"), S("EXPIRE k 100 NX"), S("EXPIRE k 100 NX"), S("EXPIRE k 50 GT"),
      S("EXPIRE k 200 GT"), S("TTL k"), S("EXPIRE k 300 LT"), S("EXPIRE k 150 LT"), S("TTL k"),
      S("EXPIRE k 1 NX XX"), S("EXPIRE k 1 GT LT"), S("EXPIRE k 1 nx gt"), S("EXPIRE k x"),
      S("EXPIRE k 1 foo"), S("EXPIRE k x foo"), S("EXPIRE k"), S("TTL"), S("PTTL a b"),
      S("PERSIST"), S("PERSIST k"), S("PERSIST k"), S("TTL k"),
      S("PEXPIRE k 100000"), S("PTTL k"), S("EXPIREAT k 99999999999"), S("TTL k"),
      S("PEXPIREAT k 99999999999000"), S("TTL k"),
      S("EXPIRE k 9223372036854775"), S("EXPIRE k 9223372036854776"),
      S("PEXPIRE k 9223372036854775807"), S("EXPIREAT k 9223372036854776"),
      S("PEXPIREAT k 9223372036854775807"), S("TTL k"),
      S("SET g 5"), S("EXPIRE g 100"), S("INCR g"), S("APPEND g 1"), S("TTL g"),
      S("GETSET g 7"), S("TTL g"), S("EXPIRE g 100"), S("MSET g 8"), S("TTL g"),
      S("EXPIRE k 0"), S("EXISTS k"), S("SET k v"), S("EXPIRE k -5"), S("EXISTS k"),
      S("SET k v"), S("PEXPIRE k -9223372036854775808"), S("EXISTS k"),
      S("SET k v"), S("EXPIREAT k 1"), S("EXISTS k")]),
    ("expiry inside a transaction",
     [S("MULTI"), S("SET t v EX 100"), S("TTL t"), S("EXPIRE t 0"), S("EXISTS t"),
      S("SET u v PX 100000"), S("PERSIST u"), S("TTL u"), S("EXEC"), S("TTL u")]),
    ("INFO keyspace counts keys with a time to live",
     [S("SET a 1 EX 100"), S("SET b 1"), S("PEXPIRE b 100000"), S("SET c 1"), S("DBSIZE")]),
]


def short_expiry():
    """Keys with 40-80 ms to live: gone for every command after 300 ms."""
    cmds = [S("SET e1 v PX 40"), S("SET e2 v"), S("PEXPIRE e2 50"), S("SET e3 v EX 100"),
            S("PEXPIRE e3 60"), S("SET e4 v PX 80"), S("SET keep v"), S("SET keep2 v EX 1000")]
    after = [S("GET e1"), S("EXISTS e1 e2 e3 e4 keep"), S("TTL e2"), S("PTTL e3"),
             S("STRLEN e4"), S("KEYS e*"), S("APPEND e1 x"), S("GET e1"), S("TTL e1"),
             S("INCR e2"), S("TTL e2"), S("SETNX e3 n"), S("GET e3"), S("SET e4 w XX"),
             S("PERSIST e4"), S("EXPIRE e4 10"), S("TYPE e4"), S("TTL keep"), S("TTL keep2")]
    flush(STORE)
    flush(REAL)
    a, b = run_raw(STORE, cmds), run_raw(REAL, cmds)
    time.sleep(0.3)
    a2, b2 = run_raw(STORE, after), run_raw(REAL, after)
    report(a == b and a2 == b2, "raw: short expiry times (PX 40..80, then 300 ms later)",
           "dlrt-store:   %r" % (a + a2,), "redis-server: %r" % (b + b2,))
    sa, sb = state(STORE), state(REAL)
    report(sa == sb, "raw: short expiry: same keys, values and TTL state",
           "dlrt-store:   %r" % (sa,), "redis-server: %r" % (sb,))


def reclaimed():
    """Expired keys nobody reads again are reclaimed (active expiry): DBSIZE
    falls to what is alive on both, within a bounded wait."""
    res = {}
    for port in (STORE, REAL):
        r = redis.Redis(host="127.0.0.1", port=port)
        r.flushall()
        p = r.pipeline(transaction=False)
        for i in range(500):
            p.set("gone:%d" % i, "x" * 100, px=20)
        p.set("alive", "y")
        p.execute()
        n = None
        for _ in range(100):  # at most 10 s
            time.sleep(0.1)
            n = r.dbsize()
            if n == 1:
                break
        res[port] = (n, r.keys("*"))
        r.close()
    report(res[STORE] == res[REAL] == (1, [b"alive"]),
           "500 expired keys that nobody reads are reclaimed (DBSIZE 1 on both)",
           "dlrt-store %r, redis-server %r" % (res[STORE], res[REAL]))


# ---- redis-py ----------------------------------------------------------------


def outcome(fn):
    try:
        return ("ok", fn())
    except redis.exceptions.RedisError as e:
        return ("raised", type(e).__name__, str(e))


def py_scenarios(port):
    r = redis.Redis(host="127.0.0.1", port=port)
    other = redis.Redis(host="127.0.0.1", port=port)
    out = []
    r.flushall()
    for transaction in (True, False):
        p = r.pipeline(transaction=transaction)
        p.set("a", 1).incr("a").get("a").set("b", "x", ex=100).ttl("b").mget("a", "b", "nokey")
        out.append(("pipeline %s" % transaction, outcome(p.execute)))
        # A run-time error inside: the rest still runs.
        p = r.pipeline(transaction=transaction)
        p.set("s", "text").incr("s").set("after", 1).expire("after", 100).ttl("after")
        out.append(("error inside, raise_on_error", outcome(p.execute)))
        p = r.pipeline(transaction=transaction)
        p.incr("s").set("after2", 2).get("after2")
        out.append(("error inside, no raise",
                    outcome(lambda: [repr(x) if isinstance(x, Exception) else x
                                     for x in p.execute(raise_on_error=False)])))
        # A command the server does not know: the transaction is aborted.
        p = r.pipeline(transaction=transaction)
        p.set("c", 1).execute_command("NOSUCHCMD", "x").set("d", 1)
        out.append(("unknown command inside", outcome(p.execute)))
        out.append(("after the aborted one", r.mget("c", "d")))
        # Expiry options through the client.
        p = r.pipeline(transaction=transaction)
        p.set("e", "v", px=100000, nx=True).set("e", "w", xx=True, keepttl=True)
        p.ttl("e").persist("e").ttl("e").expire("e", 50).pexpire("e", 100000).set("e", "z", get=True)
        out.append(("expiry options", outcome(p.execute)))
        r.delete("c", "d")
    # WATCH: a conflict from another client, then a clean retry.
    with r.pipeline() as p:
        p.watch("w")
        other.set("w", "theirs")
        p.multi()
        p.set("w", "mine")
        out.append(("WATCH conflict", outcome(p.execute)))
    out.append(("w after conflict", r.get("w")))
    with r.pipeline() as p:
        p.watch("w")
        cur = p.get("w")
        p.multi()
        p.set("w", cur + b"+mine")
        out.append(("WATCH no conflict", outcome(p.execute)))
    out.append(("w after success", r.get("w")))
    # redis-py's transaction() helper retries on WatchError.
    tries = []

    def incr_by_two(pipe):
        v = int(pipe.get("ctr") or 0)
        if not tries:
            other.set("ctr", 10)  # a conflict on the first try only
        tries.append(v)
        pipe.multi()
        pipe.set("ctr", v + 2)

    out.append(("transaction() helper", outcome(lambda: r.transaction(incr_by_two, "ctr"))))
    out.append(("tries", tries, r.get("ctr")))
    # A watched key that expires before EXEC aborts it.
    r.set("vol", "1", px=30)
    with r.pipeline() as p:
        p.watch("vol")
        time.sleep(0.1)
        p.multi()
        p.set("vol", "2")
        out.append(("watched key expired", outcome(p.execute)))
    out.append(("vol", r.get("vol")))
    # Short expiry through the client.
    r.set("short", "v", px=40)
    r.setex("short2", 100, "v")
    r.pexpire("short2", 40)
    time.sleep(0.3)
    out.append(("short expiry", r.get("short"), r.exists("short", "short2"), r.ttl("short2")))
    # MULTI/EXEC by hand with redis-py's execute_command.
    out.append(("EXEC without MULTI", outcome(lambda: r.execute_command("EXEC"))))
    out.append(("DISCARD without MULTI", outcome(lambda: r.execute_command("DISCARD"))))
    state_after = []
    for k in sorted(r.keys("*")):
        t = r.ttl(k)
        state_after.append((k, r.get(k), t if t < 0 else "<positive>"))
    out.append(("state", state_after))
    r.close()
    other.close()
    return out


def norm_py(x):
    """A TTL read by ttl() depends on the instant. The scenarios set TTLs of
    50 s and more and count to less than 40, so an integer of 40 or more in
    a pipeline's results is a TTL: only its being there is compared."""
    if isinstance(x, tuple) and x and x[0] == "ok" and isinstance(x[1], list):
        return ("ok", [v if not (isinstance(v, int) and not isinstance(v, bool) and v >= 40)
                       else "<ttl>" for v in x[1]])
    return x


for desc, cmds in TRANSCRIPTS:
    compare_raw(desc, cmds)
short_expiry()
reclaimed()
pa, pb = py_scenarios(STORE), py_scenarios(REAL)
for (da, xa), (db, xb) in zip([(t[0], t[1:]) for t in pa], [(t[0], t[1:]) for t in pb]):
    xa, xb = tuple(norm_py(v) for v in xa), tuple(norm_py(v) for v in xb)
    report(da == db and xa == xb, "redis-py: " + da,
           "dlrt-store:   %r" % (xa,), "redis-server: %r" % (xb,))
report(len(pa) == len(pb), "redis-py: the same number of steps")
sys.exit(1 if failed else 0)
