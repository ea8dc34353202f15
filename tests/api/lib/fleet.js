'use strict';
// Helpers for the hosts/jobs tests: SSH keys, the credential/pool/stack a
// host needs, the simulated fleet (tests/fleet/simfleet), argv logs, and
// waiting for jobs.
//
//   const fleet = require('./lib/fleet');
//   const key = fleet.sshKey();                        // {path, text, pub}
//   const sim = fleet.simfleet.up({dir, count, profile, net, user, delay});
//   sim.hosts, sim.env.SIMFLEET_DURABLE_PATH, sim.argv('sim-001'), sim.down()
//   const job = await fleet.waitJob(client, token, id, {timeoutMs});

const { spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { ROOT } = require('./server');

const SIMFLEET = path.join(ROOT, 'tests', 'fleet', 'simfleet');
const FINAL = new Set(['succeeded', 'failed', 'cancelled']);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const uniq = () => crypto.randomBytes(4).toString('hex');
const hex64 = () => crypto.randomBytes(32).toString('hex');

/** A fresh unencrypted ed25519 key made by ssh-keygen. {dir, path, text, pub}. */
function sshKey() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gft-key-'));
  const file = path.join(dir, 'id_ed25519');
  const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'gft', '-f', file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ssh-keygen failed: ${r.stderr}`);
  return { dir, path: file, text: fs.readFileSync(file, 'utf8'), pub: fs.readFileSync(`${file}.pub`, 'utf8') };
}

/** The base64 body lines of an OpenSSH private key (what must never leak). */
function keyBodyLines(text) {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('-----'));
}

/** A stack body (driver 550.127.05 / CUDA 12.4, as the simulated fleet's healthy hosts). */
function stackBody(overrides = {}) {
  return {
    name: `sim-stack-${uniq()}`,
    os_image: 'ubuntu-22.04',
    driver_branch: '550',
    driver_version: '550.127.05',
    cuda_version: '12.4',
    image: `nvidia/cuda:12.4.1-base-ubuntu22.04@sha256:${hex64()}`,
    framework: { name: 'vllm', version: '0.6.3' },
    startup_config: {
      command: ['vllm', 'serve', '/models/m', '--port', '8000'],
      env: { HF_HOME: '/models/hf' },
      port: 8000,
    },
    ...overrides,
  };
}

function poolBody(overrides = {}) {
  return {
    name: `pool-${uniq()}`,
    gpu_model: 'h100_sxm',
    gpu_count: 8,
    price_per_hour: 12.5,
    durable_path: '/srv/gpufleet/durable',
    scratch_path: '/srv/gpufleet/scratch',
    ...overrides,
  };
}

function must(res, status, what) {
  if (res.status !== status) {
    throw new Error(`${what}: want ${status}, got ${res.status} ${res.text}`);
  }
  return res.body;
}

async function createCredential(client, admin, keyText, name = `cred-${uniq()}`) {
  return must(
    await client.request('POST', '/v1/credentials', { token: admin, body: { name, private_key: keyText } }),
    201,
    'POST /v1/credentials',
  );
}
async function createPool(client, admin, overrides = {}) {
  return must(
    await client.request('POST', '/v1/pools', { token: admin, body: poolBody(overrides) }),
    201,
    'POST /v1/pools',
  );
}
async function createStack(client, token, overrides = {}) {
  return must(
    await client.request('POST', '/v1/stacks', { token, body: stackBody(overrides) }),
    201,
    'POST /v1/stacks',
  );
}
// A body without a pinned key asks for trust on first use explicitly (the API refuses
// a registration that says neither).
async function createHost(client, token, body) {
  const b = body.host_key_sha256 || 'trust_on_first_use' in body ? body : { ...body, trust_on_first_use: true };
  return must(await client.request('POST', '/v1/hosts', { token, body: b }), 201, `POST /v1/hosts ${body.name}`);
}
async function provision(client, token, hostId, stackId, headers = {}) {
  return must(
    await client.request('POST', `/v1/hosts/${hostId}/provision`, { token, body: { stack_id: stackId }, headers }),
    202,
    `POST /v1/hosts/${hostId}/provision`,
  );
}

/**
 * POST /v1/pools for a simulated fleet (fleet.simfleet.up): eight H100 GPUs at 10 an hour on
 * the fleet's durable and scratch paths, named `<prefix>-<random>`, plus the fields in extra
 * (interconnect, gate, monitor, …). Returns the pool (201).
 */
async function createSimPool(client, admin, sim, prefix, extra = {}) {
  const body = {
    name: `${prefix}-${uniq()}`,
    gpu_model: 'h100_sxm',
    gpu_count: 8,
    price_per_hour: 10,
    durable_path: sim.env.SIMFLEET_DURABLE_PATH,
    scratch_path: sim.env.SIMFLEET_SCRATCH_PATH,
    ...extra,
  };
  return must(await client.request('POST', '/v1/pools', { token: admin, body }), 201, 'POST /v1/pools');
}

/** The POST /v1/hosts body of simulated host s (its address, port, user and pinned key) with fields. */
function simHostBody(s, fields) {
  return { address: s.address, port: s.port, user: s.user, host_key_sha256: s.host_key_sha256, ...fields };
}

/** Poll GET /v1/jobs/{id} until the job is final (or `until(job)` holds). */
async function waitJob(
  client,
  token,
  id,
  { timeoutMs = 30_000, until = (j) => FINAL.has(j.state), intervalMs = 200 } = {},
) {
  const deadline = Date.now() + timeoutMs;
  let job;
  for (;;) {
    job = must(await client.request('GET', `/v1/jobs/${id}`, { token }), 200, `GET /v1/jobs/${id}`);
    if (until(job)) return job;
    if (Date.now() > deadline) {
      throw new Error(
        `job ${id} did not get there within ${timeoutMs} ms: ${JSON.stringify({ ...job, steps: job.steps.length })}`,
      );
    }
    await sleep(intervalMs);
  }
}

/** Wait for many jobs (one list query per round). Resolves the final jobs by id. */
async function waitJobs(client, token, ids, { timeoutMs = 60_000 } = {}) {
  const want = new Set(ids);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = new Map();
    let cursor = null;
    do {
      const q = `/v1/jobs?kind=provision&limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = must(await client.request('GET', q, { token }), 200, 'GET /v1/jobs');
      for (const j of page.items) if (want.has(j.id)) seen.set(j.id, j);
      cursor = page.next_cursor;
    } while (cursor);
    const pending = [...want].filter((id) => !seen.has(id) || !FINAL.has(seen.get(id).state));
    if (pending.length === 0) return seen;
    if (Date.now() > deadline) {
      const states = {};
      for (const j of seen.values()) states[j.state] = (states[j.state] || 0) + 1;
      throw new Error(
        `${pending.length} of ${want.size} jobs not final after ${timeoutMs} ms: ${JSON.stringify(states)}`,
      );
    }
    await sleep(300);
  }
}

/** The steps of the job's final attempt. */
function finalSteps(job) {
  return job.steps.filter((s) => s.attempt === job.attempt);
}

// ---- the simulated fleet ----

function parseEnv(text) {
  const env = {};
  for (const line of text.split('\n')) {
    const m = /^(?:export\s+)?([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (!m) continue;
    let v = m[2];
    if (/^'.*'$/.test(v) || /^".*"$/.test(v)) v = v.slice(1, -1);
    env[m[1]] = v;
  }
  return env;
}

function parseHosts(text) {
  const t = text.trim();
  if (t.startsWith('[')) return JSON.parse(t);
  return t
    .split('\n')
    .map((l) => l.trim().replace(/,$/, ''))
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

function runSimfleet(args, { timeout = 180_000 } = {}) {
  const r = spawnSync(SIMFLEET, args, { encoding: 'utf8', timeout });
  if (r.status !== 0) {
    throw new Error(`simfleet ${args.join(' ')} failed (${r.status} ${r.signal || ''}):\n${r.stdout}${r.stderr}`);
  }
  return r;
}

/**
 * Start a simulated fleet. options: dir (default a temp dir), count, profile
 * (string or array, applied round-robin), net, user, delay, hang, extra (args).
 * Returns {dir, hosts, env, byName, host(profile), argv(name), argvLines(name), down()}.
 */
function up({ dir, count, profile = 'h100x8', net = 210, user = 'gpufleet-ftest', delay = 0, hang, extra = [] } = {}) {
  dir = dir || fs.mkdtempSync(path.join(os.tmpdir(), 'gft-fleet-'));
  const profiles = Array.isArray(profile) ? profile.join(',') : profile;
  const args = [
    'up',
    '--count',
    String(count),
    '--profile',
    profiles,
    '--dir',
    dir,
    '--net',
    String(net),
    '--user',
    user,
    '--delay',
    String(delay),
  ];
  if (hang !== undefined) args.push('--hang', String(hang));
  runSimfleet([...args, ...extra]);
  const hosts = parseHosts(fs.readFileSync(path.join(dir, 'hosts.json'), 'utf8'));
  const env = parseEnv(fs.readFileSync(path.join(dir, 'fleet.env'), 'utf8'));
  const byName = new Map(hosts.map((h) => [h.name, h]));
  let down = false;
  return {
    dir,
    hosts,
    env,
    byName,
    /** The hosts of this profile. */
    ofProfile(p) {
      return hosts.filter((h) => h.profile === p);
    },
    argvPath(name) {
      return path.join(dir, name, 'argv.log');
    },
    /** Raw argv.log text of a host. */
    argvText(name) {
      try {
        return fs.readFileSync(path.join(dir, name, 'argv.log'), 'utf8');
      } catch {
        return '';
      }
    },
    /** argv.log parsed: one array of strings per tool call. */
    argv(name) {
      return this.argvText(name)
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l));
    },
    /** What the host sees at the pool's durable path. */
    durableFile(name, rel) {
      return path.join(dir, name, 'fs', 'durable', rel);
    },
    down() {
      if (down) return;
      down = true;
      // In tests/*/run, the hosts' CPU is counted with this file's (tests/lib/times-at-exit.js).
      const timesFile = process.env.GPUFLEET_TEST_TIMES_FILE;
      const r = spawnSync(SIMFLEET, ['down', '--dir', dir, ...(timesFile ? ['--cpu'] : [])], {
        encoding: 'utf8',
        timeout: 120_000,
      });
      const m = /the hosts used ([\d.]+) s of CPU/.exec(r.stdout || '');
      if (timesFile && m && process.argv[1]) {
        fs.appendFileSync(timesFile, `0\t${m[1]}\t${path.relative(process.cwd(), process.argv[1])}\n`);
      }
    },
  };
}

/**
 * The set-up of a fleet test file: simulated hosts (simfleet up, options as up() takes
 * them, dir made under /tmp), a server with a worker (env), a client, admin, operator and
 * viewer tokens, a credential for the simulated hosts' key and a stack. The hosts go down
 * again when the server or a record cannot be made.
 * Returns {sim, srv, client, admin, operator, viewer, cred, stack}.
 */
async function startFleet({ name, sim: simOptions, env }) {
  const { startServer } = require('./server');
  const { api } = require('./openapi');
  const sim = up({ delay: 0, ...simOptions, dir: fs.mkdtempSync(path.join(os.tmpdir(), `gft-${name}-fleet-`)) });
  try {
    const srv = await startServer({ name: `fleet-${name}`, env });
    const client = api(srv);
    const t = { admin: srv.token('admin'), operator: srv.token('operator'), viewer: srv.token('viewer') };
    const cred = await createCredential(client, t.admin, fs.readFileSync(sim.env.SIMFLEET_KEY, 'utf8'));
    const stack = await createStack(client, t.operator);
    return { sim, srv, client, ...t, cred, stack };
  } catch (e) {
    sim.down();
    throw e;
  }
}

module.exports = {
  sshKey,
  keyBodyLines,
  stackBody,
  poolBody,
  createCredential,
  createPool,
  createSimPool,
  simHostBody,
  createStack,
  createHost,
  provision,
  waitJob,
  waitJobs,
  finalSteps,
  FINAL,
  uniq,
  hex64,
  sleep,
  startFleet,
  simfleet: { up, parseEnv, parseHosts, SIMFLEET },
};
