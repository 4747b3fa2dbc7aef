"""bench/peers/rq_jobs.py: the RQ side of bench/workloads.py (Debian's
python3-rq; run with /usr/bin/python3).

  rq_jobs.py enqueue SOCKET PREFIX N DUE_US STEP_US STAMP FILE
      enqueue_at job PREFIX<i> (i = 0..N-1) at DUE_US + i*STEP_US
      (microseconds since the epoch), each subprocess.run([STAMP, FILE,
      PREFIX<i>]); prints the time the last enqueue returned (us)
  rq_jobs.py collect SOCKET TOTAL TIMEOUT_S PREFIX
      waits (at most TIMEOUT_S) until TOTAL jobs (all since the last flush)
      are finished or failed, then prints JSON {"ok": k, "failed": f,
      "jobs": {id: [started_us, ended_us]}} of the finished PREFIX<i> jobs
"""
import json
import subprocess
import sys
import time
from datetime import datetime, timezone

from redis import Redis
from rq import Queue
from rq.registry import FailedJobRegistry, FinishedJobRegistry


def us(dt):
    if dt is None:
        return None
    if dt.tzinfo is None:  # RQ keeps naive UTC datetimes
        dt = dt.replace(tzinfo=timezone.utc)
    return round(dt.timestamp() * 1e6)


def main():
    cmd, sock = sys.argv[1], sys.argv[2]
    conn = Redis(unix_socket_path=sock)
    q = Queue("default", connection=conn)
    if cmd == "enqueue":
        prefix, n, due, step = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
        stamp, out = sys.argv[7], sys.argv[8]
        for i in range(n):
            at = datetime.fromtimestamp((due + i * step) / 1e6, timezone.utc)
            q.enqueue_at(at, subprocess.run, [stamp, out, "%s%d" % (prefix, i)],
                         job_id="%s%d" % (prefix, i))
        print(round(time.time() * 1e6))
        return
    n, limit, prefix = int(sys.argv[3]), time.time() + float(sys.argv[4]), sys.argv[5]
    fin, failed = FinishedJobRegistry(queue=q), FailedJobRegistry(queue=q)
    while fin.count + failed.count < n and time.time() < limit:
        time.sleep(0.1)
    jobs = {}
    for jid in fin.get_job_ids():
        if not jid.startswith(prefix):
            continue
        j = q.fetch_job(jid)
        if j is not None:
            jobs[jid] = [us(j.started_at), us(j.ended_at)]
    print(json.dumps({"ok": len(jobs), "failed": failed.count, "jobs": jobs}))


main()
