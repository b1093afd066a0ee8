#!/usr/bin/python3
"""Baseline for bench/hvd-driver.sh: the rendezvous K/V semantics on Python's
http.server, as horovod/runner/http/http_server.py builds it (ThreadingMixIn,
SimpleHTTPRequestHandler, HTTP/1.0, 3 s request timeout, default listen
backlog, or --backlog N). Horovod itself is not packaged in Debian. Prints its port, serves
127.0.0.1 only, and exits on its own after --lifetime seconds (bounded)."""
import os, sys, threading
from http.server import HTTPServer, SimpleHTTPRequestHandler
from socketserver import ThreadingMixIn

class Handler(SimpleHTTPRequestHandler):
    timeout = 3
    def _parts(self):
        p = self.path.split('/')
        if len(p) < 3:
            self._status(400)
            return None
        return p[1], p[2]
    def _status(self, code, body=b''):
        self.send_response(code)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        p = self._parts()
        if p:
            with self.server.lock:
                v = self.server.cache.get(p[0], {}).get(p[1])
            self._status(404) if v is None else self._status(200, v)
    def do_PUT(self):
        p = self._parts()
        if p:
            v = self.rfile.read(int(self.headers['Content-Length']))
            with self.server.lock:
                self.server.cache.setdefault(p[0], {})[p[1]] = v
            self._status(200)
    def do_DELETE(self):
        p = self._parts()
        if p:
            with self.server.lock:
                d = self.server.cache.get(p[0], {})
                d.pop(p[1], None)
                if not d:
                    self.server.cache.pop(p[0], None)
            self._status(200)
    def log_message(self, *args):
        pass

def arg(name, default):
    return float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default

class Server(ThreadingMixIn, HTTPServer):
    daemon_threads = True
    # HTTPServer's default is 5, as in Horovod; --backlog shows the server without it.
    request_queue_size = int(arg('--backlog', 5))

lifetime = arg('--lifetime', 300)
srv = Server(('127.0.0.1', 0), Handler)
srv.cache, srv.lock = {}, threading.Lock()
threading.Timer(lifetime, lambda: os._exit(0)).start()
print(srv.server_address[1], flush=True)
srv.serve_forever()
