// bench/peers/bullmq.js: the BullMQ side of bench/workloads.py.
//
//   node bullmq.js worker SOCKET CONCURRENCY
//       a Worker on queue "bench" with the sandboxed processor
//       bullmq_processor.js; stops cleanly on SIGTERM
//   node bullmq.js enqueue SOCKET PREFIX N DUE_US STEP_US STAMP FILE
//       delayed jobs PREFIX<i> due at DUE_US + i*STEP_US (microseconds since
//       the epoch; BullMQ keeps milliseconds), each running [STAMP, FILE,
//       PREFIX<i>]; prints the time the last add returned (us)
//   node bullmq.js collect SOCKET TOTAL TIMEOUT_S PREFIX
//       waits (at most TIMEOUT_S) until TOTAL jobs (all since the last flush)
//       completed or failed, prints JSON {"ok": k, "failed": f, "jobs":
//       {id: [processedOn_us, finishedOn_us]}} of the completed PREFIX<i> jobs
'use strict';
const path = require('path');
const { Queue, Worker } = require('bullmq');

const [cmd, sock] = process.argv.slice(2, 4);
const a = process.argv.slice(4);
const connection = { path: sock, maxRetriesPerRequest: null };

async function main() {
  if (cmd === 'worker') {
    const w = new Worker('bench', path.join(__dirname, 'bullmq_processor.js'),
      { connection, concurrency: parseInt(a[0], 10) });
    w.on('error', (e) => console.error(e));
    const stop = async () => { await w.close(); process.exit(0); };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    return;
  }
  const q = new Queue('bench', { connection });
  if (cmd === 'enqueue') {
    const [prefix, n, due, step, stamp, file] =
      [a[0], +a[1], +a[2], +a[3], a[4], a[5]];
    for (let i = 0; i < n; i += 500) {
      const batch = [];
      for (let k = i; k < Math.min(n, i + 500); k++) {
        const at = Math.ceil((due + k * step) / 1000);  // never before the instant
        batch.push({ name: 'run', data: { argv: [stamp, file, prefix + k] },
          opts: { jobId: prefix + k, delay: Math.max(0, at - Date.now()) } });
      }
      await q.addBulk(batch);
    }
    console.log(Date.now() * 1000);
  } else if (cmd === 'collect') {
    const n = +a[0];
    const limit = Date.now() + 1000 * +a[1];
    let c;
    for (;;) {
      c = await q.getJobCounts('completed', 'failed');
      if (c.completed + c.failed >= n || Date.now() > limit) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const jobs = {};
    for (const j of await q.getJobs(['completed'], 0, -1)) {
      if (!j.id.startsWith(a[2])) continue;
      jobs[j.id] = [j.processedOn * 1000, j.finishedOn * 1000];
    }
    console.log(JSON.stringify({ ok: Object.keys(jobs).length, failed: c.failed, jobs }));
  }
  await q.close();
}
main().catch((e) => { console.error(e); process.exit(1); });
