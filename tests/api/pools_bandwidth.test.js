'use strict';
// gate.bandwidth (issue 26): the bandwidth reference's pool settings. Every field is
// held to its type and bounds with a 400 naming it; the stored document gets the
// defaults the check uses; the check name is accepted in gate.checks.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { startServer } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

let srv;
let client;
let admin;

const uniq = () => crypto.randomBytes(4).toString('hex');

function pool(gate) {
  return {
    name: `bw-${uniq()}`,
    gpu_model: 'h100_sxm',
    gpu_count: 8,
    interconnect: 'nvlink',
    price_per_hour: 98.32,
    durable_path: '/srv/gpufleet/durable',
    scratch_path: '/mnt/nvme/scratch',
    gate,
  };
}

const create = (body) => client.request('POST', '/v1/pools', { token: admin, body });

before(async () => {
  srv = await startServer({ name: 'pools-bandwidth' });
  client = api(srv);
  admin = srv.token('admin', { sub: 'bw-admin' });
});

after(async () => {
  if (srv) await srv.stop();
});

describe('gate.bandwidth', () => {
  test('a full setting is stored as given; a partial one gets its defaults', async () => {
    const full = {
      tool: 'both',
      path: '/opt/nccl-tests/build',
      require: true,
      host_to_device: true,
      min_allreduce_busbw_gbps: 400,
      min_d2d_gbps: 150.5,
      min_bytes_mib: 8,
      max_bytes_mib: 8192,
      iterations: 20,
      timeout_seconds: 600,
      expect_numa_nodes: 2,
    };
    const p = expectStatus(await create(pool({ bandwidth: full, checks: ['bandwidth', 'topology'] })), 201);
    assert.deepEqual(p.gate.bandwidth, full);
    assert.deepEqual(p.gate.checks, ['bandwidth', 'topology']);
    const q = expectStatus(await create(pool({ bandwidth: { min_allreduce_busbw_gbps: 300 } })), 201);
    assert.deepEqual(q.gate.bandwidth, {
      min_allreduce_busbw_gbps: 300,
      tool: 'nccl',
      require: false,
      timeout_seconds: 300,
    });
    assert.ok(q.gate.checks.includes('bandwidth'), 'bandwidth is one of the default checks');
    const r = expectStatus(await create(pool(undefined)), 201);
    assert.equal(r.gate.bandwidth, undefined, 'no setting: the check uses its defaults and the catalog');
  });

  test('every rejection names its field', async () => {
    const cases = [
      [[], 'gate.bandwidth'],
      ['nccl', 'gate.bandwidth'],
      [{ tool: 'mpi' }, 'gate.bandwidth.tool'],
      [{ tool: 1 }, 'gate.bandwidth.tool'],
      [{ path: 'relative/dir' }, 'gate.bandwidth.path'],
      [{ path: '/opt/../etc' }, 'gate.bandwidth.path'],
      [{ path: "/opt/x'; reboot #" }, 'gate.bandwidth.path'],
      [{ path: '/opt/$(reboot)' }, 'gate.bandwidth.path'],
      [{ path: `/${'a'.repeat(300)}` }, 'gate.bandwidth.path'],
      [{ require: 'yes' }, 'gate.bandwidth.require'],
      [{ host_to_device: 1 }, 'gate.bandwidth.host_to_device'],
      [{ min_allreduce_busbw_gbps: 0 }, 'gate.bandwidth.min_allreduce_busbw_gbps'],
      [{ min_allreduce_busbw_gbps: -1 }, 'gate.bandwidth.min_allreduce_busbw_gbps'],
      [{ min_allreduce_busbw_gbps: 10001 }, 'gate.bandwidth.min_allreduce_busbw_gbps'],
      [{ min_allreduce_busbw_gbps: '400' }, 'gate.bandwidth.min_allreduce_busbw_gbps'],
      [{ min_d2d_gbps: 0 }, 'gate.bandwidth.min_d2d_gbps'],
      [{ min_d2d_gbps: 1e9 }, 'gate.bandwidth.min_d2d_gbps'],
      [{ min_bytes_mib: 0 }, 'gate.bandwidth.min_bytes_mib'],
      [{ min_bytes_mib: 1025 }, 'gate.bandwidth.min_bytes_mib'],
      [{ min_bytes_mib: 1.5 }, 'gate.bandwidth.min_bytes_mib'],
      [{ max_bytes_mib: 0 }, 'gate.bandwidth.max_bytes_mib'],
      [{ max_bytes_mib: 16385 }, 'gate.bandwidth.max_bytes_mib'],
      [{ min_bytes_mib: 64, max_bytes_mib: 32 }, 'gate.bandwidth.max_bytes_mib'],
      [{ max_bytes_mib: 4 }, 'gate.bandwidth.max_bytes_mib'], // below the default minimum 8
      [{ iterations: 0 }, 'gate.bandwidth.iterations'],
      [{ iterations: 101 }, 'gate.bandwidth.iterations'],
      [{ timeout_seconds: 4 }, 'gate.bandwidth.timeout_seconds'],
      [{ timeout_seconds: 3601 }, 'gate.bandwidth.timeout_seconds'],
      [{ timeout_seconds: null }, 'gate.bandwidth.timeout_seconds'],
      [{ expect_numa_nodes: 0 }, 'gate.bandwidth.expect_numa_nodes'],
      [{ expect_numa_nodes: 65 }, 'gate.bandwidth.expect_numa_nodes'],
    ];
    for (const [bandwidth, field] of cases) {
      expectProblem(await create(pool({ bandwidth })), 400, 'invalid_field', field);
    }
    expectProblem(await create(pool({ bandwidth: { sizes: '8M' } })), 400, 'unknown_field', 'gate.bandwidth.sizes');
    expectProblem(await create(pool({ checks: ['bandwidth', 'bandwidth'] })), 400, 'invalid_field', 'gate.checks');
    expectProblem(await create(pool({ checks: ['band_width'] })), 400, 'invalid_field', 'gate.checks');
  });
});
