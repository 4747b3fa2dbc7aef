#!/usr/bin/env python3
"""bench/agents.py: issue 19's "Measured": agent invocations and their
reports, cronvisor beside the seed's own stack (BullMQ), in one run.

  invocations  N one-job executions due together (N one-shot schedules
               targeting one agent, inserted with SQL before the instant),
               against bench/stubagent answering 200 (/ok) and then 202
               (/async); and N delayed BullMQ jobs due at the same kind of
               instant, taken by one Worker of concurrency C whose processor
               POSTs the same request (a copy of a body cronvisor sent, with
               fresh ids and token of the same lengths, and the same
               headers) to the same stub through Node's keep-alive
               http.Agent (bench/peers/bullmq_agent.js).
               invocations/s = N / (the last invocation's end as the system
               records it - the instant): cronvisor's runs.finished_at (200:
               the job completed) or jobs.enqueued_at (202: the agent
               accepted it, the job waits), BullMQ's finishedOn (ms).  The
               stub's own view (its last request's arrival) is kept beside.
  callbacks    every job the 202 stub accepted is reported "completed" twice
               through nginx (POST /api/v1/jobs/ID/complete, the attempt's
               token; wrk with bench/agents_report.lua, the two reports of a
               job raced on two connections).  completions/s = N / (last
               answer - first request); applied/s = N / (the last job's
               jobs.finished_at - first request): the supervisor took every
               report in.  Checks: N answers "recorded" and N "already
               recorded", nothing else; every job completed with one attempt
               and one report; the stub got no second request for any job.

CPU: every process of the system under test runs in a cgroup made for the
run (bench/workloads.py's): cronvisor's PostgreSQL (default durable
settings), cronvisord with its runner helper and runners, cronvisor-api and
nginx (idle but present during the invocations); BullMQ's redis-server and
worker.  CPU per invocation = the cgroup's CPU from 0.3 s before the instant
to the last invocation's end / N.  The stub runs in a cgroup of its own and
its CPU is reported apart, per request, for both systems; the clients
(psql inserting the schedules, BullMQ's enqueue, wrk) are outside both.
The BullMQ worker is idle until the instant; cronvisor's supervisor,
PostgreSQL and API are idle too.

usage: agents.py --build DIR [--jobs N] [--concurrency C] [--systems
       cronvisor,bullmq] [--wrk-connections K] [--out FILE]
       agents.py --build DIR --smoke    tiny counts, cronvisor only,
                                        correctness only (ctest bench_agents)
Prints the table and writes JSON to --out (bench/out/agents.json).
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import workloads as W  # noqa: E402  (the cgroup, PostgreSQL, Redis, windows)

SRC = os.path.dirname(HERE)
WARM = 4
log = W.log


# A request body of docs/agents.md's shape, for BullMQ when cronvisor sent
# none in this run (--systems bullmq); otherwise the stub's copy of
# cronvisor's first body is used.
TEMPLATE = {
    "jobId": "9e0e5a52-0c1d-4a6b-9f0e-6456cb14aa01", "executionId": "0c1d9e0e-5a52-4a6b-9f0e-6456cb14aa02",
    "scheduleId": "6456cb14-9e0e-4a6b-9f0e-0c1d5a52aa03", "runId": "sched-6456cb14-n1-rc0",
    "version": None, "attempt": 1, "params": {"n": 0},
    "callback": {"url": "http://127.0.0.1:8080/api/v1/jobs/9e0e5a52-0c1d-4a6b-9f0e-6456cb14aa01/complete",
                 "heartbeatUrl": "http://127.0.0.1:8080/api/v1/jobs/9e0e5a52-0c1d-4a6b-9f0e-6456cb14aa01/heartbeat",
                 "token": "0" * 64, "deadline": "2026-11-26T05:10:02.437Z", "heartbeatSeconds": None}}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def stack_sh(fn, *args):
    """Runs one function of scripts/stack-lib.sh (the harnesses' pieces)."""
    W.run(["sh", "-c", '. "$0/scripts/stack-lib.sh" && "$@"', SRC, fn] + list(args))


class Cronvisor:
    """PostgreSQL, cronvisor-api behind nginx and cronvisord, in the cgroup,
    configured as tests/api-harness.sh does but with the limits of the
    benchmark and without its short heartbeat."""

    def __init__(self, a, d):
        self.d = d
        self.pg = W.Postgres(d)
        W.run([os.path.join(a.build, "cronvisorctl"), "db", "migrate", "--database", self.pg.url])
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        conf = os.path.join(d, "cronvisor.conf")
        sock = os.path.join(d, "api.sock")
        # The global request limit and the agents' own (below) at the
        # BullMQ worker's concurrency; max_concurrent_runs above it, and
        # the one owner allowed the whole pool (its default is half).
        # Each daemon's connections carry its own application_name, so that
        # the PostgreSQL backends' CPU can be told apart (backend_split()).
        self.conf_api = os.path.join(d, "cronvisor-api.conf")
        stack_sh("stack_write_conf", self.conf_api, self.pg.url + " application_name=cronvisor-api",
                 str(self.port), sock, "bench", "log_level = warn")
        stack_sh("stack_write_conf", conf, self.pg.url + " application_name=cronvisord",
                 str(self.port), sock, "bench",
                 "log_level = warn\nmax_concurrent_runs = %d\nowner_max_running = %d\n"
                 "max_concurrent_requests = %d\nowner_max_schedules = 0"
                 % (a.max_runs, a.max_runs, a.concurrency))
        self.api = W.start("cronvisor-api", [os.path.join(a.build, "cronvisor-api"), "-f", self.conf_api],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=open(os.path.join(d, "api.log"), "w"))
        W.wait_until(lambda: os.path.exists(sock) or self.api.poll() is not None, 10, "the API's socket")
        stack_sh("stack_write_nginx", d, str(self.port), sock, os.path.join(d, "nginx.pid"),
                 os.path.join(d, "nginx.log"), os.path.join(d, "receiver.log"), SRC)
        self.nginx = W.start("nginx", ["nginx", "-p", d, "-c", os.path.join(d, "nginx.conf"),
                                       "-e", os.path.join(d, "nginx.log")],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        W.wait_until(lambda: self.get_code("/static.json") == 200, 10, "nginx")
        self.cvd = W.start("cronvisord", [os.path.join(a.build, "cronvisord"), "-f", conf],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=open(os.path.join(d, "cronvisord.log"), "w"))
        self.token = W.run([os.path.join(a.build, "cronvisorctl"), "token", "create", "--owner", "bench",
                            "--role", "editor", "--database", self.pg.url]).strip()
        W.wait_until(lambda: self.get_code("/api/v1/health") == 200, 15, "the API's health")
        if self.cvd.poll() is not None:
            raise RuntimeError("cronvisord exited: " + open(os.path.join(d, "cronvisord.log")).read())

    def get_code(self, path):
        try:
            with urllib.request.urlopen(self.base + path, timeout=2) as r:
                return r.status
        except (OSError, urllib.error.URLError):
            return 0

    def post(self, path, doc):
        req = urllib.request.Request(self.base + "/api/v1" + path, data=json.dumps(doc).encode(),
                                     method="POST", headers={"Content-Type": "application/json",
                                                             "Authorization": "Bearer " + self.token})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def agent(self, slug, url, concurrency):
        """An agent created as a user creates one, through the API."""
        self.post("/agents", {"agent_id": slug, "name": "bench " + slug, "endpoint": url,
                              "timeout_ms": 3600000, "max_concurrent_requests": concurrency})

    def insert(self, prefix, n, due_us, slug):
        """n one-shot schedules of owner bench named PREFIX<i>, due at
        due_us exactly, targeting agent slug with params {"n": i}; one
        transaction, then a wake (as bench/workloads.py inserts its own)."""
        self.pg.sql(
            "BEGIN; INSERT INTO schedules (name, owner, kind, at, next_run_at, next_slot_at, target) "
            "SELECT '%s' || g, 'bench', 'once', t, t, t, jsonb_build_object('type', 'agent', "
            "'agent', '%s', 'params', jsonb_build_object('n', g)) "
            "FROM generate_series(0, %d) g, "
            "LATERAL (SELECT timestamptz 'epoch' + %d * interval '1 microsecond' AS t) x; "
            "NOTIFY cronvisor_wake; COMMIT" % (prefix, slug, n - 1, due_us))

    def backend_split(self, win, n):
        """CPU ms per run of the PostgreSQL backends over window win, by
        their application_name (cronvisord's, the API's, others: psql)."""
        apps = dict(line.split("|", 1) for line in self.pg.sql(
            "SELECT pid, coalesce(nullif(application_name, ''), backend_type) "
            "FROM pg_stat_activity").splitlines())
        out = {}
        for pid, (title, own, _) in W.proc_cpu().items():
            if title.startswith("postgres: "):
                k = apps.get(str(pid), "other")
                out[k] = out.get(k, 0) + own - win.p0.get(pid, (title, 0, 0))[1]
        return {k: round(v / n, 3) for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v > 0}

    def ended(self, prefix):
        """How many runs of PREFIX schedules are no longer running (200:
        ended; 202: waiting for their report)."""
        return int(self.pg.sql(
            "SELECT count(*) FROM runs r JOIN schedules s ON s.id = r.schedule_id "
            "WHERE s.name LIKE '%s%%' AND r.status <> 'running'" % prefix))


class Stub:
    """bench/stubagent in a cgroup of its own; its log of requests."""

    def __init__(self, a, d):
        self.cg = W.Cgroup("cvbench-stub-%d" % os.getpid())
        self.log = os.path.join(d, "stub.log")
        pf = os.path.join(d, "stub.port")
        p = subprocess.Popen([os.path.join(a.build, "bench", "stubagent"), pf, self.log],
                             preexec_fn=self.cg.join if self.cg.path else None)
        W.procs.append(("stubagent", p))
        W.wait_until(lambda: os.path.exists(pf), 5, "the stub's port")
        self.url = "http://127.0.0.1:%d" % int(open(pf).read())

    def usec(self):
        return self.cg.usec()

    def size(self):
        try:
            return os.path.getsize(self.log)
        except OSError:
            return 0

    def count(self, since, path):
        """How many requests to path were logged after byte since."""
        with open(self.log, "rb") as f:
            f.seek(since)
            # since is a line's start: the stub writes whole lines
            return (b"\n" + f.read()).count(b"\n" + path.encode() + b" ")

    def lines(self, since, path):
        """(job, token, µs) of the requests to path logged after byte since."""
        time.sleep(0.05)  # the stub writes its log once per loop turn
        with open(self.log) as f:
            f.seek(since)
            out = []
            for line in f:
                p = line.split()
                if len(p) == 4 and p[0] == path:
                    out.append((p[1], p[2], int(p[3])))
        return out


def due_at(lead_s):
    return (int(time.time() + lead_s) + 1) * 1000000


def by_kind(bd):
    """The per-process CPU breakdown folded into kinds of process."""
    kinds = {}
    for title, v in bd.items():
        prog = (title.split() or ["(exited)"])[0].split("/")[-1]
        parts = [(prog, v["own"] + v["children"])]
        if title.startswith("postgres: "):
            parts = [("PostgreSQL backends", v["own"])]
        elif prog == "postgres":  # the postmaster: backends that exited
            parts = [("PostgreSQL postmaster", v["own"]), ("PostgreSQL backends", v["children"])]
        elif prog in ("cronvisord", "cronvisor-runner"):
            # HTTP and agent runners are forked by cronvisord itself
            parts = [(prog, v["own"]), ("runners (forked, reaped by %s)" % prog, v["children"])]
        elif prog.startswith("nginx"):
            parts = [("nginx", v["own"] + v["children"])]
        elif prog == "node":
            parts = [("node (BullMQ worker)", v["own"] + v["children"])]
        for k, x in parts:
            kinds[k] = round(kinds.get(k, 0.0) + x, 3)
    return dict(sorted(kinds.items(), key=lambda kv: -kv[1]))


def window_figures(cpu, stub0, stub1, n, due, end_us, stub_lines):
    """The figures of one invocation workload: cpu from its window, the
    stub's CPU (µs, before and after), its requests (Stub.lines)."""
    r = {"jobs": n, "cpu": cpu, "cpu_ms_per_invocation": cpu["cpu_ms_per_run"],
         "cpu_ms_per_invocation_machine": cpu["cpu_ms_per_run_machine"],
         "cpu_ms_by_kind": by_kind(cpu["ms_per_run_by_process"])}
    r["stub_cpu_ms_per_request"] = (round((stub1 - stub0) / 1000 / max(len(stub_lines), 1), 4)
                                    if stub1 is not None else None)
    r["stub_requests"] = len(stub_lines)
    r["stub_distinct_jobs"] = len(set(x[0] for x in stub_lines))
    if end_us:
        r["seconds"] = round((end_us - due) / 1e6, 3)
        r["invocations_per_second"] = round(n / ((end_us - due) / 1e6), 1)
    if stub_lines:
        last = max(x[2] for x in stub_lines)
        r["stub_last_request_after_due_s"] = round((last - due) / 1e6, 3)
        r["stub_requests_per_second"] = round(len(stub_lines) / ((last - due) / 1e6), 1)
    return r


# ---------------------------------------------------------------- cronvisor


def cv_invocations(cv, stub, path, slug, n, prefix):
    """One invocation workload: n schedules due together against path."""
    off = stub.size()
    due = due_at(2 + n / 3000)
    cv.insert(prefix, n, due, slug)
    W.sleep_until(due / 1e6 - 0.3)
    stub0 = stub.usec()
    win = W.Window()
    # The stub's log first (a file): every psql poll is a backend started
    # in the cgroup, some ms of CPU each, which would be counted against
    # the invocations; then PostgreSQL for the last records.
    W.wait_until(lambda: stub.count(off, path) >= n, 120 + n / 20, "%d %s requests" % (n, path),
                 step=0.1)
    W.wait_until(lambda: cv.ended(prefix) >= n, 60, "%d %s invocations" % (n, path), step=0.05)
    cpu, stub1 = win.close(n), stub.usec()
    pgsplit = cv.backend_split(win, n)
    col = ("r.finished_at" if path == "/ok" else "j.enqueued_at")
    row = cv.pg.sql(
        "SELECT floor(extract(epoch FROM max(%s)) * 1e6)::bigint, "
        "count(*) FILTER (WHERE r.status = '%s'), count(DISTINCT r.job_id), "
        "(SELECT string_agg(status || '=' || c, ' ') FROM (SELECT r2.status, count(*) c FROM runs r2 "
        "JOIN schedules s2 ON s2.id = r2.schedule_id WHERE s2.name LIKE '%s%%' GROUP BY 1) x) "
        "FROM runs r JOIN schedules s ON s.id = r.schedule_id JOIN jobs j ON j.id = r.job_id "
        "WHERE s.name LIKE '%s%%'" % (col, "succeeded" if path == "/ok" else "waiting", prefix, prefix))
    end, good, jobs, statuses = row.split("|")
    lines = stub.lines(off, path)
    r = window_figures(cpu, stub0, stub1, n, due, int(end), lines)
    r["ok"] = int(good)
    r["postgresql_backends_ms_by_application"] = pgsplit
    r["statuses"] = statuses
    r["checks"] = {"every job %s" % ("completed" if path == "/ok" else "waiting"): int(good) == n,
                   "one request per job": len(lines) == n and r["stub_distinct_jobs"] == n,
                   "one attempt per job": int(jobs) == n}
    log("cronvisor %s: %s" % (path, json.dumps({k: v for k, v in r.items() if k != "cpu"})))
    return r, lines


def cv_callbacks(a, cv, stub, d, accepted):
    """Each accepted job's report twice through nginx with wrk; see the top."""
    n = len(accepted)
    off = stub.size()
    rf = os.path.join(d, "reports")
    with open(rf, "w") as f:
        for job, token, _ in accepted:
            f.write("%s %s\n" % (job, token))
    done = os.path.join(d, "reports.done")
    os.mkdir(done)
    env = dict(os.environ, CV_REPORTS_FILE=rf, CV_REPORTS_THREADS=str(a.wrk_threads),
               CV_REPORTS_DONE=done)
    win = W.Window()
    t0 = W.now_us()
    wrk = subprocess.Popen(["wrk", "-t%d" % a.wrk_threads, "-c%d" % a.wrk_connections, "-d600s",
                            "--timeout", "10s", "-s", os.path.join(HERE, "agents_report.lua"), cv.base],
                           env=env, stdout=open(os.path.join(d, "wrk.out"), "w"), stderr=subprocess.STDOUT)
    W.procs.append(("wrk", wrk))
    try:
        W.wait_until(lambda: len(os.listdir(done)) >= a.wrk_threads, 60 + n / 50, "wrk's reports")
    finally:
        wrk.send_signal(signal.SIGINT)
        _, _, ru = os.wait4(wrk.pid, 0)
        wrk.returncode = 0
    wrk_ms = (ru.ru_utime + ru.ru_stime) * 1000

    def applied():
        return int(cv.pg.sql("SELECT count(*) FROM jobs j JOIN schedules s ON s.id = j.schedule_id "
                             "WHERE s.name LIKE 'a%%' AND j.status <> 'running' AND j.finished_at IS NOT NULL"))
    W.wait_until(lambda: applied() >= n, 60 + n / 50, "the reports applied", step=0.1)
    cpu = win.close(n)
    pgsplit = cv.backend_split(win, n)
    first, last, ans, rec, alr, oth, codes = None, 0, 0, 0, 0, 0, []
    for fn in os.listdir(done):
        p = open(os.path.join(done, fn)).read().split()
        if int(p[2]):
            first = int(p[0]) if first is None else min(first, int(p[0]))
        last = max(last, int(p[1]))
        ans, rec, alr, oth = ans + int(p[2]), rec + int(p[3]), alr + int(p[4]), oth + int(p[5])
        codes += p[6:]
    row = cv.pg.sql(
        "SELECT floor(extract(epoch FROM max(j.finished_at)) * 1e6)::bigint, "
        "count(*) FILTER (WHERE j.status = 'completed'), "
        "(SELECT count(*) FROM runs r JOIN schedules s2 ON s2.id = r.schedule_id WHERE s2.name LIKE 'a%%'), "
        "(SELECT count(*) FROM runs r JOIN schedules s2 ON s2.id = r.schedule_id WHERE s2.name LIKE 'a%%' "
        " AND r.status = 'succeeded' AND r.report IS NOT NULL AND r.report ->> 'status' = 'completed'), "
        "(SELECT count(*) FROM executions e JOIN schedules s2 ON s2.id = e.schedule_id "
        " WHERE s2.name LIKE 'a%%' AND e.status = 'success') "
        "FROM jobs j JOIN schedules s ON s.id = j.schedule_id WHERE s.name LIKE 'a%%'")
    fin, completed, runs, reported, executions = [int(x) for x in row.split("|")]
    r = {"jobs": n, "reports_sent": 2 * n, "answered": ans, "recorded": rec, "already_recorded": alr,
         "other_answers": oth, "codes": codes, "wrk": "-t%d -c%d" % (a.wrk_threads, a.wrk_connections),
         "cpu": cpu, "cpu_ms_per_completion": cpu["cpu_ms_per_run"],
         "cpu_ms_per_completion_machine": cpu["cpu_ms_per_run_machine"],
         "cpu_ms_by_kind": by_kind(cpu["ms_per_run_by_process"]),
         "wrk_cpu_ms_per_completion": round(wrk_ms / n, 4),
         "postgresql_backends_ms_by_application": pgsplit}
    if first:
        r["answer_seconds"] = round((last - first) / 1e6, 3)
        r["completions_per_second"] = round(n / ((last - first) / 1e6), 1)
        r["reports_per_second"] = round(2 * n / ((last - first) / 1e6), 1)
        r["applied_seconds"] = round((fin - first) / 1e6, 3)
        r["applied_per_second"] = round(n / ((fin - first) / 1e6), 1)
    r["wrk_start_to_first_request_ms"] = round(((first or t0) - t0) / 1000, 1)
    r["checks"] = {"each job recorded once": rec == n,
                   "each second report answered 200 already recorded": alr == n,
                   "no other answer": oth == 0 and ans == 2 * n,
                   "every job completed": completed == n,
                   "one attempt per job, succeeded with its report": runs == n and reported == n,
                   "every execution success": executions == n,
                   "no job requested again": stub.count(off, "/async") == 0}
    log("cronvisor callbacks: %s" % json.dumps({k: v for k, v in r.items() if k != "cpu"}))
    return r


def bench_cronvisor(a, stub):
    d = W.workdir("cva", shared=True)
    cv = Cronvisor(a, d)
    cv.agent("stub-ok", stub.url + "/ok", a.concurrency)
    cv.agent("stub-async", stub.url + "/async", a.concurrency)
    res = {"max_concurrent_requests": a.concurrency, "agent_max_concurrent_requests": a.concurrency,
           "max_concurrent_runs": a.max_runs,
           "postgresql": "defaults (fsync, synchronous_commit, full_page_writes on)"}
    # Warm-up: both agents' first requests, not measured (and the bodies
    # BullMQ copies).
    for slug, path, pre in (("stub-ok", "/ok", "wo"), ("stub-async", "/async", "wa")):
        cv.insert(pre, WARM, due_at(0.2), slug)
        W.wait_until(lambda: cv.ended(pre) >= WARM, 30, "warm-up %s" % path, step=0.1)
    res["ok"], _ = cv_invocations(cv, stub, "/ok", "stub-ok", a.jobs, "o")
    res["async"], accepted = cv_invocations(cv, stub, "/async", "stub-async", a.jobs, "a")
    if a.callbacks:
        res["callbacks"] = cv_callbacks(a, cv, stub, d, accepted)
    res["supervisor_memory_kb"] = W.supervisor_memory(cv.cvd.pid)
    return res


# ---------------------------------------------------------------- BullMQ


def bench_bullmq(a, stub):
    d = W.workdir("cvq")
    js = os.path.join(HERE, "peers", "bullmq_agent.js")
    redis = W.Redis(d)
    W.start("bullmq worker", ["node", js, "worker", redis.sock, str(a.concurrency), stub.url],
            stdout=open(os.path.join(d, "worker.log"), "w"), stderr=subprocess.STDOUT)
    tpl = {"/ok": stub.log + ".ok", "/async": stub.log + ".async"}
    for f in tpl.values():
        if not os.path.exists(f):  # --systems bullmq: cronvisor sent none
            with open(f, "w") as fh:
                json.dump(TEMPLATE, fh)
    res = {"concurrency": a.concurrency, "keep_alive": True, "redis": "no persistence (as in bench/workloads.py)"}
    total = [0]

    def finished():
        return sum(int(redis.cli("ZCARD", "bull:agents:" + k) or 0) for k in ("completed", "failed"))

    def workload(prefix, n, path, lead):
        off = stub.size()
        due = due_at(lead)
        W.run(["node", js, "enqueue", redis.sock, prefix, str(n), str(due), path, tpl[path]], timeout=300)
        total[0] += n
        return off, due

    off, due = workload("w", WARM, "/ok", 0.5)
    W.wait_until(lambda: finished() >= total[0], 30, "BullMQ warm-up")
    for key, path, prefix in (("ok", "/ok", "o"), ("async", "/async", "a")):
        off, due = workload(prefix, a.jobs, path, 3 + a.jobs / 2000)
        W.sleep_until(due / 1e6 - 0.3)
        stub0 = stub.usec()
        win = W.Window()
        W.wait_until(lambda: finished() >= total[0], 120 + a.jobs / 20, "BullMQ %s" % path, step=0.1)
        # the window ends here: collect's reading of every job is not counted
        cpu, stub1 = win.close(a.jobs), stub.usec()
        lines = stub.lines(off, path)
        r = window_figures(cpu, stub0, stub1, a.jobs, due, None, lines)
        c = json.loads(W.run(["node", js, "collect", redis.sock, str(total[0]), "10", prefix]))
        r["ok"], r["failed"] = c["ok"], c["failed"]
        if c["last_finished_us"]:
            r["seconds"] = round((c["last_finished_us"] - due) / 1e6, 3)
            r["invocations_per_second"] = round(a.jobs / r["seconds"], 1)
        r["checks"] = {"every job completed": c["ok"] == a.jobs,
                       "one request per job": len(lines) == a.jobs and r["stub_distinct_jobs"] == a.jobs}
        res[key] = r
        log("bullmq %s: %s" % (path, json.dumps({k: v for k, v in r.items() if k != "cpu"})))
    return res


# ---------------------------------------------------------------- report


def fmt(v, nd=1):
    return W.fmt(v, nd)


def table(R):
    out = ["| system | agent answers | jobs | invocations/s | CPU ms/invocation | machine CPU ms/inv. "
           "| stub CPU ms/request | stub's last request after the instant (s) | checks |",
           "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for sysname, label in (("cronvisor", "cronvisor (max_concurrent_requests %s, agent's %s)"),
                           ("bullmq", "BullMQ (concurrency %s, keep-alive)")):
        S = R.get(sysname)
        if not S:
            continue
        name = (label % (S["max_concurrent_requests"], S["agent_max_concurrent_requests"])
                if sysname == "cronvisor" else label % S["concurrency"])
        for key, ans in (("ok", "200"), ("async", "202")):
            w = S.get(key)
            if not w:
                continue
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                name, ans, fmt(w["jobs"]), fmt(w.get("invocations_per_second"), 0),
                fmt(w["cpu_ms_per_invocation"], 2), fmt(w["cpu_ms_per_invocation_machine"], 2),
                fmt(w["stub_cpu_ms_per_request"], 3), fmt(w.get("stub_last_request_after_due_s"), 2),
                "ok" if all(w["checks"].values()) else "FAILED"))
    C = (R.get("cronvisor") or {}).get("callbacks")
    if C:
        out += ["", "| callbacks through nginx (%s, each report sent twice) | value |" % C["wrk"], "|---|---:|"]
        for k, lab in (("jobs", "jobs waiting, reported twice each"),
                       ("completions_per_second", "completions/s (answers: N / last answer - first request)"),
                       ("reports_per_second", "reports answered/s (2N)"),
                       ("applied_per_second", "applied/s (N / last job finished - first request)"),
                       ("cpu_ms_per_completion", "CPU ms per completion (nginx, API, PostgreSQL, cronvisord)"),
                       ("wrk_cpu_ms_per_completion", "wrk's CPU ms per completion (not counted above)"),
                       ("recorded", "answered 200 recorded"), ("already_recorded", "answered 200 already recorded"),
                       ("other_answers", "other answers")):
            out.append("| %s | %s |" % (lab, fmt(C.get(k), 2)))
        out.append("| checks | %s |" % ("ok" if all(C["checks"].values()) else
                                        "FAILED: " + ", ".join(k for k, v in C["checks"].items() if not v)))
    return "\n".join(out)


def ratios(R):
    r = {}
    C, B = R.get("cronvisor"), R.get("bullmq")
    for key in ("ok", "async"):
        if C and B and C.get(key) and B.get(key) and B[key].get("invocations_per_second"):
            r["rate_vs_bullmq_" + key] = round(C[key]["invocations_per_second"] /
                                               B[key]["invocations_per_second"], 3)
            r["cpu_vs_bullmq_" + key] = round(C[key]["cpu_ms_per_invocation"] /
                                              B[key]["cpu_ms_per_invocation"], 3)
    cb = (C or {}).get("callbacks")
    if cb:
        r["completions_per_second"] = cb.get("completions_per_second")
        r["applied_per_second"] = cb.get("applied_per_second")
    r["goals"] = {"rate_vs_bullmq_ok": ">= 2", "rate_vs_bullmq_async": ">= 2",
                  "cpu_vs_bullmq_ok": "<= 0.5", "cpu_vs_bullmq_async": "<= 0.5",
                  "completions_per_second": ">= 2000", "applied_per_second": ">= 2000"}
    return r


def ratio_lines(r):
    return ["%-26s %10s   goal %s" % (k, r[k], r["goals"].get(k, "")) for k in
            ("rate_vs_bullmq_ok", "cpu_vs_bullmq_ok", "rate_vs_bullmq_async", "cpu_vs_bullmq_async",
             "completions_per_second", "applied_per_second") if k in r]


def kinds_lines(R):
    out = []
    for sysname in ("cronvisor", "bullmq"):
        for key in ("ok", "async", "callbacks"):
            w = (R.get(sysname) or {}).get(key)
            if w:
                out.append("  %s %s: %s" % (sysname, key, "; ".join(
                    "%s %.3f" % kv for kv in w["cpu_ms_by_kind"].items())))
                if w.get("postgresql_backends_ms_by_application"):
                    out.append("    PostgreSQL backends by application: %s" % "; ".join(
                        "%s %.3f" % kv for kv in w["postgresql_backends_ms_by_application"].items()))
    return ["CPU ms per invocation (completion) by process kind:"] + out if out else []


def checks_ok(R):
    ok = True
    for sysname in ("cronvisor", "bullmq"):
        for key in ("ok", "async", "callbacks"):
            w = (R.get(sysname) or {}).get(key)
            if w:
                for k, v in w["checks"].items():
                    if not v:
                        log("agents: %s %s: check failed: %s" % (sysname, key, k))
                        ok = False
    return ok


def run_systems(a, name, R, bench_cv, bench_bq, ratios, table):
    """A benchmark's systems in one run: its cgroup (cvbench-NAME), a
    directory and the stub; bench_cv(a, stub) and bench_bq(a, stub) for
    those of a.systems; the load before and after, the ratios and the
    table into R (the figures given), written to a.out unless a.smoke;
    the table printed.  Returns R."""
    a.build = os.path.abspath(a.build)
    systems = a.systems.split(",")
    W.CG = W.Cgroup("cvbench-%s-%d" % (name, os.getpid()))
    d = W.workdir("cvs", shared=True)
    with open("/proc/loadavg") as f:
        R["loadavg_before"] = f.read().split()[:3]
    R.update({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "other_processes": W.busiest(),
              "cpu_accounting": "cgroup v%s of the system's processes, the stub's apart; "
              "machine = /proc/stat busy" % (W.CG.kind if W.CG.path else "-")})
    stub = Stub(a, d)
    if "cronvisor" in systems:
        R["cronvisor"] = bench_cv(a, stub)
    if "bullmq" in systems:
        R["bullmq"] = bench_bq(a, stub)
    with open("/proc/loadavg") as f:
        R["loadavg_after"] = f.read().split()[:3]
    R["ratios"] = ratios(R)
    R["table_markdown"] = table(R)
    if not a.smoke:
        W.write_json(a.out, R)
    print(R["table_markdown"])
    print()
    return R


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--concurrency", type=int, default=50,
                    help="BullMQ's concurrency, and cronvisor's max_concurrent_requests and the agents'")
    ap.add_argument("--max-runs", type=int, default=64, help="cronvisor's max_concurrent_runs")
    ap.add_argument("--systems", default="cronvisor,bullmq")
    ap.add_argument("--no-callbacks", dest="callbacks", action="store_false")
    ap.add_argument("--wrk-threads", type=int, default=2)
    ap.add_argument("--wrk-connections", type=int, default=32)
    ap.add_argument("--smoke", action="store_true", help="20 jobs, cronvisor only, checks only")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "agents.json"))
    a = ap.parse_args()
    if a.smoke:
        a.jobs, a.systems, a.concurrency = 20, "cronvisor", 4
    R = run_systems(a, "agents", {"jobs": a.jobs, "concurrency": a.concurrency},
                    bench_cronvisor, bench_bullmq, ratios, table)
    print("\n".join(ratio_lines(R["ratios"]) + kinds_lines(R)))
    if not checks_ok(R):
        sys.exit(1)
    if a.smoke:
        print("agents smoke: every check passed")


if __name__ == "__main__":
    W.run_main(main)
