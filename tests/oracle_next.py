#!/usr/bin/env python3
"""oracle_next.py: checks `cronvisorctl next --batch` on thousands of
generated cases against an independent reference.

The reference is written from the rules in ARCHITECTURE.md alone: its own
cron parser, Python's zoneinfo (which reads the same system TZif files with
its own code) for UTC offsets, and a day-by-day enumeration of matching wall
times, each resolved to its real instants under the schedule's DST rules.
Cases cluster around real DST transitions of many zones (past, present and
far-future years that only the POSIX-TZ footer rule covers), and a list of
invalid expressions must each be rejected with the field named.

usage: oracle_next.py PATH/TO/cronvisorctl [CASES]
"""
import datetime as dt
import json
import random
import subprocess
import sys
from zoneinfo import ZoneInfo

UTC = dt.timezone.utc
ZONES = [
    "America/New_York", "Europe/London", "Australia/Lord_Howe",
    "Asia/Kathmandu", "Pacific/Chatham", "America/Santiago",
    "Europe/Dublin", "America/St_Johns", "Africa/Casablanca",
    "Antarctica/Troll", "Europe/Berlin", "Australia/Sydney",
    "America/Havana", "Asia/Gaza", "Pacific/Auckland", "UTC",
    "Pacific/Apia", "America/Caracas", "Pacific/Kiritimati",
]
YEARS = [1987, 2004, 2011, 2026, 2027, 2040, 2077]
FIELDS = [("minute", 0, 59), ("hour", 0, 23), ("day-of-month", 1, 31),
          ("month", 1, 12), ("day-of-week", 0, 7)]
NAMES = {3: ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP",
             "OCT", "NOV", "DEC"],
         4: ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]}
ALIASES = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
           "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
           "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
           "@hourly": "0 * * * *"}


def value(tok, i):
    lo = 1 if i == 3 else 0
    if i in NAMES and tok.upper() in NAMES[i]:
        return NAMES[i].index(tok.upper()) + lo
    return int(tok)


def parse_field(text, i):
    _, lo, hi = FIELDS[i]
    out = set()
    for part in text.split(","):
        rng, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if rng == "*":
            a, b = lo, hi
        elif "-" in rng:
            a, b = (value(x, i) for x in rng.split("-"))
            if i == 4 and b == 0 and a > 0:
                if step_text:
                    # cronie sets no day: cronvisor refuses it
                    raise ValueError("never fires: " + part)
                b = 7
        else:
            a = b = value(rng, i)
        out.update(range(a, b + 1, step))
    if i == 4:
        out = {d % 7 for d in out}
    return out


def parse_cron(expr):
    expr = ALIASES.get(expr, expr)
    f = expr.split()
    sets = [parse_field(f[i], i) for i in range(5)]
    return {"sets": sets, "dom_star": f[2].startswith("*"),
            "dow_star": f[4].startswith("*"),
            "wild": f[0].startswith("*") or f[1].startswith("*")}


def day_matches(c, d):
    dom = d.day in c["sets"][2]
    dow = (d.isoweekday() % 7) in c["sets"][4]
    if c["dom_star"] or c["dow_star"]:
        return dom and dow
    return dom or dow


def offset(zone, t):
    return int(dt.datetime.fromtimestamp(t, zone).utcoffset().total_seconds())


def resolve(zone, wall):
    """The real instants of wall time `wall` (a naive datetime): (kind,
    [instants]) with kind 'one', 'fold' (two) or 'gap' (the transition)."""
    w = int(wall.replace(tzinfo=UTC).timestamp())
    o0 = int(wall.replace(tzinfo=zone, fold=0).utcoffset().total_seconds())
    o1 = int(wall.replace(tzinfo=zone, fold=1).utcoffset().total_seconds())
    cands = sorted({w - o0, w - o1})
    real = [t for t in cands if offset(zone, t) == w - t]
    if real:
        return ("fold" if len(real) == 2 else "one"), real
    lo, hi = min(cands), max(cands)       # the transition lies in (lo, hi]
    after = offset(zone, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if offset(zone, mid) == after:
            hi = mid
        else:
            lo = mid
    return "gap", [hi]


def reference(case):
    c = parse_cron(case["cron"])
    zone = ZoneInfo(case.get("tz", "UTC"))
    gap, fold = case.get("dst_gap", "auto"), case.get("dst_fold", "auto")
    shift = gap == "shift" or (gap == "auto" and not c["wild"])
    both = fold == "both" or (fold == "auto" and c["wild"])
    start = dt.datetime.fromtimestamp(case["from"], zone).replace(
        tzinfo=None) - dt.timedelta(days=2)
    fires = set()
    day = start.date()
    for _ in range(4000):
        if day.month in c["sets"][3] and day_matches(c, day):
            for h in sorted(c["sets"][1]):
                for m in sorted(c["sets"][0]):
                    kind, ts = resolve(zone, dt.datetime(
                        day.year, day.month, day.day, h, m))
                    if kind == "one" or (kind == "gap" and shift):
                        fires.add(ts[0])
                    elif kind == "fold":
                        fires.update(ts if both else ts[:1])
        after = sorted(t for t in fires if t > case["from"] and
                       t >= case.get("start_epoch", t))
        # A later day can still add an instant earlier than one seen (a fold),
        # so stop a day after the count is reached.
        if len(after) >= case["count"] and \
                dt.datetime.fromtimestamp(after[case["count"] - 1], zone) \
                .date() < day:
            return after[:case["count"]]
        day += dt.timedelta(days=1)
    raise RuntimeError("reference found too few fire times: %r" % case)


def transitions(zone, year):
    out, t = [], int(dt.datetime(year, 1, 1, tzinfo=UTC).timestamp())
    prev = offset(zone, t)
    for _ in range(366 * 4):
        t += 6 * 3600
        o = offset(zone, t)
        if o != prev:
            lo, hi = t - 6 * 3600, t
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if offset(zone, mid) == o:
                    hi = mid
                else:
                    lo = mid
            out.append(hi)
            prev = o
    return out


MIN = ["*", "*/15", "0", "30", "0,30", "5-50/15", "*/7", "45", "15,45", "59"]
HOUR = ["*", "*/2", "0-23/3", "1", "2", "1-3", "0,2,23", "*/5", "0", "3",
        "23", "12"]
DOM = ["*", "*", "*", "*/2", "1-31", "8", "1,15,29", "13", "*/10"]
MON = ["*", "*", "*", "*", "1-12", "JAN-DEC", "*/2"]
DOW = ["*", "*", "*", "1-5", "SUN", "0-6", "SAT,SUN", "FRI", "MON-FRI",
       "5-0", "fri-sun"]


def gen_cases(n, rng):
    cases = []
    trans = {}
    for i in range(n):
        zname = rng.choice(ZONES)
        year = rng.choice(YEARS)
        key = (zname, year)
        if key not in trans:
            trans[key] = transitions(ZoneInfo(zname), year) or \
                [int(dt.datetime(year, 6, 1, tzinfo=UTC).timestamp())]
        t = rng.choice(trans[key]) - rng.randint(0, 2 * 86400)
        if rng.random() < 0.1:
            expr = rng.choice(list(ALIASES))
        else:
            expr = " ".join([rng.choice(MIN), rng.choice(HOUR),
                             rng.choice(DOM), rng.choice(MON),
                             rng.choice(DOW)])
        case = {"id": i, "cron": expr, "tz": zname, "from": t,
                "count": rng.randint(1, 6)}
        if rng.random() < 0.4:
            case["dst_gap"] = rng.choice(["auto", "shift", "skip"])
        if rng.random() < 0.4:
            case["dst_fold"] = rng.choice(["auto", "first", "both"])
        if rng.random() < 0.1:
            case["start_epoch"] = t + rng.randint(0, 3 * 86400)
        cases.append(case)
    return cases


INVALID = [
    ("0 24 * * *", "hour: 24 is out of range 0-23"),
    ("60 * * * *", "minute:"), ("* * 0 * *", "day-of-month:"),
    ("* * 32 * *", "day-of-month:"), ("* * * 13 *", "month:"),
    ("* * * 0 *", "month:"), ("* * * * 8", "day-of-week:"),
    ("0 0 * * FRI-MON", "day-of-week: reversed range FRI-MON"),
    ("0 22-2 * * *", "hour:"), ("5/10 * * * *", "minute: a step needs"),
    ("*/0 * * * *", "minute:"), ("0 0 30 2 *", "never"),
    ("0 0 31 4,6,9,11 *", "never"), ("* * * *", "5 fields"),
    ("* * * * * *", "5 fields"), ("0 0 ? * *", "day-of-month:"),
    ("0 0 L * *", "day-of-month:"), ("0 0 * * 1#2", "day-of-week:"),
    ("0 0 1W * *", "day-of-month:"), ("H * * * *", "minute:"),
    ("0 0 * * MONDAY", "day-of-week:"), ("0 0 * JANUARY *", "month:"),
    ("0 MON * * *", "hour:"), ("@reboot", "@reboot"), ("@DAILY", "@DAILY"),
    ("@every 5m", "@every"), ("1,,2 * * * *", "minute:"),
    ("1- * * * *", "minute:"), ("", "empty"),
]


def main():
    ctl = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    rng = random.Random(20261122)
    cases = gen_cases(n, rng)
    lines = [json.dumps({k: ("@%d" % v if k == "start_epoch" else v)
                         for k, v in c.items()}).replace('"start_epoch"',
                                                          '"start"')
             for c in cases]
    lines += [json.dumps({"id": "bad%d" % i, "cron": e, "from": 0})
              for i, (e, _) in enumerate(INVALID)]
    out = subprocess.run([ctl, "next", "--batch"], input="\n".join(lines),
                         capture_output=True, text=True, check=True).stdout
    replies = [json.loads(x) for x in out.splitlines()]
    assert len(replies) == len(lines), "one reply per line"
    passed = failed = 0
    for case, rep in zip(cases, replies):
        want = reference(case)
        if rep.get("id") == case["id"] and rep.get("next") == want:
            passed += 1
        else:
            failed += 1
            if failed <= 10:
                print("MISMATCH %s\n  got  %s\n  want %s" % (
                    json.dumps(case), rep, want))
    for i, (expr, msg) in enumerate(INVALID):
        rep = replies[len(cases) + i]
        if rep.get("id") == "bad%d" % i and msg in rep.get("error", ""):
            passed += 1
        else:
            failed += 1
            print("NOT REJECTED AS EXPECTED %r: %s (want %r)" % (
                expr, rep, msg))
    fires = sum(c["count"] for c in cases)
    print("oracle_next: %d cases (%d fire times) in %d zones" % (
        len(cases), fires, len(ZONES)))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
