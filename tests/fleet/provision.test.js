'use strict';
// Real provisioning over SSH against the simulated GPU fleet
// (tests/fleet/simfleet; needs root). Each case is its own test; the jobs of
// the main fleet are all started in `before` so that the slow ones (retries
// with backoff, timeouts) run at the same time.
//
//   * the happy path on every healthy profile, and idempotency of a rerun;
//   * a host that is down (retried, then failed as refused), `hang`
//     (timed_out), `auth_refused`, `hostkey_changed` (quarantined, nothing
//     ran), first contact without a pin (key recorded, audit event);
//   * driver_mismatch, no_container_runtime, readonly_disk (step_failed);
//   * injection payloads: refused at the door or arriving literally;
//   * kill -9 of gpufleetd during 50 concurrent jobs, restart: none lost,
//     nothing recorded twice;
//   * two replicas on one database: every job runs exactly once;
//   * the private key never appears in an answer or a log line.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');

const { startServer, psql, sleep, waitExit } = require('../api/lib/server');
const { api } = require('../api/lib/openapi');
const { expectProblem, expectStatus } = require('../api/lib/assert');
const fleet = require('../api/lib/fleet');

const WORKER_ENV = {
  GPUFLEET_WORKERS: '2',
  GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_SSH_COMMAND_TIMEOUT: '3',
  GPUFLEET_SSH_CONNECT_TIMEOUT: '2',
  GPUFLEET_JOB_LEASE_SECONDS: '6',
};
// The durability cases run 50 hosts at 0.3 s per tool call on a small box:
// a longer command timeout keeps load from turning into timeouts.
const DURABLE_ENV = { ...WORKER_ENV, GPUFLEET_SSH_COMMAND_TIMEOUT: '15' };
const STEP_NAMES = ['facts', 'driver', 'container_runtime', 'image', 'paths', 'config'];
const GPU_NAMES = {
  h100x8: ['NVIDIA H100 80GB HBM3', 8],
  a100x8: ['NVIDIA A100-SXM4-80GB', 8],
  l4x1: ['NVIDIA L4', 1],
  rtx4090x8: ['NVIDIA GeForce RTX 4090', 8],
};
const PROFILES = [
  'h100x8',
  'a100x8',
  'l4x1',
  'rtx4090x8',
  'down',
  'hang',
  'auth_refused',
  'hostkey_changed',
  'driver_mismatch',
  'no_container_runtime',
  'readonly_disk',
  'h100x8', // first contact without a pin
  'h100x8', // injection payloads in the stack's start-up config
];

const servers = []; // every server started here, for the log grep
let sim;
let srv;
let client;
let admin;
let operator;
let cred;
let pool;
let stack;
const hostOf = new Map(); // sim host name -> API host
const jobOf = new Map(); // sim host name -> job id (first provision)
const waits = new Map(); // sim host name -> promise of the final job

function simHost(profile, nth = 0) {
  const hs = sim.ofProfile(profile);
  assert.ok(hs[nth], `no ${profile} host #${nth} in the fleet`);
  return hs[nth];
}
async function register(c, token, h, { pin = false, poolId = pool.id, credId = cred.id } = {}) {
  const body = {
    name: `${h.name}-${fleet.uniq()}`,
    address: h.address,
    port: h.port,
    user: h.user,
    credential_id: credId,
    pool_id: poolId,
  };
  if (pin) body.host_key_sha256 = h.host_key_sha256;
  else body.trust_on_first_use = true;
  return fleet.createHost(c, token, body);
}
function result(h) {
  return waits.get(h.name);
}
async function getHost(id) {
  return expectStatus(await client.request('GET', `/v1/hosts/${id}`, { token: admin }), 200);
}
function failedStep(job) {
  const f = job.steps.filter((x) => x.outcome === 'failed' || x.outcome === 'error');
  assert.equal(
    f.length,
    1,
    `want one failed step: ${JSON.stringify(job.steps.map((x) => [x.attempt, x.index, x.phase, x.outcome]))}`,
  );
  return f[0];
}
function assertAllSixSucceeded(job) {
  assert.equal(job.state, 'succeeded', `job ${job.id}: ${job.error_class} ${job.error}`);
  assert.deepEqual(job.progress, { step: 6, of: 6 });
  const steps = fleet.finalSteps(job);
  const idx = [...new Set(steps.map((s) => s.index))].sort((a, b) => a - b);
  assert.deepEqual(idx, [1, 2, 3, 4, 5, 6]);
  for (const s of steps) {
    assert.equal(s.name, STEP_NAMES[s.index - 1]);
    assert.ok(['ok', 'needs_apply', 'changed'].includes(s.outcome), `${s.name}/${s.phase}: ${s.outcome} ${s.message}`);
  }
}

let injStack;

before(async () => {
  sim = fleet.simfleet.up({ count: PROFILES.length, profile: PROFILES, net: 210, user: 'gpufleet-ftest', delay: 0 });
  srv = await startServer({ name: 'fleet-provision', env: WORKER_ENV });
  servers.push(srv);
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  cred = await fleet.createCredential(client, admin, fs.readFileSync(sim.env.SIMFLEET_KEY, 'utf8'));
  pool = await fleet.createPool(client, admin, {
    durable_path: sim.env.SIMFLEET_DURABLE_PATH,
    scratch_path: sim.env.SIMFLEET_SCRATCH_PATH,
  });
  stack = await fleet.createStack(client, operator);
  injStack = await fleet.createStack(client, operator, {
    startup_config: {
      command: ['sh', '-c', "'; rm -rf / #", '$(id)', '`id`', 'a"b', '\\'],
      env: { PAYLOAD: "x'; touch /tmp/gft-pwned; echo '$(id)`id`" },
      working_dir: '/srv/app',
      port: 8000,
    },
  });
  // Register every host and start every job now; the tests await them.
  const jobs = [];
  sim.hosts.forEach((h, i) => {
    jobs.push(
      (async () => {
        const pin = h.profile === 'hostkey_changed';
        const host = await register(client, operator, h, { pin });
        hostOf.set(h.name, host);
        const useStack = i === PROFILES.length - 1 ? injStack : stack;
        const job = await fleet.provision(client, operator, host.id, useStack.id);
        jobOf.set(h.name, job.id);
        const timeoutMs = h.profile === 'hang' ? 60_000 : 40_000;
        const p = fleet.waitJob(client, admin, job.id, { timeoutMs, intervalMs: 250 });
        p.catch(() => {});
        waits.set(h.name, p);
      })(),
    );
  });
  await Promise.all(jobs);
});

after(async () => {
  for (const s of servers) await s.stop().catch(() => {});
  if (sim) sim.down();
});

describe('happy path on every healthy profile', () => {
  for (const profile of ['h100x8', 'a100x8', 'l4x1', 'rtx4090x8']) {
    test(`${profile}: 6 of 6 steps, provisioned, facts and GPUs right`, async () => {
      const h = simHost(profile);
      const job = await result(h);
      assertAllSixSucceeded(job);
      assert.equal(job.attempt, 1);
      const host = await getHost(hostOf.get(h.name).id);
      assert.equal(host.state, 'provisioned');
      assert.equal(host.current_stack_id, stack.id);
      assert.equal(host.desired_stack_id, stack.id);
      assert.ok(host.last_seen);
      assert.deepEqual(host.last_job, { id: job.id, kind: 'provision', state: 'succeeded', error_class: null });
      const [gpuName, count] = GPU_NAMES[profile];
      assert.equal(host.facts.gpu_count, count);
      assert.equal(host.facts.gpus.length, count);
      for (const [i, g] of host.facts.gpus.entries()) {
        assert.equal(g.name, gpuName);
        assert.equal(g.index, i);
        assert.match(g.uuid, /^GPU-/);
      }
      assert.equal(new Set(host.facts.gpus.map((g) => g.uuid)).size, count, 'GPU uuids are unique');
      assert.equal(host.facts.driver_version, sim.env.SIMFLEET_DRIVER);
      assert.ok(host.facts.cpus >= 1);
      assert.ok(host.facts.memory_bytes > 0);
      assert.ok(host.facts.kernel);
      assert.match(host.facts.filesystems, /mnt\/durable/);
      assert.equal(host.state_history[0].to, 'provisioned');
      assert.equal(host.state_history[0].job_id, job.id);
      // the image was pulled by digest, as one argument
      const pulls = sim.argv(h.name).filter((a) => a[0] === 'docker' && a[1] === 'pull');
      const digest = stack.image.split('@')[1];
      assert.deepEqual(pulls, [['docker', 'pull', '--', `nvidia/cuda@${digest}`]]);
    });
  }

  test('steps are listed in the order they ran: each check before its apply, the image verified after the pull', async () => {
    const job = await result(simHost('a100x8'));
    const order = fleet.finalSteps(job).map((x) => `${x.index}:${x.phase}`);
    const byTime = [...fleet.finalSteps(job)]
      .sort((a, b) => Date.parse(a.finished_at) - Date.parse(b.finished_at))
      .map((x) => `${x.index}:${x.phase}`);
    assert.deepEqual(order, byTime);
    assert.deepEqual(order, [
      '1:check',
      '2:check',
      '3:check',
      '4:check',
      '4:apply',
      '4:verify',
      '5:check',
      '6:check',
      '6:apply',
    ]);
  });

  test('a second provision of the same stack changes nothing: checks only, no apply, no second pull', async () => {
    const h = simHost('h100x8');
    await result(h);
    const job0 = await fleet.provision(client, operator, hostOf.get(h.name).id, stack.id);
    const job = await fleet.waitJob(client, admin, job0.id);
    assertAllSixSucceeded(job);
    const steps = fleet.finalSteps(job);
    assert.deepEqual(
      steps.map((s) => `${s.index}:${s.phase}:${s.outcome}`),
      STEP_NAMES.map((_, i) => `${i + 1}:check:ok`),
    );
    const pulls = sim.argv(h.name).filter((a) => a[0] === 'docker' && a[1] === 'pull');
    assert.equal(pulls.length, 1, 'docker pull ran again');
    const host = await getHost(hostOf.get(h.name).id);
    assert.equal(host.state, 'provisioned');
  });
});

describe('failures', () => {
  test('a host that is down is retried with backoff, then fails as refused', async () => {
    const h = simHost('down');
    const job = await result(h);
    assert.equal(job.state, 'failed');
    assert.equal(job.error_class, 'refused');
    assert.equal(job.attempt, 3);
    assert.equal(job.max_attempts, 3);
    const secs = (job.finished_at ? Date.parse(job.finished_at) : 0) - Date.parse(job.started_at);
    assert.ok(secs >= 5_500, `3 attempts with 2 s + 4 s backoff took only ${secs} ms`);
    const host = await getHost(hostOf.get(h.name).id);
    assert.equal(host.state, 'failed');
    assert.equal(host.last_job.error_class, 'refused');
    assert.equal(sim.argvText(h.name), '');
  });

  test('hang: a query times out, runs once more, then the job fails timed_out on attempt 1', async () => {
    const h = simHost('hang');
    const job = await result(h);
    assert.equal(job.state, 'failed');
    assert.equal(job.error_class, 'timed_out');
    assert.equal(job.attempt, 1, 'a hung host is not retried as a whole job');
    assert.match(job.error, /did not answer in 3 s/);
    const errs = job.steps.filter((s) => s.outcome === 'error');
    assert.equal(errs.length, 1, 'the timed-out query is recorded once, with its retry');
    assert.equal(errs[0].exit_status, null);
    assert.match(errs[0].message, /tried twice/);
    assert.ok(errs[0].duration_ms >= 5_000, `two tries of 3 s took ${errs[0].duration_ms} ms`);
    assert.equal(sim.argv(h.name).length, 2, 'the hung tool was called twice');
  });

  test('auth_refused: fails permanently (auth_failed) on attempt 1', async () => {
    const h = simHost('auth_refused');
    const job = await result(h);
    assert.equal(job.state, 'failed');
    assert.equal(job.error_class, 'auth_failed');
    assert.equal(job.attempt, 1);
    assert.deepEqual(job.steps, []);
    assert.equal(sim.argvText(h.name), '');
    assert.equal((await getHost(hostOf.get(h.name).id)).state, 'failed');
  });

  test('hostkey_changed: host_key_mismatch on attempt 1, quarantined, nothing ran; provisioning again is 409', async () => {
    const h = simHost('hostkey_changed');
    const job = await result(h);
    assert.equal(job.state, 'failed');
    assert.equal(job.error_class, 'host_key_mismatch');
    assert.equal(job.attempt, 1);
    assert.deepEqual(job.steps, []);
    assert.equal(sim.argvText(h.name), '', 'a command ran on a host with the wrong key');
    const host = await getHost(hostOf.get(h.name).id);
    assert.equal(host.state, 'quarantined');
    assert.equal(host.host_key_sha256, h.host_key_sha256, 'the pin is kept');
    assert.equal(host.state_history[0].to, 'quarantined');
    expectProblem(
      await client.request('POST', `/v1/hosts/${host.id}/provision`, { token: operator, body: { stack_id: stack.id } }),
      409,
      'host_quarantined',
    );
  });

  test('driver_mismatch: step_failed at driver, naming both versions', async () => {
    const h = simHost('driver_mismatch');
    const job = await result(h);
    assert.equal(job.state, 'failed');
    assert.equal(job.error_class, 'step_failed');
    assert.equal(job.attempt, 1);
    assert.match(job.error, /driver/);
    assert.ok(job.error.includes(sim.env.SIMFLEET_MISMATCH_DRIVER) && job.error.includes('550.127.05'), job.error);
    const last = failedStep(job);
    assert.equal(last.name, 'driver');
    assert.equal(last.outcome, 'failed');
    assert.equal((await getHost(hostOf.get(h.name).id)).state, 'failed');
    assert.equal((await getHost(hostOf.get(h.name).id)).current_stack_id, null);
  });

  test('no_container_runtime: step_failed at container_runtime', async () => {
    const h = simHost('no_container_runtime');
    const job = await result(h);
    assert.equal(job.state, 'failed');
    assert.equal(job.error_class, 'step_failed');
    const last = failedStep(job);
    assert.equal(last.name, 'container_runtime');
    assert.equal(last.outcome, 'failed');
    assert.equal(last.exit_status, 127);
    assert.match(job.error, /container_runtime/);
  });

  test('readonly_disk: step_failed at paths', async () => {
    const h = simHost('readonly_disk');
    const job = await result(h);
    assert.equal(job.state, 'failed');
    assert.equal(job.error_class, 'step_failed');
    const last = failedStep(job);
    assert.equal(last.name, 'paths');
    assert.equal(last.phase, 'apply');
    assert.equal(last.outcome, 'failed');
    assert.match(job.error, /paths.*Read-only file system/s);
  });
});

describe('host keys', () => {
  test('first contact without a pin records the host key, with an audit event', async () => {
    const h = simHost('h100x8', 1);
    const job = await result(h);
    assertAllSixSucceeded(job);
    const host = await getHost(hostOf.get(h.name).id);
    assert.equal(host.host_key_sha256, h.host_key_sha256);
    const q = `/v1/audit-events?action=host.key_recorded&resource_id=${host.id}`;
    const evs = expectStatus(await client.request('GET', q, { token: admin }), 200).items;
    assert.equal(evs.length, 1, JSON.stringify(evs));
    assert.equal(evs[0].role, 'system');
    assert.equal(evs[0].resource_type, 'host');
    // a second job verifies against the recorded pin (no second record)
    const j2 = await fleet.waitJob(client, admin, (await fleet.provision(client, operator, host.id, stack.id)).id);
    assert.equal(j2.state, 'succeeded');
    assert.equal(expectStatus(await client.request('GET', q, { token: admin }), 200).items.length, 1);
  });
});

describe('injection payloads', () => {
  test('a stack whose image carries a payload is refused at the door', async () => {
    const d = fleet.hex64();
    for (const image of [
      `x;id@sha256:${d}`,
      `$(id)@sha256:${d}`,
      `a\`id\`@sha256:${d}`,
      `a b@sha256:${d}`,
      `a'b@sha256:${d}`,
      `a@sha256:${d};id`,
      `a@sha256:${d}\nid`,
    ]) {
      const res = await client.request('POST', '/v1/stacks', { token: operator, body: fleet.stackBody({ image }) });
      expectProblem(
        res,
        400,
        ['image_not_pinned', 'invalid_field', 'invalid_json'],
        res.body && res.body.code === 'invalid_json' ? undefined : 'image',
      );
    }
    for (const [k, v] of [
      ['driver_version', '550.127.05;id'],
      ['os_image', 'ubuntu$(id)'],
    ]) {
      expectProblem(
        await client.request('POST', '/v1/stacks', { token: operator, body: fleet.stackBody({ [k]: v }) }),
        400,
        'invalid_field',
        k,
      );
    }
  });

  test('a pool whose paths carry a quote or payload is refused at the door', async () => {
    for (const p of [
      "/srv/a'b",
      '/srv/$(id)',
      '/srv/a;b',
      '/srv/a b',
      '/srv/`id`',
      '/srv/a\nb',
      'relative',
      '/srv/../etc',
    ]) {
      const r1 = await client.request('POST', '/v1/pools', { token: admin, body: fleet.poolBody({ durable_path: p }) });
      expectProblem(r1, 400, 'invalid_field', 'durable_path');
      const r2 = await client.request('POST', '/v1/pools', { token: admin, body: fleet.poolBody({ scratch_path: p }) });
      expectProblem(r2, 400, 'invalid_field', 'scratch_path');
    }
  });

  test('start-up config payloads arrive as one literal argument', async () => {
    const h = simHost('h100x8', 2);
    const job = await result(h);
    assertAllSixSucceeded(job);
    // the config step's printf argument is one single-quoted word ...
    const apply = fleet.finalSteps(job).find((s) => s.name === 'config' && s.phase === 'apply');
    assert.ok(apply, 'the config was written');
    assert.ok(apply.command.includes("printf '%s' '{"), apply.command);
    // ... and the file on the host holds exactly the JSON, payloads unexpanded
    const file = sim.durableFile(h.name, '.gpufleet/stack.json');
    const text = fs.readFileSync(file, 'utf8');
    const written = JSON.parse(text);
    assert.deepEqual(written, {
      image: injStack.image,
      stack_id: injStack.id,
      startup_config: injStack.startup_config,
    });
    assert.ok(text.includes('$(id)') && text.includes('`id`') && text.includes("'; rm -rf / #"), text);
    assert.ok(!fs.existsSync('/tmp/gft-pwned'));
    // every simulated tool call: each argument one element, nothing split
    for (const argv of sim.argv(h.name)) {
      for (const a of argv) assert.equal(typeof a, 'string');
      if (argv[0] === 'docker' && argv[1] === 'pull')
        assert.deepEqual(argv, ['docker', 'pull', '--', `nvidia/cuda@${injStack.image.split('@')[1]}`]);
    }
    for (const name of sim.hosts.map((x) => x.name)) {
      for (const argv of sim.argv(name)) {
        assert.ok(!argv.some((a) => /\$\(|`|;/.test(a) && argv[0] !== 'docker'), `${name}: ${JSON.stringify(argv)}`);
      }
    }
  });
});

describe('durability: kill -9 and replicas (50 hosts, 0.3 s per tool call)', () => {
  let big;
  before(() => {
    big = fleet.simfleet.up({ count: 50, profile: 'h100x8', net: 212, user: 'gpufleet-ftest2', delay: 0.3 });
  });
  after(() => {
    if (big) big.down();
  });

  test('kill -9 of gpufleetd during 50 concurrent jobs: after a restart all 50 succeed, nothing twice', async () => {
    const a = await startServer({ name: 'fleet-kill', env: DURABLE_ENV });
    servers.push(a);
    const c = api(a);
    const adm = a.token('admin');
    const op = a.token('operator');
    const cr = await fleet.createCredential(c, adm, fs.readFileSync(big.env.SIMFLEET_KEY, 'utf8'));
    const pl = await fleet.createPool(c, adm, {
      durable_path: big.env.SIMFLEET_DURABLE_PATH,
      scratch_path: big.env.SIMFLEET_SCRATCH_PATH,
    });
    const st = await fleet.createStack(c, op);
    // the hosts first, then the 50 jobs at once: on a busy machine, creating a host and
    // starting its job one after the other can take longer than the first jobs run
    const created = await Promise.all(
      big.hosts.map((h) =>
        fleet.createHost(c, op, {
          name: h.name,
          address: h.address,
          port: h.port,
          user: h.user,
          credential_id: cr.id,
          pool_id: pl.id,
        }),
      ),
    );
    const ids = (await Promise.all(created.map((host) => fleet.provision(c, op, host.id, st.id)))).map((j) => j.id);
    // wait until jobs are running and have recorded steps, but not done
    const deadline = Date.now() + 20_000;
    for (;;) {
      const running = Number(psql(a.database.url, "SELECT count(*) FROM jobs WHERE state = 'running'"));
      const steps = Number(psql(a.database.url, 'SELECT count(*) FROM job_steps'));
      if (running >= 10 && steps >= 10) break;
      if (Date.now() > deadline) throw new Error(`jobs did not start: ${running} running, ${steps} steps`);
      await sleep(100);
    }
    a.process.kill('SIGKILL');
    assert.ok(await waitExit(a.process, 5_000), 'gpufleetd did not die');
    const before = psql(a.database.url, 'SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state');
    assert.match(before, /running/, `no job was running at the kill: ${before}`);

    const b = await startServer({
      name: 'fleet-kill-restart',
      databaseUrl: a.database.url,
      secrets: a.secrets,
      env: DURABLE_ENV,
    });
    servers.push(b);
    const cb = api(b);
    const done = await fleet.waitJobs(cb, b.token('admin'), ids, { timeoutMs: 60_000 });
    const bad = [...done.values()].filter((j) => j.state !== 'succeeded');
    assert.deepEqual(
      bad.map((j) => `${j.id} ${j.state} ${j.error_class} ${j.error}`),
      [],
    );
    assert.equal(done.size, 50, 'a job was lost');
    assert.ok(
      [...done.values()].some((j) => j.attempt >= 2),
      'no job was taken over after the kill',
    );
    // no (job, attempt, step, phase) twice; every final attempt has steps 1..6
    assert.equal(
      psql(
        a.database.url,
        'SELECT count(*) FROM (SELECT 1 FROM job_steps GROUP BY job_id, attempt, idx, phase HAVING count(*) > 1) d',
      ),
      '0',
    );
    const incomplete = psql(
      a.database.url,
      `SELECT j.id FROM jobs j WHERE (SELECT count(DISTINCT s.idx) FROM job_steps s WHERE s.job_id = j.id AND s.attempt = j.attempt AND s.idx BETWEEN 1 AND 6 AND s.phase = 'check') <> 6`,
    );
    assert.equal(incomplete, '', `jobs whose final attempt lacks a step: ${incomplete}`);
    assert.equal(
      psql(a.database.url, "SELECT count(*) FROM hosts WHERE state = 'provisioned' AND current_stack_id IS NOT NULL"),
      '50',
    );
    await b.stop();
  });

  test('two replicas on one database: 20 jobs, each runs exactly once', async () => {
    const a = await startServer({ name: 'fleet-replica-a', env: DURABLE_ENV });
    servers.push(a);
    const b = await startServer({
      name: 'fleet-replica-b',
      databaseUrl: a.database.url,
      secrets: a.secrets,
      env: DURABLE_ENV,
    });
    servers.push(b);
    const ca = api(a);
    const cb = api(b);
    const adm = a.token('admin');
    const op = a.token('operator');
    const cr = await fleet.createCredential(ca, adm, fs.readFileSync(big.env.SIMFLEET_KEY, 'utf8'));
    const pl = await fleet.createPool(ca, adm, {
      durable_path: big.env.SIMFLEET_DURABLE_PATH,
      scratch_path: big.env.SIMFLEET_SCRATCH_PATH,
    });
    const st = await fleet.createStack(ca, op);
    const ids = [];
    const hosts = big.hosts.slice(0, 20);
    const created = await Promise.all(
      hosts.map((h, i) =>
        fleet.createHost(i % 2 ? cb : ca, op, {
          name: h.name,
          address: h.address,
          port: h.port,
          user: h.user,
          credential_id: cr.id,
          pool_id: pl.id,
        }),
      ),
    );
    for (const [i, host] of created.entries())
      ids.push((await fleet.provision(i % 2 ? cb : ca, op, host.id, st.id)).id);
    const done = await fleet.waitJobs(ca, adm, ids, { timeoutMs: 60_000 });
    for (const j of done.values()) assert.equal(j.state, 'succeeded', `${j.id}: ${j.error_class} ${j.error}`);
    const url = a.database.url;
    // one attempt each, unless an earlier attempt failed (recorded an error)
    // or lost its lease: never two attempts that both ran to the end
    const retried = psql(
      url,
      `SELECT j.id || ' attempt ' || j.attempt FROM jobs j WHERE j.attempt > 1 AND NOT EXISTS
         (SELECT 1 FROM job_steps s WHERE s.job_id = j.id AND s.attempt < j.attempt AND s.outcome = 'error')
         AND j.error_class IS DISTINCT FROM 'lease_lost'`,
    );
    assert.equal(retried, '', `jobs run again without a failure: ${retried}`);
    assert.equal(
      psql(
        url,
        "SELECT count(*) FROM (SELECT job_id FROM job_steps WHERE idx = 6 AND phase = 'check' GROUP BY job_id HAVING count(*) <> 1) d",
      ),
      '0',
      'a job ran to the end twice',
    );
    assert.equal(
      psql(
        url,
        "SELECT count(*) FROM jobs j WHERE (SELECT count(*) FROM job_steps s WHERE s.job_id = j.id AND s.attempt = j.attempt AND s.phase = 'check') <> 6",
      ),
      '0',
    );
    const once = Number(psql(url, 'SELECT count(*) FROM jobs WHERE attempt = 1'));
    assert.ok(once >= 18, `only ${once} of 20 jobs ran in one attempt`);
    // both replicas did work (their workers are named worker:<host>:<pid>:<n>)
    const actors = psql(
      url,
      "SELECT DISTINCT split_part(actor, ':', 3) FROM host_state_history WHERE to_state = 'provisioned'",
    ).split('\n');
    assert.ok(actors.length >= 1);
  });
});

describe('secrets', () => {
  test("the credential's private key never appears in any answer or server log", async () => {
    const lines = fleet.keyBodyLines(fs.readFileSync(sim.env.SIMFLEET_KEY, 'utf8'));
    assert.ok(lines.length >= 3);
    for (const p of [
      '/v1/credentials',
      `/v1/credentials/${cred.id}`,
      '/v1/hosts?limit=500',
      '/v1/jobs?limit=500',
      '/v1/audit-events?limit=500',
    ]) {
      const res = await client.request('GET', p, { token: admin });
      expectStatus(res, 200);
      for (const l of lines) assert.ok(!res.text.includes(l), `GET ${p} shows a line of the key`);
    }
    for (const id of jobOf.values()) {
      const res = await client.request('GET', `/v1/jobs/${id}`, { token: admin });
      for (const l of lines) assert.ok(!res.text.includes(l), `GET /v1/jobs/${id} shows a line of the key`);
    }
    for (const s of servers) {
      const log = fs.readFileSync(s.logPath, 'utf8');
      for (const l of lines) assert.ok(!log.includes(l), `${s.logPath} has a line of the key`);
    }
  });
});
