// bullmq_bench.js -- the BullMQ (Node) row of `make bench`.
//
// bench/run.sh installs the pinned BullMQ of bench/package-lock.json into
// build-bench/node/ (npm ci) and runs this file with NODE_PATH pointing
// there. The same workloads as bench/bench.c, the same key=value output:
//
//   node bullmq_bench.js enqueue -u URL -n N -b B   N jobs {i} to queue "default", addBulk of B
//   node bullmq_bench.js process -u URL -n N -c C   a Worker (concurrency C) in a child process
//                                                   of its own; the queue is paused while it
//                                                   boots and resumed to start the clock
//   node bullmq_bench.js latency -u URL -c C -j J --rate R --idle S
//                                                   three queues (critical, default, low), one
//                                                   Worker each; J jobs at R/s round robin,
//                                                   then S s of idle
//
// Jobs are added with removeOnComplete, as Sidekiq and hiredhand keep
// nothing of a finished job. Every job does the benchmark's one counter
// increment and marks its index: "each job ran exactly once" is checked job
// by job.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const readline = require('readline');
const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');

const argv = process.argv.slice(2);
const mode = argv.shift();
const o = { url: process.env.REDIS_URL || '', n: 100000, b: 1000, c: 10, j: 1000, rate: 200, idle: 10,
            timeout: 120, settle: 0.5 };
for (let i = 0; i < argv.length; i += 2) {
  const f = argv[i], v = argv[i + 1];
  if (v === undefined) die(2, `${f} needs a value`);
  switch (f) {
    case '-u': o.url = v; break;
    case '-n': o.n = +v; break;
    case '-b': o.b = +v; break;
    case '-c': o.c = +v; break;
    case '-j': o.j = +v; break;
    case '--rate': o.rate = +v; break;
    case '--idle': o.idle = +v; break;
    case '--timeout': o.timeout = +v; break;
    case '--settle': o.settle = +v; break;
    default: die(2, `unknown option ${f}`);
  }
}
function die(code, msg) { process.stderr.write(`bullmq_bench: ${msg}\n`); process.exit(code); }
if (!o.url) die(2, 'no Redis URL: pass -u or set REDIS_URL');
const u = new URL(o.url);
const connection = { host: u.hostname, port: +u.port || 6379, db: +(u.pathname.slice(1) || 0),
                     maxRetriesPerRequest: null };
const out = (k, v) => process.stdout.write(`${k}=${v}\n`);
const nowMs = () => performance.timeOrigin + performance.now();
const sleep = (s) => new Promise((r) => setTimeout(r, s * 1000));

function procCpu(pid) {   // utime + stime, seconds
  const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (+f[11] + +f[12]) / 100;
}
function procHwm(pid) {
  const m = /VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? +m[1] : 0;
}
async function redisCpu(client) {
  const s = await client.info('cpu');
  const g = (k) => +(new RegExp(`${k}:([0-9.]+)`).exec(s) || [0, 0])[1];
  return g('used_cpu_sys') + g('used_cpu_user');
}
async function cmdCalls(client) {
  const s = await client.info('commandstats');
  let t = 0;
  for (const m of s.matchAll(/calls=(\d+)/g)) t += +m[1];
  return t;
}

// ------------------------------------------------------------------ child: the workers

async function worker(lat) {
  const names = lat ? ['critical', 'default', 'low'] : ['default'];
  const target = lat ? o.j : o.n;
  const seen = new Uint8Array(o.n);
  let ran = 0, dups = 0, first = 0;
  const lats = [];
  let doneLine = null;
  const finish = (line) => { doneLine = line; process.stdout.write(line + '\n'); };
  const proc = lat
    ? async (job) => {
      lats.push(nowMs() - job.data.t);
      if (lats.length === target) {
        lats.sort((a, b) => a - b);
        finish('lat ' + lats.map((v) => v.toFixed(3)).join(' '));
      }
    }
    : async (job) => {
      if (!first) first = nowMs();
      const i = job.data.i;
      if (!(i >= 0 && i < o.n) || seen[i]++) dups++;
      if (++ran === target) {
        let missing = 0;
        for (let k = 0; k < o.n; k++) if (!seen[k]) missing++;
        finish(`done ${first.toFixed(3)} ${nowMs().toFixed(3)} ${dups} ${missing}`);
      }
    };
  const workers = names.map((q) => new Worker(q, proc, { connection, concurrency: o.c }));
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  await sleep(o.settle);
  process.stdout.write('ready\n');
  const rl = readline.createInterface({ input: process.stdin });
  await new Promise((r) => { rl.on('line', r); rl.on('close', r); });
  await Promise.all(workers.map((w) => w.close()));
  process.stdout.write('stopped\n');
  process.exit(0);
}

// ------------------------------------------------------------------ parent side

function spawnChild(m) {
  const args = [__filename, m, '-u', o.url, '-n', String(o.n), '-c', String(o.c), '-j', String(o.j),
                '--settle', String(o.settle)];
  const ch = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = [];
  let waiter = null;
  readline.createInterface({ input: ch.stdout }).on('line', (l) => {
    if (waiter) { const w = waiter; waiter = null; w(l); } else lines.push(l);
  });
  ch.line = (secs) => new Promise((resolve) => {
    if (lines.length) return resolve(lines.shift());
    const t = setTimeout(() => { waiter = null; resolve(null); }, secs * 1000);
    waiter = (l) => { clearTimeout(t); resolve(l); };
  });
  ch.exited = new Promise((r) => ch.on('exit', (code) => r(code)));
  ch.stop = async () => {
    ch.stdin.end('stop\n');
    const t = setTimeout(() => ch.kill('SIGKILL'), 60000);
    const code = await ch.exited;
    clearTimeout(t);
    return code === 0;
  };
  return ch;
}

async function enqueue() {
  const q = new Queue('default', { connection });
  const client = new IORedis(connection);
  const w0 = await q.getWaitingCount();
  const a = await cmdCalls(client);
  const t0 = nowMs();
  for (let off = 0; off < o.n; off += o.b) {
    const batch = [];
    for (let i = off; i < Math.min(o.n, off + o.b); i++)
      batch.push({ name: 'NoopJob', data: { i }, opts: { removeOnComplete: true } });
    await q.addBulk(batch);
  }
  const secs = (nowMs() - t0) / 1000;
  const cmds = await cmdCalls(client) - a - 1;
  const grew = await q.getWaitingCount() - w0;
  const ok = grew === o.n;
  if (!ok) process.stderr.write(`bullmq_bench: CHECK FAILED: the queue grew by ${grew}, expected ${o.n}\n`);
  out('enqueue_jobs', o.n);
  out('enqueue_seconds', secs.toFixed(4));
  out('enqueue_jobs_per_s', (o.n / secs).toFixed(0));
  out('enqueue_cmds_per_job', (cmds / o.n).toFixed(4));
  out('enqueue_ok', ok ? 1 : 0);
  await q.close();
  process.exit(ok ? 0 : 1);
}

async function processMode() {
  const q = new Queue('default', { connection });
  const client = new IORedis(connection);
  const waiting = await q.getWaitingCount();
  if (waiting !== o.n) die(2, `the queue holds ${waiting} jobs, expected ${o.n} (run the enqueue mode first)`);
  await q.pause();
  const ch = spawnChild('worker');
  if ((await ch.line(60)) !== 'ready') { ch.kill('SIGKILL'); die(2, 'the worker did not start'); }
  const a = await cmdCalls(client);
  const cpu0 = procCpu(ch.pid), rcpu0 = await redisCpu(client);
  const t0 = nowMs();
  await q.resume();
  const line = await ch.line(o.timeout);
  const rcpu1 = await redisCpu(client), cpu1 = procCpu(ch.pid), hwm = procHwm(ch.pid);
  const t1 = line && line.startsWith('done ') ? +line.split(' ')[2] : nowMs();
  const stopped = await ch.stop();
  if (!line || !line.startsWith('done ')) {
    process.stderr.write(`bullmq_bench: CHECK FAILED: not all ${o.n} jobs ran within ${o.timeout} s\n`);
    process.exit(1);
  }
  const [, , , dups, missing] = line.split(' ').map(Number);
  const cmds = await cmdCalls(client) - a - 3 - 1; // our INFOs; resume is one EVALSHA
  const counts = await q.getJobCounts('wait', 'active', 'delayed', 'failed', 'paused');
  let ok = true;
  const check = (cond, msg) => { if (!cond) { process.stderr.write(`bullmq_bench: CHECK FAILED: ${msg}\n`); ok = false; } };
  check(dups === 0 && missing === 0, `${dups} job(s) ran more than once, ${missing} never ran`);
  check(Object.values(counts).every((v) => v === 0), `jobs left: ${JSON.stringify(counts)}`);
  check(stopped, 'the worker did not stop cleanly');
  const secs = (t1 - t0) / 1000, n = o.n, k = `proc_c${o.c}`;
  out(`${k}_seconds`, secs.toFixed(4));
  out(`${k}_jobs_per_s`, (n / secs).toFixed(0));
  out(`${k}_cpu_us_per_job`, ((cpu1 - cpu0) * 1e6 / n).toFixed(2));
  out(`${k}_cpu_pct`, ((cpu1 - cpu0) / secs * 100).toFixed(1));
  out(`${k}_redis_cpu_us_per_job`, ((rcpu1 - rcpu0) * 1e6 / n).toFixed(2));
  out(`${k}_redis_cpu_pct`, ((rcpu1 - rcpu0) / secs * 100).toFixed(1));
  out(`${k}_peak_rss_kib`, hwm);
  out(`${k}_cmds_per_job`, (cmds / n).toFixed(4));
  out(`${k}_missing`, missing);
  out(`${k}_dups`, dups);
  out(`${k}_ok`, ok ? 1 : 0);
  await q.close();
  process.exit(ok ? 0 : 1);
}

async function latency() {
  const names = ['critical', 'default', 'low'];
  const qs = names.map((n) => new Queue(n, { connection }));
  const client = new IORedis(connection);
  const ch = spawnChild('latworker');
  if ((await ch.line(60)) !== 'ready') { ch.kill('SIGKILL'); die(2, 'the worker did not start'); }
  const t0 = nowMs();
  for (let i = 0; i < o.j; i++) {
    const wait = t0 + i * 1000 / o.rate - nowMs();
    if (wait > 0) await sleep(wait / 1000);
    await qs[i % 3].add('LatencyJob', { i, t: nowMs() }, { removeOnComplete: true });
  }
  const line = await ch.line(60);
  if (!line || !line.startsWith('lat ')) {
    await ch.stop();
    die(1, `CHECK FAILED: not all ${o.j} latency jobs ran within 60 s of the last push`);
  }
  const lat = line.split(' ').slice(1).map(Number);
  const pct = (q) => lat[Math.max(Math.ceil(q * lat.length), 1) - 1];
  out('lat_jobs', lat.length);
  out('lat_p50_ms', pct(0.5).toFixed(3));
  out('lat_p99_ms', pct(0.99).toFixed(3));
  out('lat_max_ms', lat[lat.length - 1].toFixed(3));
  out('lat_mean_ms', (lat.reduce((a, b) => a + b, 0) / lat.length).toFixed(3));
  out('lat_ok', lat.length === o.j ? 1 : 0);
  await sleep(1);
  const a = await cmdCalls(client);
  const cpu0 = procCpu(ch.pid), rcpu0 = await redisCpu(client);
  const i0 = nowMs();
  await sleep(o.idle);
  const secs = (nowMs() - i0) / 1000;
  const cpu1 = procCpu(ch.pid), rcpu1 = await redisCpu(client);
  const cmds = await cmdCalls(client) - a - 3;
  out('idle_seconds', secs.toFixed(2));
  out('idle_cpu_pct', ((cpu1 - cpu0) / secs * 100).toFixed(3));
  out('idle_redis_cpu_pct', ((rcpu1 - rcpu0) / secs * 100).toFixed(3));
  out('idle_cmds_per_s', (cmds / secs).toFixed(2));
  out('idle_peak_rss_kib', procHwm(ch.pid));
  await ch.stop();
  await Promise.all(qs.map((q) => q.close()));
  process.exit(0);
}

const modes = { enqueue, process: processMode, latency, worker: () => worker(false),
                latworker: () => worker(true) };
if (!modes[mode]) die(2, 'usage: node bullmq_bench.js enqueue|process|latency [-u URL] [-n N] [-c C] [-b B] ' +
                      '[-j J] [--rate R] [--idle S] [--timeout S]');
modes[mode]().catch((e) => die(2, e.stack || String(e)));
