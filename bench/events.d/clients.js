'use strict';
// bench/events.d/clients.js — the measuring half of bench/events (see there). Arguments
// come from the environment:
//   BASE, TOKEN (viewer), OPERATOR (token), HOST_ID, SERVER_PID
//   CLIENTS (1000), CHANGES (200), WRK_SECONDS (10), WRK_CONNS (32), WRK_THREADS (2),
//   WRK_ROUNDS (3), WRK_CAP (0: none; each wrk thread stops after this many responses),
//   RESULTS (directory for raw wrk outputs)
// Prints one JSON object on stdout with every figure; progress goes to stderr.

const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const { SseParser } = require('../../tests/api/lib/sse');

const env = (k, d) => (process.env[k] === undefined || process.env[k] === '' ? d : process.env[k]);
const BASE = new URL(env('BASE'));
const TOKEN = env('TOKEN');
const OPERATOR = env('OPERATOR');
const HOST_ID = env('HOST_ID');
const SERVER_PID = env('SERVER_PID');
const CLIENTS = Number(env('CLIENTS', 1000));
const CHANGES = Number(env('CHANGES', 200));
const WRK_SECONDS = Number(env('WRK_SECONDS', 10));
const WRK_CONNS = Number(env('WRK_CONNS', 32));
const WRK_THREADS = Number(env('WRK_THREADS', 2));
const WRK_ROUNDS = Number(env('WRK_ROUNDS', 3));
const WRK_CAP = Number(env('WRK_CAP', 0));
const RESULTS = env('RESULTS', '.');
const CLK_TCK = Number(env('CLK_TCK', 100));

const log = (...a) => process.stderr.write(`bench/events: ${a.join(' ')}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

function statusKib(field) {
  const t = fs.readFileSync(`/proc/${SERVER_PID}/status`, 'utf8');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(t);
  return m ? Number(m[1]) : NaN;
}
function serverCpuS() {
  const stat = fs.readFileSync(`/proc/${SERVER_PID}/stat`, 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / CLK_TCK; // utime, stime
}
function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}
function pct(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)];
}

// ---- wrk ----
function wrk(label, round) {
  const url = `${BASE.origin}/v1/hosts/${HOST_ID}`;
  const args = [
    `-t${WRK_THREADS}`,
    `-c${WRK_CONNS}`,
    `-d${WRK_SECONDS}s`,
    '--timeout',
    '5s',
    '--latency',
    '-H',
    `Authorization: Bearer ${TOKEN}`,
    url,
  ];
  if (WRK_CAP > 0) {
    // each wrk thread stops after WRK_CAP responses (wrk still waits out -d)
    const script = path.join(RESULTS, 'cap.lua');
    fs.writeFileSync(
      script,
      `local n = 0\nfunction response(status, headers, body)\n` +
        `    n = n + 1\n    if n >= ${WRK_CAP} then wrk.thread:stop() end\nend\n`,
    );
    args.splice(args.length - 1, 0, '-s', script);
  }
  return new Promise((resolve, reject) => {
    execFile('wrk', args, { maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      fs.writeFileSync(path.join(RESULTS, `wrk-${label}.r${round}.txt`), stdout + stderr);
      if (err) return reject(new Error(`wrk failed: ${stderr || err.message}`));
      const rps = /Requests\/sec:\s+([\d.]+)/.exec(stdout);
      const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(stdout);
      const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
      if (!rps) return reject(new Error(`cannot parse wrk output:\n${stdout}`));
      const bad = (non2xx ? Number(non2xx[1]) : 0) + (sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
      resolve({ rps: Number(rps[1]), bad });
    });
  });
}
async function wrkRounds(label) {
  const out = [];
  for (let r = 1; r <= WRK_ROUNDS; r++) {
    const res = await wrk(label, r);
    log(`wrk ${label} round ${r}: ${res.rps} req/s, errors/non-2xx ${res.bad}`);
    out.push(res);
  }
  return { rps: median(out.map((x) => x.rps)), rounds: out.map((x) => x.rps), bad: out.reduce((a, x) => a + x.bad, 0) };
}

// ---- SSE clients ----
let current = null; // {seq, pred, t0, got: Uint8Array, n, lat: [], done}
const clients = [];

function openClient(i) {
  return new Promise((resolve, reject) => {
    const c = { i, ready: false, events: 0, ended: false };
    const parser = new SseParser({
      event(ev) {
        c.events++;
        const cur = current;
        if (!cur || cur.got[i]) return;
        let j;
        try {
          j = JSON.parse(ev.data);
        } catch {
          return;
        }
        if (cur.pred(j)) {
          cur.got[i] = 1;
          cur.lat.push(nowMs() - cur.t0);
          if (++cur.n === CLIENTS) cur.done();
        }
      },
      comment() {},
      retry() {
        if (!c.ready) {
          c.ready = true;
          resolve(c);
        }
      },
    });
    const req = http.request({
      host: BASE.hostname,
      port: BASE.port,
      path: '/v1/events',
      headers: { Authorization: `Bearer ${TOKEN}`, Accept: 'text/event-stream' },
      agent: false,
    });
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`client ${i}: status ${res.statusCode}`));
        res.resume();
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (d) => parser.push(d));
      res.on('end', () => (c.ended = true));
      res.on('close', () => (c.ended = true));
    });
    req.on('error', (e) => {
      c.ended = true;
      if (!c.ready) reject(e);
    });
    req.end();
    c.req = req;
    clients.push(c);
  });
}

async function openAll() {
  const BATCH = 100;
  for (let i = 0; i < CLIENTS; i += BATCH) {
    const n = Math.min(BATCH, CLIENTS - i);
    await Promise.all(Array.from({ length: n }, (_, k) => openClient(i + k)));
  }
}

function post(pathname, token) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: BASE.hostname,
        port: BASE.port,
        path: pathname,
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Length': 0 },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function latencyPhase() {
  const all = [];
  let missed = 0;
  for (let k = 0; k < CHANGES; k++) {
    const resume = k % 2 === 0;
    const target = resume ? 'ready' : 'draining';
    const got = new Uint8Array(CLIENTS);
    let done;
    const finished = new Promise((r) => (done = r));
    current = {
      seq: k,
      got,
      n: 0,
      lat: [],
      done,
      pred: (j) => j.type === 'host.state' && j.host_id === HOST_ID && j.to === target,
      t0: nowMs(),
    };
    const res = await post(`/v1/hosts/${HOST_ID}/${resume ? 'resume' : 'drain'}`, OPERATOR);
    if (res.status !== 200)
      throw new Error(`change ${k}: POST ${resume ? 'resume' : 'drain'} answered ${res.status} ${res.body}`);
    const t = await Promise.race([finished.then(() => 'ok'), sleep(10000).then(() => 'timeout')]);
    if (t !== 'ok') missed += CLIENTS - current.n;
    all.push(...current.lat);
    current = null;
    if (k % 50 === 49) log(`latency: ${k + 1} of ${CHANGES} changes`);
    await sleep(20);
  }
  all.sort((a, b) => a - b);
  return {
    samples: all.length,
    missed,
    p50: pct(all, 50),
    p90: pct(all, 90),
    p99: pct(all, 99),
    max: all[all.length - 1],
  };
}

(async () => {
  const out = { clients: CLIENTS, changes: CHANGES };
  log(
    `baseline: GET /v1/hosts/{id} with no stream open, ${WRK_ROUNDS} x ${WRK_SECONDS}s wrk -t${WRK_THREADS} -c${WRK_CONNS}`,
  );
  out.rss_before_kib = statusKib('VmRSS');
  out.wrk_without = await wrkRounds('without-streams');
  log(`opening ${CLIENTS} streams`);
  const t0 = nowMs();
  await openAll();
  out.open_ms = nowMs() - t0;
  await sleep(1000);
  out.rss_streams_kib = statusKib('VmRSS');
  log(`${CLIENTS} streams open in ${out.open_ms.toFixed(0)} ms; server VmRSS ${out.rss_streams_kib} KiB`);
  const cpuIdle0 = serverCpuS();
  const idleMs = Number(env('BENCH_IDLE_MS', 3000)); // BENCH_SMOKE: 500
  await sleep(idleMs);
  out.idle_cpu_s_per_s = (serverCpuS() - cpuIdle0) / (idleMs / 1000);
  out.wrk_with = await wrkRounds('with-streams');
  out.rss_after_wrk_kib = statusKib('VmRSS');
  log(`latency: ${CHANGES} host state changes, each awaited on all ${CLIENTS} streams`);
  const cpu0 = serverCpuS();
  const tl = nowMs();
  out.latency = await latencyPhase();
  out.latency_phase_s = (nowMs() - tl) / 1000;
  out.latency_phase_server_cpu_s = serverCpuS() - cpu0;
  out.rss_end_kib = statusKib('VmRSS');
  out.hwm_kib = statusKib('VmHWM');
  out.ended_streams = clients.filter((c) => c.ended).length;
  for (const c of clients) c.req.destroy();
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
})().catch((e) => {
  log(`error: ${e.stack || e.message}`);
  for (const c of clients) c.req.destroy();
  process.exit(1);
});
