'use strict';
// GPU health storage and its read API (issue 13, items 2 and 6): samples are stored the
// way the monitor stores them, by calling the SQL function monitor_store(host, document)
// (here through psql, with GPUFLEET_WORKERS=0 so that no monitor runs), with the 8 GPUs of
// an H100 host as tests/fixtures/nvidia/q__H100-80GB-HBM3__8gpu.txt describes them; then
// every route is read back: a host's health, the GPU list and its filters, a GPU's events
// (de-duplicated), a host's samples raw and rolled up (gpu_samples_rollup), retention
// (gpu_samples_prune), and every rejection.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { ROOT, startServer, psql, psqlResult } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const NIL = '00000000-0000-4000-8000-000000000000';
const MIN = 60_000;

// ---- the fixture host: 8 H100s as `nvidia-smi -q` printed them ----

function fixtureGpus() {
  const text = fs.readFileSync(path.join(ROOT, 'tests/fixtures/nvidia/q__H100-80GB-HBM3__8gpu.txt'), 'utf8');
  const blocks = text.split(/^GPU (?=[0-9A-F]{8}:)/m).slice(1);
  const field = (b, re) => {
    const m = b.match(re);
    assert.ok(m, `fixture: ${re} not found`);
    return m[1].trim();
  };
  return blocks.map((b) => ({
    uuid: field(b, /GPU UUID\s+: (\S+)/),
    pci_bus_id: field(b, /Bus Id\s+: (\S+)/),
    index: Number(field(b, /Minor Number\s+: (\d+)/)),
    name: field(b, /Product Name\s+: (.+)/),
    mem_total_mib: Number(field(b, /FB Memory Usage\s+Total\s+: (\d+) MiB/)),
    mem_used_mib: Number(field(b, /FB Memory Usage\s+Total\s+: \d+ MiB\s+Reserved\s+: \d+ MiB\s+Used\s+: (\d+) MiB/)),
    util_gpu: Number(field(b, /Utilization\s+Gpu\s+: (\d+) %/)),
    util_mem: Number(field(b, /Utilization\s+Gpu\s+: \d+ %\s+Memory\s+: (\d+) %/)),
    temp_c: Number(field(b, /GPU Current Temp\s+: (\d+) C/)),
    power_w: Number(field(b, /Power Draw\s+: ([\d.]+) W/)),
    // Retired Pages: N/A on H100 (row remapping instead): never read, so null.
    retired_pages_pending: /Pending Page Blacklist\s+: N\/A/.test(b) ? null : false,
    remapped_rows_pending: field(b, /Remapped Rows[\s\S]*?Pending\s+: (\w+)/) === 'Yes',
    remapped_rows_failure: field(b, /Remapping Failure Occurred\s+: (\w+)/) === 'Yes',
    clock_event_reasons: /Clocks Event Reasons\s+Idle\s+: Active/.test(b) ? 1 : 0,
    ecc_uncorrected_volatile: Number(field(b, /Volatile[\s\S]*?DRAM Uncorrectable\s+: (\d+)/)),
  }));
}

const GPUS = fixtureGpus();
const XID79_RAW =
  "[ 4254.197860] NVRM: Xid (PCI:0000:86:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.";

// The series of minute samples: GPU i at minute m, under a deterministic load.
function loaded(g, m) {
  return {
    ...g,
    util_gpu: (m * 7 + g.index * 11) % 101,
    util_mem: g.index === 6 ? null : (m * 3 + g.index) % 101,
    mem_used_mib: 70_000 + ((m * 131 + g.index * 17) % 9_000),
    temp_c: 40 + ((m + g.index) % 30),
    power_w: g.index === 7 ? null : 300 + ((m * 13 + g.index * 5) % 400) + 0.5,
    clock_event_reasons: m % 10 === 0 ? 4 : 0,
  };
}

let srv;
let client;
let admin;
let operator;
let viewer;
let poolA; // h100_sxm, 8 GPUs
let poolB; // l4, 1 GPU
let hostA; // the fixture's 8 H100s
let hostB; // one L4
let hostC; // never sampled
let hourStart; // the current hour (ms): the series ends before it
let base; // three hours before it: the series' first minute
const L = {}; // the last samples' times (ms), in the current hour

const iso = (ms) => new Date(ms).toISOString();
const n = (() => {
  let i = 0;
  return () => `health-${process.pid}-${++i}`;
})();

// psql -v VERBOSITY=verbose (the SQLSTATE in error messages) over the harness's kept
// connection (psqlResult: the text is one query, its statements one transaction).
const sql = (text) => psqlResult(srv.database.url, text, { verbose: true });
const lit = (doc) => `$doc$${typeof doc === 'string' ? doc : JSON.stringify(doc)}$doc$`;
function store(hostId, doc) {
  const r = sql(`SELECT monitor_store('${hostId}', ${lit(doc)}::jsonb)`);
  assert.ok(r.ok, `monitor_store failed: ${r.err}`);
  return JSON.parse(r.out);
}
function storeRefused(hostId, doc, sqlstate, re) {
  const r = sql(
    `SELECT monitor_store(${hostId === null ? 'NULL' : `'${hostId}'`}, ${doc === null ? 'NULL' : `${lit(doc)}::jsonb`})`,
  );
  assert.ok(!r.ok, `monitor_store accepted ${JSON.stringify(doc)}`);
  assert.match(r.err, new RegExp(`ERROR:  ${sqlstate}:`), r.err);
  if (re) assert.match(r.err, re);
  return r.err;
}
const count = (q) => Number(psql(srv.database.url, q));

async function get(p, token = viewer) {
  return client.request('GET', p, { token });
}
async function ok(p) {
  return expectStatus(await get(p), 200);
}
async function walk(p, limit) {
  const items = [];
  let cursor = null;
  for (let i = 0; i < 100; i++) {
    const sep = p.includes('?') ? '&' : '?';
    const page = await ok(`${p}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    assert.ok(page.items.length <= limit);
    items.push(...page.items);
    cursor = page.next_cursor;
    if (!cursor) return items;
  }
  throw new Error('pagination did not end');
}

function minMaxAvg(values) {
  const v = values.filter((x) => x !== null);
  if (v.length === 0) return { min: null, avg: null, max: null };
  const avg = Math.round((v.reduce((a, b) => a + b, 0) / v.length) * 100) / 100;
  return { min: Math.min(...v), avg, max: Math.max(...v) };
}

before(async () => {
  srv = await startServer({ name: 'health', env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' } });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  viewer = srv.token('viewer');
  // Hourly partitions of gpu_samples (a day in production), so that retention drops some
  // within the three hours of samples below.
  psql(srv.database.url, "UPDATE gpu_samples_retention SET width = '1 hour'");
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  poolA = await fleet.createPool(client, admin, { gpu_model: 'h100_sxm', gpu_count: 8 });
  poolB = await fleet.createPool(client, admin, { gpu_model: 'l4', gpu_count: 1 });
  const host = (pool) =>
    fleet.createHost(client, operator, {
      name: n(),
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  hostA = await host(poolA);
  hostB = await host(poolB);
  hostC = await host(poolA);

  const now = Date.now();
  hourStart = Math.floor(now / 3_600_000) * 3_600_000;
  base = hourStart - 3 * 3_600_000;
  L.first = hourStart + 20_000;
  L.second = hourStart + 80_000;
  L.late = hourStart + 50_000;
  L.third = hourStart + 140_000;

  // Three hours of minute samples of host A, a transaction each (as psql ran them from its
  // stdin, stopping at the first error).
  for (let m = 0; m < 180; m++) {
    const doc = {
      at: iso(base + m * MIN),
      gpus: GPUS.map((g) => loaded(g, m)),
      events: [],
      kmsg_cursor: `s=ab12;i=${(m + 1).toString(16)}`,
    };
    const r = sql(`SELECT monitor_store('${hostA.id}', ${lit(doc)}::jsonb);`);
    assert.ok(r.ok, r.err);
  }
});

after(async () => {
  if (srv) await srv.stop();
});

describe('monitor_store', () => {
  test('stores a sample of 8 GPUs with the fixture readings, an Xid by PCI address, the cursor', () => {
    const doc = {
      at: iso(L.first),
      gpus: GPUS,
      events: [
        {
          kind: 'xid',
          code: 79,
          category: 'hardware',
          policy: 'isolate',
          pci_bus_id: GPUS[3].pci_bus_id,
          raw: XID79_RAW,
          message: 'Xid 79: GPU has fallen off the bus.',
        },
      ],
      kmsg_cursor: 's=ab12;i=f00',
      kmsg_mono: 4254.19786,
      container_runtime: true,
    };
    const out = store(hostA.id, doc);
    assert.equal(out.samples, 8);
    assert.equal(out.newest, true);
    assert.deepEqual(out.missing_gpus, []);
    assert.equal(out.events.length, 1);
    const [e] = out.events;
    assert.equal(e.kind, 'xid');
    assert.equal(e.code, 79);
    assert.equal(e.policy, 'isolate');
    assert.equal(e.count, 1);
    assert.equal(e.new, true);
    assert.equal(e.gpu_uuid, GPUS[3].uuid, 'the PCI address names the GPU of this host');
  });

  test('the same Xid again is counted, not inserted; a GPU absent from the list is flagged missing', () => {
    const seven = GPUS.filter((g) => g.index !== 5).map((g) => ({
      ...g,
      util_gpu: 97,
      power_w: g.index === 7 ? null : 612.4,
      util_mem: g.index === 0 ? null : 61,
    }));
    const doc = {
      at: iso(L.second),
      gpus: seven,
      events: [
        {
          kind: 'xid',
          code: 79,
          category: 'hardware',
          policy: 'isolate',
          pci_bus_id: GPUS[3].pci_bus_id,
          raw: XID79_RAW,
          message: 'Xid 79: GPU has fallen off the bus.',
        },
        {
          kind: 'xid',
          code: 13,
          category: 'application',
          policy: 'record',
          gpu_uuid: GPUS[0].uuid,
          message: 'Xid 13: Graphics Engine Exception',
        },
        {
          kind: 'thermal',
          category: 'thermal',
          policy: 'record',
          gpu_uuid: GPUS[0].uuid,
          message: 'clocks held down by hardware (HW slowdown)',
        },
        {
          kind: 'container_runtime',
          category: 'runtime',
          policy: 'record',
          message: 'the container runtime does not answer (docker info: exit 1)',
        },
      ],
      kmsg_cursor: null,
    };
    const out = store(hostA.id, doc);
    assert.equal(out.samples, 7);
    assert.deepEqual(out.missing_gpus, [GPUS[5].uuid]);
    const xid79 = out.events.find((e) => e.code === 79);
    assert.equal(xid79.count, 2);
    assert.equal(xid79.new, false);
    assert.equal(out.events.filter((e) => e.new).length, 3);
    assert.equal(
      count(`SELECT count(*) FROM gpu_events WHERE host_id = '${hostA.id}' AND code = 79`),
      1,
      'one row for the repeated Xid',
    );
    assert.equal(
      psql(srv.database.url, `SELECT kmsg_cursor FROM host_monitor WHERE host_id = '${hostA.id}'`),
      's=ab12;i=f00',
      'a null cursor keeps the stored one',
    );
  });

  test('an event repeated within one document counts twice; a late sample does not overwrite the latest', () => {
    const ev = {
      kind: 'xid',
      code: 94,
      category: 'memory',
      policy: 'record',
      gpu_uuid: GPUS[1].uuid,
      message: 'Xid 94: Contained memory error',
    };
    const out = store(hostA.id, { at: iso(L.late), gpus: GPUS.map((g) => ({ ...g, temp_c: 99 })), events: [ev, ev] });
    assert.equal(out.newest, false);
    assert.deepEqual(out.missing_gpus, []);
    assert.equal(out.events.length, 1);
    assert.equal(out.events[0].count, 2);
    assert.equal(out.events[0].new, true);
    // GPUs seen later keep their readings; GPU 5, last seen before it, takes its readings
    // but stays missing (the newest sample did not list it).
    assert.equal(
      psql(
        srv.database.url,
        `SELECT string_agg(index::text, ',') FROM gpus WHERE host_id = '${hostA.id}' AND temp_c = 99`,
      ),
      '5',
    );
    assert.equal(
      count(`SELECT count(*) FROM gpus WHERE uuid = '${GPUS[5].uuid}' AND missing_since IS NOT NULL`),
      1,
      'still missing',
    );
  });

  test('host B: one L4 with a dmesg mark; host C never sampled', () => {
    const out = store(hostB.id, {
      at: iso(L.first),
      gpus: [
        {
          uuid: 'GPU-0f9c6e0d-2b8a-4c1e-9d3f-5a6b7c8d9e0f',
          pci_bus_id: '00000000:01:00.0',
          index: 0,
          name: 'NVIDIA L4',
          util_gpu: 3,
          util_mem: 1,
          mem_used_mib: 512,
          mem_total_mib: 23034,
          temp_c: 41,
          power_w: 27.1,
          clock_event_reasons: 1,
          ecc_uncorrected_volatile: null,
          retired_pages_pending: null,
          remapped_rows_pending: false,
          remapped_rows_failure: false,
        },
      ],
      kmsg_mono: 98765.5,
    });
    assert.equal(out.samples, 1);
    assert.equal(psql(srv.database.url, `SELECT kmsg_mono FROM host_monitor WHERE host_id = '${hostB.id}'`), '98765.5');
  });

  test('an empty GPU list flags nothing missing (an inventory not read)', () => {
    const out = store(hostB.id, { at: iso(L.second), gpus: [], events: [] });
    assert.deepEqual(out.missing_gpus, []);
    assert.equal(count(`SELECT count(*) FROM gpus WHERE host_id = '${hostB.id}' AND missing_since IS NOT NULL`), 0);
  });

  test('derived events only when the document asks for them', () => {
    const before_ = count(`SELECT count(*) FROM gpu_events WHERE host_id = '${hostB.id}'`);
    const g = {
      uuid: 'GPU-0f9c6e0d-2b8a-4c1e-9d3f-5a6b7c8d9e0f',
      ecc_uncorrected_volatile: 2,
      remapped_rows_failure: true,
    };
    store(hostB.id, {
      at: iso(L.third - 30_000),
      gpus: [{ ...g, ecc_uncorrected_volatile: 0, remapped_rows_failure: false }],
    });
    store(hostB.id, { at: iso(L.third - 20_000), gpus: [g] }); // grew, failed: nothing derived by default
    assert.equal(count(`SELECT count(*) FROM gpu_events WHERE host_id = '${hostB.id}'`), before_);
    store(hostB.id, {
      at: iso(L.third - 15_000),
      gpus: [{ ...g, ecc_uncorrected_volatile: 0, remapped_rows_failure: false }],
    });
    const out = store(hostB.id, {
      at: iso(L.third - 10_000),
      gpus: [g],
      derived_policy: { ecc: 'isolate', remap: 'record', gpu_missing: 'off' },
    });
    assert.deepEqual(out.events.map((e) => [e.kind, e.policy, e.new]).sort(), [
      ['ecc', 'isolate', true],
      ['remap', 'record', true],
    ]);
  });

  test('a bad document is refused with SQLSTATE 22023 naming the member, and stores nothing', () => {
    const at = iso(L.third - 5_000);
    const g = { uuid: GPUS[0].uuid };
    const rows = count('SELECT count(*) FROM gpu_samples');
    storeRefused(hostA.id, null, '22023', /the document must be an object/);
    storeRefused(hostA.id, [], '22023', /the document must be an object/);
    storeRefused(hostA.id, { at, gpus: [g], bogus: 1 }, '22023', /unknown member "bogus"/);
    storeRefused(hostA.id, { gpus: [g] }, '22023', /at must be an RFC 3339 time/);
    storeRefused(hostA.id, { at: 'yesterday', gpus: [g] }, '22023', /at must be an RFC 3339 time/);
    storeRefused(hostA.id, { at: '2026-13-45T00:00:00Z', gpus: [g] }, '22023', /at is not a valid time/);
    storeRefused(hostA.id, { at: iso(Date.now() + 3_600_000), gpus: [g] }, '22023', /at must be within/);
    storeRefused(hostA.id, { at: iso(Date.now() - 40 * 86_400_000), gpus: [g] }, '22023', /at must be within/);
    storeRefused(hostA.id, { at, gpus: {} }, '22023', /gpus must be an array/);
    storeRefused(
      hostA.id,
      { at, gpus: [g, { uuid: 'GPU-1234', util_gpu: 140 }] },
      '22023',
      /gpus\[1\]\.util_gpu must be an integer from 0 to 100/,
    );
    storeRefused(
      hostA.id,
      { at, gpus: [{ uuid: GPUS[0].uuid, temp_c: 'hot' }] },
      '22023',
      /gpus\[0\]\.temp_c must be a number or null/,
    );
    storeRefused(
      hostA.id,
      { at, gpus: [{ uuid: GPUS[0].uuid, util_mem: 12.5 }] },
      '22023',
      /gpus\[0\]\.util_mem must be an integer/,
    );
    storeRefused(hostA.id, { at, gpus: [{ uuid: 'MIG-1234-5678' }] }, '22023', /gpus\[0\]\.uuid is not valid/);
    storeRefused(hostA.id, { at, gpus: [{ pci_bus_id: '00000000:53:00.0' }] }, '22023', /gpus\[0\]\.uuid is required/);
    storeRefused(hostA.id, { at, gpus: [g, g] }, '22023', /gpus\[1\]\.uuid repeats an earlier GPU/);
    storeRefused(
      hostA.id,
      { at, gpus: [{ uuid: GPUS[0].uuid, pci_bus_id: '0000:53:00.0' }] },
      '22023',
      /gpus\[0\]\.pci_bus_id is not valid/,
    );
    storeRefused(
      hostA.id,
      { at, gpus: [{ uuid: GPUS[0].uuid, remapped_rows_failure: 'No' }] },
      '22023',
      /remapped_rows_failure must be true, false or null/,
    );
    storeRefused(hostA.id, { at, gpus: [{ ...g, fan: 30 }] }, '22023', /gpus\[0\] has an unknown member "fan"/);
    storeRefused(
      hostA.id,
      { at, gpus: Array.from({ length: 65 }, (_, i) => ({ uuid: `GPU-${String(i).padStart(8, '0')}` })) },
      '22023',
      /more than 64/,
    );
    storeRefused(
      hostA.id,
      { at, events: [{ kind: 'bogus', policy: 'record' }] },
      '22023',
      /events\[0\]\.kind is not valid/,
    );
    storeRefused(hostA.id, { at, events: [{ kind: 'xid', code: 79 }] }, '22023', /events\[0\]\.policy is required/);
    storeRefused(
      hostA.id,
      { at, events: [{ kind: 'xid', code: 70000, policy: 'isolate' }] },
      '22023',
      /events\[0\]\.code must be an integer from 0 to 65535/,
    );
    storeRefused(
      hostA.id,
      { at, events: [{ kind: 'xid', policy: 'quarantine' }] },
      '22023',
      /events\[0\]\.policy is not valid/,
    );
    storeRefused(hostA.id, { at, kmsg_cursor: 's=1;$(reboot)' }, '22023', /kmsg_cursor is not valid/);
    storeRefused(hostA.id, { at, kmsg_mono: -1 }, '22023', /kmsg_mono must be a number from 0/);
    storeRefused(hostA.id, { at, derived_policy: { ecc: 'maybe' } }, '22023', /derived_policy\.ecc is not valid/);
    storeRefused(null, { at }, '22023', /host is required/);
    storeRefused(NIL, { at, gpus: [g] }, '23503', /no host/);
    assert.equal(count('SELECT count(*) FROM gpu_samples'), rows, 'nothing stored');
  });

  test('raw and message are bounded (cut, not refused)', () => {
    const out = store(hostC.id, {
      at: iso(L.third),
      events: [{ kind: 'unreachable', policy: 'record', raw: 'x'.repeat(5000), message: 'y'.repeat(3000) }],
    });
    assert.equal(out.events.length, 1);
    assert.equal(
      psql(
        srv.database.url,
        `SELECT length(raw) || ' ' || length(message) FROM gpu_events WHERE id = ${out.events[0].id}`,
      ),
      '2048 1024',
    );
    psql(
      srv.database.url,
      `DELETE FROM gpu_events WHERE id = ${out.events[0].id}; DELETE FROM host_monitor WHERE host_id = '${hostC.id}'`,
    );
  });
});

describe('GET /v1/hosts/{id}/health', () => {
  test('latest readings per GPU, nulls as null, the missing GPU, open events, the monitor', async () => {
    const h = await ok(`/v1/hosts/${hostA.id}/health`);
    assert.equal(h.host_id, hostA.id);
    assert.equal(h.host_name, hostA.name);
    assert.equal(h.pool_id, poolA.id);
    assert.equal(h.host_state, 'registered');
    assert.equal(h.last_sample_at, iso(L.second).replace('Z', '000Z'));
    const { reason, ...monitor } = h.monitor;
    assert.deepEqual(monitor, {
      state: 'critical',
      missed: 0,
      last_sample_at: h.last_sample_at,
      kmsg_cursor: 's=ab12;i=f00',
    });
    assert.match(reason, /^1 open isolating event, the latest .+; 1 GPU missing from the inventory$/);
    assert.deepEqual(h.summary, { gpus: 8, missing_gpus: 1, open_events: 5, isolating_open_events: 1 });
    assert.deepEqual(
      h.gpus.map((g) => g.index),
      [0, 1, 2, 3, 4, 5, 6, 7],
    );
    const g0 = h.gpus[0];
    assert.equal(g0.uuid, GPUS[0].uuid);
    assert.equal(g0.name, 'NVIDIA H100 80GB HBM3');
    assert.equal(g0.pci_bus_id, GPUS[0].pci_bus_id);
    assert.equal(g0.first_seen, iso(base).replace('Z', '000Z'));
    assert.equal(g0.last_seen, h.last_sample_at);
    assert.equal(g0.missing_since, null);
    assert.equal(g0.open_events, 2);
    assert.deepEqual(g0.latest, {
      at: h.last_sample_at,
      util_gpu: 97,
      util_mem: null,
      mem_used_mib: GPUS[0].mem_used_mib,
      mem_total_mib: 81559,
      temp_c: GPUS[0].temp_c,
      power_w: 612.4,
      clock_event_reasons: 1,
      ecc_uncorrected_volatile: 0,
      retired_pages_pending: null,
      remapped_rows_pending: false,
      remapped_rows_failure: false,
    });
    assert.equal(h.gpus[7].latest.power_w, null, 'a reading not taken stays null');
    const g5 = h.gpus[5];
    assert.equal(g5.missing_since, iso(L.second).replace('Z', '000Z'));
    assert.equal(g5.last_seen, iso(L.late).replace('Z', '000Z'), 'the last sample that listed it (a late one)');
    assert.equal(g5.latest.temp_c, 99);
    assert.deepEqual(
      h.open_events.map((e) => [e.kind, e.code, e.count]),
      [
        ['xid', 94, 2],
        ['container_runtime', null, 1],
        ['thermal', null, 1],
        ['xid', 13, 1],
        ['xid', 79, 2],
      ],
    );
  });

  test('a host never sampled: empty, monitor unknown; ETag and 304', async () => {
    const res = await get(`/v1/hosts/${hostC.id}/health`);
    const h = expectStatus(res, 200);
    assert.equal(h.last_sample_at, null);
    assert.deepEqual(h.monitor, { state: 'unknown', reason: null, missed: 0, last_sample_at: null, kmsg_cursor: null });
    assert.deepEqual(h.gpus, []);
    assert.deepEqual(h.open_events, []);
    const etag = res.headers.get('etag');
    assert.ok(etag);
    const again = await client.request('GET', `/v1/hosts/${hostC.id}/health`, {
      token: viewer,
      headers: { 'If-None-Match': etag },
    });
    assert.equal(again.status, 304);
  });

  test('404 for an unknown host and for an id that is not a UUID; 401 without a token', async () => {
    expectProblem(await get(`/v1/hosts/${NIL}/health`), 404, 'not_found');
    expectProblem(await get('/v1/hosts/not-a-uuid/health'), 404, 'not_found');
    expectProblem(await client.request('GET', `/v1/hosts/${hostA.id}/health`), 401, 'missing_token');
  });
});

describe('GET /v1/gpus', () => {
  test('every GPU by UUID, paginated, with its host and latest readings', async () => {
    const all = await walk('/v1/gpus', 4);
    assert.equal(all.length, 9);
    const uuids = all.map((g) => g.uuid);
    assert.deepEqual(uuids, [...uuids].sort(), 'ascending by UUID');
    assert.deepEqual(new Set(uuids), new Set([...GPUS.map((g) => g.uuid), 'GPU-0f9c6e0d-2b8a-4c1e-9d3f-5a6b7c8d9e0f']));
    const l4 = all.find((g) => g.name === 'NVIDIA L4');
    assert.equal(l4.host_id, hostB.id);
    assert.equal(l4.pool_id, poolB.id);
    assert.equal(l4.latest.ecc_uncorrected_volatile, 2);
    assert.equal(l4.latest.remapped_rows_failure, true);
  });

  test('filters: host, pool, model, name, open events, missing', async () => {
    const uuidsOf = async (q) => (await walk(`/v1/gpus?${q}`, 500)).map((g) => g.uuid).sort();
    const a = GPUS.map((g) => g.uuid).sort();
    assert.deepEqual(await uuidsOf(`host_id=${hostA.id}`), a);
    assert.deepEqual(await uuidsOf(`pool_id=${poolA.id}`), a);
    assert.deepEqual(await uuidsOf(`host_id=${hostC.id}`), []);
    assert.deepEqual(await uuidsOf('gpu_model=l4'), ['GPU-0f9c6e0d-2b8a-4c1e-9d3f-5a6b7c8d9e0f']);
    assert.deepEqual(await uuidsOf(`name=${encodeURIComponent('NVIDIA H100 80GB HBM3')}`), a);
    assert.deepEqual(await uuidsOf('missing=true'), [GPUS[5].uuid]);
    assert.equal((await uuidsOf('missing=false')).length, 8);
    assert.deepEqual(
      await uuidsOf('has_open_events=true'),
      [GPUS[0].uuid, GPUS[1].uuid, GPUS[3].uuid, 'GPU-0f9c6e0d-2b8a-4c1e-9d3f-5a6b7c8d9e0f'].sort(),
    );
    assert.deepEqual(
      await uuidsOf(`has_open_events=true&host_id=${hostA.id}&missing=false`),
      [GPUS[0].uuid, GPUS[1].uuid, GPUS[3].uuid].sort(),
    );
  });

  test('rejections name the parameter', async () => {
    expectProblem(await get('/v1/gpus?host_id=not-a-uuid'), 400, 'invalid_parameter', 'host_id');
    expectProblem(await get("/v1/gpus?pool_id=1'%20OR%20'1'='1"), 400, 'invalid_parameter', 'pool_id');
    expectProblem(await get('/v1/gpus?gpu_model=H100!'), 400, 'invalid_parameter', 'gpu_model');
    expectProblem(await get(`/v1/gpus?name=${'x'.repeat(129)}`), 400, 'invalid_parameter', 'name');
    expectProblem(await get('/v1/gpus?has_open_events=yes'), 400, 'invalid_parameter', 'has_open_events');
    expectProblem(await get('/v1/gpus?missing=1'), 400, 'invalid_parameter', 'missing');
    expectProblem(await get('/v1/gpus?missing=true&missing=false'), 400, 'invalid_parameter', 'missing');
    expectProblem(await get('/v1/gpus?state=ready'), 400, 'unknown_parameter', 'state');
    expectProblem(await get('/v1/gpus?limit=0'), 400, 'invalid_parameter', 'limit');
    expectProblem(await get('/v1/gpus?cursor=bm9wZQ'), 400, 'invalid_cursor', 'cursor');
    expectProblem(await client.request('GET', '/v1/gpus'), 401, 'missing_token');
    const reporter = srv.token('reporter', { args: ['--pool', poolA.id] });
    expectProblem(await get('/v1/gpus', reporter), 403, 'insufficient_role');
  });
});

describe('GET /v1/gpus/{uuid}/events', () => {
  test('a repeated Xid is one event with count 2, first and last seen', async () => {
    const page = await ok(`/v1/gpus/${GPUS[3].uuid}/events`);
    assert.equal(page.next_cursor, null);
    assert.equal(page.items.length, 1);
    const e = page.items[0];
    assert.equal(e.host_id, hostA.id);
    assert.equal(e.gpu_uuid, GPUS[3].uuid);
    assert.equal(e.pci_bus_id, '00000000:86:00.0');
    assert.equal(e.kind, 'xid');
    assert.equal(e.code, 79);
    assert.equal(e.category, 'hardware');
    assert.equal(e.policy, 'isolate');
    assert.equal(e.raw, XID79_RAW);
    assert.equal(e.count, 2);
    assert.equal(e.first_seen, iso(L.first).replace('Z', '000Z'));
    assert.equal(e.last_seen, iso(L.second).replace('Z', '000Z'));
    assert.equal(e.open, true);
    assert.equal(e.closed_at, null);
  });

  test('newest first, paginated, filtered by kind and open; closed events stay as history', async () => {
    const all = await walk(`/v1/gpus/${GPUS[0].uuid}/events`, 1);
    assert.deepEqual(
      all.map((e) => [e.kind, e.code]),
      [
        ['thermal', null],
        ['xid', 13],
      ],
    );
    assert.ok(all[0].id > all[1].id);
    assert.deepEqual(
      (await ok(`/v1/gpus/${GPUS[0].uuid}/events?kind=xid`)).items.map((e) => e.code),
      [13],
    );
    assert.equal((await ok(`/v1/gpus/${GPUS[0].uuid}/events?open=false`)).items.length, 0);
    // The host returns to service: its events close; the next Xid 13 opens a new one.
    assert.equal(psql(srv.database.url, `SELECT monitor_close_events('${hostA.id}', '${iso(L.third)}')`), '5');
    assert.equal((await ok(`/v1/gpus/${GPUS[0].uuid}/events?open=true`)).items.length, 0);
    const closed = await ok(`/v1/gpus/${GPUS[0].uuid}/events?open=false`);
    assert.equal(closed.items.length, 2);
    assert.equal(closed.items[0].closed_at, iso(L.third).replace('Z', '000Z'));
    const out = store(hostA.id, {
      at: iso(L.third),
      gpus: GPUS,
      events: [{ kind: 'xid', code: 13, policy: 'record', gpu_uuid: GPUS[0].uuid }],
    });
    assert.equal(out.events[0].new, true);
    assert.equal(out.events[0].count, 1);
    assert.deepEqual(out.returned_gpus, [GPUS[5].uuid], 'GPU 5 is listed again');
    assert.equal((await ok(`/v1/gpus/${GPUS[0].uuid}/events?kind=xid`)).items.length, 2);
    assert.equal((await ok('/v1/gpus?missing=true')).items.length, 0);
  });

  test('a GPU named only by an event is known', async () => {
    const uuid = 'GPU-deadbeef-0000-4000-8000-00000000c0de';
    store(hostA.id, {
      at: iso(L.third + 1000),
      events: [{ kind: 'fell_off_bus', policy: 'isolate', gpu_uuid: uuid, message: 'GPU has fallen off the bus.' }],
    });
    const page = await ok(`/v1/gpus/${uuid}/events`);
    assert.equal(page.items.length, 1);
    assert.equal(page.items[0].pci_bus_id, null);
  });

  test('404 for an unknown or malformed UUID; 400 naming the bad parameter', async () => {
    expectProblem(await get('/v1/gpus/GPU-00000000-0000-0000-0000-000000000000/events'), 404, 'not_found');
    expectProblem(await get('/v1/gpus/not-a-gpu/events'), 404, 'not_found');
    expectProblem(await get('/v1/gpus/MIG-566e6f65-c38e-b12f-4824-6944218668b9/events'), 404, 'not_found');
    const p = `/v1/gpus/${GPUS[0].uuid}/events`;
    expectProblem(await get(`${p}?kind=bogus`), 400, 'invalid_parameter', 'kind');
    expectProblem(await get(`${p}?open=yes`), 400, 'invalid_parameter', 'open');
    expectProblem(await get(`${p}?cursor=garbage`), 400, 'invalid_cursor', 'cursor');
    expectProblem(await get(`${p}?limit=501`), 400, 'invalid_parameter', 'limit');
    expectProblem(await get(`${p}?code=79`), 400, 'unknown_parameter', 'code');
  });
});

describe('GET /v1/hosts/{id}/samples', () => {
  const S = (host, q) => ok(`/v1/hosts/${host.id}/samples?${q}`);
  const range = (a, b) => `from=${encodeURIComponent(iso(a))}&to=${encodeURIComponent(iso(b))}`;
  const minute = (m) => base + m * MIN;

  test('raw: every sample over the range, per GPU by index, nulls as null', async () => {
    const d = await S(hostA, `${range(base, base + 3_600_000)}&step=raw`);
    assert.equal(d.step, 'raw');
    assert.equal(d.rolled_up_to, null);
    assert.equal(d.from, iso(base).replace('Z', '000Z'));
    assert.deepEqual(
      d.series.map((s) => s.index),
      [0, 1, 2, 3, 4, 5, 6, 7],
    );
    for (const s of d.series) assert.equal(s.points.length, 60);
    const p = d.series[2].points[10];
    const want = loaded(GPUS[2], 10);
    assert.deepEqual(p, {
      at: iso(minute(10)).replace('Z', '000Z'),
      util_gpu: want.util_gpu,
      util_mem: want.util_mem,
      mem_used_mib: want.mem_used_mib,
      mem_total_mib: 81559,
      temp_c: want.temp_c,
      power_w: want.power_w,
      clock_event_reasons: 4,
      ecc_uncorrected_volatile: 0,
      retired_pages_pending: null,
      remapped_rows_pending: false,
      remapped_rows_failure: false,
    });
    assert.ok(d.series[7].points.every((x) => x.power_w === null));
    assert.ok(d.series[6].points.every((x) => x.util_mem === null));
  });

  test('before the rollup, the rollups answer nothing; gpu_samples_rollup is incremental and idempotent', async () => {
    const before5 = await S(hostA, `${range(base, hourStart)}&step=5m`);
    assert.deepEqual(before5.series, []);
    assert.equal(before5.rolled_up_to, iso(base).replace('Z', '000Z'));
    const first = JSON.parse(psql(srv.database.url, `SELECT gpu_samples_rollup('${iso(hourStart)}')`));
    assert.deepEqual(first['5m'], { rows: 36 * 8, behind: false, done_upto: iso(hourStart).replace('Z', '000Z') });
    assert.deepEqual(first['1h'], { rows: 3 * 8, behind: false, done_upto: iso(hourStart).replace('Z', '000Z') });
    const again = JSON.parse(psql(srv.database.url, `SELECT gpu_samples_rollup('${iso(hourStart)}')`));
    assert.equal(again['5m'].rows, 0);
    assert.equal(again['1h'].rows, 0);
    assert.equal(count('SELECT count(*) FROM gpu_samples_5m'), 36 * 8);
    // A bucket that is not complete yet is not rolled up.
    const early = JSON.parse(psql(srv.database.url, `SELECT gpu_samples_rollup('${iso(hourStart + 4 * MIN)}')`));
    assert.equal(early['5m'].rows, 0);
  });

  test('5m: min, mean and max per bucket; the bucket holding from is included', async () => {
    const d = await S(hostA, `${range(base, hourStart)}&step=5m`);
    assert.equal(d.step, '5m');
    assert.equal(d.rolled_up_to, iso(hourStart).replace('Z', '000Z'));
    for (const s of d.series) assert.equal(s.points.length, 36);
    for (const [gi, k] of [
      [2, 7],
      [7, 8],
      [6, 35],
    ]) {
      const p = d.series[gi].points[k];
      const rows = [0, 1, 2, 3, 4].map((i) => loaded(GPUS[gi], k * 5 + i));
      assert.equal(p.at, iso(minute(k * 5)).replace('Z', '000Z'));
      assert.equal(p.samples, 5);
      assert.deepEqual(p.util_gpu, minMaxAvg(rows.map((r) => r.util_gpu)));
      assert.deepEqual(p.util_mem, minMaxAvg(rows.map((r) => r.util_mem)));
      assert.deepEqual(p.temp_c, minMaxAvg(rows.map((r) => r.temp_c)));
      assert.deepEqual(p.power_w, minMaxAvg(rows.map((r) => r.power_w)));
      assert.deepEqual(p.mem_total_mib, { max: 81559 });
      assert.deepEqual(p.ecc_uncorrected_volatile, { max: 0 });
      assert.equal(p.clock_event_reasons, k % 2 === 0 ? 4 : 0);
      assert.equal(p.retired_pages_pending, null);
      assert.equal(p.remapped_rows_failure, false);
    }
    assert.deepEqual(d.series[7].points[0].power_w, { min: null, avg: null, max: null });
    const part = await S(hostA, `${range(minute(7), minute(20))}&step=5m`);
    assert.deepEqual(
      part.series[0].points.map((p) => p.at),
      [5, 10, 15].map((m) => iso(minute(m)).replace('Z', '000Z')),
    );
  });

  test('1h: 60 samples per bucket', async () => {
    const d = await S(hostA, `${range(base, hourStart)}&step=1h`);
    assert.equal(d.step, '1h');
    for (const s of d.series) assert.equal(s.points.length, 3);
    const p = d.series[4].points[1];
    const rows = Array.from({ length: 60 }, (_, i) => loaded(GPUS[4], 60 + i));
    assert.equal(p.samples, 60);
    assert.deepEqual(p.util_gpu, minMaxAvg(rows.map((r) => r.util_gpu)));
    assert.deepEqual(p.mem_used_mib, minMaxAvg(rows.map((r) => r.mem_used_mib)));
    assert.equal(p.clock_event_reasons, 4);
  });

  test('auto picks the finest grain that fits 720 points; the default range is the last hour', async () => {
    assert.equal((await S(hostA, range(base, base + 2 * 3_600_000))).step, 'raw');
    assert.equal((await S(hostA, range(base, hourStart))).step, '5m');
    assert.equal((await S(hostA, `${range(hourStart - 2 * 86_400_000, hourStart)}&step=auto`)).step, '5m');
    assert.equal((await S(hostA, range(hourStart - 4 * 86_400_000, hourStart))).step, '1h');
    const d = await ok(`/v1/hosts/${hostA.id}/samples`);
    assert.equal(d.step, 'raw');
    assert.equal(Date.parse(d.to) - Date.parse(d.from), 3_600_000);
    assert.ok(d.series.length > 0);
  });

  test('a late sample moves the watermark back; the next rollup recomputes, the same for the rest', async () => {
    const whole = await S(hostA, `${range(base, hourStart)}&step=5m`);
    const late = minute(10) + 30_000;
    const out = store(hostB.id, {
      at: iso(late),
      gpus: [{ uuid: 'GPU-0f9c6e0d-2b8a-4c1e-9d3f-5a6b7c8d9e0f', util_gpu: 50 }],
    });
    assert.equal(out.newest, false);
    assert.equal(
      psql(
        srv.database.url,
        "SELECT done_upto = timestamptz '" + iso(minute(10)) + "' FROM gpu_samples_rollup_state WHERE grain = '5m'",
      ),
      't',
    );
    const r = JSON.parse(psql(srv.database.url, `SELECT gpu_samples_rollup('${iso(hourStart)}')`));
    assert.equal(r['5m'].rows, 34 * 8 + 1);
    assert.equal(r['1h'].rows, 3 * 8 + 1);
    const b = await S(hostB, `${range(base, hourStart)}&step=5m`);
    assert.equal(b.series.length, 1);
    assert.deepEqual(
      b.series[0].points.map((p) => [p.at, p.samples, p.util_gpu.max]),
      [[iso(minute(10)).replace('Z', '000Z'), 1, 50]],
    );
    assert.deepEqual(await S(hostA, `${range(base, hourStart)}&step=5m`), whole);
  });

  test('a host without samples answers empty series; 404 for an unknown host', async () => {
    const d = await S(hostC, range(base, hourStart));
    assert.deepEqual(d.series, []);
    expectProblem(await get(`/v1/hosts/${NIL}/samples`), 404, 'not_found');
    expectProblem(await get('/v1/hosts/42/samples'), 404, 'not_found');
  });

  test('rejections name the parameter', async () => {
    const p = `/v1/hosts/${hostA.id}/samples`;
    expectProblem(await get(`${p}?${range(hourStart, base)}`), 400, 'invalid_parameter', 'from');
    expectProblem(await get(`${p}?${range(base, base)}`), 400, 'invalid_parameter', 'from');
    expectProblem(await get(`${p}?from=yesterday`), 400, 'invalid_parameter', 'from');
    expectProblem(await get(`${p}?to=2026-02-30T00:00:00Z`), 400, 'invalid_parameter', 'to');
    expectProblem(await get(`${p}?to=2026-12-01T10:00:00+01:00`), 400, 'invalid_parameter', 'to'); // '+' unencoded is a space
    expectProblem(await get(`${p}?from=`), 400, 'invalid_parameter', 'from');
    expectProblem(await get(`${p}?step=10m`), 400, 'invalid_parameter', 'step');
    expectProblem(await get(`${p}?step=raw&step=5m`), 400, 'invalid_parameter', 'step');
    const tooMany = expectProblem(
      await get(`${p}?${range(hourStart - 86_400_000, hourStart)}&step=raw`),
      400,
      'invalid_parameter',
      'step',
    );
    assert.match(tooMany.detail, /8640 points/);
    expectProblem(
      await get(`${p}?${range(hourStart - 3 * 86_400_000, hourStart)}&step=5m`),
      400,
      'invalid_parameter',
      'step',
    );
    expectProblem(await get(`${p}?${range(hourStart - 31 * 86_400_000, hourStart)}`), 400, 'invalid_parameter', 'from');
    expectProblem(await get(`${p}?limit=10`), 400, 'unknown_parameter', 'limit');
    expectProblem(await get(`${p}?host_id=${hostA.id}`), 400, 'unknown_parameter', 'host_id');
  });
});

describe('retention (gpu_samples_prune)', () => {
  test('refuses retentions under an hour and bad batches', () => {
    for (const args of [
      "'10 minutes', '1 day', '1 day'",
      "'1 day', '59 minutes', '1 day'",
      "'1 day', '1 day', NULL",
      "'1 day', '1 day', '1 day', 0",
    ]) {
      const r = sql(`SELECT gpu_samples_prune(${args})`);
      assert.ok(!r.ok, args);
      assert.match(r.err, /ERROR: {2}22023:/);
    }
  });

  test('raw partitions wholly older than raw_keep and rolled up are dropped, one per call; the rollups stay', async () => {
    const url = srv.database.url;
    const part = (ms) => `gpu_samples_p${iso(ms).slice(0, 13).replace(/-/g, '').replace('T', '_')}`;
    const parts = () => psql(url, "SELECT string_agg(name, ',' ORDER BY lower) FROM gpu_samples_partitions").split(',');
    const H = 3_600_000;
    assert.deepEqual(parts(), [base, base + H, base + 2 * H, hourStart].map(part));
    const results = [];
    for (;;) {
      const r = JSON.parse(psql(url, "SELECT gpu_samples_prune('1 hour', '30 days', '30 days', 400)"));
      assert.equal(r['5m'], 0);
      assert.equal(r['1h'], 0);
      results.push(r);
      if (!r.more) break;
      assert.ok(results.length < 10);
    }
    assert.deepEqual(
      results.map((r) => [r.raw_partitions, r.kept_from]),
      [
        [1, iso(base + H).replace('Z', '000Z')],
        [1, iso(base + 2 * H).replace('Z', '000Z')],
      ],
    );
    // The next hour's partition was made ahead.
    assert.deepEqual(parts(), [base + 2 * H, hourStart, hourStart + H].map(part));
    assert.equal(count(`SELECT count(*) FROM gpu_samples WHERE at < '${iso(base + 2 * H)}'`), 0);
    assert.equal(
      count(`SELECT count(*) FROM gpu_samples WHERE at >= '${iso(base + 2 * H)}' AND at < '${iso(hourStart)}'`),
      60 * 8,
      'the third hour stays',
    );
    const raw = await ok(
      `/v1/hosts/${hostA.id}/samples?from=${encodeURIComponent(iso(base))}&to=${encodeURIComponent(iso(base + H))}&step=raw`,
    );
    assert.deepEqual(raw.series, []);
    const m5 = await ok(
      `/v1/hosts/${hostA.id}/samples?from=${encodeURIComponent(iso(base))}&to=${encodeURIComponent(iso(hourStart))}&step=5m`,
    );
    assert.equal(m5.series[0].points.length, 36, 'the rollups hold what was dropped');
    storeRefused(
      hostA.id,
      { at: iso(base + 5 * MIN), gpus: [{ uuid: GPUS[0].uuid }] },
      '22023',
      /older than the retained samples/,
    );
    // Nothing more to drop: the next call changes nothing.
    const again = JSON.parse(psql(url, "SELECT gpu_samples_prune('1 hour', '30 days', '30 days', 400)"));
    assert.equal(again.raw_partitions, 0);
    assert.equal(again.more, false);
  });

  test('daily partitions by default', () => {
    const r = sql(`BEGIN; DELETE FROM gpu_samples_partitions; UPDATE gpu_samples_retention SET width = '1 day';
      SELECT gpu_samples_partition('2026-06-15T13:45:00Z'); ROLLBACK;`);
    assert.ok(r.ok, r.err);
    assert.equal(r.out, 'gpu_samples_p20260615_00');
  });

  test('rollup rows older than their retention go too', async () => {
    const r = JSON.parse(psql(srv.database.url, "SELECT gpu_samples_prune('1 hour', '1 hour', '1 hour', 100000)"));
    assert.equal(r.more, false);
    assert.ok(r['1h'] >= 2 * 8 + 1);
    assert.equal(count("SELECT count(*) FROM gpu_samples_1h WHERE bucket < now() - interval '1 hour'"), 0);
    assert.equal(count("SELECT count(*) FROM gpu_samples_5m WHERE bucket < now() - interval '1 hour'"), 0);
    const h1 = await ok(
      `/v1/hosts/${hostA.id}/samples?from=${encodeURIComponent(iso(base))}&to=${encodeURIComponent(iso(base + 2 * 3_600_000))}&step=1h`,
    );
    assert.deepEqual(h1.series, []);
  });

  test('deleting a host deletes its GPUs, events and monitor row', async () => {
    expectStatus(await client.request('DELETE', `/v1/hosts/${hostB.id}`, { token: admin }), 204);
    assert.equal(count(`SELECT count(*) FROM gpus WHERE host_id = '${hostB.id}'`), 0);
    assert.equal(count(`SELECT count(*) FROM gpu_events WHERE host_id = '${hostB.id}'`), 0);
    assert.equal(count(`SELECT count(*) FROM host_monitor WHERE host_id = '${hostB.id}'`), 0);
    expectProblem(await get(`/v1/hosts/${hostB.id}/health`), 404, 'not_found');
  });
});

// migrations/0027: a GPU is a (host, UUID) pair. The UUID is what the host reports, so a
// host that reports another's UUID gets a row of its own (and an event), never the other's;
// a sample records at most the pool's gpu_count + 2 GPUs; rows unseen for the retention go.
describe('GPUs keyed by host', () => {
  let cred;
  const mk = async (pool) =>
    fleet.createHost(client, operator, {
      name: n(),
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
  const rowOf = (host, uuid) =>
    psql(
      srv.database.url,
      `SELECT host_id || ' ' || temp_c || ' ' || last_seen FROM gpus WHERE host_id = '${host}' AND uuid = '${uuid}'`,
    );
  before(async () => {
    cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  });

  test('the same UUID on two hosts: two rows, the first host untouched, a gpu_uuid_duplicate event', async () => {
    const x = await mk(poolA);
    const y = await mk(poolA);
    const t0 = Date.now() - 2 * MIN;
    store(x.id, { at: iso(t0), gpus: GPUS, events: [] });
    const before = rowOf(x.id, GPUS[0].uuid);
    // x's GPUs are host A's too (the fixture): eight duplicates on x, none on host A
    assert.equal(count(`SELECT count(*) FROM gpu_events WHERE host_id = '${x.id}' AND kind = 'gpu_uuid_duplicate'`), 8);
    assert.equal(
      count(`SELECT count(*) FROM gpu_events WHERE host_id = '${hostA.id}' AND kind = 'gpu_uuid_duplicate'`),
      0,
    );
    const eventsOfX = count(`SELECT count(*) FROM gpu_events WHERE host_id = '${x.id}'`);
    // y reports x's GPU 0 (hotter, later) beside a GPU of its own
    const own = { ...GPUS[1], uuid: 'GPU-0a0a0a0a-1111-2222-3333-444455556666', pci_bus_id: '00000000:2A:00.0' };
    const out = store(y.id, { at: iso(t0 + MIN), gpus: [{ ...GPUS[0], temp_c: 99 }, own], events: [] });
    assert.equal(out.samples, 2);
    assert.equal(
      count(`SELECT count(*) FROM gpus WHERE uuid = '${GPUS[0].uuid}' AND host_id IN ('${x.id}', '${y.id}')`),
      2,
    );
    assert.equal(rowOf(x.id, GPUS[0].uuid), before, "the first host's GPU is unchanged");
    assert.match(rowOf(y.id, GPUS[0].uuid), / 99 /);
    const dup = out.events.filter((e) => e.kind === 'gpu_uuid_duplicate');
    assert.equal(dup.length, 1);
    assert.equal(dup[0].gpu_uuid, GPUS[0].uuid);
    assert.equal(dup[0].policy, 'record');
    assert.equal(dup[0].new, true);
    const msg = psql(
      srv.database.url,
      `SELECT message FROM gpu_events WHERE host_id = '${y.id}' AND kind = 'gpu_uuid_duplicate'`,
    );
    // the other host seen last (x, or host A when its fixture samples are later) is named
    assert.match(msg, new RegExp(`also reported by host (${x.name} \\(${x.id}\\)|${hostA.name} \\(${hostA.id}\\))`));
    assert.equal(
      count(`SELECT count(*) FROM gpu_events WHERE host_id = '${x.id}'`),
      eventsOfX,
      'nothing on the first host',
    );
    // the next sample of y: the GPU is y's own now, no new event
    const again = store(y.id, { at: iso(t0 + 2 * MIN), gpus: [{ ...GPUS[0], temp_c: 98 }, own], events: [] });
    assert.equal(again.events.filter((e) => e.kind === 'gpu_uuid_duplicate').length, 0);
    // both are listed, each under its host; the GPU's health per host
    const both = (await walk('/v1/gpus', 3)).filter((g) => g.uuid === GPUS[0].uuid);
    assert.deepEqual(both.map((g) => g.host_id).sort(), [hostA.id, x.id, y.id].sort());
    const hx = await ok(`/v1/hosts/${x.id}/health`);
    assert.equal(hx.gpus.find((g) => g.uuid === GPUS[0].uuid).latest.temp_c, GPUS[0].temp_c);
    const hy = await ok(`/v1/hosts/${y.id}/health`);
    assert.equal(hy.gpus.find((g) => g.uuid === GPUS[0].uuid).latest.temp_c, 98);
    const evs = await ok(`/v1/gpus/${GPUS[0].uuid}/events?kind=gpu_uuid_duplicate`);
    assert.ok(evs.items.some((e) => e.host_id === y.id));
  });

  test("a sample of more GPUs than the pool's gpu_count + 2: that many recorded (known ones first), the rest a gpu_excess event", async () => {
    const z = await mk(poolB); // one L4: at most 3
    const t0 = Date.now() - 3 * MIN;
    const first = store(z.id, { at: iso(t0), gpus: GPUS.slice(5, 7), events: [] });
    assert.equal(first.samples, 2);
    assert.equal(first.excess_gpus, 0);
    const out = store(z.id, { at: iso(t0 + MIN), gpus: GPUS, events: [] });
    assert.equal(out.samples, 3);
    assert.equal(out.excess_gpus, 5);
    const ex = out.events.find((e) => e.kind === 'gpu_excess');
    assert.ok(ex, JSON.stringify(out.events));
    assert.equal(ex.policy, 'isolate');
    const uuids = psql(
      srv.database.url,
      `SELECT string_agg(uuid, ' ' ORDER BY index) FROM gpus WHERE host_id = '${z.id}'`,
    ).split(' ');
    assert.equal(uuids.length, 3);
    assert.ok(uuids.includes(GPUS[5].uuid) && uuids.includes(GPUS[6].uuid), 'the known GPUs are kept first');
    assert.equal(count(`SELECT count(*) FROM gpu_samples WHERE host_id = '${z.id}'`), 5);
    const msg = psql(
      srv.database.url,
      `SELECT message FROM gpu_events WHERE host_id = '${z.id}' AND kind = 'gpu_excess'`,
    );
    assert.match(
      msg,
      /lists 8 GPUs; the pool expects 1 and at most 3 \(its gpu_count \+ 2\) are recorded: 5 not recorded/,
    );
    // health fails closed: critical, not ok
    const h = await ok(`/v1/hosts/${z.id}/health`);
    assert.equal(h.monitor.state, 'critical');
    assert.equal(h.summary.gpus, 3);
  });

  test('pruning removes the GPU rows not seen for the retention, only those', async () => {
    const w = await mk(poolA);
    store(w.id, { at: iso(Date.now() - MIN), gpus: GPUS.slice(0, 3), events: [] });
    psql(
      srv.database.url,
      `UPDATE gpus SET first_seen = now() - interval '40 days', last_seen = now() - interval '40 days'` +
        ` WHERE host_id = '${w.id}' AND uuid = '${GPUS[0].uuid}'`,
    );
    psql(
      srv.database.url,
      `UPDATE gpus SET first_seen = now() - interval '29 days', last_seen = now() - interval '29 days'` +
        ` WHERE host_id = '${w.id}' AND uuid = '${GPUS[1].uuid}'`,
    );
    const others = count(
      `SELECT count(*) FROM gpus WHERE host_id <> '${w.id}' AND last_seen >= now() - interval '30 days'`,
    );
    const pruned = count(`SELECT gpus_prune(interval '30 days', 10000)`);
    assert.ok(pruned >= 1);
    assert.equal(
      psql(srv.database.url, `SELECT string_agg(uuid, ' ' ORDER BY uuid) FROM gpus WHERE host_id = '${w.id}'`),
      [GPUS[1].uuid, GPUS[2].uuid].sort().join(' '),
    );
    assert.equal(
      count(`SELECT count(*) FROM gpus WHERE host_id <> '${w.id}' AND last_seen >= now() - interval '30 days'`),
      others,
    );
    assert.equal(count(`SELECT gpus_prune(interval '30 days', 10000)`), 0, 'nothing more to prune');
  });
});
