// bench/peers/bullmq_processor.js: BullMQ's sandboxed processor (a file
// path, so BullMQ runs it in a child process): spawns the job's command and
// waits for it; a non-zero exit fails the job.
'use strict';
const { execFile } = require('child_process');

module.exports = (job) =>
  new Promise((resolve, reject) => {
    const argv = job.data.argv;
    execFile(argv[0], argv.slice(1), (err) => (err ? reject(err) : resolve(0)));
  });
