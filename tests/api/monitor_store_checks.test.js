'use strict';
// monitor_store's two ways of checking a sample's GPUs (issue 28, item 1; migrations/0041):
// a list within the cap (the pool's gpu_count + 2) is checked in one statement by
// monitor_gpu_ok and read in another; a list over the cap, or one that check refuses, goes
// through the member-by-member pass (which names the member at fault). Both must accept
// exactly the same GPUs and store the same values. Each GPU below is stored on host F
// alone (within the cap: the one-statement check) and on host S with three other GPUs
// (S's pool has gpu_count 1, so its cap is 3 and the list of 4 goes through the
// member-by-member pass, the GPU first so that it is kept); the answers and the stored rows
// are compared. Through psql, with GPUFLEET_WORKERS=0 so that no monitor runs.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psqlResult } = require('./lib/server');
const { api } = require('./lib/openapi');
const fleet = require('./lib/fleet');

let srv;
let hostF; // pool gpu_count 8: cap 10
let hostS; // pool gpu_count 1: cap 3

// psql -v VERBOSITY=verbose (the SQLSTATE in error messages) over the harness's kept connection
const sql = (text) => psqlResult(srv.database.url, text, { verbose: true });
const lit = (x) => `$doc$${JSON.stringify(x)}$doc$`;

const UUID = 'GPU-0a1b2c3d-0000-4000-8000-000000000001';
const BASE = {
  uuid: UUID,
  pci_bus_id: '00000000:18:00.0',
  index: 0,
  name: 'NVIDIA H100 80GB HBM3',
  util_gpu: 35,
  util_mem: 12,
  mem_used_mib: 70_001,
  mem_total_mib: 81_559,
  temp_c: 41,
  power_w: 301.5,
  clock_event_reasons: 4,
  ecc_uncorrected_volatile: 0,
  retired_pages_pending: null,
  remapped_rows_pending: false,
  remapped_rows_failure: false,
};
// three GPUs new to host S for each variant k (so that S keeps the variant's GPU, listed first)
const filler = (k, i) => ({
  uuid: `GPU-ffffffff-0000-4000-8000-${String(k * 10 + i).padStart(12, '0')}`,
  pci_bus_id: `00000000:2${i}:00.0`,
});

// [label, accepted, the GPU] (JSON text where JSON.stringify cannot write it)
const VARIANTS = [
  ['the base GPU', true, BASE],
  ['only a uuid', true, { uuid: UUID }],
  ['every optional member null', true, { uuid: UUID, pci_bus_id: null, index: null, name: null, power_w: null }],
  ['an integer written 3.0', true, `{"uuid": "${UUID}", "index": 3.0, "temp_c": -100, "util_gpu": 100.000}`],
  ['an exponent', true, `{"uuid": "${UUID}", "mem_used_mib": 7e4, "power_w": 1.25e2}`],
  ['a counter at its bound', true, `{"uuid": "${UUID}", "ecc_uncorrected_volatile": 9223372036854775807}`],
  ['a counter past its bound', false, `{"uuid": "${UUID}", "clock_event_reasons": 9223372036854775808}`],
  ['a counter as a string', false, { uuid: UUID, clock_event_reasons: '4' }],
  ['a lower-case uuid prefix', false, { ...BASE, uuid: UUID.toLowerCase() }],
  ['an unknown member', false, { ...BASE, serial: '1650' }],
  ['no uuid', false, { ...BASE, uuid: undefined }],
  ['a null uuid', false, { ...BASE, uuid: null }],
  ['a numeric uuid', false, { ...BASE, uuid: 42 }],
  ['a uuid off the pattern', false, { ...BASE, uuid: 'GPU-xyz' }],
  ['a uuid of 80 characters', false, { ...BASE, uuid: `GPU-${'a'.repeat(76)}` }],
  ['a uuid of 79 characters', true, { ...BASE, uuid: `GPU-${'a'.repeat(75)}` }],
  ['a lower-case PCI address', false, { ...BASE, pci_bus_id: '00000000:1a:00.0' }],
  ['a numeric PCI address', false, { ...BASE, pci_bus_id: 18 }],
  ['index 1023', true, { ...BASE, index: 1023 }],
  ['index 1024', false, { ...BASE, index: 1024 }],
  ['index 1.5', false, { ...BASE, index: 1.5 }],
  ['index as a string', false, { ...BASE, index: '3' }],
  ['index as an array', false, { ...BASE, index: [3] }],
  ['a name with a control character', false, { ...BASE, name: 'H100\u0007' }],
  ['an empty name', false, { ...BASE, name: '' }],
  ['a name as an object', false, { ...BASE, name: { model: 'H100' } }],
  ['a name of 128 characters', true, { ...BASE, name: 'N'.repeat(128) }],
  ['a name of 129 characters', false, { ...BASE, name: 'N'.repeat(129) }],
  ['util_gpu 101', false, { ...BASE, util_gpu: 101 }],
  ['util_mem -1', false, { ...BASE, util_mem: -1 }],
  ['temp_c 250', true, { ...BASE, temp_c: 250 }],
  ['temp_c -101', false, { ...BASE, temp_c: -101 }],
  ['power_w 100000', true, { ...BASE, power_w: 100000 }],
  ['power_w 100000.5', false, { ...BASE, power_w: 100000.5 }],
  ['power_w as a boolean', false, { ...BASE, power_w: true }],
  ['mem_total_mib 2^31', false, { ...BASE, mem_total_mib: 2147483648 }],
  ['a flag as a string', false, { ...BASE, remapped_rows_failure: 'Yes' }],
  ['a flag as a number', false, { ...BASE, retired_pages_pending: 0 }],
  ['a flag as an array', false, { ...BASE, retired_pages_pending: [true] }],
  ['a GPU that is an array', false, [UUID]],
  ['a GPU that is a string', false, UUID],
  ['a GPU that is null', false, null],
];
const text = (g) => (typeof g === 'string' && g.startsWith('{') ? g : JSON.stringify(g));

// the document of one GPU (F) or of the GPU and three fillers (S), as JSON text
const docOf = (gpus, at) => `{"at": "${new Date(at).toISOString()}", "gpus": [${gpus.join(', ')}], "events": []}`;

function store(host, docText) {
  const r = sql(`SELECT monitor_store('${host}', $doc$${docText}$doc$::jsonb)`);
  if (r.ok) return { ok: true, result: JSON.parse(r.out) };
  const m = r.err.match(/ERROR: {2}(\w+): (.*)/);
  assert.ok(m, r.err);
  return { ok: false, error: `${m[1]}: ${m[2]}` };
}
const ROW =
  'ROW(pci_bus_id, index, name, util_gpu, util_mem, mem_used_mib, mem_total_mib, temp_c, power_w, ' +
  'clock_event_reasons, ecc_uncorrected_volatile, retired_pages_pending, remapped_rows_pending, ' +
  'remapped_rows_failure, last_seen, missing_since)::text';
const SAMPLE =
  'ROW(at, gpu_uuid, util_gpu, util_mem, mem_used_mib, mem_total_mib, temp_c, power_w, ' +
  'clock_event_reasons, ecc_uncorrected_volatile, retired_pages_pending, remapped_rows_pending, remapped_rows_failure)::text';
function rows(host, uuid) {
  const r = sql(
    `SELECT coalesce((SELECT ${ROW} FROM gpus WHERE host_id = '${host}' AND uuid = ${lit(uuid)}), 'none')
     UNION ALL
     SELECT coalesce(string_agg(${SAMPLE}, ',' ORDER BY at), 'none') FROM gpu_samples
      WHERE host_id = '${host}' AND gpu_uuid = ${lit(uuid)}`,
  );
  assert.ok(r.ok, r.err);
  return r.out;
}

before(async () => {
  srv = await startServer({
    name: 'monitor_store_checks',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  const client = api(srv);
  const admin = srv.token('admin');
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  const ids = [];
  for (const count of [8, 1]) {
    const pool = await fleet.createPool(client, admin, { gpu_model: 'h100_sxm', gpu_count: count });
    const h = await fleet.createHost(client, srv.token('operator'), {
      name: `mcheck-${process.pid}-${count}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
    ids.push(h.id);
  }
  [hostF, hostS] = ids;
});

after(async () => {
  if (srv) await srv.stop();
});

describe('monitor_store: the one-statement check and the member-by-member pass agree', () => {
  test('each GPU is accepted or refused alike, with the same error, and stored alike', () => {
    const t0 = Date.now() - 3_600_000;
    VARIANTS.forEach(([label, accept, g], k) => {
      const at = t0 + k * 1000;
      const one = text(g);
      const f = store(hostF, docOf([one], at));
      const s = store(hostS, docOf([one, text(filler(k, 1)), text(filler(k, 2)), text(filler(k, 3))], at));
      assert.equal(f.ok, accept, `${label}: ${JSON.stringify(f)}`);
      assert.equal(s.ok, accept, `${label}: ${JSON.stringify(s)}`);
      if (!accept) {
        assert.equal(f.error, s.error, label);
        assert.match(f.error, /^22023: monitor_store: gpus\[0\]/, label);
        return;
      }
      assert.equal(f.result.samples, 1, label);
      assert.equal(s.result.samples, 3, `${label}: the list over the cap keeps 3`);
      assert.equal(s.result.excess_gpus, 1, label);
      const ok = sql(
        `SELECT monitor_gpu_ok($doc$${one}$doc$::jsonb, ARRAY['uuid', 'pci_bus_id', 'index', 'name',
                'util_gpu', 'util_mem', 'mem_used_mib', 'mem_total_mib', 'temp_c', 'power_w',
                'clock_event_reasons', 'ecc_uncorrected_volatile', 'retired_pages_pending',
                'remapped_rows_pending', 'remapped_rows_failure'],
                '^GPU-[0-9A-Fa-f-]{4,75}$', '^[0-9A-F]{8}:[0-9A-F]{2}:[01][0-9A-F]\\.[0-7]$')`,
      );
      assert.ok(ok.ok, ok.err);
      assert.equal(ok.out, 't', `${label}: accepted, so the one-statement check passed it`);
      const uuid = JSON.parse(one).uuid;
      assert.equal(rows(hostF, uuid), rows(hostS, uuid), `${label}: stored alike`);
    });
  });

  test('a repeated UUID or PCI address within the cap is refused as before', () => {
    const at = Date.now() - 60_000;
    const a = text(BASE);
    const b = text({ ...BASE, pci_bus_id: '00000000:19:00.0' });
    const c = text({ ...BASE, uuid: 'GPU-0a1b2c3d-0000-4000-8000-000000000002' });
    assert.deepEqual(store(hostF, docOf([a, b], at)), {
      ok: false,
      error: '22023: monitor_store: gpus[1].uuid repeats an earlier GPU',
    });
    assert.deepEqual(store(hostF, docOf([a, c], at)), {
      ok: false,
      error: '22023: monitor_store: gpus[1].pci_bus_id repeats an earlier GPU',
    });
    // no PCI address on either: not a repeat
    const d = text({ ...BASE, pci_bus_id: null });
    const e = text({ ...BASE, uuid: 'GPU-0a1b2c3d-0000-4000-8000-000000000002', pci_bus_id: null });
    assert.equal(store(hostF, docOf([d, e], at)).ok, true);
  });
});
