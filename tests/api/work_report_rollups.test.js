'use strict';
// The work-report rollups are exact once settled (issue 28, item 4; migrations/0045): after
// batches whose records repeat rollup keys inside one statement (many hours of one host in
// one quarter, day and week; one host-hour under two units; the same host with and without
// a brief), across statements (a second batch into the same day and week), with duplicates
// and a refused (409) batch, each of the four rollups equals a recomputation from
// work_reports, row for row and column for column, after work_report_rollups_settle(). The
// figures are multiples of 1/4, so every sum is exact in float8 whatever the order of the
// additions.
//
// The settle: an insert only records its reports as pending; the rollup pass and every
// reader add them to the rollups. This file's server runs no pass
// (GPUFLEET_ROLLUP_INTERVAL_MS=0), so what is pending stays pending until a read or a
// settle: a read right after a POST counts it, a host deleted with pending reports leaves
// no rollup row, settles side by side with inserts neither lose nor double a report, a read
// whose settle fails answers 503 instead of a stale figure, and a server with the pass
// empties the backlog without any read.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, psql, psqlHolding } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const T0 = '2025-03-03T00:00:00Z'; // a Monday
const hour = (h) => new Date(Date.parse(T0) + h * 3600e3).toISOString().replace('.000Z', 'Z');

let srv;
let client;
let operator;
let brief;
let hosts; // A, B, C
let cred;
let pool;

// Record r of host `host` for hour h: figures vary with h and r so that a wrong sum, a
// lost record or a record counted twice changes some column.
function rec(host, h, r, overrides = {}) {
  const busy = 1800 + 25 * h + r;
  return {
    host_id: host.id,
    window_start: hour(h),
    window_end: hour(h + 1),
    unit: 'tokens',
    completed: 1000 * (h + 1) + r,
    failed: (h + r) % 7,
    retried: (h * r) % 5,
    busy_seconds: busy,
    p95_latency_ms: 100 + ((h * 37 + r * 11) % 400) + 0.25,
    queue_delay_ms: ((h * 13 + r) % 50) + 0.5,
    bytes_moved: 1e6 * (h + 1) + r,
    ...(h % 3 === 0 ? { storage_gb: 10 + h + 0.5 } : {}),
    ...(h % 2 === 0 ? { phases: { queue: 100, load: 200.25, compute: busy - 400.5, write: 100.25 } } : {}),
    ...((h + r) % 7 > 1 ? { failures: { oom: 1, timeout: 0.5 } } : {}),
    ...overrides,
  };
}
const post = (records) => client.request('POST', '/v1/work-reports', { token: operator, body: { records } });

const BUCKETS = {
  work_report_hours: "date_trunc('hour', window_start, 'UTC')",
  work_report_quarters: "date_bin('6 hours', window_start, timestamptz '2000-01-01 00:00Z')",
  work_report_days: "date_trunc('day', window_start, 'UTC')",
  work_report_weeks: "date_trunc('week', window_start, 'UTC')",
};
const PHASES =
  'num_nonnulls(phase_queue_seconds, phase_load_seconds, phase_preprocess_seconds, ' +
  'phase_compute_seconds, phase_communication_seconds, phase_write_seconds) > 0';
const FAILURES =
  'num_nonnulls(failures_oom, failures_timeout, failures_data, failures_hardware, ' +
  'failures_preempted, failures_other) > 0';
const SPAN = 'extract(epoch FROM window_end - window_start)::float8';

// The rollup of `table` recomputed from work_reports (the definition in migrations/0010,
// 0032 and 0035), with the table's column types.
function recompute(table, where) {
  return `SELECT ${BUCKETS[table]} AS bucket, host_id, brief_id, unit, count(*)::integer,
    sum(completed)::float8, sum(failed)::float8, sum(retried)::float8, sum(busy_seconds),
    sum(${SPAN}), coalesce(sum(storage_gb * ${SPAN}), 0),
    coalesce(sum(${SPAN}) FILTER (WHERE storage_gb IS NOT NULL), 0),
    coalesce(sum(bytes_moved), 0)::float8, min(window_start), max(window_end),
    max(window_end) FILTER (WHERE completed > 0 OR busy_seconds > 0),
    max(p95_latency_ms), max(queue_delay_ms),
    coalesce(sum(phase_queue_seconds), 0), coalesce(sum(phase_load_seconds), 0),
    coalesce(sum(phase_preprocess_seconds), 0), coalesce(sum(phase_compute_seconds), 0),
    coalesce(sum(phase_communication_seconds), 0), coalesce(sum(phase_write_seconds), 0),
    (count(*) FILTER (WHERE ${PHASES}))::integer,
    coalesce(sum(busy_seconds) FILTER (WHERE ${PHASES}), 0),
    coalesce(sum(failures_oom), 0), coalesce(sum(failures_timeout), 0),
    coalesce(sum(failures_data), 0), coalesce(sum(failures_hardware), 0),
    coalesce(sum(failures_preempted), 0), coalesce(sum(failures_other), 0),
    (count(*) FILTER (WHERE ${FAILURES}))::integer,
    coalesce(sum(failed + retried) FILTER (WHERE ${FAILURES}), 0)::float8
    FROM work_reports WHERE ${where} GROUP BY 1, 2, 3, 4`;
}
function stored(table, where) {
  return `SELECT bucket, host_id, brief_id, unit, reports, completed, failed, retried,
    busy_seconds, covered_seconds, storage_gb_seconds, storage_seconds, bytes_moved,
    min_start, max_end, useful_end, p95_max, queue_max, phase_queue_seconds,
    phase_load_seconds, phase_preprocess_seconds, phase_compute_seconds,
    phase_communication_seconds, phase_write_seconds, phase_reports, phase_busy_seconds,
    failures_oom, failures_timeout, failures_data, failures_hardware, failures_preempted,
    failures_other, failures_reports, failures_units FROM ${table} WHERE ${where}`;
}

// For each rollup (one psql call for the four): its rows for the test's hosts, the
// recomputed rows, and how many rows differ either way; the differing rows themselves are
// fetched only when some differ, for the failure message.
const where = () => `host_id IN (${hosts.map((h) => `'${h.id}'`).join(', ')})`;
const diffSql = (t) =>
  `(${stored(t, where())} EXCEPT ALL ${recompute(t, where())})
   UNION ALL (${recompute(t, where())} EXCEPT ALL ${stored(t, where())})`;
const settle = () => Number(psql(srv.database.url, 'SELECT settled FROM work_report_rollups_settle()'));
const pending = () =>
  Number(
    psql(
      srv.database.url,
      'SELECT coalesce(sum(upper(r) - lower(r)), 0) FROM work_report_rollup_pending, unnest(seqs) r',
    ),
  );
function assertExact(expectedRows) {
  settle();
  assert.equal(pending(), 0);
  const tables = Object.keys(BUCKETS);
  const counts = psql(
    srv.database.url,
    tables
      .map(
        (t) => `SELECT '${t}', (SELECT count(*) FROM (${stored(t, where())}) s),
                (SELECT count(*) FROM (${recompute(t, where())}) r),
                (SELECT count(*) FROM (${diffSql(t)}) d)`,
      )
      .join(' UNION ALL '),
  )
    .trim()
    .split('\n')
    .map((l) => l.split('|'));
  for (const [t, n, m, d] of counts) {
    const rows = d === '0' ? '' : psql(srv.database.url, diffSql(t));
    assert.equal(d, '0', `${t}: ${d} rows differ from the recomputation (stored ones first):\n${rows}`);
    assert.equal(n, m, t);
    if (expectedRows) assert.equal(Number(n), expectedRows[t], `${t}: rows`);
  }
  assert.equal(counts.length, tables.length);
}
const reports = () => Number(psql(srv.database.url, `SELECT count(*) FROM work_reports WHERE ${where()}`));

// A host of the file's pool (name ru-N-…).
const newHost = (n) =>
  fleet.createHost(client, operator, {
    name: `ru-${n}-${fleet.uniq()}`,
    address: '127.0.0.1',
    port: 2222,
    user: 'gpufleet',
    credential_id: cred.id,
    pool_id: pool.id,
  });

before(async () => {
  srv = await startServer({
    name: 'work_report_rollups',
    env: {
      GPUFLEET_WORKERS: '0',
      GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8',
      GPUFLEET_ROLLUP_INTERVAL_MS: '0',
      GPUFLEET_METRICS_CACHE_SECONDS: '0',
    },
  });
  client = api(srv);
  const admin = srv.token('admin');
  operator = srv.token('operator');
  cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  pool = await fleet.createPool(client, admin, { name: `ru-${fleet.uniq()}`, price_per_hour: 2 });
  hosts = [];
  for (const n of ['a', 'b', 'c']) hosts.push(await newHost(n));
  brief = expectStatus(
    await client.request('POST', '/v1/briefs', {
      token: operator,
      body: {
        name: `ru-brief-${fleet.uniq()}`,
        kind: 'inference_interactive',
        model: { name: 'acme/chat-7b', parameter_count: 7e9, precision: 'bf16' },
        load: { concurrency: 1 },
        targets: [{ metric: 'time_to_first_token_ms', value: 500, percentile: 'p95' }],
      },
    }),
    201,
  );
});

after(async () => {
  if (srv) await srv.stop();
});

describe('work-report rollups equal a recomputation from work_reports', () => {
  test('one batch whose records repeat rollup keys', async () => {
    const [a, b, c] = hosts;
    const records = [];
    // A: hours 0-9 (quarters 0-5 and 6-11, one day, one week), in a shuffled order.
    for (const h of [7, 0, 3, 9, 1, 5, 2, 8, 4, 6]) records.push(rec(a, h, 0));
    // A again at hours 0-1 under another unit: other work_reports keys, other rollup keys.
    records.push(rec(a, 0, 1, { unit: 'requests' }), rec(a, 1, 2, { unit: 'requests' }));
    // B: hours 0-5 with the brief and hours 2-3 of the next day without (one week).
    for (let h = 0; h < 6; h++) records.push(rec(b, h, 3, { brief_id: brief.id }));
    records.push(rec(b, 26, 4), rec(b, 27, 5));
    // C: idle hours (no useful end) around busy ones, and two-hour windows.
    const idle = { completed: 0, busy_seconds: 0, failed: 0, retried: 0, phases: undefined, failures: undefined };
    records.push(rec(c, 0, 6, idle), { ...rec(c, 1, 7), window_end: hour(3) }, rec(c, 3, 8, idle));
    assert.deepEqual(expectStatus(await post(records), 201), { accepted: records.length, duplicates: 0 });
    assert.equal(reports(), records.length);
    assertExact({ work_report_hours: 23, work_report_quarters: 6, work_report_days: 5, work_report_weeks: 5 });
  });

  test('a second batch into the same quarters, days and weeks, with duplicates of the first', async () => {
    const [a, b, c] = hosts;
    const records = [rec(a, 0, 0), rec(a, 9, 0)]; // duplicates: not counted again
    for (let h = 10; h < 18; h++) records.push(rec(a, h, 0)); // quarters 6-11 and 12-17
    records.push(rec(b, 28, 5), rec(b, 6, 3, { brief_id: brief.id }), rec(c, 4, 9), rec(c, 5, 9));
    assert.deepEqual(expectStatus(await post(records), 201), {
      accepted: records.length - 2,
      duplicates: 2,
    });
    assertExact({ work_report_hours: 35, work_report_quarters: 8, work_report_days: 5, work_report_weeks: 5 });
  });

  test('a refused batch (a conflicting re-send) leaves the rollups as they were', async () => {
    const [a] = hosts;
    const before = reports();
    const res = await post([rec(a, 30, 0), rec(a, 31, 0), { ...rec(a, 5, 0), completed: 1 }]);
    expectProblem(res, 409, 'work_report_conflict', 'records[2]');
    assert.equal(reports(), before);
    assertExact({ work_report_hours: 35, work_report_quarters: 8, work_report_days: 5, work_report_weeks: 5 });
  });
});

describe('the rollups are settled by readers and by the pass, never at the insert', () => {
  const viewer = () => srv.token('viewer');
  const hourRows = (h, from, to) =>
    psql(
      srv.database.url,
      `SELECT coalesce(sum(reports), 0) FROM work_report_hours
        WHERE host_id = '${h.id}' AND bucket >= '${hour(from)}' AND bucket < '${hour(to)}'`,
    );
  // Rows of host h left in the hour, quarter, day and week rollups and in work_reports.
  const leftOf = (h) =>
    psql(
      srv.database.url,
      'SELECT ' +
        ['work_report_hours', 'work_report_quarters', 'work_report_days', 'work_report_weeks', 'work_reports']
          .map((t) => `(SELECT count(*) FROM ${t} WHERE host_id = '${h.id}')`)
          .join(" || ',' || "),
    );

  test('an insert leaves its reports pending; a cost read right after it counts them', async () => {
    const [a] = hosts;
    settle();
    const records = [rec(a, 40, 0), rec(a, 41, 0), rec(a, 42, 0, { unit: 'requests' })];
    assert.deepEqual(expectStatus(await post(records), 201), { accepted: 3, duplicates: 0 });
    assert.equal(pending(), 3, 'the batch is pending');
    assert.equal(hourRows(a, 40, 43), '0', 'and not in the rollups yet');
    const body = expectStatus(
      await client.request('GET', `/v1/costs?from=${hour(40)}&to=${hour(43)}&group_by=host`, { token: viewer() }),
      200,
    );
    const g = body.items.find((x) => x.id === a.id);
    assert.ok(g, 'the host is in the cost report');
    assert.deepEqual(g.completed_units, {
      tokens: records[0].completed + records[1].completed,
      requests: records[2].completed,
    });
    assert.equal(pending(), 0, 'the read settled the rollups first');
    assert.equal(hourRows(a, 40, 43), '3');
    assertExact(null);
  });

  test('a host deleted with pending reports leaves no rollup row, and the next settle succeeds', async () => {
    const d = await newHost('d');
    const records = [];
    for (let h = 50; h < 56; h++) records.push(rec(d, h, 0));
    assert.deepEqual(expectStatus(await post(records), 201), { accepted: 6, duplicates: 0 });
    assert.equal(pending(), 6);
    assert.equal((await client.request('DELETE', `/v1/hosts/${d.id}`, { token: srv.token('admin') })).status, 204);
    // the reports went with the host (ON DELETE CASCADE): the settle finds none to add
    assert.equal(settle(), 0);
    assert.equal(leftOf(d), '0,0,0,0,0', 'hours, quarters, days, weeks, reports of the deleted host');
    assert.equal(pending(), 0);
    assertExact(null);
  });

  test('a host deleted while a settle holds its reports loses every rollup row once that settle commits', async () => {
    const f = await newHost('f');
    const records = [];
    for (let h = 0; h < 8; h++) records.push(rec(f, h, 1));
    assert.deepEqual(expectStatus(await post(records), 201), { accepted: 8, duplicates: 0 });
    // a settle that stays open for 2 s after adding f's reports to the rollups
    const holder = await psqlHolding(
      srv.database.url,
      'BEGIN; SELECT work_report_rollups_settle(); SELECT pg_sleep(2); COMMIT;',
      () =>
        psql(srv.database.url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted") === '1' &&
        pending() === 8, // the settle runs and has not committed
    );
    try {
      // the deletion waits for the settle (it holds f FOR KEY SHARE), then takes its rows too
      const del = await client.request('DELETE', `/v1/hosts/${f.id}`, { token: srv.token('admin') });
      assert.equal(del.status, 204);
      assert.equal(await holder.done, 0, 'the settle committed');
    } finally {
      holder.stop();
    }
    assert.equal(leftOf(f), '0,0,0,0,0', 'hours, quarters, days, weeks, reports of the deleted host');
  });

  test('settles side by side with inserts neither lose nor double a report', async () => {
    const { spawn } = require('node:child_process');
    const e = await newHost('e');
    // two psql sessions settling in a loop while 12 batches of 5 arrive, 3 at a time
    const loops = [0, 1].map(() =>
      spawn('psql', [
        '-X',
        '-q',
        '-v',
        'ON_ERROR_STOP=1',
        '-d',
        srv.database.url,
        ...Array.from({ length: 40 }, () => ['-c', 'SELECT work_report_rollups_settle(), pg_sleep(0.02)']).flat(),
      ]),
    );
    const exits = loops.map((p) => new Promise((resolve) => p.on('exit', resolve)));
    const batches = [];
    for (let k = 0; k < 12; k++) {
      const records = [];
      for (let h = 0; h < 5; h++) records.push(rec(e, k * 5 + h, k, { brief_id: k % 2 ? brief.id : undefined }));
      batches.push(records);
    }
    for (let k = 0; k < batches.length; k += 3) {
      const res = await Promise.all(batches.slice(k, k + 3).map((b) => post(b)));
      for (const r of res) assert.deepEqual(expectStatus(r, 201), { accepted: 5, duplicates: 0 });
    }
    assert.deepEqual(await Promise.all(exits), [0, 0], 'both settle loops ran to the end');
    hosts.push(e); // assertExact's hosts
    assertExact(null);
    assert.equal(
      psql(srv.database.url, `SELECT sum(reports) FROM work_report_days WHERE host_id = '${e.id}'`),
      '60',
      'every report of the 12 batches counted once',
    );
  });

  test('a read whose settle fails answers 503, never a figure without the pending reports', async () => {
    const [a] = hosts;
    // a second server with a 300 ms statement timeout; a psql session holds the pending
    // table's lock, so the settle (not the read: the rollups are not locked) times out
    const slow = await startServer({
      name: 'ru-timeout',
      databaseUrl: srv.database.url,
      migrate: false,
      secrets: srv.secrets,
      env: { GPUFLEET_WORKERS: '0', GPUFLEET_DB_STATEMENT_TIMEOUT_MS: '300', GPUFLEET_ROLLUP_INTERVAL_MS: '0' },
    });
    const c2 = api(slow);
    const url = `/v1/costs?from=${hour(60)}&to=${hour(62)}&group_by=host`;
    assert.deepEqual(expectStatus(await post([rec(a, 60, 0), rec(a, 61, 0)]), 201), { accepted: 2, duplicates: 0 });
    const holder = await psqlHolding(
      srv.database.url,
      'BEGIN; LOCK TABLE work_report_rollup_pending IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3); COMMIT;',
      () =>
        psql(
          srv.database.url,
          "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'work_report_rollup_pending' AND l.mode = 'AccessExclusiveLock' AND l.granted",
        ) === '1',
    );
    try {
      expectProblem(await c2.request('GET', url, { token: slow.token('viewer') }), 503, 'query_timeout');
      await holder.done;
      const g = expectStatus(await c2.request('GET', url, { token: slow.token('viewer') }), 200).items.find(
        (x) => x.id === a.id,
      );
      assert.deepEqual(g.completed_units, { tokens: rec(a, 60, 0).completed + rec(a, 61, 0).completed });
    } finally {
      holder.stop();
      await slow.stop({ dropDatabase: false });
    }
    assertExact(null);
  });

  test('a settle adds at most p_max reports, the lowest seqs, and puts the rest back with its age', async () => {
    const g = await newHost('g');
    settle();
    const records = [];
    for (let h = 0; h < 7; h++) records.push(rec(g, h, 2));
    assert.deepEqual(expectStatus(await post(records.slice(0, 4)), 201), { accepted: 4, duplicates: 0 });
    assert.deepEqual(expectStatus(await post(records.slice(4)), 201), { accepted: 3, duplicates: 0 });
    const oldest = psql(srv.database.url, 'SELECT min(added_at) FROM work_report_rollup_pending');
    const step = (max) =>
      psql(srv.database.url, `SELECT settled || ',' || remaining FROM work_report_rollups_settle(${max})`);
    assert.equal(step(3), '3,4');
    assert.equal(pending(), 4);
    assert.equal(
      psql(srv.database.url, 'SELECT min(added_at) FROM work_report_rollup_pending'),
      oldest,
      'the age is kept',
    );
    assert.equal(hourRows(g, 0, 7), '3');
    assert.equal(
      psql(
        srv.database.url,
        `SELECT string_agg(extract(hour FROM bucket)::text, ',' ORDER BY bucket) FROM work_report_hours WHERE host_id = '${g.id}'`,
      ),
      '0,1,2',
      'the lowest seqs first',
    );
    assert.equal(step(4), '4,0');
    assert.equal(step(4), '0,0');
    hosts.push(g);
    assertExact(null);
  });

  test('a read after a backlog larger than one settle (60,000 reports) settles it in turns and counts every report', async () => {
    const k = await newHost('k');
    // 60,000 half-hour reports of one host, 2024-01-01 onwards (about 417 days), in one
    // statement: one pending row, more than the server settles at once (50,000)
    psql(
      srv.database.url,
      `INSERT INTO work_reports (host_id, window_start, window_end, unit, completed, failed, retried,
                                 busy_seconds, reported_by)
       SELECT '${k.id}', t, t + interval '30 minutes', 'tokens', i, 0, 0, 60, 'test'
         FROM generate_series(0, 59999) AS i,
              LATERAL (SELECT timestamptz '2024-01-01 00:00Z' + i * interval '30 minutes' AS t) x`,
    );
    assert.equal(pending(), 60000);
    const body = expectStatus(
      await client.request('GET', '/v1/costs?from=2024-01-01T00:00:00Z&to=2024-12-31T00:00:00Z&group_by=host', {
        token: viewer(),
      }),
      200,
    );
    // the window holds the reports of 2024-01-01 .. 2024-12-31: 365 days × 48
    const n = 365 * 48;
    const g = body.items.find((x) => x.id === k.id);
    assert.ok(g, 'the host is in the cost report');
    assert.deepEqual(g.completed_units, { tokens: (n * (n - 1)) / 2 });
    assert.equal(pending(), 0, 'the read settled the whole backlog first');
    assert.equal(
      psql(srv.database.url, `SELECT sum(reports) FROM work_report_weeks WHERE host_id = '${k.id}'`),
      '60000',
    );
    // in two settles of at most 50,000 (service/rollups.c), each a transaction of its own
    const log = require('node:fs').readFileSync(srv.logPath, 'utf8');
    assert.match(log, /work report rollups: 60000 reports settled in 2 settles/);
  });

  test('/metrics shows the backlog and what this process settled', async () => {
    const [a] = hosts;
    const metric = async (name) => {
      const res = await client.request('GET', '/metrics');
      expectStatus(res, 200);
      const line = res.text.split('\n').find((l) => l.startsWith(`${name} `));
      assert.ok(line, `${name} is in /metrics`);
      return Number(line.split(' ')[1]);
    };
    settle();
    assert.equal(await metric('gpufleet_work_report_rollup_pending_reports'), 0);
    assert.equal(await metric('gpufleet_work_report_rollup_pending_age_seconds'), 0);
    const before = await metric('gpufleet_work_report_rollup_settled_total');
    assert.deepEqual(expectStatus(await post([rec(a, 64, 0), rec(a, 65, 0)]), 201), { accepted: 2, duplicates: 0 });
    assert.equal(await metric('gpufleet_work_report_rollup_pending_reports'), 2);
    assert.ok((await metric('gpufleet_work_report_rollup_pending_age_seconds')) >= 0);
    expectStatus(await client.request('GET', `/v1/costs?from=${hour(64)}&to=${hour(66)}`, { token: viewer() }), 200);
    assert.equal(await metric('gpufleet_work_report_rollup_pending_reports'), 0);
    assert.equal(await metric('gpufleet_work_report_rollup_settled_total'), before + 2);
    assert.equal(await metric('gpufleet_work_report_rollup_settle_failures_total'), 0);
  });

  test('the rollup pass empties the backlog without any read', async () => {
    const [, b] = hosts;
    const withPass = await startServer({
      name: 'ru-pass',
      databaseUrl: srv.database.url,
      migrate: false,
      secrets: srv.secrets,
      env: { GPUFLEET_WORKERS: '0', GPUFLEET_ROLLUP_INTERVAL_MS: '100' },
    });
    try {
      const records = [rec(b, 70, 0), rec(b, 71, 0), rec(b, 72, 0)];
      assert.deepEqual(expectStatus(await post(records), 201), { accepted: 3, duplicates: 0 });
      let left = pending();
      for (let i = 0; i < 100 && left > 0; i++) {
        await new Promise((r) => setTimeout(r, 50));
        left = pending();
      }
      assert.equal(left, 0, 'the pass settled the batch');
      assert.equal(hourRows(b, 70, 73), '3');
    } finally {
      await withPass.stop({ dropDatabase: false });
    }
    assertExact(null);
  });
});
