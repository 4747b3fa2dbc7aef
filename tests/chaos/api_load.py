#!/usr/bin/env python3
"""api_load.py: hammers the REST API through nginx for a while and counts
every answer, for tests/chaos/chaos.sh's api scenario.

  api_load.py API-URL TOKEN SECONDS RELOADS-FILE OUT-JSON

Four threads send creates (POST /schedules, each with a unique name
chaosapi-<n>), gets and lists, one new connection per request, each with a
10 s client timeout.  Every answer is classified: 2xx; 503 with error code
"unavailable" and a message (the database is away) or a 503 without them
(unclear); 500; any other status; a time-out; a connection reset or refusal,
explained when it happened within 2 s of an nginx reload (RELOADS-FILE holds
their times, one per line, written by the caller) and unexplained
otherwise.  Each create carries its name as its Idempotency-Key and is
sent again with it, a fifth of a second later, while its answer leaves
the outcome open (no answer, or 503: the row may or may not exist), for
up to 20 s past SECONDS.  OUT-JSON gets the figures and the names of the
creates: answered 201 at last (created), refused (another definite
answer), unknown (still open at the end), and api_create_retries, the
number of creates sent again.
RELOADS-FILE.back holds the times PostgreSQL came back: api_recovery_max_ms
is the longest wait from one of them to the next 2xx answer.
"""
import http.client
import json
import random
import socket
import sys
import threading
import time
import urllib.parse

url, token, seconds, reloads_file, out = sys.argv[1:6]
u = urllib.parse.urlsplit(url)
deadline = time.time() + float(seconds)
lock = threading.Lock()
fig = {k: 0 for k in ("api_requests", "api_2xx", "api_503", "api_503_unclear",
                      "api_500", "api_other", "api_timeout", "api_reset",
                      "api_create_retries")}
resets = []
oks = []
created, refused, unknown, ids = [], [], [], []
seq = [0]


def request(method, path, body=None, key=None):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    try:
        h = {"Authorization": "Bearer " + token}
        if body is not None:
            h["Content-Type"] = "application/json"
        if key is not None:
            h["Idempotency-Key"] = key
        c.request(method, u.path + path, body=body, headers=h)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def classify(status, data):
    if 200 <= status < 300:
        return "api_2xx"
    if status == 503:
        try:
            e = json.loads(data)["error"]
            if e["code"] == "unavailable" and len(e["message"]) > 10:
                return "api_503"
        except (ValueError, KeyError, TypeError):
            pass
        return "api_503_unclear"
    if status == 500:
        return "api_500"
    return "api_other"


def send(call):
    """One request of call, counted; returns (kind, status, data)."""
    t = time.time()
    try:
        status, data = request(*call)
    except socket.timeout:
        kind, status, data = "api_timeout", None, b""
    except (ConnectionError, http.client.HTTPException, OSError):
        kind, status, data = "api_reset", None, b""
    else:
        kind = classify(status, data)
    with lock:
        fig["api_requests"] += 1
        fig[kind] += 1
        if kind == "api_reset":
            resets.append(t)
        if kind == "api_2xx":
            oks.append(time.time())
        if kind not in ("api_2xx", "api_503"):
            print("%.3f %s %s -> %s %s %s" % (t, call[0], call[1], kind, status,
                                               data[:200]), flush=True)
    return kind, status, data


def one():
    with lock:
        seq[0] += 1
        n = seq[0]
        some = random.choice(ids) if ids else None
    op = random.random()
    if op < 0.5 or some is None:
        name = "chaosapi-%d-%d" % (n, random.randrange(1 << 30))
        body = json.dumps({"name": name, "kind": "interval",
                           "interval_seconds": 3600,
                           "target": {"type": "exec", "argv": ["/bin/true"]}})
        call = ("POST", "/schedules", body, name)
        kind, status, data = send(call)
        while (status is None or status == 503) and \
                time.time() < deadline + 20:
            time.sleep(0.2)
            with lock:
                fig["api_create_retries"] += 1
            kind, status, data = send(call)
        with lock:
            if status == 201:
                created.append(name)
                try:
                    ids.append(json.loads(data)["id"])
                except (ValueError, KeyError):
                    pass
            elif status is None or status == 503:
                unknown.append(name)
            else:
                refused.append(name)
    elif op < 0.75:
        send(("GET", "/schedules/" + some))
    else:
        send(("GET", "/schedules?limit=20"))


def worker():
    while time.time() < deadline:
        one()


threads = [threading.Thread(target=worker) for _ in range(4)]
for th in threads:
    th.start()
for th in threads:
    th.join()
try:
    reloads = [float(x) for x in open(reloads_file) if x.strip()]
except OSError:
    reloads = []
# The time from each return of the database (BACKS-FILE, next to the
# reloads file) to the first 2xx answer after it.
try:
    backs = [float(x) for x in open(reloads_file + ".back") if x.strip()]
except OSError:
    backs = []
rec = [min([o for o in oks if o >= b] or [deadline]) - b for b in backs]
fig["api_recovery_max_ms"] = int(max(rec or [0]) * 1000)
explained = sum(1 for t in resets if any(abs(t - r) <= 2 for r in reloads))
fig["api_reset_unexplained"] = fig["api_reset"] - explained
fig["api_creates_201"] = len(created)
fig["api_creates_refused"] = len(refused)
fig["api_creates_no_reply"] = len(unknown)
json.dump({"figures": fig, "created": created, "refused": refused,
           "unknown": unknown}, open(out, "w"))
print(" ".join("%s=%s" % kv for kv in sorted(fig.items())))
