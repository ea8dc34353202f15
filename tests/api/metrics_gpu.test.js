'use strict';
// /metrics: the per-GPU families of the health monitor (issue 13, item 6). Samples and
// events are stored the way the monitor stores them, by calling monitor_store(host, doc)
// in SQL (GPUFLEET_WORKERS=0: no monitor runs), for hosts made watched by setting their
// state. Every scrape goes through the HTTP client and `promtool check metrics` (Debian's
// prometheus package; a missing promtool fails the test), and is parsed here with the
// label escapes undone, so that values are checked by their real label values: a pool
// name with quotes, a backslash and a newline, a GPU without a power reading (no line),
// an Xid counter that grows with every occurrence and never drops when events close,
// stale readings and hosts that leave, a read that fails (none of the families, never
// zeros).

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');

const { startServer, psql, psqlResult } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

let srv;
let client;
let admin;
let operator;

const POOL_Q = 'gpu "prod" \\ east – ü'; // quotes, a backslash, non-ASCII
const POOL_NL = 'two\nlines "x"'; // a newline: refused by the API, set in SQL below
const XID79 = "NVRM: Xid (PCI:0000:86:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.";

const uuid = (n) => `GPU-${String(n).padStart(8, '0')}-1111-2222-3333-444455556666`;
const G = { a0: uuid(1), a1: uuid(2), b0: uuid(3), old0: uuid(4), gone0: uuid(5), off0: uuid(6), reg0: uuid(7) };
const H = {}; // host name -> host
const P = {}; // pools

function gpu(id, index, over = {}) {
  return {
    uuid: id,
    pci_bus_id: `00000000:${(0x18 + index).toString(16).toUpperCase().padStart(2, '0')}:00.0`,
    index,
    name: 'NVIDIA H100 80GB HBM3',
    util_gpu: 50,
    util_mem: 20,
    mem_used_mib: 1000,
    mem_total_mib: 81559,
    temp_c: 40,
    power_w: 100.5,
    clock_event_reasons: 0,
    ecc_uncorrected_volatile: 0,
    retired_pages_pending: null,
    remapped_rows_pending: false,
    remapped_rows_failure: false,
    ...over,
  };
}

// psql over the harness's kept connection (the text is one query, its statements one transaction)
const sql = (text) => psqlResult(srv.database.url, text);
const lit = (doc) => `$doc$${JSON.stringify(doc)}$doc$`;
function store(host, doc) {
  const r = sql(
    `SELECT monitor_store('${host.id}', ${lit({ at: new Date().toISOString(), events: [], ...doc })}::jsonb)`,
  );
  assert.ok(r.ok, `monitor_store failed: ${r.err}`);
  return JSON.parse(r.out);
}
function storeRefused(host, doc, re) {
  const r = sql(`SELECT monitor_store('${host.id}', ${lit({ at: new Date().toISOString(), ...doc })}::jsonb)`);
  assert.ok(!r.ok, `monitor_store accepted ${JSON.stringify(doc)}`);
  assert.match(r.err, re);
}
// A host put in a state directly (no SSH here): the state machine's guard trigger is
// skipped for this one statement (session_replication_role), its CHECKs are not.
function setState(h, state) {
  const hold = state === 'quarantined' ? 'now()' : 'NULL';
  const r = sql(
    `SET session_replication_role = replica; UPDATE hosts SET state = '${state}', quarantined_at = ${hold} WHERE id = '${h.id}';`,
  );
  assert.ok(r.ok, r.err);
}
const xid = (gpuId, code = 79, category = 'hardware') => ({
  kind: 'xid',
  code,
  category,
  policy: 'record',
  gpu_uuid: gpuId,
  raw: XID79,
  message: `Xid ${code}`,
});

// ---- the exposition format, parsed with its escapes undone ----

function parseLabels(s, line) {
  const labels = {};
  let i = 0;
  while (i < s.length) {
    const m = /^([a-zA-Z_][a-zA-Z0-9_]*)="/.exec(s.slice(i));
    assert.ok(m, `bad label at ${i}: ${line}`);
    i += m[0].length;
    let v = '';
    for (;;) {
      assert.ok(i < s.length, `unterminated label value: ${line}`);
      const c = s[i++];
      if (c === '"') break;
      if (c === '\\') {
        const e = s[i++];
        assert.ok(e === '\\' || e === '"' || e === 'n', `bad escape \\${e}: ${line}`);
        v += e === 'n' ? '\n' : e;
      } else {
        assert.notEqual(c, '\n');
        v += c;
      }
    }
    assert.equal(labels[m[1]], undefined, `label ${m[1]} twice: ${line}`);
    labels[m[1]] = v;
    if (s[i] === ',') i++;
  }
  return labels;
}

function parse(text) {
  const samples = [];
  const meta = {};
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const h = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
    if (h) {
      meta[h[2]] = { ...meta[h[2]], [h[1]]: h[3] };
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${JSON.stringify(line)}`);
    assert.match(m[3], /^-?[0-9.]+(e[+-]?[0-9]+)?$/, `value of ${line}`);
    samples.push({ name: m[1], labels: parseLabels(m[2] || '', line), value: Number(m[3]) });
  }
  return { samples, meta };
}

function promtool(text) {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 60_000 });
  assert.ok(!r.error, `promtool cannot run (install Debian's prometheus package): ${r.error}`);
  assert.equal(r.status, 0, `promtool check metrics: exit ${r.status}\n${r.stdout}${r.stderr}`);
}

/** GET /metrics through the client, checked by promtool; {text, samples, meta, get, all}. */
async function scrape() {
  const res = await client.request('GET', '/metrics');
  expectStatus(res, 200);
  assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  promtool(res.text);
  const { samples, meta } = parse(res.text);
  const match = (name, labels) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  const get = (name, labels = {}) => {
    const found = match(name, labels);
    assert.ok(found.length <= 1, `${name} ${JSON.stringify(labels)}: ${found.length} lines`);
    return found.length ? found[0].value : undefined;
  };
  return { text: res.text, samples, meta, get, all: match };
}
const L = (host, pool, gpuId) => ({ host: host.name, pool, ...(gpuId ? { gpu_uuid: gpuId } : {}) });

before(async () => {
  srv = await startServer({
    name: 'metrics_gpu',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin');
  operator = srv.token('operator');
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  P.q = await fleet.createPool(client, admin, { name: POOL_Q });
  P.nl = await fleet.createPool(client, admin, { name: `nl-${process.pid}` });
  psql(srv.database.url, `UPDATE pools SET name = $n$${POOL_NL}$n$ WHERE id = '${P.nl.id}'`);
  P.off = await fleet.createPool(client, admin, { name: `off-${process.pid}`, monitor: { enabled: false } });
  const host = async (name, pool, state) => {
    const h = await fleet.createHost(client, operator, {
      name: `${name}-${process.pid}`,
      address: '127.0.0.1',
      port: 2222,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pool.id,
    });
    if (state) setState(h, state);
    H[name] = h;
  };
  await host('a', P.q, 'ready'); // two GPUs
  await host('b', P.nl, 'draining'); // one GPU without a power reading
  await host('old', P.q, 'quarantined'); // sampled long ago
  await host('gone', P.q, 'ready'); // stopped below
  await host('off', P.off, 'ready'); // its pool turned the monitor off
  await host('reg', P.q, null); // registered: not watched
  await host('never', P.q, 'unreachable'); // watched, never sampled
});

after(async () => {
  if (srv) await srv.stop();
});

describe('/metrics per GPU', () => {
  test('readings of current samples, labelled host, pool and GPU UUID; no line for a field not read', async () => {
    store(H.a, {
      gpus: [
        gpu(G.a0, 0, { util_gpu: 97, util_mem: 61, mem_used_mib: 70000, temp_c: 71, power_w: 612.4 }),
        gpu(G.a1, 1, { util_mem: null }),
      ],
    });
    store(H.b, { gpus: [gpu(G.b0, 0, { power_w: null, retired_pages_pending: true, remapped_rows_failure: true })] });
    store(H.gone, { gpus: [gpu(G.gone0, 0)] });
    store(H.off, { gpus: [gpu(G.off0, 0)] });
    store(H.reg, { gpus: [gpu(G.reg0, 0)] });
    const m = await scrape();
    const a0 = L(H.a, POOL_Q, G.a0);
    assert.equal(m.get('gpufleet_gpu_metrics_up'), 1);
    assert.equal(m.get('gpufleet_gpu_utilization_ratio', a0), 0.97);
    assert.equal(m.get('gpufleet_gpu_memory_utilization_ratio', a0), 0.61);
    assert.equal(m.get('gpufleet_gpu_memory_used_bytes', a0), 70000 * 1048576);
    assert.equal(m.get('gpufleet_gpu_memory_total_bytes', a0), 81559 * 1048576);
    assert.equal(m.get('gpufleet_gpu_temperature_celsius', a0), 71);
    assert.equal(m.get('gpufleet_gpu_power_draw_watts', a0), 612.4);
    assert.equal(m.get('gpufleet_gpu_ecc_uncorrected_volatile_errors', a0), 0);
    assert.equal(m.get('gpufleet_gpu_remapped_rows_failure', a0), 0);
    assert.equal(m.get('gpufleet_gpu_missing', a0), 0);
    assert.deepEqual(
      m.all('gpufleet_gpu_info', a0).map((s) => s.labels),
      [{ ...a0, gpu_index: '0', model_name: 'NVIDIA H100 80GB HBM3', pci_bus_id: '00000000:18:00.0' }],
    );
    const lastSeen = m.get('gpufleet_gpu_last_seen_timestamp_seconds', a0);
    assert.ok(Math.abs(lastSeen - Date.now() / 1000) < 600, `last seen ${lastSeen}`);
    assert.ok(Math.abs(m.get('gpufleet_host_last_sample_timestamp_seconds', L(H.a, POOL_Q)) - lastSeen) < 0.01);
    // Not read: no line at all (never a 0).
    const a1 = L(H.a, POOL_Q, G.a1);
    assert.equal(m.get('gpufleet_gpu_utilization_ratio', a1), 0.5);
    assert.equal(m.get('gpufleet_gpu_memory_utilization_ratio', a1), undefined);
    assert.equal(m.get('gpufleet_gpu_retired_pages_pending', a1), undefined);
    const b0 = L(H.b, POOL_NL, G.b0);
    assert.equal(m.get('gpufleet_gpu_power_draw_watts', b0), undefined, 'a GPU without power.draw has no power line');
    assert.equal(m.get('gpufleet_gpu_temperature_celsius', b0), 40);
    assert.equal(m.get('gpufleet_gpu_retired_pages_pending', b0), 1);
    assert.equal(m.get('gpufleet_gpu_remapped_rows_failure', b0), 1);
    // Every family has HELP and TYPE; units in the names.
    for (const name of [
      'gpufleet_gpu_utilization_ratio',
      'gpufleet_gpu_memory_used_bytes',
      'gpufleet_gpu_temperature_celsius',
      'gpufleet_gpu_power_draw_watts',
      'gpufleet_gpu_events_total',
      'gpufleet_host_last_sample_timestamp_seconds',
      'gpufleet_monitor_hosts',
    ]) {
      assert.ok(m.meta[name] && m.meta[name].HELP, `${name} has no HELP`);
      assert.equal(m.meta[name].TYPE, name.endsWith('_total') ? 'counter' : 'gauge', `${name} TYPE`);
    }
    // Hosts not watched (registered; a pool with the monitor off) are absent.
    for (const h of [H.reg, H.off]) assert.ok(!m.text.includes(h.name), `${h.name} is in /metrics`);
  });

  test('label values are escaped: quotes, backslash and newline round-trip', async () => {
    const m = await scrape();
    assert.ok(m.text.includes('pool="gpu \\"prod\\" \\\\ east – ü"'), 'the quoted pool name, escaped');
    assert.ok(m.text.includes('pool="two\\nlines \\"x\\""'), 'the newline, escaped');
    const pools = new Set(
      m.samples.filter((s) => s.name === 'gpufleet_gpu_utilization_ratio').map((s) => s.labels.pool),
    );
    assert.deepEqual([...pools].sort(), [POOL_Q, POOL_NL].sort());
  });

  test('the Xid counter counts every occurrence by category, and never drops when events close', async () => {
    const key = { ...L(H.a, POOL_Q, G.a0), kind: 'xid', code: '79', category: 'hardware' };
    const total = async () => (await scrape()).get('gpufleet_gpu_events_total', key);
    assert.equal(await total(), undefined, 'no line before the first occurrence');
    store(H.a, { gpus: [gpu(G.a0, 0), gpu(G.a1, 1)], events: [xid(G.a0)] });
    assert.equal(await total(), 1);
    store(H.a, { gpus: [gpu(G.a0, 0), gpu(G.a1, 1)], events: [xid(G.a0), xid(G.a0)] });
    assert.equal(await total(), 3, 'the open event counted twice more (one row, count 3)');
    assert.equal(
      sql(`SELECT count(*) || ':' || sum(count) FROM gpu_events WHERE host_id = '${H.a.id}' AND code = 79`).out,
      '1:3',
    );
    // Closed (the host returned to service): the occurrences stay counted.
    assert.equal(sql(`SELECT monitor_close_events('${H.a.id}')`).out, '1');
    assert.equal(await total(), 3, 'closing events does not lower the counter');
    // The next occurrence opens a new row: the counter goes on from 3.
    store(H.a, { gpus: [gpu(G.a0, 0), gpu(G.a1, 1)], events: [xid(G.a0), xid(G.a0, 13, 'application')] });
    const m = await scrape();
    assert.equal(m.get('gpufleet_gpu_events_total', key), 4);
    assert.equal(m.get('gpufleet_gpu_events_total', { ...key, code: '13', category: 'application' }), 1);
    // A host-wide event (no GPU): gpu_uuid is empty.
    store(H.a, {
      gpus: [gpu(G.a0, 0), gpu(G.a1, 1)],
      events: [{ kind: 'container_runtime', category: 'runtime', policy: 'record', message: 'docker info: exit 1' }],
    });
    assert.equal(
      (await scrape()).get('gpufleet_gpu_events_total', {
        ...L(H.a, POOL_Q),
        gpu_uuid: '',
        kind: 'container_runtime',
        code: '',
        category: 'runtime',
      }),
      1,
    );
    // The trigger's totals are the sums of gpu_events.count, series by series.
    const differing = sql(`SELECT count(*) FROM (
        (SELECT host_id, gpu_uuid, kind, code, category, total FROM gpu_event_counts
         EXCEPT SELECT host_id, gpu_uuid, kind, code, category, sum(count) FROM gpu_events GROUP BY 1, 2, 3, 4, 5)
        UNION ALL
        (SELECT host_id, gpu_uuid, kind, code, category, sum(count) FROM gpu_events GROUP BY 1, 2, 3, 4, 5
         EXCEPT SELECT host_id, gpu_uuid, kind, code, category, total FROM gpu_event_counts)) d`);
    assert.equal(differing.out, '0', differing.err);
  });

  test('invalid readings never reach the output', async () => {
    const before_ = (await scrape()).get('gpufleet_gpu_utilization_ratio', L(H.a, POOL_Q, G.a0));
    storeRefused(H.a, { gpus: [gpu(G.a0, 0, { util_gpu: 150 })] }, /util_gpu/);
    storeRefused(H.a, { gpus: [gpu(G.a0, 0, { temp_c: 'hot' })] }, /temp_c/);
    storeRefused(H.a, { gpus: [gpu(G.a0, 0, { power_w: -1 })] }, /power_w/);
    let m = await scrape();
    assert.equal(m.get('gpufleet_gpu_utilization_ratio', L(H.a, POOL_Q, G.a0)), before_);
    // A value that is not a number (NaN, written around monitor_store): no line.
    psql(srv.database.url, `UPDATE gpus SET power_w = 'NaN' WHERE uuid = '${G.a1}'`);
    m = await scrape();
    assert.equal(m.get('gpufleet_gpu_power_draw_watts', L(H.a, POOL_Q, G.a1)), undefined);
    assert.ok(!/ (NaN|[+-]?Inf)$/m.test(m.text), 'a NaN or Inf value in the output');
    assert.equal(m.get('gpufleet_gpu_temperature_celsius', L(H.a, POOL_Q, G.a1)), 40, 'the other readings stay');
  });

  test('stale readings: a missing GPU, an old sample, an inventory not read', async () => {
    // GPU a1 absent from the newest sample: missing, no readings, its last_seen stays.
    const seen = (await scrape()).get('gpufleet_gpu_last_seen_timestamp_seconds', L(H.a, POOL_Q, G.a1));
    store(H.a, { gpus: [gpu(G.a0, 0)] });
    let m = await scrape();
    const a1 = L(H.a, POOL_Q, G.a1);
    assert.equal(m.get('gpufleet_gpu_missing', a1), 1);
    assert.equal(m.get('gpufleet_gpu_utilization_ratio', a1), undefined);
    assert.equal(m.get('gpufleet_gpu_temperature_celsius', a1), undefined);
    assert.equal(m.get('gpufleet_gpu_last_seen_timestamp_seconds', a1), seen);
    assert.equal(m.get('gpufleet_gpu_missing', L(H.a, POOL_Q, G.a0)), 0);
    // A sample older than two monitor intervals (60 s): the GPU is listed, its readings
    // are not current; the host's last sample time says how old.
    const at = new Date(Date.now() - 10 * 60_000).toISOString();
    store(H.old, { at, gpus: [gpu(G.old0, 0)] });
    m = await scrape();
    const old0 = L(H.old, POOL_Q, G.old0);
    assert.equal(m.get('gpufleet_gpu_utilization_ratio', old0), undefined);
    assert.equal(m.get('gpufleet_gpu_missing', old0), 0);
    assert.equal(m.get('gpufleet_host_last_sample_timestamp_seconds', L(H.old, POOL_Q)), Date.parse(at) / 1000);
    // An empty GPU list (an inventory not read): the earlier readings are not repeated.
    store(H.b, { gpus: [] });
    m = await scrape();
    assert.equal(m.get('gpufleet_gpu_temperature_celsius', L(H.b, POOL_NL, G.b0)), undefined);
    assert.equal(m.get('gpufleet_gpu_missing', L(H.b, POOL_NL, G.b0)), 0);
  });

  test('hosts by state; a host that leaves the watched states leaves the output', async () => {
    // The watched hosts, by host state and monitor state (its health summary) as
    // host_monitor holds them: not the registered host, nor the one whose pool turned the
    // monitor off.
    const expected = (ids) =>
      Object.fromEntries(
        sql(`SELECT h.state || '/' || coalesce(m.state, 'unknown'), count(*) FROM hosts h LEFT JOIN host_monitor m ON m.host_id = h.id
              WHERE h.id IN (${ids.map((h) => `'${h.id}'`).join(', ')}) GROUP BY 1`)
          .out.split('\n')
          .map((l) => l.split('|'))
          .map(([k, v]) => [k, Number(v)]),
      );
    const shown = (mm) =>
      Object.fromEntries(
        mm.all('gpufleet_monitor_hosts', {}).map((x) => [`${x.labels.host_state}/${x.labels.monitor_state}`, x.value]),
      );
    let m = await scrape();
    assert.deepEqual(shown(m), expected([H.a, H.b, H.old, H.gone, H.never]));
    assert.equal(shown(m)['unreachable/unknown'], 1, 'the host never sampled');
    assert.equal(
      m.samples
        .filter((x) => x.name === 'gpufleet_monitor_hosts' && x.labels.host_state === 'ready')
        .reduce((a, x) => a + x.value, 0),
      2,
    );
    assert.equal(
      m.get('gpufleet_host_last_sample_timestamp_seconds', L(H.never, POOL_Q)),
      undefined,
      'never sampled: no line',
    );
    assert.ok(m.text.includes(G.gone0));
    store(H.gone, { gpus: [gpu(G.gone0, 0)], events: [xid(G.gone0)] });
    setState(H.gone, 'stopped');
    m = await scrape();
    assert.ok(!m.text.includes(G.gone0) && !m.text.includes(H.gone.name), 'a stopped host and its GPUs left /metrics');
    assert.deepEqual(shown(m), expected([H.a, H.b, H.old, H.never]));
    // Back in a watched state: its counter is where it was.
    setState(H.gone, 'ready');
    m = await scrape();
    assert.equal(m.get('gpufleet_gpu_events_total', { ...L(H.gone, POOL_Q, G.gone0), kind: 'xid', code: '79' }), 1);
  });

  test('a failed read gives none of the GPU families (not zeros), and /metrics still answers', async () => {
    psql(srv.database.url, 'ALTER TABLE gpu_event_counts RENAME TO gpu_event_counts_away');
    try {
      const m = await scrape();
      assert.equal(m.get('gpufleet_gpu_metrics_up'), 0);
      for (const s of m.samples)
        assert.ok(
          !/^gpufleet_(gpu_(?!metrics_up)|host_last_sample|monitor_hosts)/.test(s.name),
          `${s.name} after a failed read`,
        );
      assert.ok(m.get('process_cpu_seconds_total') >= 0, 'the other families are there');
    } finally {
      psql(srv.database.url, 'ALTER TABLE gpu_event_counts_away RENAME TO gpu_event_counts');
    }
    const m = await scrape();
    assert.equal(m.get('gpufleet_gpu_metrics_up'), 1);
    assert.equal(m.get('gpufleet_gpu_utilization_ratio', L(H.a, POOL_Q, G.a0)), 0.5);
  });
});
