// bench/peers/bullmq_agent.js: the BullMQ side of bench/agents.py, the
// seed's own stack for invoking agents: a Worker whose processor POSTs
// each job's request to the agent through Node's keep-alive http agent.
//
//   node bullmq_agent.js worker SOCKET CONCURRENCY BASE_URL
//       a Worker on queue "agents" (processor in this process, not
//       sandboxed: the work is one HTTP request), concurrency CONCURRENCY,
//       one http.Agent({keepAlive: true, maxSockets: CONCURRENCY}); each
//       job POSTs its data.body with its data.headers to BASE_URL +
//       data.path, and completes with the answer's status when it is 2xx
//       (200 or 202: both end the BullMQ job), fails otherwise; stops
//       cleanly on SIGTERM
//   node bullmq_agent.js enqueue SOCKET PREFIX N DUE_US PATH TEMPLATE
//       delayed jobs PREFIX<i>, i < N, all due at DUE_US (microseconds
//       since the epoch; BullMQ keeps milliseconds, rounded up), each
//       carrying the request cronvisor would send for it: TEMPLATE is a
//       file with one request body cronvisor sent (JSON), and each job's
//       body is that one with fresh ids and token of the same lengths, so
//       every request is as large as cronvisor's; prints the time the last
//       add returned (us)
//   node bullmq_agent.js collect SOCKET TOTAL TIMEOUT_S PREFIX
//       waits (at most TIMEOUT_S) until TOTAL jobs completed or failed,
//       prints JSON {"ok": k, "failed": f, "first_processed_us",
//       "last_finished_us"} of the completed PREFIX<i> jobs
//
// And the DAG hop of bench/fanout.py, with BullMQ flows (a parent job runs
// once its children completed), on queue "dag":
//
//   node bullmq_agent.js worker SOCKET CONCURRENCY BASE_URL dag
//       the Worker above, on queue "dag"
//   node bullmq_agent.js flow-add SOCKET N
//       N flows through FlowProducer.add, each the chain a -> b -> c of
//       one context (c the root: it runs last); each job POSTs
//       {"context", "step"} to /ok with X-Job-Id "<context>-<step>"
//   node bullmq_agent.js flow-collect SOCKET N TIMEOUT_S
//       waits (at most TIMEOUT_S) until the 3 N jobs completed or failed,
//       prints JSON {"finished": {"<context>-<step>": finishedOn in ms},
//       "failed": f}
'use strict';
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const { FlowProducer, Queue, Worker } = require('bullmq');

const [cmd, sock] = process.argv.slice(2, 4);
const a = process.argv.slice(4);
const connection = { path: sock, maxRetriesPerRequest: null };

function post(agent, url, job) {
  return new Promise((resolve, reject) => {
    const body = Buffer.from(job.data.body);
    const req = http.request(url + job.data.path, {
      method: 'POST', agent,
      headers: Object.assign({ 'Content-Length': body.length }, job.data.headers),
    }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode >= 200 && res.statusCode < 300
        ? resolve(res.statusCode)
        : reject(new Error('agent answered ' + res.statusCode))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function request(tpl, prefix, i) {
  const b = JSON.parse(JSON.stringify(tpl));
  const id = crypto.randomUUID();
  b.jobId = id;
  b.executionId = crypto.randomUUID();
  b.scheduleId = crypto.randomUUID();
  b.runId = prefix + i;
  b.params = { n: i };
  if (b.callback) {
    b.callback.token = crypto.randomBytes(32).toString('hex');
    b.callback.url = b.callback.url && b.callback.url.replace(tpl.jobId, id);
    b.callback.heartbeatUrl = b.callback.heartbeatUrl &&
      b.callback.heartbeatUrl.replace(tpl.jobId, id);
  }
  return {
    body: JSON.stringify(b),
    headers: {
      'Content-Type': 'application/json', 'X-Job-Id': id,
      'X-Execution-Id': b.executionId, 'X-Attempt': '1', 'Idempotency-Key': id,
    },
  };
}

// The flow of context ctx: c, the parent of b, the parent of a.
function flow(ctx) {
  const job = (step, children) => Object.assign({
    name: step, queueName: 'dag', opts: { jobId: ctx + '-' + step },
    data: { path: '/ok', body: JSON.stringify({ context: ctx, step }),
      headers: { 'Content-Type': 'application/json', 'X-Job-Id': ctx + '-' + step } },
  }, children ? { children } : {});
  return job('c', [job('b', [job('a')])]);
}

async function main() {
  if (cmd === 'worker') {
    const conc = parseInt(a[0], 10);
    const agent = new http.Agent({ keepAlive: true, maxSockets: conc });
    const w = new Worker(a[2] || 'agents', (job) => post(agent, a[1], job),
      { connection, concurrency: conc });
    w.on('error', (e) => console.error(e));
    const stop = async () => { await w.close(); process.exit(0); };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    return;
  }
  if (cmd === 'flow-add') {
    const fp = new FlowProducer({ connection });
    for (let i = 0; i < +a[0]; i++) await fp.add(flow(i));
    console.log(Date.now() * 1000);
    await fp.close();
    return;
  }
  const q = new Queue(cmd === 'flow-collect' ? 'dag' : 'agents', { connection });
  if (cmd === 'enqueue') {
    const [prefix, n, due, path, tfile] = [a[0], +a[1], +a[2], a[3], a[4]];
    const tpl = JSON.parse(fs.readFileSync(tfile, 'utf8'));
    const at = Math.ceil(due / 1000);  // never before the instant
    for (let i = 0; i < n; i += 500) {
      const batch = [];
      for (let k = i; k < Math.min(n, i + 500); k++) {
        const r = request(tpl, prefix, k);
        r.path = path;
        batch.push({ name: 'invoke', data: r,
          opts: { jobId: prefix + k, delay: Math.max(0, at - Date.now()) } });
      }
      await q.addBulk(batch);
    }
    console.log(Date.now() * 1000);
  } else if (cmd === 'flow-collect') {
    const limit = Date.now() + 1000 * +a[1];
    let c;
    for (;;) {
      c = await q.getJobCounts('completed', 'failed');
      if (c.completed + c.failed >= 3 * +a[0] || Date.now() > limit) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const finished = {};
    for (const j of await q.getJobs(['completed'], 0, -1)) finished[j.id] = j.finishedOn;
    console.log(JSON.stringify({ finished, failed: c.failed }));
  } else if (cmd === 'collect') {
    const n = +a[0];
    const limit = Date.now() + 1000 * +a[1];
    let c;
    for (;;) {
      c = await q.getJobCounts('completed', 'failed');
      if (c.completed + c.failed >= n || Date.now() > limit) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    let ok = 0, first = Infinity, last = 0;
    for (const j of await q.getJobs(['completed'], 0, -1)) {
      if (!j.id.startsWith(a[2])) continue;
      ok++;
      first = Math.min(first, j.processedOn);
      last = Math.max(last, j.finishedOn);
    }
    console.log(JSON.stringify({ ok, failed: c.failed,
      first_processed_us: ok ? first * 1000 : null,
      last_finished_us: ok ? last * 1000 : null }));
  }
  await q.close();
}
main().catch((e) => { console.error(e); process.exit(1); });
