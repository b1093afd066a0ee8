#!/usr/bin/python3
"""hvd_proto.py - Horovod rendezvous protocol conformance, request by request.

Run inside a task of a `--dl-runtime=horovod --dl-horovod=gloo` step: it talks
to the driver the plugin started, at HOROVOD_GLOO_RENDEZVOUS_ADDR:PORT, with
raw sockets (so every status line, header and close is seen as sent), and
prints one line per check: "PASS <what>" or "FAIL <what>: <detail>".

    hvd_proto.py conform HOSTS TASKS_PER_NODE   e.g. conform n1,n2 "2,1"
    hvd_proto.py refused ADDR PORT              from a host that is not in the step

The expected scope sizes and rank_and_size answers are computed here from the
step's node list with Horovod's get_host_assignments rules.
"""
import os
import socket
import sys
import threading
import time

TIMEOUT = 5.0
failures = 0


def check(cond, what, detail=""):
    global failures
    if cond:
        print(f"PASS {what}")
    else:
        failures += 1
        print(f"FAIL {what}: {detail}")
    sys.stdout.flush()


def request(addr, port, raw, timeout=TIMEOUT):
    """Sends raw bytes, reads until the server closes; returns (status, headers, body, closed)."""
    s = socket.create_connection((addr, port), timeout=timeout)
    try:
        s.sendall(raw)
        data = b""
        closed = False
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            data += chunk
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        status = -1
    headers = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(b":")
        headers[k.strip().lower().decode()] = v.strip().decode()
    return status, headers, body, closed


def http(addr, port, method, path, body=None, extra=b""):
    raw = f"{method} {path} HTTP/1.1\r\nHost: {addr}:{port}\r\n".encode()
    if body is not None:
        raw += f"Content-Length: {len(body)}\r\n".encode()
    raw += extra + b"\r\n" + (body or b"")
    return request(addr, port, raw)


def plan(hosts, tpn):
    """horovod/runner/common/util/hosts.py get_host_assignments."""
    slots = []
    for part in tpn.split(","):
        if "(x" in part:
            n, rep = part.rstrip(")").split("(x")
            slots += [int(n)] * int(rep)
        else:
            slots.append(int(part))
    out, rank, size = {}, 0, sum(slots)
    for h, (name, n) in enumerate(zip(hosts, slots)):
        for lr in range(n):
            have = [o for o in range(len(slots)) if slots[o] > lr]
            out[(name, lr)] = (rank, size, lr, n, have.index(h), len(have))
            rank += 1
    return out, slots


def conform(hosts, tpn):
    addr = os.environ["HOROVOD_GLOO_RENDEZVOUS_ADDR"]
    port = int(os.environ["HOROVOD_GLOO_RENDEZVOUS_PORT"])
    slots_of, slots = plan(hosts, tpn)
    size = sum(slots)

    st, hd, body, closed = http(addr, port, "PUT", "/global/rank_0", b"n1")
    check(st == 200, "PUT /global/rank_0 -> 200", st)
    check(hd.get("content-length") == "0", "PUT answer carries Content-Length: 0", hd)
    check(closed, "the server closes the connection after one answer")
    st, hd, body, _ = http(addr, port, "GET", "/global/rank_0")
    check((st, body, hd.get("content-length")) == (200, b"n1", "2"),
          "GET returns the stored bytes with Content-Length", (st, body, hd))
    st, hd, body, _ = http(addr, port, "GET", "/global/nosuchkey")
    check(st == 404 and hd.get("content-length") is not None, "GET of a missing key -> 404 with Content-Length", (st, hd))
    http(addr, port, "PUT", "/global/rank_0", b"second")
    check(http(addr, port, "GET", "/global/rank_0")[2] == b"second", "PUT overwrites")
    blob = bytes(range(256)) * 4096  # 1 MiB with NULs and every byte value
    st = http(addr, port, "PUT", "/adhoc/blob", blob)[0]
    st2, _, got, _ = http(addr, port, "GET", "/adhoc/blob")
    check(st == 200 and st2 == 200 and got == blob, "1 MiB binary value round-trips exactly")

    # DELETE on a registered scope: a finished rank, the scope is cleared once all finished.
    for r in range(size):
        http(addr, port, "PUT", f"/global/{r}", f"addr{r}".encode())
    for r in range(size - 1):
        st = http(addr, port, "DELETE", f"/global/{r}")[0]
        check(st == 200, f"DELETE /global/{r} -> 200", st)
    check(http(addr, port, "GET", "/global/0")[0] == 200,
          f"after {size - 1} of {size} DELETEs the global scope is still there")
    check(http(addr, port, "DELETE", f"/global/{size - 1}")[0] == 200, "last DELETE -> 200")
    check(http(addr, port, "GET", "/global/0")[0] == 404 and http(addr, port, "GET", "/global/rank_0")[0] == 404,
          f"the last of {size} DELETEs clears every key of the global scope")
    # A local scope with its registered size (the first host's local_size).
    h0 = hosts[0]
    for lr in range(slots[0]):
        http(addr, port, "PUT", f"/local_{h0}/{lr}", b"x")
    for lr in range(slots[0]):
        http(addr, port, "DELETE", f"/local_{h0}/{lr}")
    check(http(addr, port, "GET", f"/local_{h0}/0")[0] == 404,
          f"local_{h0} is cleared after its {slots[0]} ranks DELETE (registered from the step's layout)")
    # An ad hoc scope: DELETE removes the key.
    http(addr, port, "PUT", "/adhoc/k", b"v")
    check(http(addr, port, "DELETE", "/adhoc/k")[0] == 200 and http(addr, port, "GET", "/adhoc/k")[0] == 404,
          "DELETE on an unregistered scope deletes the key")

    # Elastic Horovod's slot lookup.
    for (h, lr), want in slots_of.items():
        st, _, body, _ = http(addr, port, "GET", f"/rank_and_size/{h}:{lr}")
        check(st == 200 and body == ",".join(map(str, want)).encode(),
              f"rank_and_size/{h}:{lr} = {','.join(map(str, want))}", (st, body))
    st, _, body, _ = http(addr, port, "GET", "/rank_and_size/nosuchhost:0")
    check(st == 200 and body == b"-1,-1,-1,-1,-1,-1", "rank_and_size of an unknown slot is -1,...", (st, body))
    check(http(addr, port, "GET", f"/rank_and_size/{h0}")[0] == 400, "rank_and_size without :local_rank -> 400")

    # Malformed and hostile requests: an answer (never a crash), the right code.
    check(http(addr, port, "GET", "/onlyscope")[0] == 400, "a path with one part -> 400")
    check(http(addr, port, "GET", "/a/b/c")[0] == 400, "a path with three parts -> 400")
    check(http(addr, port, "PUT", "//k", b"v")[0] == 400, "an empty scope -> 400")
    st = request(addr, port, b"PUT /s/k HTTP/1.1\r\nHost: x\r\n\r\n")[0]
    check(st == 411, "PUT without Content-Length -> 411", st)
    check(http(addr, port, "POST", "/s/k", b"v")[0] == 501, "POST -> 501")
    st = request(addr, port, b"\x00\xff\x16\x03\x01garbage\r\n\r\n")[0]
    check(st == 400, "binary garbage -> 400", st)
    st = request(addr, port, b"PUT /s/k HTTP/1.1\r\nContent-Length: 1000000000000\r\n\r\n")[0]
    check(st == 413, "Content-Length 10^12 -> 413 from the head alone, body never read", st)
    st = request(addr, port, b"GET /s/k HTTP/1.1\r\nX-Pad: " + b"a" * 9000 + b"\r\n\r\n")[0]
    check(st == 431, "a 9 KB header -> 431", st)

    # A slow client (half a request, then silence) stalls nobody.
    slow = socket.create_connection((addr, port), timeout=TIMEOUT)
    slow.sendall(b"PUT /global/slow HTTP/1.1\r\nContent-Length: 10\r\n\r\nab")
    ok = sum(http(addr, port, "GET", "/adhoc/blob")[0] == 200 for _ in range(20))
    check(ok == 20, "20 requests answered while a slow client holds a half request", ok)
    slow.settimeout(15)
    try:
        end = slow.recv(100)
    except OSError as e:
        end = str(e).encode()
    check(end == b"" or b"reset" in end, "the slow client is disconnected by the idle timeout", end)
    slow.close()

    # Many ranks at once, as a large job's first rendezvous.
    results = []

    def worker(i):
        n = 0
        for j in range(20):
            try:
                if http(addr, port, "PUT", f"/conc/{i}_{j}", b"v")[0] == 200 and \
                   http(addr, port, "GET", f"/conc/{i}_{j}")[0] == 200:
                    n += 1
            except OSError:
                pass
        results.append(n)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(48)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(sum(results) == 48 * 20, "48 concurrent clients x 20 PUT+GET all answered", sum(results))
    check(http(addr, port, "GET", "/global/rank_0")[0] in (200, 404), "the driver still answers after all that")


def refused(addr, port):
    try:
        st = request(addr, int(port), b"GET /global/rank_0 HTTP/1.1\r\n\r\n", timeout=5)[0]
        check(st == -1, "a host outside the step gets no answer", st)
    except (ConnectionResetError, ConnectionRefusedError, BrokenPipeError) as e:
        check(True, f"a host outside the step gets no answer ({e.__class__.__name__})")
    except socket.timeout:
        check(False, "a host outside the step gets no answer", "timed out instead of being closed")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "conform":
        conform(sys.argv[2].split(","), sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "refused":
        refused(sys.argv[2], sys.argv[3])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(1 if failures else 0)
