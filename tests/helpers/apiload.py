#!/usr/bin/env python3
"""apiload.py: many concurrent HTTP/1.1 clients against the API through
nginx, for tests/api_load.sh and bench/README.md's figures at 1,000 clients.

  apiload.py URL TOKEN --clients N --seconds S [--create PREFIX] --out FILE

Each client keeps one connection to nginx (reopened when it breaks or nginx
closes it) and sends requests back to back for S seconds: GET URL, or with
--create a POST URL of a new schedule whose name and Idempotency-Key are
both PREFIX-<client>-<n> (unique per request).  Every answer is checked as
it arrives: a 2xx, or a 503 with a Retry-After of whole seconds and a body
in the API's error shape with code "unavailable"; anything else (a 502, a
504, a 503 without Retry-After) is a bad answer.

With --create, when the timed phase is over every key whose answer was not
201 is sent again as cronvisorctl would (after Retry-After, up to 8 times),
and up to 200 keys that got 201 are replayed: each must answer 201 with the
schedule of its first answer.  The caller then checks the database: one row
per name, and as many rows as keys that ended in 201.

FILE gets a JSON summary: answers by status, served per second (2xx per
second of the timed phase), p50 and p99 latency in ms, share of 503, the
transport errors, the first bad answers, and for --create the keys created
and the replays that did not match.  Exit status 0 whatever was measured
(the caller judges), 2 on a usage error.  Everything is bounded: a request
waits 45 s at most, the retries 60 s in all.
"""
import argparse
import asyncio
import json
import sys
import time
import urllib.parse

# Longer than the shipped snippet's fastcgi_read_timeout (30 s): nginx
# answers every request (a 503 past that) before the client gives up, even
# from a sanitizer build serving 40 requests a second.
REQ_TIMEOUT = 45
SCHEDULE = ('{"name": "%s", "kind": "cron", "cron": "0 0 1 1 *", '
            '"target": {"type": "exec", "argv": ["/bin/true"]}}')


class Stats:
    def __init__(self):
        self.status = {}
        self.lat = []
        self.transport = 0
        self.bad = []
        self.outcome = {}  # key -> (status, id or None)

    def bad_answer(self, what):
        if len(self.bad) < 10:
            self.bad.append(what)


def check_503(headers, body):
    """'' if a 503 is in the documented shape, else what is wrong."""
    ra = headers.get("retry-after")
    if ra is None or not ra.strip().isdigit():
        return "503 without a Retry-After of seconds: %r" % (ra,)
    try:
        e = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return "503 whose body is not the error shape: %r" % body[:200]
    if e.get("code") != "unavailable" or not isinstance(e.get("message"), str) \
            or "field" not in e or e["field"] is not None:
        return "503 with error %r" % (e,)
    return ""


class Conn:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.r = self.w = None

    async def close(self):
        if self.w is not None:
            self.w.close()
            try:
                await self.w.wait_closed()
            except (OSError, asyncio.TimeoutError):
                pass
        self.r = self.w = None

    async def request(self, raw):
        """Sends raw, returns (status, headers, body); raises OSError."""
        if self.w is None:
            self.r, self.w = await asyncio.open_connection(self.host, self.port)
        self.w.write(raw)
        await self.w.drain()
        head = await self.r.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            raise OSError("bad status line %r" % lines[0])
        status = int(parts[1])
        headers = {}
        for ln in lines[1:]:
            if ":" in ln:
                k, v = ln.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int((await self.r.readuntil(b"\r\n")).split(b";")[0], 16)
                chunk = await self.r.readexactly(size + 2)
                if size == 0:
                    break
                body += chunk[:-2]
        else:
            body = await self.r.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, headers, body.decode("utf-8", "replace")


def build(method, path, host, token, key=None, body=None):
    h = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % host,
         "Authorization: Bearer %s" % token]
    if key is not None:
        h.append("Idempotency-Key: %s" % key)
    b = b""
    if body is not None:
        b = body.encode()
        h.append("Content-Type: application/json")
        h.append("Content-Length: %d" % len(b))
    return ("\r\n".join(h) + "\r\n\r\n").encode() + b


async def one(conn, st, raw, key, timed):
    """One request; records it.  Returns the status, or 0 on a transport
    error."""
    t0 = time.monotonic()
    try:
        status, headers, body = await asyncio.wait_for(conn.request(raw),
                                                       REQ_TIMEOUT)
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
            asyncio.TimeoutError, ValueError):
        await conn.close()
        if timed:
            st.transport += 1
        return 0, None
    if timed:
        st.lat.append((time.monotonic() - t0) * 1000)
        st.status[status] = st.status.get(status, 0) + 1
    if status == 503:
        why = check_503(headers, body)
        if why:
            st.bad_answer(why)
    elif not 200 <= status < 300:
        st.bad_answer("%d %s" % (status, body[:200]))
    sid = None
    if key is not None and status == 201:
        try:
            sid = json.loads(body)["id"]
        except (ValueError, KeyError, TypeError):
            st.bad_answer("201 without an id: %r" % body[:200])
    return status, (int(headers.get("retry-after", "1") or 1)
                    if status == 503 else sid)


async def client(i, a, st, deadline):
    conn = Conn(a.host, a.port)
    n = 0
    while time.monotonic() < deadline:
        key = body = None
        method = "GET"
        if a.create:
            key = "%s-%d-%d" % (a.create, i, n)
            body = SCHEDULE % key
            method = "POST"
        n += 1
        status, extra = await one(conn, st, build(method, a.path, a.hostport,
                                                  a.token, key, body), key, True)
        if key is not None:
            st.outcome[key] = (status, extra if status == 201 else None)
    await conn.close()


async def settle(a, st):
    """Sends again, as cronvisorctl would, every create that did not end in
    201, and replays up to 200 that did.  Returns the replays that did not
    answer 201 with the first answer's schedule."""
    end = time.monotonic() + 60
    sem = asyncio.Semaphore(32)
    mismatch = []

    async def again(key):
        async with sem:
            conn = Conn(a.host, a.port)
            for _ in range(8):
                if time.monotonic() > end:
                    break
                status, extra = await one(conn, st, build(
                    "POST", a.path, a.hostport, a.token, key, SCHEDULE % key),
                    key, False)
                if status == 201:
                    st.outcome[key] = (201, extra)
                    break
                await asyncio.sleep(extra if status == 503 else 1)
            await conn.close()

    async def replay(key, sid):
        async with sem:
            conn = Conn(a.host, a.port)
            for _ in range(8):
                status, extra = await one(conn, st, build(
                    "POST", a.path, a.hostport, a.token, key, SCHEDULE % key),
                    key, False)
                if status != 503 and status != 0:
                    break
                await asyncio.sleep(extra if status == 503 else 1)
            await conn.close()
            if status != 201 or extra != sid:
                mismatch.append("%s: %s %s, first %s" % (key, status, extra, sid))

    todo = [k for k, (s, _) in st.outcome.items() if s != 201]
    done = [(k, sid) for k, (s, sid) in st.outcome.items() if s == 201][:200]
    await asyncio.gather(*[again(k) for k in todo],
                         *[replay(k, sid) for k, sid in done])
    return mismatch


def pct(v, p):
    if not v:
        return 0.0
    v = sorted(v)
    return round(v[min(len(v) - 1, int(len(v) * p / 100))], 1)


async def main(a):
    st = Stats()
    t0 = time.monotonic()
    await asyncio.gather(*[client(i, a, st, t0 + a.seconds)
                           for i in range(a.clients)])
    elapsed = time.monotonic() - t0
    total = sum(st.status.values())
    ok = sum(c for s, c in st.status.items() if 200 <= s < 300)
    out = {
        "clients": a.clients, "seconds": round(elapsed, 2),
        "answers": total, "by_status": {str(k): v for k, v in sorted(st.status.items())},
        "served_per_second": round(ok / elapsed, 1),
        "p50_ms": pct(st.lat, 50), "p99_ms": pct(st.lat, 99),
        "share_503": round(st.status.get(503, 0) / total, 4) if total else 0,
        "transport_errors": st.transport,
    }
    if a.create:
        out["replay_mismatch"] = (await settle(a, st))[:10]
        out["keys"] = len(st.outcome)
        out["created"] = sum(1 for s, _ in st.outcome.values() if s == 201)
        out["not_created"] = [k for k, (s, _) in st.outcome.items() if s != 201][:10]
    out["bad"] = st.bad
    with open(a.out, "w") as f:
        json.dump(out, f)
        f.write("\n")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("token")
    p.add_argument("--clients", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=3)
    p.add_argument("--create", metavar="PREFIX")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    u = urllib.parse.urlsplit(a.url)
    if u.scheme != "http" or not u.hostname:
        p.error("URL must be http://HOST:PORT/...")
    a.host, a.port = u.hostname, u.port or 80
    a.hostport = u.netloc
    a.path = u.path + ("?" + u.query if u.query else "")
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = min(hard, max(soft, a.clients + 256))
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, ValueError, OSError):
        pass
    asyncio.run(main(a))
