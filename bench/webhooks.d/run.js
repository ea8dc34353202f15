'use strict';
// bench/webhooks.d/run.js - the measuring half of bench/webhooks (see there). Runs against
// one gpufleetd: a warm-up (not reported); A, ten receivers that answer at once; B, the same
// with receiver 0 answering after BENCH_SLOW_MS; C, A's setup with every event written in
// one transaction (a burst: throughput). Each run creates its webhooks, writes the events
// with one psql session, and times each delivery from the event's `at` to its arrival at
// the receiver (signature verified). Prints one JSON document.

const http = require('node:http');
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const { Webhook } = require('standardwebhooks');

const env = (k, d) => (process.env[k] === undefined ? d : process.env[k]);
const BASE = env('BASE');
const ADMIN = env('ADMIN');
const DB_URL = env('DB_URL');
const PSQL = env('PSQL', 'psql');
const SERVER_PID = Number(env('SERVER_PID'));
const CLK_TCK = Number(env('CLK_TCK', '100'));
const EVENTS = Number(env('EVENTS', '1000'));
const HOOKS = Number(env('HOOKS', '10'));
const BATCH = Number(env('BATCH', '10'));
const PAUSE_MS = Number(env('PAUSE_MS', '20'));
const SLOW_MS = Number(env('SLOW_MS', '2000'));
const WAIT_S = Number(env('WAIT_S', '180'));
const TYPE = 'host.updated';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function cpuTicks(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]); // utime + stime
}

function pct(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function call(method, path, body) {
  const res = await fetch(BASE + path, {
    method,
    headers: { Authorization: `Bearer ${ADMIN}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

class Receiver {
  constructor(delayMs) {
    this.delayMs = delayMs;
    this.got = new Map(); // webhook-id -> latency ms (first arrival)
    this.dups = 0;
    this.bad = 0;
    this.held = new Set();
  }

  start() {
    this.server = http.createServer({ keepAlive: true }, (req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const now = Date.now();
        try {
          const p = this.wh.verify(Buffer.concat(chunks).toString('utf8'), req.headers);
          const id = req.headers['webhook-id'];
          if (this.got.has(id)) this.dups++;
          else this.got.set(id, now - Date.parse(p.data.at));
        } catch {
          this.bad++;
        }
        if (this.delayMs <= 0) {
          res.writeHead(204).end();
          return;
        }
        this.held.add(res);
        setTimeout(() => {
          this.held.delete(res);
          res.writeHead(204).end();
        }, this.delayMs);
      });
    });
    return new Promise((resolve) => this.server.listen(0, '127.0.0.1', () => resolve(this)));
  }

  get url() {
    return `http://127.0.0.1:${this.server.address().port}/hook`;
  }

  stop() {
    for (const r of this.held) r.destroy();
    this.server.closeAllConnections();
    this.server.close();
  }
}

/** Writes the events with one psql session; resolves when it exits. */
function emit(events, batch, pause) {
  return new Promise((resolve, reject) => {
    const p = spawn(PSQL, ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', DB_URL], {
      stdio: ['pipe', 'ignore', 'inherit'],
    });
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`psql exited ${code}`))));
    let sql = '';
    for (let done = 0; done < events; done += batch) {
      const n = Math.min(batch, events - done);
      sql += `INSERT INTO events (type, project_id, data) SELECT '${TYPE}', '00000000-0000-4000-8000-000000000001', jsonb_build_object('changed', '["labels"]'::jsonb, 'seq', ${done} + g) FROM generate_series(1, ${n}) g;\n`;
      if (pause > 0) sql += `SELECT pg_sleep(${pause / 1000});\n`;
    }
    p.stdin.end(sql);
  });
}

async function run(label, { slow = false, events = EVENTS, batch = BATCH, pause = PAUSE_MS } = {}) {
  const receivers = [];
  for (let i = 0; i < HOOKS; i++) receivers.push(await new Receiver(slow && i === 0 ? SLOW_MS : 0).start());
  const hooks = [];
  for (const r of receivers) {
    const w = await call('POST', '/v1/webhooks', { url: r.url, event_types: [TYPE], description: `bench ${label}` });
    r.wh = new Webhook(w.secret);
    hooks.push(w);
  }
  const fast = receivers.filter((r) => r.delayMs <= 0);
  const cpu0 = cpuTicks(SERVER_PID);
  const t0 = Date.now();
  await emit(events, batch, pause);
  const emitted = Date.now();
  const deadline = Date.now() + WAIT_S * 1000;
  while (fast.some((r) => r.got.size < events) && Date.now() < deadline) await sleep(20);
  const t1 = Date.now();
  const cpu1 = cpuTicks(SERVER_PID);
  const deliveries = receivers.reduce((n, r) => n + r.got.size + r.dups, 0);
  const fastLat = fast
    .slice(slow ? 0 : 1) // the same nine receivers in both runs
    .flatMap((r) => [...r.got.values()])
    .sort((a, b) => a - b);
  const slowLat = slow ? [...receivers[0].got.values()].sort((a, b) => a - b) : [];
  const out = {
    label,
    events,
    batch,
    pause_ms: pause,
    webhooks: HOOKS,
    emit_s: (emitted - t0) / 1000,
    wall_s: (t1 - t0) / 1000,
    complete: fast.every((r) => r.got.size >= events),
    deliveries,
    duplicates: receivers.reduce((n, r) => n + r.dups, 0),
    bad_signatures: receivers.reduce((n, r) => n + r.bad, 0),
    deliveries_per_s: deliveries / ((t1 - t0) / 1000),
    server_cpu_s: (cpu1 - cpu0) / CLK_TCK,
    cpu_us_per_delivery: (((cpu1 - cpu0) / CLK_TCK) * 1e6) / Math.max(1, deliveries),
    others: { n: fastLat.length, p50: pct(fastLat, 50), p99: pct(fastLat, 99), max: fastLat[fastLat.length - 1] },
    slow: slow ? { delivered: slowLat.length, p50: pct(slowLat, 50), p99: pct(slowLat, 99) } : null,
  };
  for (const w of hooks) await call('DELETE', `/v1/webhooks/${w.id}`);
  for (const r of receivers) r.stop();
  return out;
}

(async () => {
  // JIT, connections, caches: not reported
  await run('warm-up', { events: Number(env('BENCH_WARMUP_EVENTS', 200)) });
  await sleep(1000);
  const a = await run('A: ten fast receivers');
  await sleep(1000);
  const b = await run(`B: receiver 0 answers after ${SLOW_MS} ms`, { slow: true });
  await sleep(1000);
  const c = await run('C: A, every event in one transaction', { batch: EVENTS, pause: 0 });
  process.stdout.write(JSON.stringify({ a, b, c }, null, 1) + '\n');
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
