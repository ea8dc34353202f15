'use strict';
// The storage reference's pool settings (gate.storage) and targeted diagnostics
// (POST /v1/hosts/{id}/diagnostics {"tests": [...]}) through the API, without SSH
// (GPUFLEET_WORKERS=0: jobs stay queued). Every rejection names its field. The runs
// themselves are in tests/fleet/gate_storage.test.js.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

let srv;
let client;
let admin;
let operator;
let cred;
let pool;

async function post(path, body, token = operator) {
  return client.request('POST', path, { token, body });
}

before(async () => {
  srv = await startServer({
    name: 'gate-storage',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  pool = await fleet.createPool(client, admin, {
    gate: { storage: { read_size_mib: 2048, min_read_mbps: 1000, artifact: 'models/llama/model-00001.safetensors' } },
  });
});

after(async () => {
  if (srv) await srv.stop();
});

describe('pool gate.storage', () => {
  test('stored as given; storage_throughput may be named in gate.checks; the default checks are unchanged', async () => {
    assert.deepEqual(pool.gate.storage, {
      read_size_mib: 2048,
      min_read_mbps: 1000,
      artifact: 'models/llama/model-00001.safetensors',
    });
    assert.ok(!pool.gate.checks.includes('storage_throughput'), 'opt-in: not in the default list');
    const p = await fleet.createPool(client, admin, {
      gate: {
        checks: ['gpu_inventory', 'storage', 'storage_throughput'],
        storage: {
          tool: 'fio',
          write_size_mib: 16,
          read_size_mib: 16,
          require: true,
          timeout_s: 600,
          min_write_mbps: 0.5,
        },
      },
    });
    assert.deepEqual(p.gate.checks, ['gpu_inventory', 'storage', 'storage_throughput']);
    assert.equal(p.gate.storage.tool, 'fio');
  });

  test('each bad setting answers 400 naming it', async () => {
    for (const [storage, code, field] of [
      [{ read_size_mib: 15 }, 'invalid_field', 'gate.storage.read_size_mib'],
      [{ read_size_mib: 1048577 }, 'invalid_field', 'gate.storage.read_size_mib'],
      [{ read_size_mib: 'big' }, 'invalid_field', 'gate.storage.read_size_mib'],
      [{ read_size_mib: 64.5 }, 'invalid_field', 'gate.storage.read_size_mib'],
      [{ write_size_mib: 15 }, 'invalid_field', 'gate.storage.write_size_mib'],
      [{ write_size_mib: 65537 }, 'invalid_field', 'gate.storage.write_size_mib'],
      [{ artifact: '../etc/shadow' }, 'invalid_field', 'gate.storage.artifact'],
      [{ artifact: '/etc/shadow' }, 'invalid_field', 'gate.storage.artifact'],
      [{ artifact: 'models/../../x' }, 'invalid_field', 'gate.storage.artifact'],
      [{ artifact: 'models/./x' }, 'invalid_field', 'gate.storage.artifact'],
      [{ artifact: 'a//b' }, 'invalid_field', 'gate.storage.artifact'],
      [{ artifact: 'model dir/x' }, 'invalid_field', 'gate.storage.artifact'],
      [{ artifact: "x';reboot;'" }, 'invalid_field', 'gate.storage.artifact'],
      [{ artifact: 'x/' }, 'invalid_field', 'gate.storage.artifact'],
      [{ artifact: '' }, 'invalid_field', 'gate.storage.artifact'],
      [{ artifact: 'a'.repeat(501) }, 'invalid_field', 'gate.storage.artifact'],
      [{ tool: 'sh' }, 'invalid_field', 'gate.storage.tool'],
      [{ min_read_mbps: 0 }, 'invalid_field', 'gate.storage.min_read_mbps'],
      [{ min_read_mbps: -5 }, 'invalid_field', 'gate.storage.min_read_mbps'],
      [{ min_write_mbps: 0 }, 'invalid_field', 'gate.storage.min_write_mbps'],
      [{ min_write_mbps: 2e6 }, 'invalid_field', 'gate.storage.min_write_mbps'],
      [{ require: 'yes' }, 'invalid_field', 'gate.storage.require'],
      [{ timeout_s: 0 }, 'invalid_field', 'gate.storage.timeout_s'],
      [{ timeout_s: 3601 }, 'invalid_field', 'gate.storage.timeout_s'],
      [{ size: 1 }, 'unknown_field', 'gate.storage.size'],
      ['1024', 'invalid_field', 'gate.storage'],
    ]) {
      const res = await post('/v1/pools', fleet.poolBody({ gate: { storage } }), admin);
      expectProblem(res, 400, code, field);
    }
    expectProblem(
      await post('/v1/pools', fleet.poolBody({ gate: { checks: ['storage_throughput', 'disk'] } }), admin),
      400,
      'invalid_field',
      'gate.checks',
    );
  });
});

describe('targeted diagnostics', () => {
  let h;
  before(async () => {
    h = await fleet.createHost(client, operator, {
      name: `gs-${process.pid}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  });

  test('refused on a host that is not drained (409 host_not_drained)', async () => {
    expectProblem(await post(`/v1/hosts/${h.id}/diagnostics`, { tests: ['storage'] }), 409, 'host_not_drained');
  });

  test('the tests are validated: each bad item named', async () => {
    expectStatus(await post(`/v1/hosts/${h.id}/drain`), 200);
    for (const [body, code, field, detail] of [
      [{ tests: ['disk'] }, 'invalid_field', 'tests[0]', /"disk" is not a test: storage, bandwidth or workload/],
      [{ tests: ['storage', 'gpu'] }, 'invalid_field', 'tests[1]', /"gpu" is not a test/],
      [{ tests: ['storage', 7] }, 'invalid_field', 'tests[1]', /the item is not a test/],
      [{ tests: ['storage', 'storage'] }, 'invalid_field', 'tests[1]', /"storage" is named twice/],
      [{ tests: [] }, 'invalid_field', 'tests', null],
      [{ tests: ['storage', 'bandwidth', 'workload', 'storage'] }, 'invalid_field', 'tests', null],
      [{ tests: 'storage' }, 'invalid_field', 'tests', null],
      [{ tests: ['storage'], level: 1 }, 'invalid_field', 'tests', /not both/],
      [{}, 'missing_field', 'level', /or tests/],
    ]) {
      const p = expectProblem(await post(`/v1/hosts/${h.id}/diagnostics`, body), 400, code, field);
      if (detail) assert.match(p.detail, detail);
    }
  });

  test('on a drained host: 202, the job carries params.tests', async () => {
    const job = expectStatus(await post(`/v1/hosts/${h.id}/diagnostics`, { tests: ['workload', 'storage'] }), 202);
    assert.equal(job.kind, 'diagnostics');
    assert.deepEqual(job.params, { tests: ['workload', 'storage'] });
    expectProblem(await post(`/v1/hosts/${h.id}/diagnostics`, { tests: ['storage'] }), 409, 'host_busy');
  });
});
