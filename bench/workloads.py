#!/usr/bin/env python3
"""bench/workloads.py: the workloads of issue 7, identical for every system,
each executing a real command per job, measured in one run:

  burst   N jobs due at one instant; runs/s from the instant to the last
          recorded result, firing lag p50/p95/p99/max
  spread  M jobs due at distinct instants 10 ms apart: firing lag
          p50/p95/p99/max and early starts (a start before its instant)

Systems: the limit (bench/forkexec, 1 and 2 in flight, no scheduler),
cronvisor (cronvisord against a private PostgreSQL with default settings:
fsync and synchronous_commit on), RQ (Debian python3-rq, `rq worker
--with-scheduler`, 1 and 2 workers) and BullMQ (npm, sandboxed processor,
concurrency 1 and 2).

Every job runs bench/stamp FILE ID: "run start" is the moment the command
started, stamped by the command itself (CLOCK_REALTIME), the same way for
every system.  Lag = stamp - due instant of that job.

CPU: every process of the system under test (scheduler, workers, children,
Redis or PostgreSQL) runs in a cgroup made for the run (cgroup v1 cpuacct or
v2); its CPU time over the workload divided by the runs is "CPU per run".
The machine's busy time from /proc/stat (user+nice+system+irq+softirq) over
the same window is reported beside it: on a shared machine it includes
other people's work.

Stdlib only; the peers' own clients are bench/peers/rq_jobs.py (Debian's
python3-rq) and bench/peers/bullmq.js (npm, bench/peers/node_modules).

usage: workloads.py --report OUT --merge workloads=FILE --merge KEY=FILE...
       merges the JSON of one bench/run into OUT (results.json) and prints
       the table
       workloads.py --build DIR [--burst N] [--spread M] [--systems
       limit,cronvisor,rq,bullmq] [--max-concurrent K] [--claim-batch B]
       [--out FILE]
Prints the table and writes JSON to --out.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "peers")
PY = "/usr/bin/python3"  # Debian's, which has python3-rq
HZ = os.sysconf("SC_CLK_TCK")
WARM = 4  # jobs run before the workloads: the workers' first start is not measured
procs = []  # (name, Popen) to stop on exit
cleanups = []  # callables run on exit, last first


def workdir(prefix, shared=False):
    """A directory under /tmp, removed on exit; shared: readable by all
    (the processes of a system that drop privileges read from it)."""
    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    if shared:
        os.chmod(d, 0o755)
    cleanups.append(lambda: shutil.rmtree(d, ignore_errors=True))
    return d


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def now_us():
    return time.time_ns() // 1000


# ---------------------------------------------------------------- CPU time


class Cgroup:
    """A cgroup holding the processes of the system under test."""

    def __init__(self, name=None):
        self.path = None
        name = name or "cvbench-%d" % os.getpid()
        v1 = "/sys/fs/cgroup/cpuacct"
        v2 = "/sys/fs/cgroup"
        try:
            if os.path.exists(v1 + "/cpuacct.usage"):
                self.path, self.kind = os.path.join(v1, name), 1
            elif os.path.exists(v2 + "/cgroup.controllers"):
                self.path, self.kind = os.path.join(v2, name), 2
            if self.path:
                os.mkdir(self.path)
                cleanups.append(self.remove)
        except OSError as e:
            log("workloads: no cgroup (%s): process CPU not measured" % e)
            self.path = None

    def join(self):  # in a child, before exec
        if self.path:
            with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    def usec(self):
        if not self.path:
            return None
        if self.kind == 1:
            with open(self.path + "/cpuacct.usage") as f:
                return int(f.read()) / 1000
        with open(self.path + "/cpu.stat") as f:
            for line in f:
                k, v = line.split()
                if k == "usage_usec":
                    return int(v)
        return None

    def pids(self):
        if not self.path:
            return []
        with open(os.path.join(self.path, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)
        log("workloads: cgroup %s still busy; left" % self.path)


CG = None


def machine_busy_us():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq ...
    return (v[0] + v[1] + v[2] + v[5] + v[6]) * 1e6 / HZ


def proc_cpu():
    """{pid: (title, own ms, reaped children's ms)} of the cgroup's processes."""
    out = {}
    for pid in CG.pids():
        try:
            with open("/proc/%d/stat" % pid) as f:
                st = f.read()
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        v = st[st.rindex(")") + 2:].split()
        # utime stime cutime cstime are fields 14-17 (v[11:15])
        t = [int(x) * 1000 / HZ for x in v[11:15]]
        if cmd.startswith("postgres: "):  # title: "postgres: user db [local] idle"
            cmd = " ".join(w for w in cmd.split() if w not in ("idle", "[local]", "in", "transaction"))
        out[pid] = (cmd[:60], t[0] + t[1], t[2] + t[3])
    return out


class Window:
    def __init__(self):
        self.t0, self.m0, self.c0 = time.time(), machine_busy_us(), CG.usec()
        self.p0 = proc_cpu()

    def breakdown(self, runs):
        """CPU ms per run by process title, over the window: own time, and
        the time of children it reaped (e.g. cronvisord's runners, the
        postmaster's exited backends); processes that started and ended
        inside the window show only in their parent's children column."""
        agg = {}
        for pid, (cmd, own, ch) in proc_cpu().items():
            o0, c0 = self.p0.get(pid, (cmd, 0, 0))[1:]
            a = agg.setdefault(cmd, [0, 0])
            a[0] += own - o0
            a[1] += ch - c0
        return {k: {"own": round(v[0] / runs, 3), "children": round(v[1] / runs, 3)}
                for k, v in sorted(agg.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
                if v[0] + v[1] > 0}

    def close(self, runs):
        m, c = machine_busy_us(), CG.usec()
        bd = self.breakdown(runs) if runs else {}
        r = {"seconds": round(time.time() - self.t0, 3),
             "machine_busy_ms": round((m - self.m0) / 1000, 1),
             "cgroup_ms": None if c is None else round((c - self.c0) / 1000, 1)}
        r["cpu_ms_per_run_machine"] = round(r["machine_busy_ms"] / runs, 3) if runs else None
        r["cpu_ms_per_run"] = (round(r["cgroup_ms"] / runs, 3)
                               if runs and c is not None else None)
        r["ms_per_run_by_process"] = bd
        r["ms_per_run_by_process_sum"] = round(sum(v["own"] + v["children"] for v in bd.values()), 3)
        return r


# ---------------------------------------------------------------- processes


def start(name, argv, **kw):
    """Starts argv in the cgroup; stopped at exit if still running."""
    p = subprocess.Popen(argv, preexec_fn=CG.join, **kw)
    procs.append((name, p))
    return p


def stop(p, grace=10):
    if p.poll() is not None:
        return
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(grace)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(5)


def run(argv, timeout=120, cg=False, **kw):
    return subprocess.run(argv, check=True, timeout=timeout, stdout=subprocess.PIPE,
                          text=True, preexec_fn=CG.join if cg else None, **kw).stdout


def cleanup():
    for name, p in reversed(procs):
        try:
            stop(p)
        except Exception as e:  # keep stopping the others
            log("workloads: stopping %s: %s" % (name, e))
    while cleanups:
        try:
            cleanups.pop()()
        except Exception as e:
            log("workloads: cleanup: %s" % e)


def wait_until(cond, timeout, what, step=0.05):
    limit = time.time() + timeout
    while not cond():
        if time.time() > limit:
            raise RuntimeError("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(step)


def sleep_until(t):
    d = t - time.time()
    if d > 0:
        time.sleep(d)


# ---------------------------------------------------------------- figures


def pct(sorted_v, p):
    if not sorted_v:
        return None
    k = (len(sorted_v) - 1) * p
    f = int(k)
    c = min(f + 1, len(sorted_v) - 1)
    return sorted_v[f] + (sorted_v[c] - sorted_v[f]) * (k - f)


def lag_stats(lags_ms):
    v = sorted(lags_ms)
    r = {"n": len(v)}
    for name, p in (("p50", .5), ("p95", .95), ("p99", .99)):
        x = pct(v, p)
        r["lag_ms_" + name] = None if x is None else round(x, 3)
    r["lag_ms_max"] = round(v[-1], 3) if v else None
    r["lag_ms_min"] = round(v[0], 3) if v else None
    r["early"] = sum(1 for x in v if x < 0)
    return r


def read_stamps(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 2:
                    out.setdefault(p[0], int(p[1]))
    except FileNotFoundError:
        pass
    return out


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def stamp_lags(stamps, prefix, n, due, step):
    lags = []
    for i in range(n):
        s = stamps.get("%s%d" % (prefix, i))
        if s is not None:
            lags.append((s - (due + i * step)) / 1000)
    return lags


class Workload:
    """One workload for one system: n jobs, the first due at due_us, the
    next step_us later each; stamps in file."""

    def __init__(self, d, kind, n, step_us, lead_s, sample=0):
        self.kind, self.n, self.step = kind, n, step_us
        self.file = os.path.join(d, "stamps-%s-%d" % (kind, now_us()))
        # cronvisor's commands run as its run user (cronvisor-run, not
        # root): the file they append to is theirs to write.
        open(self.file, "a").close()
        os.chmod(self.file, 0o666)
        # job names: w0.., b0.. (c0.., d0.. for the next bursts), s0..
        self.prefix = {"warm-up": "w", "burst": chr(ord("b") + sample), "spread": "s"}[kind]
        # whole second (cronvisor's slot of a burst is the due second)
        self.due = (int(time.time() + lead_s) + 1) * 1000000
        self.last_due = self.due + (n - 1) * step_us

    def wait_stamps(self, timeout):
        wait_until(lambda: count_lines(self.file) >= self.n,
                   timeout + (self.last_due - now_us()) / 1e6,
                   "%d stamps of %s" % (self.n, self.kind), step=0.05)

    def figures(self, end_us, ok, win):
        stamps = read_stamps(self.file)
        r = lag_stats(stamp_lags(stamps, self.prefix, self.n, self.due, self.step))
        r["jobs"] = self.n
        r["succeeded"] = ok
        r["stamped"] = len(stamps)
        if end_us:
            r["last_result_after_due_s"] = round((end_us - self.due) / 1e6, 3)
            if self.kind == "burst":
                r["runs_per_second"] = round(ok / ((end_us - self.due) / 1e6), 1)
        r["cpu"] = win
        r["cpu_ms_per_run"] = win["cpu_ms_per_run"]
        r["cpu_ms_per_run_machine"] = win["cpu_ms_per_run_machine"]
        return r


# ---------------------------------------------------------------- the limit


def limit_once(a, n):
    fe = os.path.join(a.build, "bench", "forkexec")
    res = {}
    for label, extra in (("true", []), ("stamp", [a.stamp, os.path.join(a.dir, "fe-stamps"), "x"])):
        w = Window()
        out = run([fe, str(n)] + extra, timeout=600, cg=True)
        cpu = w.close(2 * n)
        v = dict(line.split() for line in out.splitlines())
        res[label] = {"one_in_flight": float(v["forkexec_1"]), "two_in_flight": float(v["forkexec_2"]),
                      "cpu_ms_per_run": cpu["cpu_ms_per_run"],
                      "cpu_ms_per_run_machine": cpu["cpu_ms_per_run_machine"]}
        log("limit %s: %s" % (label, out.replace("\n", " ")))
    return res


def bench_limit(samples):
    """The limit from several samples taken between the systems: the best
    of each (a ceiling: noise from the other users of the machine only ever
    lowers it), with every sample kept."""
    res = {"runs": samples[0][0], "samples": [s[1] for s in samples]}
    for label in ("true", "stamp"):
        res[label] = {k: max(s[1][label][k] for s in samples) for k in ("one_in_flight", "two_in_flight")}
        for k in ("cpu_ms_per_run", "cpu_ms_per_run_machine"):
            res[label][k] = min(s[1][label][k] for s in samples)
    res["stamp_cost"] = round(1 - res["stamp"]["two_in_flight"] / res["true"]["two_in_flight"], 3)
    return res


# ---------------------------------------------------------------- cronvisor


class Postgres:
    """A private PostgreSQL with default settings (fsync, synchronous_commit
    and full_page_writes on), unix socket only, in the cgroup."""

    def __init__(self, d):
        b = subprocess.run(["pg_config", "--bindir"], stdout=subprocess.PIPE, text=True).stdout.strip()
        if not os.path.exists(os.path.join(b, "initdb")):
            b = sorted(os.listdir("/usr/lib/postgresql"))[-1]
            b = "/usr/lib/postgresql/%s/bin" % b
        self.bin, self.dir = b, os.path.join(d, "pg")
        self.sock = d
        self.as_ = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"] \
            if os.getuid() == 0 else []
        if self.as_:
            os.chown(d, 65534, 65534)
        run(self.as_ + [b + "/initdb", "-D", self.dir, "-U", "postgres", "-A", "trust", "-E", "UTF8",
                        "--locale=C.UTF-8", "--no-sync"], stderr=subprocess.STDOUT)
        cleanups.append(self.stop)
        run(self.as_ + [b + "/pg_ctl", "-D", self.dir, "-l", os.path.join(d, "pg.log"), "-w", "-t", "30",
                        "-o", "-c listen_addresses='' -k %s %s" % (d, os.environ.get("CVBENCH_PG_OPTS", "")),
                        "start"], cg=True)
        self.url = "host=%s user=postgres dbname=cronvisor_bench" % d
        self.psql("postgres", "CREATE DATABASE cronvisor_bench")

    def psql(self, db, sql):
        return run([self.bin + "/psql", "-X", "-qAt", "-v", "ON_ERROR_STOP=1",
                    "host=%s user=postgres dbname=%s" % (self.sock, db), "-c", sql]).strip()

    def sql(self, sql):
        return self.psql("cronvisor_bench", sql)

    def stop(self):
        if os.path.exists(os.path.join(self.dir, "postmaster.pid")):
            r = subprocess.run(self.as_ + [self.bin + "/pg_ctl", "-D", self.dir, "-m", "fast", "-w",
                                           "-t", "30", "stop"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=60)
            if r.returncode != 0:
                with open(os.path.join(self.dir, "postmaster.pid")) as f:
                    os.kill(int(f.readline()), signal.SIGKILL)


def cronvisor_insert(pg, wl, stamp):
    # exact microseconds: epoch + k microseconds (no float rounding)
    sql = ("BEGIN; INSERT INTO schedules (name, owner, kind, at, next_run_at, next_slot_at, target) "
           "SELECT '%s' || g, 'bench', 'once', t, t, t, "
           "jsonb_build_object('type', 'exec', 'argv', jsonb_build_array('%s', '%s', '%s' || g)) "
           "FROM generate_series(0, %d) g, "
           "LATERAL (SELECT timestamptz 'epoch' + (%d + g * %d) * interval '1 microsecond' AS t) x; "
           "NOTIFY cronvisor_wake; COMMIT"
           % (wl.prefix, stamp, wl.file, wl.prefix, wl.n - 1, wl.due, wl.step))
    # A schedule's id8 (the first 8 hex digits of its random id) is
    # unique; among a million schedules 1,000 new ones meet one of theirs
    # one time in four (the API retries such a create itself).  The whole
    # insert is tried again (psql's error is on stderr): nothing of a
    # failed one stays, and any other error fails five times.
    for attempt in range(5):
        try:
            pg.sql(sql)
            return
        except subprocess.CalledProcessError:
            if attempt == 4:
                raise
            log("cronvisor: insert of the %s jobs failed; again" % wl.kind)


class Database:
    """An existing cronvisor database (--database CONNINFO, bench/scale.sh):
    migrated, maybe holding other schedules, which the workloads leave
    alone (theirs have owner 'bench'); its server is not in the cgroup."""

    def __init__(self, url):
        self.url = url

    def sql(self, sql):
        return run(["psql", "-X", "-qAt", "-v", "ON_ERROR_STOP=1", self.url, "-c", sql]).strip()


def supervisor_memory(pid):
    """VmRSS and VmHWM of a process, in kB (None when gone)."""
    r = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k = line.split(":")[0]
                if k in ("VmRSS", "VmHWM"):
                    r[k] = int(line.split()[1])
    except OSError:
        return None
    return r


def phases(a):
    """The workloads of one system, in order: (kind, jobs, step µs, sample)."""
    return ([("warm-up", WARM, 0, 0)] + [("burst", a.burst, 0, i) for i in range(a.burst_samples)]
            + [("spread", a.spread, 10000, 0)])


def best_burst(samples):
    """The burst sample with the most runs/s: noise only ever lowers it."""
    return max(samples, key=lambda r: r.get("runs_per_second") or 0)


def bench_cronvisor(a):
    d = workdir("cvb", shared=True)
    if a.database:
        pg = Database(a.database)
    else:
        pg = Postgres(d)
        run([os.path.join(a.build, "cronvisorctl"), "db", "migrate", "--database", pg.url])
    mine = "owner = 'bench'"
    conf = os.path.join(d, "cronvisor.conf")
    # One owner has all the work: owner_max_running at the whole pool, as
    # a single-tenant installation would set it (its default, half the
    # pool, would measure the tenant limit instead of the engine).
    with open(conf, "w") as f:
        f.write('database_url = "%s"\nlog_level = warn\nmax_concurrent_runs = %d\nclaim_batch = %d\n'
                'owner_max_running = %d\n'
                % (pg.url, a.max_concurrent, a.claim_batch, a.max_concurrent))
    cvd = start("cronvisord", [os.path.join(a.build, "cronvisord"), "-f", conf],
                stderr=open(os.path.join(d, "cronvisord.log"), "w"))
    time.sleep(0.5)
    if cvd.poll() is not None:
        raise RuntimeError("cronvisord exited: " + open(os.path.join(d, "cronvisord.log")).read())
    res = {"max_concurrent_runs": a.max_concurrent, "claim_batch": a.claim_batch,
           "postgresql": "defaults (fsync, synchronous_commit, full_page_writes on)"}
    if a.database:
        res["database"] = "existing (--database), %s schedules of other owners" % pg.sql(
            "SELECT count(*) FROM schedules WHERE NOT (%s)" % mine)
    bursts = []
    for kind, n, step, sample in phases(a):
        if n == 0:
            continue
        wl = Workload(d, kind, n, step, 2 + n / 5000, sample)
        cronvisor_insert(pg, wl, a.stamp)
        os.chmod(d, 0o755)
        sleep_until(wl.due / 1e6 - 0.3)
        win = Window()
        wl.wait_stamps(120)

        def done():
            return int(pg.sql("SELECT count(*) FROM runs r JOIN schedules s ON s.id = r.schedule_id "
                              "WHERE s.%s AND r.status <> 'running'" % mine)) >= n
        wait_until(done, 60, "cronvisor results", step=0.1)
        cpu = win.close(n)
        if kind == "warm-up":
            pg.sql("DELETE FROM schedules WHERE %s" % mine)
            continue
        rows = pg.sql("SELECT s.name, floor(extract(epoch FROM r.started_at) * 1e6)::bigint, "
                      "floor(extract(epoch FROM r.finished_at) * 1e6)::bigint, r.status "
                      "FROM runs r JOIN schedules s ON s.id = r.schedule_id "
                      "WHERE s.%s" % mine).splitlines()
        ok = sum(1 for r in rows if r.endswith("|succeeded"))
        end = max(int(r.split("|")[2]) for r in rows)
        r = wl.figures(end, ok, cpu)
        # cronvisor's own record: started_at is the claim transaction's time
        claim = []
        for row in rows:
            name, st = row.split("|")[:2]
            claim.append((int(st) - (wl.due + int(name[1:]) * step)) / 1000)
        c = lag_stats(claim)
        r["claim_lag_ms"] = {k: c[k] for k in ("lag_ms_p50", "lag_ms_p99", "lag_ms_max", "lag_ms_min")}
        r["statuses"] = pg.sql("SELECT string_agg(status || '=' || c, ' ') FROM "
                               "(SELECT r.status, count(*) c FROM runs r JOIN schedules s "
                               "ON s.id = r.schedule_id WHERE s.%s GROUP BY r.status) x" % mine)
        if kind == "burst":
            bursts.append(r)
            res["burst_samples"] = bursts
            res["burst"] = best_burst(bursts)
        else:
            res[kind] = r
        log("cronvisor %s%s: %s" % (kind, " %d" % (sample + 1) if kind == "burst" else "",
                                     json.dumps({k: v for k, v in r.items() if k != "cpu"})))
        pg.sql("DELETE FROM schedules WHERE %s" % mine)
    res["supervisor_memory_kb"] = supervisor_memory(cvd.pid)
    stop(cvd, 40)
    return res


# ---------------------------------------------------------------- peers


class Redis:
    def __init__(self, d):
        self.sock = os.path.join(d, "redis.sock")
        self.p = start("redis-server", ["redis-server", "--port", "0", "--unixsocket", self.sock,
                                        "--unixsocketperm", "700", "--dir", d, "--save", "",
                                        "--appendonly", "no"],
                       stdout=open(os.path.join(d, "redis.log"), "w"), stderr=subprocess.STDOUT)
        wait_until(lambda: self.cli("ping") == "PONG", 10, "redis", step=0.02)

    def cli(self, *a):
        r = subprocess.run(["redis-cli", "-s", self.sock] + list(a), stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, timeout=10)
        return r.stdout.strip()


def bench_peer(a, name, configs, worker_argv, client):
    d = workdir("cvp")
    rd = Redis(d)
    res = {}
    for cfg in configs:
        res[cfg] = {}
        rd.cli("flushall")
        workers = [start("%s worker" % name, argv, cwd=d,
                         stdout=open(os.path.join(d, "%s-%s.log" % (name, cfg)), "a"),
                         stderr=subprocess.STDOUT)
                   for argv in worker_argv(rd.sock, cfg)]
        time.sleep(1.5)  # workers up
        total = 0
        for kind, n, step, sample in phases(a):
            # enqueueing must end before the instant: RQ takes ~1 ms a job
            wl = Workload(d, kind, n, step, 1.5 + n * 0.002, sample)
            t_enq = time.time()
            enq_end = int(run(client + ["enqueue", rd.sock, wl.prefix, str(n), str(wl.due), str(step),
                                        a.stamp, wl.file], timeout=300))
            log("%s %s: enqueued %d in %.2f s, %.2f s before the instant"
                % (name, cfg, n, time.time() - t_enq, (wl.due - enq_end) / 1e6))
            if enq_end > wl.due:
                raise RuntimeError("%s: enqueueing ended after the due instant" % name)
            total += n
            sleep_until(wl.due / 1e6 - 0.3)
            win = Window()
            wl.wait_stamps(600)
            out = json.loads(run(client + ["collect", rd.sock, str(total), "120", wl.prefix], timeout=200))
            cpu = win.close(n)
            if kind == "warm-up":
                continue
            ends = [j[1] for j in out["jobs"].values() if j[1]]
            r = wl.figures(max(ends) if ends else None, out["ok"], cpu)
            r["failed"] = out["failed"]
            if kind == "burst":
                res[cfg].setdefault("burst_samples", []).append(r)
                res[cfg]["burst"] = best_burst(res[cfg]["burst_samples"])
            else:
                res[cfg][kind] = r
            log("%s %s %s%s: %s" % (name, cfg, kind, " %d" % (sample + 1) if kind == "burst" else "",
                                    json.dumps({k: v for k, v in r.items() if k != "cpu"})))
        for w in workers:
            stop(w, 15)
    stop(rd.p)
    # the faster configuration, per workload
    best = {}
    for kind in ("burst", "spread"):
        if kind == "burst":
            cfg = max(configs, key=lambda c: res[c][kind].get("runs_per_second") or 0)
        else:
            cfg = min(configs, key=lambda c: res[c][kind]["lag_ms_p99"]
                      if res[c][kind]["lag_ms_p99"] is not None else float("inf"))
        best[kind] = dict(res[cfg][kind], config=cfg)
    return {"configs": res, "best": best}


def rq_workers(sock, cfg):
    n = int(cfg.split()[0])
    return [["rq", "worker", "--with-scheduler", "--url", "unix://" + sock, "--name", "w%d-%d" % (i, now_us())]
            for i in range(n)]


def bullmq_workers(sock, cfg):
    return [["node", os.path.join(PEERS, "bullmq.js"), "worker", sock, cfg.split()[-1]]]


# ---------------------------------------------------------------- table


def busiest():
    """What else runs on the machine: the top CPU users (ps)."""
    r = subprocess.run(["ps", "-eo", "pcpu,etime,comm", "--sort=-pcpu"], stdout=subprocess.PIPE,
                       text=True, timeout=10)
    return [" ".join(line.split()) for line in r.stdout.splitlines()[1:9]]


def fmt(v, nd=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return ("{:,.%df}" % nd).format(v)
    return "{:,}".format(v)


def rows_of(R):
    rows = []
    L = R.get("limit")
    if L:
        for label in ("true", "stamp"):
            for k, lab in (("one_in_flight", "1 in flight"), ("two_in_flight", "2 in flight")):
                rows.append(("limit: forkexec %s, %s" % (label, lab), "burst", L[label][k], None,
                             L[label]["cpu_ms_per_run"], L[label]["cpu_ms_per_run_machine"]))
    for sysname, label in (("cronvisor", "cronvisor (max_concurrent_runs %s, claim_batch %s)"),
                           ("rq", "RQ (%s)"), ("bullmq", "BullMQ (%s)")):
        S = R.get(sysname)
        if not S:
            continue
        for kind in ("burst", "spread"):
            if sysname == "cronvisor":
                if kind not in S:  # --burst 0 or --spread 0
                    continue
                w, name = S[kind], label % (S["max_concurrent_runs"], S["claim_batch"])
            else:
                w = S["best"][kind]
                name = label % w["config"]
            rows.append((name, kind, w.get("runs_per_second"), w, w["cpu_ms_per_run"],
                         w["cpu_ms_per_run_machine"]))
    return rows


def table(R):
    out = []
    h = "| system | workload | runs/s | lag p50 | p95 | p99 | max (ms) | early | ok/jobs | CPU ms/run | machine CPU ms/run |"
    out += [h, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, kind, rate, w, cpu, mcpu in rows_of(R):
        if w:
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s/%s | %s | %s |" % (
                name, kind, fmt(rate, 0), fmt(w["lag_ms_p50"], 2), fmt(w["lag_ms_p95"], 2),
                fmt(w["lag_ms_p99"], 2), fmt(w["lag_ms_max"], 2), w["early"], w["succeeded"], w["jobs"],
                fmt(cpu, 2), fmt(mcpu, 2)))
        else:
            out.append("| %s | %s | %s | | | | | | | %s | %s |" % (name, kind, fmt(rate, 0), fmt(cpu, 2), fmt(mcpu, 2)))
    S = R.get("scale")
    if not S:
        out.append("| scale: 1,000,000 schedules | (not measured yet) | | | | | | | | | |")
        return "\n".join(out)
    for lab in ("1k", "large"):
        w = S[lab]["spread"]
        out.append("| cronvisor, %s schedules present (bench/scale.sh) | spread | - | %s | %s | %s | %s | %s | %s/%s | %s | %s |" % (
            fmt(S[lab]["start"]["schedules"] - 1), fmt(w["lag_ms_p50"], 2), fmt(w["lag_ms_p95"], 2),
            fmt(w["lag_ms_p99"], 2), fmt(w["lag_ms_max"], 2), w["early"], w["succeeded"], w["jobs"],
            fmt(w["cpu_ms_per_run"], 2), fmt(w["cpu_ms_per_run_machine"], 2)))
    out.append("")
    out.append(scale_table(S))
    return "\n".join(out)


def scale_table(S):
    """The figures of bench/scale.sh (bench/out/scale.json) as a table."""
    c = S["create"]
    out = ["| scale (%s schedules) | with 1,000 | with %s |" % (fmt(S["schedules"]), fmt(S["schedules"])),
           "|---|---:|---:|"]

    def cell(lab, f):
        try:
            return f(S[lab])
        except (KeyError, TypeError):
            return "-"

    def plan(x, case, mode):
        for e in x["explain"]:
            if e["case"] == case and e["plan_mode"] == mode:
                return "%.3f ms (%s)" % (e["execution_ms"], e["top_buffers"])
        return "-"
    rows = [("supervisor start → \"started\" line", lambda x: "%.1f ms" % x["start"]["start_to_ready_ms"]),
            ("supervisor start → first claim", lambda x: "%.1f ms" % x["start"]["start_to_first_claim_ms"]),
            ("supervisor RSS idle (VmRSS / VmHWM)",
             lambda x: "%d / %d kB" % (x["start"]["VmRSS_kb"], x["start"]["VmHWM_kb"])),
            ("supervisor RSS after the spread (VmRSS / VmHWM)",
             lambda x: "%d / %d kB" % (x["supervisor_after_spread_kb"]["VmRSS"],
                                       x["supervisor_after_spread_kb"]["VmHWM"]))]
    for case in ("claim, nothing due (now)", "claim, many due (LIMIT 100)"):
        rows.append(("claim query, %s, generic plan" % case[7:],
                     lambda x, case=case: plan(x, case, "generic")))
    rows.append(("next-deadline query", lambda x: plan(x, "next deadline (every loop turn)", "custom")))
    rows.append(("deleted-schedule sweep", lambda x: plan(x, "deleted-schedule sweep (every heartbeat)", "custom")))
    rows.append(("spread lag p50 / p99 / max", lambda x: "%.2f / %.2f / %.2f ms" % (
        x["spread"]["lag_ms_p50"], x["spread"]["lag_ms_p99"], x["spread"]["lag_ms_max"])))
    rows.append(("spread claim lag p50 / p99", lambda x: "%.2f / %.2f ms" % (
        x["spread"]["claim_lag_ms"]["lag_ms_p50"], x["spread"]["claim_lag_ms"]["lag_ms_p99"])))
    for name, f in rows:
        out.append("| %s | %s | %s |" % (name, cell("1k", f), cell("large", f)))
    out.append("")
    out.append("| create | schedules | seconds | per second |")
    out.append("|---|---:|---:|---:|")
    for k, lab in (("api_wrk", "API, wrk -t2 -c16 through nginx"),
                   ("cronvisorctl_import", "cronvisorctl schedules import --parallel 4"),
                   ("sql_copies", "SQL INSERT ... SELECT copies of those rows")):
        x = c[k]
        n = x.get("created", x.get("rows"))
        out.append("| %s | %s | %.1f | %s |" % (lab, fmt(n), x["seconds"],
                                               fmt(x.get("per_second") or round(n / max(x["seconds"], 1e-9)), 0)))
    return "\n".join(out)


def ratios(R):
    r = {}
    C, L = R.get("cronvisor"), R.get("limit")
    peers = [R[p]["best"]["burst"]["runs_per_second"] for p in ("rq", "bullmq")
             if R.get(p) and R[p]["best"]["burst"].get("runs_per_second")]
    if C and "burst" not in C:
        C = dict(C, burst={"runs_per_second": 0, "cpu_ms_per_run": None})
    if C and L:
        r["burst_vs_limit_2_in_flight"] = round(C["burst"]["runs_per_second"] / L["true"]["two_in_flight"], 3)
        r["burst_vs_limit_2_in_flight_stamp"] = round(
            C["burst"]["runs_per_second"] / L["stamp"]["two_in_flight"], 3)
    if C and peers:
        r["burst_vs_faster_peer"] = round(C["burst"]["runs_per_second"] / max(peers), 2)
    if C and C["burst"]["cpu_ms_per_run"] is not None:
        r["cpu_ms_per_run_burst"] = C["burst"]["cpu_ms_per_run"]
        if L and L["true"]["cpu_ms_per_run"]:
            r["cpu_per_run_vs_limit"] = round(C["burst"]["cpu_ms_per_run"] / L["true"]["cpu_ms_per_run"], 2)
    if C and "spread" in C:
        s = C["spread"]
        r["spread_lag_ms_p50"], r["spread_lag_ms_p99"], r["spread_early"] = \
            s["lag_ms_p50"], s["lag_ms_p99"], s["early"]
    r["goals"] = {"burst_vs_limit_2_in_flight": ">= 0.5", "burst_vs_faster_peer": ">= 3",
                  "spread_lag_ms_p50": "< 1", "spread_lag_ms_p99": "< 5", "spread_early": "0",
                  "cpu_ms_per_run_burst": "<= 1.5"}
    return r


def ratio_lines(r):
    g = r["goals"]
    return ["%-34s %10s   goal %s" % (k, r[k], g.get(k, "")) for k in
            ("burst_vs_limit_2_in_flight", "burst_vs_limit_2_in_flight_stamp", "burst_vs_faster_peer",
             "cpu_ms_per_run_burst", "cpu_per_run_vs_limit", "spread_lag_ms_p50", "spread_lag_ms_p99",
             "spread_early") if k in r]


def report(path, merges):
    """Merges the JSON files of one bench/run into path; prints the table."""
    R = {}
    for m in merges:
        key, f = m.split("=", 1)
        try:
            with open(f) as fh:
                v = json.load(fh)
        except (OSError, ValueError) as e:
            log("workloads: %s: %s" % (f, e))
            v = None
        if key == "workloads":
            R.update(v or {})
        else:
            R[key] = v
    R.setdefault("scale", None)
    if R.get("cronvisor") or R.get("scale"):
        R["table_markdown"] = table(R)
    with open(path + ".tmp", "w") as fh:
        json.dump(R, fh, indent=1)
    os.replace(path + ".tmp", path)
    if R.get("scale") and not ("limit" in R or "cronvisor" in R):
        print(scale_table(R["scale"]))
    if "limit" in R or "cronvisor" in R:
        print("date %s, load average before %s, after %s; burst %s jobs, spread %s jobs 10 ms apart"
              % (R["date"], " ".join(R["loadavg_before"]), " ".join(R["loadavg_after"]),
                 R["burst_jobs"], R["spread_jobs"]))
        print(table(R))
        print()
        print("\n".join(ratio_lines(R["ratios"])))
        if R.get("limit"):
            print("limit samples (2 in flight, /bin/true): %s" % ", ".join(
                "%.0f" % x["true"]["two_in_flight"] for x in R["limit"]["samples"]))
        bs = []
        if R.get("cronvisor") and R["cronvisor"].get("burst_samples"):
            bs.append("cronvisor %s" % ", ".join(fmt(x.get("runs_per_second"), 0)
                                                 for x in R["cronvisor"]["burst_samples"]))
        for p, lab in (("rq", "RQ"), ("bullmq", "BullMQ")):
            for cfg, v in sorted((R.get(p) or {}).get("configs", {}).items()):
                if v.get("burst_samples"):
                    bs.append("%s (%s) %s" % (lab, cfg, ", ".join(fmt(x.get("runs_per_second"), 0)
                                                                 for x in v["burst_samples"])))
        if bs:
            print("burst samples, runs/s (the table shows each system's best): %s" % "; ".join(bs))
        if R.get("cronvisor"):
            print()
            print("cronvisor, CPU ms per run by process (own / reaped children):")
            for kind in ("burst", "spread"):
                bd = R["cronvisor"][kind]["cpu"]["ms_per_run_by_process"]
                print("  %s: %s" % (kind, "; ".join("%s %.2f / %.2f" % (k.split(" -f ")[0].split("/")[-1], v["own"],
                                                                           v["children"]) for k, v in bd.items())))
    if R.get("runcost"):
        c = R["runcost"]
        print()
        print("runner path without a database (bench/runcost, %d runs, %d in flight): %.0f us of CPU per run "
              "against %.0f for the bare fork/exec: %.3f times" % (c["runs"], c["in_flight"], c["cpu_us_per_run"],
                                                                  c["bare_cpu_us_per_run"], c["ratio"]))
    if R.get("api"):
        print()
        print("| API case | req/s | vs file | p50 | p99 | errors |")
        print("|---|---:|---:|---:|---:|---:|")
        for c in R["api"]["cases"]:
            print("| %s | %s | %.3f | %s | %s | %d |" % (c["case"], fmt(c["rps"], 0), c["ratio_to_static"],
                                                       c["p50"], c["p99"], c["non_2xx"] + c["socket_errors"]))
    if R.get("agents"):
        A = R["agents"]
        print()
        print("agents (bench/agents.py, %s jobs):" % fmt(A["jobs"]))
        print(A["table_markdown"])
        print()
        g = A["ratios"]["goals"]
        for k in ("rate_vs_bullmq_ok", "cpu_vs_bullmq_ok", "rate_vs_bullmq_async", "cpu_vs_bullmq_async",
                  "completions_per_second", "applied_per_second"):
            if k in A["ratios"]:
                print("%-26s %10s   goal %s" % (k, A["ratios"][k], g.get(k, "")))
    print()
    print("wrote " + path)


# ---------------------------------------------------------------- main


def main():
    global CG
    if len(sys.argv) > 2 and sys.argv[1] == "--report":
        ap = argparse.ArgumentParser()
        ap.add_argument("--report")
        ap.add_argument("--merge", action="append", default=[])
        a = ap.parse_args()
        report(a.report, a.merge)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--burst", type=int, default=3000)
    ap.add_argument("--burst-samples", type=int, default=2, choices=range(1, 9),
                    help="bursts per system (configuration); the table shows the best")
    ap.add_argument("--spread", type=int, default=1000)
    ap.add_argument("--systems", default="limit,cronvisor,rq,bullmq")
    ap.add_argument("--max-concurrent", type=int, default=64)
    ap.add_argument("--claim-batch", type=int, default=100)
    ap.add_argument("--database", help="an existing, migrated database (bench/scale.sh)")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "workloads.json"))
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    a.stamp = os.path.join(a.build, "bench", "stamp")
    systems = a.systems.split(",")
    CG = Cgroup()
    a.dir = workdir("cvw")
    with open("/proc/loadavg") as f:
        load0 = f.read().split()[:3]
    R = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "burst_jobs": a.burst, "burst_samples": a.burst_samples,
         "spread_jobs": a.spread, "spread_step_ms": 10, "command": "bench/stamp FILE ID",
         "cpu_accounting": "cgroup v%s of the system's processes; machine = /proc/stat busy"
         % (CG.kind if CG.path else "-"), "loadavg_before": load0}
    R["other_processes"] = busiest()
    samples = []

    def limit():
        if "limit" in systems:
            samples.append((a.burst, limit_once(a, a.burst)))
    limit()
    if "cronvisor" in systems:
        R["cronvisor"] = bench_cronvisor(a)
        limit()
    if "rq" in systems:
        R["rq"] = bench_peer(a, "rq", ["1 worker", "2 workers"], rq_workers,
                             [PY, os.path.join(PEERS, "rq_jobs.py")])
        limit()
    if "bullmq" in systems:
        R["bullmq"] = bench_peer(a, "bullmq", ["concurrency 2", "concurrency 1"], bullmq_workers,
                                 ["node", os.path.join(PEERS, "bullmq.js")])
        limit()
    if samples:
        R["limit"] = bench_limit(samples)
    with open("/proc/loadavg") as f:
        R["loadavg_after"] = f.read().split()[:3]
    R["ratios"] = ratios(R)
    R["scale"] = None  # 1,000,000 schedules: a later step (issue 7)
    R["table_markdown"] = table(R)
    write_json(a.out, R)
    print(R["table_markdown"])
    print()
    print("\n".join(ratio_lines(R["ratios"])))


def write_json(path, R):
    """R as JSON into path, whole or not at all."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(R, f, indent=1)
    os.replace(path + ".tmp", path)


def run_main(fn):
    """Runs a benchmark's main: a TERM, INT or HUP ends it, and whatever
    it started (cgroup, databases, workers) is stopped either way."""
    def die(sig, _):
        raise SystemExit(128 + sig)
    signal.signal(signal.SIGTERM, die)
    signal.signal(signal.SIGINT, die)
    signal.signal(signal.SIGHUP, die)
    try:
        fn()
    finally:
        cleanup()


if __name__ == "__main__":
    run_main(main)
