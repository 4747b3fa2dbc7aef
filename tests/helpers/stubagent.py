#!/usr/bin/env python3
"""stubagent.py: an agent for the tests (docs/agents.md), on a loopback port.

    stubagent.py PORT-FILE LOG-FILE

It writes the port it listens on to PORT-FILE and one JSON line per request
to LOG-FILE: the path, the headers cronvisor sends (X-Job-Id,
X-Execution-Id, X-Attempt, Idempotency-Key, Authorization,
X-Cronvisor-Signature) and the body as it came.  What it answers depends on
the path:

  /ok            200 {"answer": 42, "params": <the params>} (/ok/ANY too:
                 a webhook receiver with a path of its own)
  /text          200 with a body that is not JSON
  /async         202, then reports "completed" to the body's callback.url
                 (with the token, as Authorization: Bearer) after
                 params.delay_ms (default 50 ms)
  /async-fail    202, then reports "failed", retryable: params.retryable
  /async-twice   202, then reports "completed" twice (the same report)
  /silent        202, and never reports
  /report-first  reports "completed" first, then answers 202 after
                 params.sleep_ms (1000)
  /beat          202, then heartbeats every params.beat_ms, params.beats
                 times, then reports "completed"
  /flaky         503 until the job's params.fail_times attempts failed, then
                 200
  /limited       429 with Retry-After: params.retry_after (seconds), once per
                 job, then 200
  /bad           400 {"error": "bad params"}
  /half          400 when params[params.half_of] (default tickerId) ends in
                 an odd digit, else 200 (a fan-out whose odd items fail)
  /slow          sleeps params.sleep_ms, then 200
  /redirect      302 to params.location
  /health        200;  /unhealthy  500
  /health/NAME   the status a PUT of {"code": N} to it set (200 before)
Every report it sends is logged too ("report": the answer's status code),
and each request with "inflight": how many requests of its path were being
answered when it came, itself included.
"""
import json
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port_file, log_file = sys.argv[1], sys.argv[2]
lock = threading.Lock()
counts = {}
inflight = {}  # requests being answered, by path: what "inflight" logs
health = {}  # /health/NAME: the status GET answers (PUT sets it), 200


def log(entry):
    with lock:
        with open(log_file, "a") as f:
            f.write(json.dumps(entry) + "\n")


def post(url, token, body):
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST", headers={
        "Content-Type": "application/json",
        "Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            code = r.status
    except urllib.error.HTTPError as e:
        code = e.code
    except Exception as e:  # the API away: logged as 0
        code = 0
    log({"report": url.rsplit("/", 1)[-1], "code": code, "body": body})
    return code


def later(seconds, fn, *args):
    t = threading.Timer(seconds, fn, args)
    t.daemon = True
    t.start()


class Agent(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, body=b"", headers=None):
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        log({"path": self.path, "method": "GET", "at": time.time(),
             "headers": {"Authorization": self.headers.get("Authorization")}})
        if self.path.startswith("/health/"):
            with lock:
                code = health.get(self.path[len("/health/"):], 200)
        else:
            code = 200 if self.path == "/health" else 500
        self.reply(code, b'{"ok": true}')

    def do_PUT(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n) or b"{}")
        if not self.path.startswith("/health/"):
            self.reply(404)
            return
        with lock:
            health[self.path[len("/health/"):]] = int(body["code"])
        self.reply(204)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        hdrs = {k: self.headers.get(k) for k in (
            "X-Job-Id", "X-Execution-Id", "X-Attempt", "Idempotency-Key",
            "Authorization", "X-Cronvisor-Signature", "Content-Type",
            "webhook-id", "webhook-timestamp", "webhook-signature")}
        with lock:
            inflight[self.path] = inflight.get(self.path, 0) + 1
            now = inflight[self.path]
        log({"path": self.path, "headers": hdrs, "body": body,
             "raw": raw.decode("utf-8", "replace"), "at": time.time(),
             "inflight": now})
        try:
            self.answer(body, raw)
        finally:
            with lock:
                inflight[self.path] -= 1

    def answer(self, body, raw):
        params = (body or {}).get("params", {}) or {}
        cb = (body or {}).get("callback", {}) or {}
        job = (body or {}).get("jobId", "")
        with lock:
            counts[(self.path, job)] = counts.get((self.path, job), 0) + 1
            seen = counts[(self.path, job)]
        path = self.path
        ok = json.dumps({"answer": 42, "params": params}).encode()
        if path == "/ok" or path.startswith("/ok/"):
            self.reply(200, ok, {"Content-Type": "application/json"})
        elif path == "/text":
            self.reply(200, b"all done, not json")
        elif path in ("/async", "/async-fail", "/async-twice"):
            self.reply(202, b'{"accepted": true}')
            delay = params.get("delay_ms", 50) / 1000.0
            if path == "/async-fail":
                rep = {"status": "failed", "error": {
                    "message": "the model gave up",
                    "retryable": params.get("retryable", True)}}
            else:
                rep = {"status": "completed", "result": {"done": True, "job": job}}
            later(delay, post, cb.get("url"), cb.get("token"), rep)
            if path == "/async-twice":
                later(delay + 0.3, post, cb.get("url"), cb.get("token"), rep)
        elif path == "/report-first":
            post(cb.get("url"), cb.get("token"),
                 {"status": "completed", "result": {"first": True}})
            time.sleep(params.get("sleep_ms", 1000) / 1000.0)
            self.reply(202, b"")
        elif path == "/silent":
            self.reply(202, b"")
        elif path == "/beat":
            self.reply(202, b"")
            beat = params.get("beat_ms", 500) / 1000.0
            beats = params.get("beats", 3)
            for i in range(beats):
                later(beat * (i + 1), post, cb.get("heartbeatUrl"),
                      cb.get("token"), {})
            later(beat * (beats + 1), post, cb.get("url"), cb.get("token"),
                  {"status": "completed", "result": {"beats": beats}})
        elif path == "/flaky":
            if seen <= params.get("fail_times", 1):
                self.reply(503, b'{"error": "busy"}')
            else:
                self.reply(200, ok)
        elif path == "/limited":
            if seen == 1:
                self.reply(429, b"", {"Retry-After": str(params.get("retry_after", 2))})
            else:
                self.reply(200, ok)
        elif path == "/bad":
            self.reply(400, b'{"error": "bad params"}')
        elif path == "/half":
            v = str(params.get(params.get("half_of", "tickerId"), ""))
            if v[-1:].isdigit() and int(v[-1]) % 2 == 1:
                self.reply(400, b'{"error": "odd values fail"}')
            else:
                self.reply(200, ok)
        elif path == "/slow":
            time.sleep(params.get("sleep_ms", 5000) / 1000.0)
            self.reply(200, ok)
        elif path == "/redirect":
            self.reply(302, b"", {"Location": params.get("location", "/ok")})
        else:
            self.reply(404, b"")


srv = ThreadingHTTPServer(("127.0.0.1", 0), Agent)
srv.daemon_threads = True
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
