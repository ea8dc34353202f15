'use strict';
// Helpers of the rollout fleet tests (tests/fleet/rollout*.test.js, issue 14): a
// simulated fleet whose hosts are registered, provisioned with a first stack and
// accepted by a gate with a workload (so baselines are recorded), the rollout API,
// a persistent psql session, and a watcher that checks the rollout's unavailability
// limit continuously from PostgreSQL.
//
//   const R = require('./lib/rollout');
//   const f = await R.setup({ name, net, user, count, env, workers: 'separate' });
//   const pool = await f.pool('x');  await f.enroll(hosts, pool, stackA);
//   const ro = await f.createRollout(pool.id, { stack_id, canary: 1, max_unavailable: 2 });
//   const w = f.watch(ro, limit);  await f.waitRollout(ro.id, ['succeeded']);  w.stop();

const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const { startServer, ROOT, BIN, LOG_DIR, waitExit } = require('../../api/lib/server');
const { api, validateEvent } = require('../../api/lib/openapi');
const { expectStatus, show } = require('../../api/lib/assert');
const { openStream } = require('../../api/lib/sse');
const fleet = require('../../api/lib/fleet');

const SIMFLEET = path.join(ROOT, 'tests', 'fleet', 'simfleet');
const OUT_STEPS = ['draining', 'provisioning', 'gating', 'comparing', 'resuming'];
const OUT_RB = ['draining', 'provisioning', 'gating', 'resuming'];
const TERMINAL = ['succeeded', 'rolled_back', 'aborted', 'failed'];
const TPS = 2400; // the simulated workload's default tokens_per_second
const SLOW_TPS = 2000; // simfleet digest ... slow

/** The pool gate of every rollout test: a workload reporting tokens_per_second >= 1000. */
function gateDef() {
  return {
    // no storage check: it writes 32 MiB with fsync per gate, and each host is gated 2-4 times
    checks: ['gpu_inventory', 'container_gpu', 'workload', 'topology'],
    workload: {
      command: ['python3', 'bench.py'],
      metric: 'tokens_per_second',
      min: 1000,
      timeout_s: 20,
      concurrency: 8,
      cache: 'warm',
    },
  };
}

/** The image digest (sha256:…) of a stack. */
const digestOf = (stack) => stack.image.slice(stack.image.indexOf('@') + 1);

/**
 * A psql session kept open: query(sql) resolves its -At output (trimmed). Each query
 * is one statement, so what it reads is one snapshot.
 */
function psqlSession(url) {
  const child = spawn('psql', ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=0', '-d', url], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const queue = [];
  const MARK = '__gft_end__';
  child.stdout.on('data', (d) => {
    out += d;
    for (;;) {
      const i = out.indexOf(`${MARK}\n`);
      if (i < 0) break;
      const text = out.slice(0, i).trim();
      out = out.slice(i + MARK.length + 1);
      const q = queue.shift();
      const e = err;
      err = '';
      if (q) e ? q.reject(new Error(`psql: ${e.trim()} (${q.sql})`)) : q.resolve(text);
    }
  });
  child.stderr.on('data', (d) => (err += d));
  return {
    query(sql) {
      return new Promise((resolve, reject) => {
        queue.push({ resolve, reject, sql });
        child.stdin.write(`${sql.replace(/;\s*$/, '')};\n\\echo ${MARK}\n`);
      });
    },
    close() {
      child.stdin.end();
    },
  };
}

async function until(fn, timeoutMs, what, intervalMs = 250) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last && last.ok !== false) return last.value !== undefined ? last.value : last;
    if (Date.now() > deadline)
      throw new Error(`${what}: not after ${timeoutMs} ms${last && last.why ? `: ${last.why}` : ''}`);
    await fleet.sleep(intervalMs);
  }
}

/** Depth-first search for the first object for which pred holds. */
function findDeep(v, pred) {
  if (v && typeof v === 'object') {
    if (!Array.isArray(v) && pred(v)) return v;
    for (const x of Array.isArray(v) ? v : Object.values(v)) {
      const r = findDeep(x, pred);
      if (r) return r;
    }
  }
  return null;
}

/**
 * Starts the fleet and the server. workers: 'inline' (serve runs GPUFLEET_WORKERS=2) or
 * 'separate' (serve with no workers, plus a `gpufleetd worker` process that
 * startWorker()/killWorker() control).
 */
async function setup({ name, net, user, count, profile = 'h100x8', workers = 'inline', env = {}, driver }) {
  const f = {};
  const workerEnv = {
    GPUFLEET_WORKERS: '2',
    GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
    GPUFLEET_SSH_COMMAND_TIMEOUT: '20',
    GPUFLEET_SSH_CONNECT_TIMEOUT: '3',
    GPUFLEET_JOB_LEASE_SECONDS: '8',
    ...env,
  };
  // driver: {version, cuda}: what every host reports (simfleet up --driver --cuda), and
  // what f.stack() pins; default the fleet's 550.127.05 / 12.4
  const extra = driver ? ['--driver', driver.version, '--cuda', driver.cuda] : [];
  f.sim = fleet.simfleet.up({
    count,
    profile,
    net,
    user,
    delay: 0,
    extra,
    dir: fs.mkdtempSync(`/tmp/gft-${name}-fleet-`),
  });
  const pin = driver
    ? { driver_branch: driver.version.split('.')[0], driver_version: driver.version, cuda_version: driver.cuda }
    : {};
  f.srv = await startServer({ name, env: workers === 'inline' ? workerEnv : { ...workerEnv, GPUFLEET_WORKERS: '0' } });
  f.client = api(f.srv);
  f.admin = f.srv.token('admin', { ttl: '2h' });
  f.operator = f.srv.token('operator', { ttl: '2h' });
  f.viewer = f.srv.token('viewer', { ttl: '2h' });
  f.db = psqlSession(f.srv.database.url);
  f.sql = (q) => f.db.query(q);
  f.cred = await fleet.createCredential(f.client, f.admin, fs.readFileSync(f.sim.env.SIMFLEET_KEY, 'utf8'));
  f.worker = null;
  f.workerRuns = 0;

  /** `gpufleetd worker` (workers: 'separate'), logging to test-artifacts/logs/<name>-worker.log. */
  f.startWorker = () => {
    const fd = fs.openSync(path.join(LOG_DIR, `${name}-worker.log`), 'a');
    fs.writeSync(fd, `\n=== ${new Date().toISOString()} start worker #${++f.workerRuns} ===\n`);
    f.worker = spawn(BIN, ['worker'], { env: { ...f.srv.env, ...workerEnv }, stdio: ['ignore', fd, fd] });
    fs.closeSync(fd);
    return f.worker;
  };
  f.killWorker = async (signal = 'SIGKILL') => {
    if (!f.worker) return null;
    const w = f.worker;
    f.worker = null;
    w.kill(signal);
    return waitExit(w, 10_000);
  };
  if (workers === 'separate') f.startWorker();

  f.simctl = (...args) => {
    const r = spawnSync(SIMFLEET, [...args, '--dir', f.sim.dir], { encoding: 'utf8', timeout: 60_000 });
    if (r.status !== 0) throw new Error(`simfleet ${args.join(' ')}: ${r.status}\n${r.stdout}${r.stderr}`);
    return r.stdout;
  };
  f.req = async (method, url, token, body) => f.client.request(method, url, { token, body });
  f.get = async (url) => expectStatus(await f.req('GET', url, f.viewer), 200);
  f.stack = (overrides = {}) =>
    fleet.createStack(f.client, f.operator, { name: `ro-${fleet.uniq()}`, ...pin, ...overrides });
  f.pool = async (key, gate = gateDef(), extra = {}) =>
    expectStatus(
      await f.req('POST', '/v1/pools', f.admin, {
        name: `ro-${key}-${fleet.uniq()}`,
        gpu_model: 'h100_sxm',
        gpu_count: 8,
        interconnect: 'nvlink',
        price_per_hour: 10,
        durable_path: f.sim.env.SIMFLEET_DURABLE_PATH,
        scratch_path: f.sim.env.SIMFLEET_SCRATCH_PATH,
        gate,
        ...extra,
      }),
      201,
    );

  /** Registers the simulated hosts sims[] as `<prefix>-NN` in the pool, provisions them with
   * the stack and gates them (accept → ready, a baseline each). Returns the API hosts. */
  f.enroll = async (sims, pool, stack, prefix) =>
    Promise.all(
      sims.map(async (s, i) => {
        const host = await fleet.createHost(f.client, f.operator, {
          name: `${prefix}-${String(i + 1).padStart(2, '0')}`,
          address: s.address,
          port: s.port,
          user: s.user,
          credential_id: f.cred.id,
          pool_id: pool.id,
          host_key_sha256: s.host_key_sha256,
        });
        host.sim = s;
        const pj = await fleet.waitJob(
          f.client,
          f.viewer,
          (await fleet.provision(f.client, f.operator, host.id, stack.id)).id,
          {
            timeoutMs: 120_000,
            intervalMs: 300,
          },
        );
        assert.equal(pj.state, 'succeeded', `provision ${host.name}: ${pj.error_class} ${pj.error}`);
        const gq = expectStatus(await f.req('POST', `/v1/hosts/${host.id}/gate`, f.operator), 202);
        const gj = await fleet.waitJob(f.client, f.viewer, gq.id, { timeoutMs: 120_000, intervalMs: 300 });
        assert.equal(gj.state, 'succeeded', `gate ${host.name}: ${gj.error_class} ${gj.error}`);
        const h = await f.get(`/v1/hosts/${host.id}`);
        assert.equal(h.state, 'ready', `${host.name} after its gate: ${JSON.stringify(h.state)}`);
        assert.equal(h.current_stack_id, stack.id);
        return Object.assign(host, { state: h.state });
      }),
    );

  f.host = (id) => f.get(`/v1/hosts/${id}`);
  f.rollout = (id) => f.get(`/v1/rollouts/${id}`);
  /** POST /v1/pools/{id}/rollouts; 201 with Location, the document. */
  f.createRollout = async (poolId, body, token = f.operator) => {
    const res = await f.req('POST', `/v1/pools/${poolId}/rollouts`, token, body);
    const doc = expectStatus(res, 201);
    assert.equal(res.headers.get('location'), `/v1/rollouts/${doc.id}`);
    return doc;
  };
  f.control = async (id, action, status = 200, body = { reason: `test ${action}` }) => {
    const res = await f.req('POST', `/v1/rollouts/${id}/${action}`, f.operator, body);
    assert.equal(res.status, status, `${action}: ${show(res)}`);
    return res.body;
  };
  /** Polls GET /v1/rollouts/{id} until its state is one of states (fails early on a
   * terminal state not wanted). Returns the document. */
  f.waitRollout = (id, states, timeoutMs = 150_000) =>
    until(
      async () => {
        const d = await f.rollout(id);
        if (states.includes(d.state)) return { value: d };
        if (TERMINAL.includes(d.state)) throw new Error(`rollout ${id} ended ${d.state}, want ${states}: ${brief(d)}`);
        return { ok: false, why: brief(d) };
      },
      timeoutMs,
      `rollout ${id} in ${states}`,
      300,
    );
  /** Waits until pred(rollout_hosts rows by host name) holds, from PostgreSQL. */
  f.waitSteps = (id, pred, timeoutMs, what) =>
    until(
      async () => {
        const rows = await stepRows(f, id);
        return pred(rows) ? { value: rows } : { ok: false, why: JSON.stringify(rows) };
      },
      timeoutMs,
      what,
      100,
    );

  /** An SSE stream of rollout events (validated against the spec). */
  f.events = () =>
    openStream(f.srv.url, { token: f.viewer, query: '?types=rollout,rollout.host', validate: validateEvent });

  f.stop = async () => {
    f.db.close();
    await f.killWorker('SIGTERM');
    await f.srv.stop();
    f.sim.down();
    fs.rmSync(f.sim.dir, { recursive: true, force: true });
  };
  return f;
}

function brief(d) {
  return JSON.stringify({
    state: d.state,
    wave: d.current_wave,
    unavailable: d.unavailable,
    error: d.error,
    hosts: (d.hosts || []).map((h) => [h.name, h.wave, h.step, h.rollback_step, h.error]),
  });
}

/** rollout_hosts rows: {name: {step, rollback_step, wave}} */
async function stepRows(f, id) {
  const text = await f.sql(
    `SELECT coalesce(json_object_agg(host_name, json_build_object('step', step, 'rollback_step', rollback_step, 'wave', wave)), '{}')
       FROM rollout_hosts WHERE rollout_id = '${id}'`,
  );
  return JSON.parse(text);
}

/**
 * Checks, every intervalMs from its own psql session (one statement = one snapshot),
 * that the rollout's hosts out of service (steps per docs/rollouts.md) and the pool's
 * hosts not `ready` are both <= limit; also GET's `unavailable` every 5th round.
 * stop() resolves {samples, maxSteps, maxHosts, violations}.
 */
function watch(f, rollout, limit, { intervalMs = 100 } = {}) {
  const db = psqlSession(f.srv.database.url);
  const st = { samples: 0, maxSteps: 0, maxHosts: 0, maxDoc: 0, violations: [], errors: [] };
  let running = true;
  const q = `SELECT (SELECT count(*) FROM rollout_hosts WHERE rollout_id = '${rollout.id}'
              AND (step IN (${OUT_STEPS.map((s) => `'${s}'`).join(',')}) OR rollback_step IN (${OUT_RB.map((s) => `'${s}'`).join(',')})))
          || ' ' || (SELECT count(*) FROM hosts WHERE pool_id = '${rollout.pool_id}' AND state <> 'ready')
          || ' ' || (SELECT state FROM rollouts WHERE id = '${rollout.id}')
          || ' ' || (SELECT coalesce(string_agg(host_name || ':' || step || '/' || coalesce(rollback_step, '-'), ',' ORDER BY position), '')
                       FROM rollout_hosts WHERE rollout_id = '${rollout.id}' AND step NOT IN ('pending', 'done'))`;
  const loop = (async () => {
    while (running) {
      try {
        const [steps, hosts, state, detail] = (await db.query(q)).split(' ');
        st.samples++;
        st.maxSteps = Math.max(st.maxSteps, Number(steps));
        st.maxHosts = Math.max(st.maxHosts, Number(hosts));
        if (Number(steps) > limit || Number(hosts) > limit) {
          st.violations.push({
            at: new Date().toISOString(),
            steps: Number(steps),
            hosts_not_ready: Number(hosts),
            state,
            detail,
          });
        }
        if (st.samples % 5 === 0) {
          const d = await f.rollout(rollout.id);
          st.maxDoc = Math.max(st.maxDoc, d.unavailable);
          if (d.unavailable > limit)
            st.violations.push({ at: new Date().toISOString(), document_unavailable: d.unavailable });
        }
      } catch (e) {
        st.errors.push(String(e.message || e));
        if (st.errors.length > 20) break;
      }
      await fleet.sleep(intervalMs);
    }
  })();
  return {
    stats: st,
    async stop() {
      running = false;
      await loop;
      db.close();
      return st;
    },
  };
}

/** Counts of what happened to hosts since a point: jobs and state history rows. */
async function touchedSince(f, hostIds, jobSeq, histId) {
  const ids = hostIds.map((id) => `'${id}'`).join(',');
  const jobs = Number(await f.sql(`SELECT count(*) FROM jobs WHERE host_id IN (${ids}) AND seq > ${jobSeq}`));
  const hist = Number(
    await f.sql(`SELECT count(*) FROM host_state_history WHERE host_id IN (${ids}) AND id > ${histId}`),
  );
  return { jobs, hist };
}
async function marks(f) {
  return {
    jobSeq: Number(await f.sql('SELECT coalesce(max(seq), 0) FROM jobs')),
    histId: Number(await f.sql('SELECT coalesce(max(id), 0) FROM host_state_history')),
  };
}

/** The steps a host went through, from the rollout.host events of the stream. */
function stepsOf(events, rolloutId, hostId, key = 'step') {
  const out = [];
  for (const e of events) {
    const j = e.json;
    if (!j || e.event !== 'rollout.host' || j.rollout_id !== rolloutId || j.host_id !== hostId) continue;
    const v = j[key];
    if (v != null && out[out.length - 1] !== v) out.push(v);
  }
  return out;
}

/** Asserts that seq is in the order of canon (a subsequence of it). */
function assertOrdered(seq, canon, what) {
  let k = 0;
  for (const s of seq) {
    const i = canon.indexOf(s, k);
    assert.ok(i >= 0, `${what}: ${JSON.stringify(seq)} is not in the order ${JSON.stringify(canon)}`);
    k = i;
  }
}

module.exports = {
  setup,
  gateDef,
  digestOf,
  psqlSession,
  watch,
  until,
  findDeep,
  stepRows,
  touchedSince,
  marks,
  stepsOf,
  assertOrdered,
  brief,
  OUT_STEPS,
  TERMINAL,
  TPS,
  SLOW_TPS,
};
