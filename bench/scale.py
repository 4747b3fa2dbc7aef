#!/usr/bin/env python3
"""bench/scale.py: the helpers of bench/scale.sh (the million-schedule step
of issue 7).  Stdlib only.

  scale.py gen --count N --first I --out FILE [--quiet S] [--seed X]
      N schedule documents, JSON lines, named scale-I..scale-(I+N-1):
      half interval (1 h to 7 d), half cron (daily, weekly, monthly and
      yearly expressions in nine time zones, DST zones among them), each
      with its next run at a random instant between now + S seconds
      (default 7200: the quiet window the measurements run in) and now +
      24 h, so that the next runs are spread over the day and none falls
      in the window.  Interval schedules get it as start_at; cron
      schedules get an expression whose next local match is that instant.
  scale.py start --build DIR --database URL --out FILE [--label L]
      starts cronvisord on the database with a probe schedule due now and
      measures: process start to its "started" log line, process start to
      the probe's claim (runs.started_at), VmRSS/VmHWM of the idle
      supervisor 3 s later; stops it.  Writes JSON to FILE.
  scale.py explain --src DIR --database URL --out FILE --at EPOCH
      EXPLAIN (ANALYZE, BUFFERS) of the supervisor's queries that read
      schedules, taken from the C sources (supervisor/claim.c's claim,
      cronvisord.c's next-deadline query, prune.c's deleted-schedule sweep)
      with nothing due (now) and with many due (EPOCH), custom and generic
      plans, each in a transaction rolled back.  Writes JSON to FILE.
"""
import argparse
import datetime as dt
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
import zoneinfo

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney",
         "Asia/Kolkata", "America/Los_Angeles", "Europe/London", "Asia/Kathmandu"]
INTERVALS = [3600, 5400, 7200, 10800, 21600, 43200, 86400, 90000, 604800]
TARGET = {"type": "exec", "argv": ["/bin/true"]}


def gen(a):
    rnd = random.Random(a.seed + a.first)
    now = time.time()
    lo, hi = now + a.quiet, now + 86400 - 60
    with open(a.out, "w") as f:
        for i in range(a.first, a.first + a.count):
            t = int(rnd.uniform(lo, hi)) // 60 * 60 + 60  # a whole minute, ahead
            doc = {"name": "scale-%d" % i, "max_retries": 0, "target": TARGET}
            if i % 2 == 0:
                doc["kind"] = "interval"
                doc["interval_seconds"] = rnd.choice(INTERVALS)
                doc["start_at"] = dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime(
                    "%Y-%m-%dT%H:%M:%SZ")
            else:
                tz = ZONES[i // 2 % len(ZONES)]
                lt = dt.datetime.fromtimestamp(t, zoneinfo.ZoneInfo(tz))
                # daily, weekly, monthly, yearly: the next local match is t
                # (a daily one's previous match, t - 24 h, is in the past)
                form = i // 2 // len(ZONES) % 4
                day = ["*", "*", str(lt.day), str(lt.day)][form]
                mon = ["*", "*", "*", str(lt.month)][form]
                dow = ["*", str(lt.isoweekday() % 7), "*", "*"][form]
                doc["kind"] = "cron"
                doc["cron"] = "%d %d %s %s %s" % (lt.minute, lt.hour, day, mon, dow)
                doc["timezone"] = tz
            f.write(json.dumps(doc, separators=(",", ":")) + "\n")


def psql(url, sql):
    return subprocess.run(["psql", "-X", "-qAt", "-v", "ON_ERROR_STOP=1", url, "-c", sql],
                          check=True, stdout=subprocess.PIPE, text=True, timeout=600).stdout.strip()


def memory(pid):
    r = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k = line.split(":")[0]
            if k in ("VmRSS", "VmHWM"):
                r[k + "_kb"] = int(line.split()[1])
    return r


def start(a):
    d = tempfile.mkdtemp(prefix="cvscale", dir="/tmp")
    conf = os.path.join(d, "cronvisor.conf")
    logf = os.path.join(d, "cronvisord.log")
    with open(conf, "w") as f:
        f.write('database_url = "%s"\nlog_level = info\nmax_concurrent_runs = 4\n' % a.database)
    psql(a.database, "INSERT INTO schedules (name, owner, kind, at, next_run_at, next_slot_at, target) "
         "VALUES ('probe', 'probe', 'once', now(), now(), now(), "
         "'{\"type\": \"exec\", \"argv\": [\"/bin/true\"]}')")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRONVISOR_")}
    t0 = time.time()
    p = subprocess.Popen([os.path.join(a.build, "cronvisord"), "-f", conf], stderr=open(logf, "w"),
                         env=env)
    r = {"label": a.label}
    try:
        ready = claim = None
        limit = t0 + 300
        while (ready is None or claim is None) and time.time() < limit and p.poll() is None:
            if ready is None and " started (version" in open(logf).read():
                ready = time.time()
            if claim is None:
                v = psql(a.database, "SELECT extract(epoch FROM r.started_at) FROM runs r JOIN "
                         "schedules s ON s.id = r.schedule_id WHERE s.owner = 'probe'")
                if v:
                    claim = float(v)
            time.sleep(0.005)
        if ready is None or claim is None:
            raise RuntimeError("cronvisord did not start: " + open(logf).read()[-2000:])
        r["start_to_ready_ms"] = round((ready - t0) * 1000, 1)
        r["start_to_first_claim_ms"] = round((claim - t0) * 1000, 1)
        time.sleep(3)
        r.update(memory(p.pid))
        r["schedules"] = int(psql(a.database, "SELECT count(*) FROM schedules"))
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        psql(a.database, "DELETE FROM schedules WHERE owner = 'probe'")
        subprocess.run(["rm", "-rf", d])
    with open(a.out, "w") as f:
        json.dump(r, f, indent=1)
    print(json.dumps(r))


def statements(srcdir):
    """The named statements of sql/queries/*.sql, {{columns}} expanded, as
    cmake/embed_queries.cmake embeds them: a "-- name: N" header starts a
    statement, a "-- columns: N" one a column list; comment lines go."""
    names, cols, cur, kind = {}, {}, None, None
    qdir = os.path.join(srcdir, "sql", "queries")
    for fn in sorted(os.listdir(qdir)):
        if not fn.endswith(".sql"):
            continue
        with open(os.path.join(qdir, fn)) as f:
            for line in f:
                m = re.match(r"--\s*(name|columns):\s*(\w+)", line)
                if m:
                    kind, cur = m.group(1), m.group(2)
                    (names if kind == "name" else cols)[cur] = []
                    continue
                if cur is None or line.lstrip().startswith("--"):
                    continue
                code = re.sub(r"\s*--.*$", "", line.rstrip("\n"))
                if code.strip():
                    (names if kind == "name" else cols)[cur].append(code)
    cols = {k: " ".join(v) for k, v in cols.items()}
    out = {}
    for k, v in names.items():
        text = " ".join(v).strip().rstrip(";")
        out[k] = re.sub(r"\{\{(\w+)\}\}", lambda m: cols[m.group(1)], text)
    return out


def queries(srcdir):
    st = statements(srcdir)
    return {"claim": st["claim_due"], "next_deadline": st["cronvisord_next_due"],
            "prune_deleted": st["prune_deleted"]}


def explain(a):
    q = queries(a.src)
    now = int(time.time())
    res = {"queries": q, "cases": []}
    # The claim's $2 is the instant claim_ahead_ms from now, $3 now; the
    # next-deadline query's $1 is claim_ahead_ms (50, the default).
    # $4 is the ranking window: ten per row, at least 100 (claim.c).
    cases = [("claim, nothing due (now)", "claim", [100, now, now, 1000]),
             ("claim, many due (LIMIT 100)", "claim", [100, a.at, a.at, 1000]),
             ("next deadline (every loop turn)", "next_deadline", [50]),
             ("deleted-schedule sweep (every heartbeat)", "prune_deleted", [])]
    for label, name, params in cases:
        for mode in ("custom", "generic"):
            if mode == "generic" and not params:
                continue
            types = {"claim": "(bigint, double precision, double precision, bigint)",
                     "next_deadline": "(bigint)"}.get(name, "")
            args = "(%s)" % ", ".join(str(x) for x in params) if params else ""
            sql = ("BEGIN; SET LOCAL plan_cache_mode = force_%s_plan; PREPARE q%s AS %s; "
                   "EXPLAIN (ANALYZE, BUFFERS) EXECUTE q%s; ROLLBACK"
                   % (mode, types, q[name], args))
            out = psql(a.database, sql)
            t = re.search(r"Execution Time: ([0-9.]+) ms", out)
            pl = re.search(r"Planning Time: ([0-9.]+) ms", out)
            bufs = re.findall(r"Buffers: (.*)", out)
            res["cases"].append({"case": label, "plan_mode": mode,
                                 "execution_ms": float(t.group(1)) if t else None,
                                 "planning_ms": float(pl.group(1)) if pl else None,
                                 "top_buffers": bufs[0] if bufs else None,
                                 "plan": out})
            print("%-42s %-8s %10s ms  %s" % (label, mode, t.group(1) if t else "?",
                                            bufs[0] if bufs else ""))
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--count", type=int, required=True)
    g.add_argument("--first", type=int, default=0)
    g.add_argument("--quiet", type=int, default=7200)
    g.add_argument("--seed", type=int, default=7)
    g.add_argument("--out", required=True)
    s = sub.add_parser("start")
    s.add_argument("--build", required=True)
    s.add_argument("--database", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--label", default="")
    e = sub.add_parser("explain")
    e.add_argument("--src", required=True)
    e.add_argument("--database", required=True)
    e.add_argument("--out", required=True)
    e.add_argument("--at", type=int, required=True)
    a = ap.parse_args()
    {"gen": gen, "start": start, "explain": explain}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
