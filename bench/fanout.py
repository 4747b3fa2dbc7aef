#!/usr/bin/env python3
"""bench/fanout.py: issue 20's "Measured": fan-out and pipelines, cronvisor
beside the seed's own stack (BullMQ), in one run.

  expansion  a once schedule whose agent target has the data-source param
             db:items:all:id?batchSize=100&staggerDelay=0 over a table of
             N rows (10,000; --quick 1,000) fires: the expansion writes N
             jobs in one transaction, and every job goes to
             bench/stubagent answering 202 (/async).  Figures from the
             instant: the plan committed (metadata.planned_at; the
             expansion = from the slot's claim, up to claim_ahead_ms
             before the instant, to then), the first
             and the last request the stub got, the last job accepted
             (jobs.enqueued_at, cronvisor's record); jobs/s = N / (the last
             acceptance - the instant); CPU per job.  BullMQ: the same N
             requests (a copy of a body cronvisor sent) added with addBulk
             (bench/peers/bullmq_agent.js enqueue, no delay) while a Worker
             of concurrency C POSTs them through a keep-alive agent; jobs/s
             = N / (the last job's finishedOn - the start of the adds).
             Then the expansion alone of 100,000 rows (--quick 10,000):
             the expansion's time and CPU (its batches an hour apart, so that
             only the first goes; the schedule is then deleted), beside
             BullMQ's addBulk of as many jobs (no worker).
  stagger    1,000 rows in 100 batches of 10, 1 s apart (--quick 20
             batches), to the stub answering 200: each request's arrival
             against its batch's planned start (the firing plus batch ×
             1,000 ms): never early; p50, p99, max, beside the spread lag
             p99 of bench/out/workloads.json when bench/run measured it.
  dag hop    a pipeline a -> b -> c fanned out over 1,000 contexts
             (--quick 200), batch 1,000, no stagger, each step an agent at
             the stub answering 200: hop = the dependent's request at the
             stub - the step's end as the system records it (cronvisor:
             runs.finished_at, µs; BullMQ: finishedOn, ms); p50, p99, max.
             BullMQ: the same chains as flows (FlowProducer: c the parent
             of b, the parent of a), one Worker of concurrency C POSTing
             each step to the stub (bench/peers/bullmq_agent.js flow-add).

CPU: as bench/agents.py (the system's processes in a cgroup made for the
run, the stub apart).  cronvisor runs with max_concurrent_requests C (the
agents' own the same) and max_concurrent_runs 64.

usage: fanout.py --build DIR [--quick] [--concurrency C] [--systems
       cronvisor,bullmq] [--out FILE]
       fanout.py --build DIR --smoke    tiny counts, cronvisor only,
                                        checks only (ctest bench_fanout)
Prints the table and writes JSON to --out (bench/out/fanout.json).
"""
import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import workloads as W  # noqa: E402
import agents as A  # noqa: E402  (the stack, the stub, the figures)

log = W.log


def iso(us):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(us // 1000000)) + ".%03dZ" % (us // 1000 % 1000)


def pcts(v):
    """min, p50, p99 and max of v (ms), rounded."""
    v = sorted(v)
    return {"n": len(v), "min": round(v[0], 3) if v else None,
            "p50": round(W.pct(v, 0.5), 3) if v else None,
            "p99": round(W.pct(v, 0.99), 3) if v else None,
            "max": round(v[-1], 3) if v else None}


class Stack(A.Cronvisor):
    """agents.py's stack, with an admin token (to register tables)."""

    def __init__(self, a, d):
        A.Cronvisor.__init__(self, a, d)
        self.admin = W.run([os.path.join(a.build, "cronvisorctl"), "token", "create", "--owner", "ops",
                            "--role", "admin", "--database", self.pg.url]).strip()

    def call(self, method, path, doc=None, admin=False):
        req = urllib.request.Request(
            self.base + "/api/v1" + path, method=method,
            data=None if doc is None else json.dumps(doc).encode(),
            headers={"Content-Type": "application/json",
                     "Authorization": "Bearer " + (self.admin if admin else self.token)})
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
            return json.loads(body) if body else None

    def table(self, name, n):
        """A table name of n ids, registered for strings."""
        self.pg.sql("CREATE TABLE %s (id integer PRIMARY KEY); "
                    "INSERT INTO %s SELECT generate_series(0, %d); "
                    "GRANT SELECT ON %s TO cronvisor_reader" % (name, name, n - 1, name))
        self.call("POST", "/data-sources", {"name": name, "relation": name, "key": "id",
                                            "columns": ["id"]}, admin=True)

    def once(self, name, due_us, target, retries=0):
        return self.call("POST", "/schedules", {"name": name, "at": iso(due_us), "target": target,
                                                "max_retries": retries})["id"]

    def one(self, sql):
        return self.pg.sql(sql).strip()


def us_of(col):
    return "floor(extract(epoch FROM %s) * 1e6)::bigint" % col


# ---------------------------------------------------------------- cronvisor


def cv_expansion(a, cv, stub, n):
    """N values expanded and every job sent to the 202 stub."""
    cv.table("items", n)
    off = stub.size()
    due = A.due_at(2)
    sid = cv.once("fan", due, {"type": "agent", "agent": "fan",
                               "params": {"id": "db:items:all:id?batchSize=100&staggerDelay=0"}})
    W.sleep_until(due / 1e6 - 0.3)
    stub0 = stub.usec()
    win = W.Window()
    W.wait_until(lambda: stub.count(off, "/async") >= n, 120 + n / 20, "%d fan-out requests" % n, step=0.1)
    W.wait_until(lambda: cv.one("SELECT count(*) FROM jobs WHERE schedule_id = '%s' AND enqueued_at IS NOT NULL"
                                % sid) == str(n), 60, "%d jobs accepted" % n, step=0.05)
    cpu, stub1 = win.close(n), stub.usec()
    row = cv.one("SELECT %s, %s, x.jobs_created, count(DISTINCT r.job_id), count(r.id), "
                 "(SELECT %s FROM runs f WHERE f.id = x.run_id) "
                 "FROM executions x JOIN jobs j ON j.execution_id = x.id "
                 "LEFT JOIN runs r ON r.job_id = j.id AND r.kind = 'job' "
                 "WHERE x.schedule_id = '%s' GROUP BY x.id"
                 % (us_of("(x.metadata ->> 'planned_at')::timestamptz"), us_of("max(j.enqueued_at)"),
                    us_of("f.created_at"), sid))
    planned, last, created, jobs, attempts, claimed = (int(x) for x in row.split("|"))
    lines = stub.lines(off, "/async")
    r = A.window_figures(cpu, stub0, stub1, n, due, last, lines)
    r["plan_committed_s"] = round((planned - due) / 1e6, 3)
    r["expansion_s"] = round((planned - claimed) / 1e6, 3)
    if lines:
        r["first_request_s"] = round((min(x[2] for x in lines) - due) / 1e6, 3)
    r["jobs_per_second"] = r.pop("invocations_per_second", None)
    r["checks"] = {"every value a job": created == n, "one request per job":
                   len(lines) == n and r["stub_distinct_jobs"] == n,
                   "one attempt per job": jobs == n and attempts == n}
    log("cronvisor expansion %d: %s" % (n, json.dumps({k: v for k, v in r.items() if k != "cpu"})))
    cv.call("DELETE", "/schedules/" + sid)
    return r


def cv_plan_only(a, cv, n):
    """The expansion alone of n values (batches an hour apart)."""
    cv.table("many", n)
    due = A.due_at(2)
    sid = cv.once("plan", due, {"type": "agent", "agent": "fan",
                                "params": {"id": "db:many:all:id?batchSize=100&staggerDelay=3600000"}})
    W.sleep_until(due / 1e6 - 0.3)
    win = W.Window()
    W.wait_until(lambda: cv.one("SELECT count(*) FROM executions WHERE schedule_id = '%s' "
                                "AND metadata ? 'planned_at'" % sid) == "1", 120 + n / 500,
                 "the plan of %d" % n, step=0.05)
    cpu = win.close(n)
    planned, created, claimed = cv.one(
        "SELECT %s, x.jobs_created, %s FROM executions x JOIN runs f ON f.id = x.run_id "
        "WHERE x.schedule_id = '%s'" % (us_of("(x.metadata ->> 'planned_at')::timestamptz"),
                                        us_of("f.created_at"), sid)).split("|")
    # the slot is claimed up to claim_ahead_ms before its instant, and
    # expanded right after the claim's commit
    secs = (int(planned) - int(claimed)) / 1e6
    r = {"jobs": n, "plan_committed_s": round((int(planned) - due) / 1e6, 3),
         "expansion_s": round(secs, 3), "jobs_per_second": round(n / secs, 1),
         "cpu_ms_per_job": cpu["cpu_ms_per_run"], "cpu": cpu,
         "checks": {"every value a job": int(created) == n}}
    log("cronvisor plan %d: %s" % (n, json.dumps({k: v for k, v in r.items() if k != "cpu"})))
    cv.call("DELETE", "/schedules/" + sid)
    return r


def cv_stagger(a, cv, stub, batches):
    """batches × 10 values, 1 s apart, to the 200 stub: lateness."""
    n = batches * 10
    cv.table("spaced", n)
    off = stub.size()
    due = A.due_at(2)
    sid = cv.once("stagger", due, {"type": "agent", "agent": "ok",
                                   "params": {"id": "db:spaced:all:id?batchSize=10&staggerDelay=1000"}})
    W.sleep_until(due / 1e6 + batches)
    W.wait_until(lambda: stub.count(off, "/ok") >= n, 60 + batches, "%d staggered requests" % n, step=0.2)
    plan = dict(line.split("|") for line in cv.pg.sql(
        "SELECT j.id, %s + j.batch * 1000000 FROM jobs j JOIN executions x ON x.id = j.execution_id "
        "JOIN runs f ON f.id = x.run_id WHERE j.schedule_id = '%s'" % (us_of("f.started_at"), sid)
    ).splitlines())
    late = [(us - int(plan[job])) / 1000 for job, _, us in stub.lines(off, "/ok") if job in plan]
    r = {"batches": batches, "batch_size": 10, "stagger_ms": 1000, "lateness_ms": pcts(late),
         "firing_s_after_instant": round((int(cv.one("SELECT %s FROM runs WHERE schedule_id = '%s' "
                                                     "AND kind = 'fanout'" % (us_of("started_at"), sid)))
                                          - due) / 1e6, 3)}
    r["checks"] = {"one request per job": len(late) == n, "never early": bool(late) and min(late) >= 0}
    log("cronvisor stagger: %s" % json.dumps(r))
    cv.call("DELETE", "/schedules/" + sid)
    return r


def cv_dag(a, cv, stub, n):
    """a -> b -> c over n contexts: the hops."""
    cv.table("ctx", n)
    cv.call("POST", "/pipelines", {"pipeline_id": "chain", "name": "chain", "steps": [
        {"step_id": "a", "agent_id": "ok"},
        {"step_id": "b", "agent_id": "ok", "depends_on": ["a"]},
        {"step_id": "c", "agent_id": "ok", "depends_on": ["b"]}]})
    off = stub.size()
    due = A.due_at(2)
    sid = cv.once("dag", due, {"type": "pipeline", "pipeline": "chain",
                               "params": {"id": "db:ctx:all:id?batchSize=%d&staggerDelay=0" % n}})
    W.wait_until(lambda: cv.one("SELECT status FROM schedules WHERE id = '%s'" % sid) != "active",
                 120 + n / 10, "the pipeline over %d contexts" % n, step=0.2)
    ends = {}
    for line in cv.pg.sql("SELECT j.id, j.context, j.pipeline_step_id, %s FROM jobs j JOIN runs r "
                          "ON r.job_id = j.id AND r.status = 'succeeded' WHERE j.schedule_id = '%s'"
                          % (us_of("r.finished_at"), sid)).splitlines():
        job, ctx, step, us = line.split("|")
        ends[job] = (ctx, step, int(us))
    sent = {}
    for job, _, us in stub.lines(off, "/ok"):
        if job in ends:
            sent[(ends[job][0], ends[job][1])] = us
    end = {(c, s): us for c, s, us in ends.values()}
    hops = [(sent[(c, nxt)] - end[(c, prev)]) / 1000 for c in sorted({c for c, _ in end})
            for prev, nxt in (("a", "b"), ("b", "c")) if (c, prev) in end and (c, nxt) in sent]
    status = cv.one("SELECT status FROM executions WHERE schedule_id = '%s'" % sid)
    r = {"contexts": n, "hop_ms": pcts(hops), "execution": status,
         "checks": {"every context's three steps": len(end) == 3 * n and len(sent) == 3 * n,
                    "success": status == "success",
                    "no step before its dependency ended": bool(hops) and min(hops) >= 0}}
    log("cronvisor dag: %s" % json.dumps(r))
    return r


def bench_cronvisor(a, stub):
    d = W.workdir("cvf", shared=True)
    cv = Stack(a, d)
    cv.agent("fan", stub.url + "/async", a.concurrency)
    cv.agent("ok", stub.url + "/ok", a.concurrency)
    res = {"max_concurrent_requests": a.concurrency, "max_concurrent_runs": a.max_runs,
           "postgresql": "defaults (fsync, synchronous_commit, full_page_writes on)"}
    res["expansion"] = cv_expansion(a, cv, stub, a.jobs)
    res["plan_only"] = cv_plan_only(a, cv, a.plan_jobs)
    res["stagger"] = cv_stagger(a, cv, stub, a.batches)
    res["dag"] = cv_dag(a, cv, stub, a.contexts)
    return res


# ---------------------------------------------------------------- BullMQ


def bench_bullmq(a, stub):
    d = W.workdir("cvg")
    js = os.path.join(HERE, "peers", "bullmq_agent.js")
    tpl = stub.log + ".async"
    if not os.path.exists(tpl):
        with open(tpl, "w") as fh:
            json.dump(A.TEMPLATE, fh)
    res = {"concurrency": a.concurrency, "keep_alive": True, "redis": "no persistence (as in bench/workloads.py)"}
    # addBulk of the plan-only count, no worker: the add rate.
    for k in ("r0", "r1", "r2"):
        os.makedirs(os.path.join(d, k))
    redis = W.Redis(os.path.join(d, "r0"))
    t0 = time.time()
    W.run(["node", js, "enqueue", redis.sock, "p", str(a.plan_jobs), str(int(t0 * 1e6)), "/async", tpl],
          timeout=600)
    secs = time.time() - t0
    res["add_only"] = {"jobs": a.plan_jobs, "seconds": round(secs, 3),
                      "jobs_per_second": round(a.plan_jobs / secs, 1)}
    log("bullmq add: %s" % json.dumps(res["add_only"]))
    W.stop(redis.p)
    # addBulk while a worker POSTs them to the 202 stub.
    redis = W.Redis(os.path.join(d, "r1"))
    W.start("bullmq worker", ["node", js, "worker", redis.sock, str(a.concurrency), stub.url],
            stdout=open(os.path.join(d, "worker.log"), "w"), stderr=subprocess.STDOUT)
    time.sleep(1)
    off = stub.size()
    stub0 = stub.usec()
    win = W.Window()
    t0 = int(time.time() * 1e6)
    W.run(["node", js, "enqueue", redis.sock, "f", str(a.jobs), str(t0), "/async", tpl], timeout=600)
    W.wait_until(lambda: sum(int(redis.cli("ZCARD", "bull:agents:" + k) or 0) for k in ("completed", "failed"))
                 >= a.jobs, 120 + a.jobs / 20, "BullMQ %d jobs" % a.jobs, step=0.1)
    cpu, stub1 = win.close(a.jobs), stub.usec()
    c = json.loads(W.run(["node", js, "collect", redis.sock, str(a.jobs), "10", "f"]))
    lines = stub.lines(off, "/async")
    r = A.window_figures(cpu, stub0, stub1, a.jobs, t0, c["last_finished_us"], lines)
    r["jobs_per_second"] = r.pop("invocations_per_second", None)
    r["checks"] = {"every job completed": c["ok"] == a.jobs,
                   "one request per job": len(lines) == a.jobs and r["stub_distinct_jobs"] == a.jobs}
    res["expansion"] = r
    log("bullmq expansion: %s" % json.dumps({k: v for k, v in r.items() if k != "cpu"}))
    # flows: a -> b -> c over the contexts.
    redis = W.Redis(os.path.join(d, "r2"))
    W.start("bullmq flow worker", ["node", js, "worker", redis.sock, str(a.concurrency), stub.url, "dag"],
            stdout=open(os.path.join(d, "flow.log"), "w"), stderr=subprocess.STDOUT)
    time.sleep(1)
    off = stub.size()
    W.run(["node", js, "flow-add", redis.sock, str(a.contexts)], timeout=600)
    c = json.loads(W.run(["node", js, "flow-collect", redis.sock, str(a.contexts), str(120 + a.contexts / 10)],
                         timeout=900))
    sent = {job: us for job, _, us in stub.lines(off, "/ok")}
    hops = []
    for ctx in range(a.contexts):
        for prev, nxt in (("a", "b"), ("b", "c")):
            p, q = "%d-%s" % (ctx, prev), "%d-%s" % (ctx, nxt)
            if p in c["finished"] and q in sent:
                hops.append((sent[q] - c["finished"][p] * 1000) / 1000)
    res["dag"] = {"contexts": a.contexts, "hop_ms": pcts(hops),
                  "note": "finishedOn is in ms: each hop is up to 1 ms longer than measured in µs",
                  "checks": {"every context's three steps": len(c["finished"]) == 3 * a.contexts
                             and len([k for k in sent if k.count("-") == 1]) == 3 * a.contexts}}
    log("bullmq dag: %s" % json.dumps(res["dag"]))
    return res


# ---------------------------------------------------------------- report


def table(R):
    cv, bq = R.get("cronvisor", {}), R.get("bullmq", {})
    f = W.fmt

    def g(d, *k):
        return _get(d, k)

    rows = [
        "| measure | cronvisor | BullMQ |", "|---|---|---|",
        "| %d values expanded and sent to a 202 stub: jobs/s | %s | %s |"
        % (R["jobs"], f(g(cv, "expansion", "jobs_per_second")), f(g(bq, "expansion", "jobs_per_second"))),
        "| the same: CPU ms per job | %s | %s |"
        % (f(g(cv, "expansion", "cpu_ms_per_invocation"), 3), f(g(bq, "expansion", "cpu_ms_per_invocation"), 3)),
        "| the same: the expansion (claim to plan committed), s | %s | - |" % f(g(cv, "expansion", "expansion_s"), 3),
        "| %d values planned (cronvisor) or added (BullMQ addBulk): jobs/s | %s | %s |"
        % (R["plan_jobs"], f(g(cv, "plan_only", "jobs_per_second")), f(g(bq, "add_only", "jobs_per_second"))),
        "| stagger, %d batches of 10 1 s apart: lateness ms min / p50 / p99 / max | %s | - |"
        % (R["batches"], " / ".join(f(g(cv, "stagger", "lateness_ms", k), 2) for k in ("min", "p50", "p99", "max"))),
        "| DAG hop over %d contexts, ms p50 / p99 / max | %s | %s |"
        % (R["contexts"], " / ".join(f(g(cv, "dag", "hop_ms", k), 2) for k in ("p50", "p99", "max")),
           " / ".join(f(g(bq, "dag", "hop_ms", k), 2) for k in ("p50", "p99", "max"))),
    ]
    return "\n".join(rows)


def _get(d, ks):
    for k in ks:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def ratios(R):
    cv, bq = R.get("cronvisor", {}), R.get("bullmq", {})
    out = {}
    x, y = _get(cv, ("expansion", "jobs_per_second")), _get(bq, ("expansion", "jobs_per_second"))
    if x and y:
        out["expansion_rate_cronvisor_over_bullmq"] = round(x / y, 2)
    x, y = _get(bq, ("dag", "hop_ms", "p99")), _get(cv, ("dag", "hop_ms", "p99"))
    if x and y:
        out["dag_hop_p99_bullmq_over_cronvisor"] = round(x / y, 2)
    x = _get(cv, ("stagger", "lateness_ms", "p99"))
    if x is not None and R.get("spread_lag_ms_p99") is not None:
        out["stagger_p99_minus_spread_lag_p99_ms"] = round(x - R["spread_lag_ms_p99"], 2)
    return out


def checks_ok(R):
    ok = True
    for sysname in ("cronvisor", "bullmq"):
        for key, r in R.get(sysname, {}).items():
            for k, v in (r.get("checks", {}) if isinstance(r, dict) else {}).items():
                if not v:
                    log("fanout: %s %s: check failed: %s" % (sysname, key, k))
                    ok = False
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--max-runs", type=int, default=64)
    ap.add_argument("--systems", default="cronvisor,bullmq")
    ap.add_argument("--smoke", action="store_true", help="tiny counts, cronvisor only, checks only")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "fanout.json"))
    a = ap.parse_args()
    a.jobs, a.plan_jobs, a.batches, a.contexts = 10000, 100000, 100, 1000
    if a.quick:
        a.jobs, a.plan_jobs, a.batches, a.contexts = 1000, 10000, 20, 200
    if a.smoke:
        a.jobs, a.plan_jobs, a.batches, a.contexts, a.systems, a.concurrency = 30, 200, 3, 10, "cronvisor", 4
    R = {"jobs": a.jobs, "plan_jobs": a.plan_jobs, "batches": a.batches, "contexts": a.contexts,
         "concurrency": a.concurrency}
    try:
        with open(os.path.join(HERE, "out", "workloads.json")) as f:
            R["spread_lag_ms_p99"] = json.load(f)["cronvisor"]["spread"]["lag_ms_p99"]
    except (OSError, KeyError, ValueError, TypeError):
        R["spread_lag_ms_p99"] = None
    R = A.run_systems(a, "fanout", R, bench_cronvisor, bench_bullmq, ratios, table)
    print("\n".join("%s: %s" % kv for kv in R["ratios"].items()))
    if not checks_ok(R):
        sys.exit(1)
    if a.smoke:
        print("fanout smoke: every check passed")


if __name__ == "__main__":
    W.run_main(main)
