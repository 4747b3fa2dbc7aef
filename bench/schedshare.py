#!/usr/bin/env python3
"""Who had the CPUs during a burst, from the kernel's context switches.

    perf record -a -e sched:sched_switch -o sched.data -- \\
        python3 bench/workloads.py --build build --burst 3000 --spread 0 \\
        --systems cronvisor --burst-samples 1
    perf script -i sched.data -F cpu,time,event,trace > sched.txt
    python3 bench/schedshare.py sched.txt [--timeline OFFSET_S LENGTH_S]

The burst is the densest run of `stamp` processes (the burst's command).
Over it the script prints each kind of process's share of all CPUs
(supervisor, runner, helper, command, postgres, idle, other), what ran on
the other CPUs while one was idle, and with --timeline one character per
0.2 ms per CPU from OFFSET_S into the burst: r runner, h helper,
c command, S supervisor, P postgres, . idle, o other.
"""
import argparse
import bisect
import collections
import re

SWITCH = re.compile(r"\[(\d+)\]\s+([\d.]+): sched:sched_switch: prev_comm=(.*?) prev_pid=(\d+) "
                    r"prev_prio=\d+ prev_state=\S+ ==> next_comm=(.*?) next_pid=(\d+)")
LETTER = {"idle": ".", "runner": "r", "helper": "h", "postgres": "P", "command": "c",
          "supervisor": "S"}


def segments(path):
    """Per CPU, the (start, end, comm, pid) of everything that ran."""
    segs, cur = collections.defaultdict(list), {}
    with open(path) as f:
        for line in f:
            m = SWITCH.search(line)
            if not m:
                continue
            cpu, t = int(m[1]), float(m[2])
            if cpu in cur:
                segs[cpu].append((cur[cpu][0], t, cur[cpu][1], cur[cpu][2]))
            cur[cpu] = (t, m[5], int(m[6]))
    return segs


def burst_window(segs, gap=0.05):
    """The longest run of `stamp` starts no more than gap seconds apart."""
    starts = sorted(s for c in segs for (s, _, comm, _) in segs[c] if comm == "stamp")
    if not starts:
        raise SystemExit("no stamp process in the trace: not a cronvisor burst")
    best, first, prev, n = (0, 0, 0), starts[0], starts[0], 0
    for s in starts:
        if s - prev > gap:
            first, n = s, 0
        prev, n = s, n + 1
        if n > best[2]:
            best = (first, s, n)
    return best[0], best[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", help="perf script -F cpu,time,event,trace output")
    ap.add_argument("--timeline", nargs=2, type=float, metavar=("OFFSET_S", "LENGTH_S"))
    a = ap.parse_args()
    segs = segments(a.trace)
    w0, w1 = burst_window(segs)
    cpus = sorted(segs)
    # cronvisord itself: the process of that name with the most CPU time
    # (its runners carry the same name, each briefly)
    own = collections.Counter()
    for c in cpus:
        for s, e, comm, pid in segs[c]:
            if comm == "cronvisord":
                own[pid] += e - s
    sup = max(own, key=own.get) if own else -1

    def kind(comm, pid):
        if comm.startswith("swapper"):
            return "idle"
        if comm == "cronvisord":
            return "supervisor" if pid == sup else "runner"
        if comm.startswith("cronvisor-run"):
            return "helper"
        if comm.startswith("postgres"):
            return "postgres"
        return "command" if comm == "stamp" else "other"

    starts = {c: [s for s, _, _, _ in segs[c]] for c in cpus}

    def at(c, t):
        i = bisect.bisect_right(starts[c], t) - 1
        if i < 0 or segs[c][i][1] <= t:
            return None
        return kind(segs[c][i][2], segs[c][i][3])

    share = collections.Counter()
    for c in cpus:
        for s, e, comm, pid in segs[c]:
            lo, hi = max(s, w0), min(e, w1)
            if hi > lo:
                share[kind(comm, pid)] += hi - lo
    total = (w1 - w0) * len(cpus)
    print("burst: %.3f s on %d CPUs" % (w1 - w0, len(cpus)))
    for k, v in share.most_common():
        print("  %-10s %5.1f %% of the CPUs" % (k, 100 * v / total))
    beside, n, t, step = collections.Counter(), 0, w0, 0.0001
    while t < w1:
        now = [at(c, t) for c in cpus]
        idle = now.count("idle")
        if idle == len(cpus):
            beside["(all idle)"] += 1
        elif idle:
            for k in now:
                if k != "idle":
                    beside[k] += 1
        n, t = n + 1, t + step
    print("while a CPU was idle, the others ran (share of the burst's time):")
    for k, v in beside.most_common():
        print("  %-10s %5.1f %%" % (k, 100 * v / n))
    if a.timeline:
        t0 = w0 + a.timeline[0]
        for c in cpus:
            row, t = "", t0
            while t < t0 + a.timeline[1]:
                row += LETTER.get(at(c, t), "o")
                t += 0.0002
            print("cpu%d %s" % (c, row))


if __name__ == "__main__":
    main()
