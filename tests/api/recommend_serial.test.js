'use strict';
// The recommendations' reads plan serial (issue 28, item 5; db/db_pg.h DB_SERIAL_CTE). The
// pass runs its reads side by side on connections of their own; a parallel plan's Gather
// starts workers for each (about 100 ms a statement measured on a loaded 2-core machine)
// that only share the same cores. Each statement below names set_config (PARALLEL UNSAFE)
// in a CTE it never reads, so PostgreSQL plans it without workers whatever the costs say.
//
// Checked with the costs that make a parallel plan win on any table (no setup or tuple
// cost, no minimum size, sequential scans only): without the CTE every one of these
// statements plans a Gather here. The plan is the generic one the server's prepared
// statement can keep (plan_cache_mode = force_generic_plan), so the parameters' values
// (NULL here) do not matter.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');

const { startServer, psql, BIN } = require('./lib/server');

const STATEMENTS = [
  'recommend_usage',
  'recommend_usage_failures',
  'recommend_held',
  'recommend_hosts',
  'recommend_gpu_util',
  'bn_rows_fleet',
];

let srv;

before(async () => {
  srv = await startServer({ name: 'recommend_serial', env: { GPUFLEET_WORKERS: '0' } });
});

after(async () => {
  if (srv) await srv.stop();
});

function statementSql(name) {
  const r = spawnSync(BIN, ['sql', name], { encoding: 'utf8' });
  assert.equal(r.status, 0, `gpufleetd sql ${name}: ${r.stderr}`);
  return r.stdout.trim();
}

describe('the recommendations reads plan without parallel workers', () => {
  for (const name of STATEMENTS) {
    test(name, () => {
      const sql = statementSql(name);
      const n = Math.max(0, ...[...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
      const args = n ? `(${Array(n).fill('NULL').join(', ')})` : '';
      const plan = psql(
        srv.database.url,
        [
          'SET parallel_setup_cost = 0',
          'SET parallel_tuple_cost = 0',
          'SET min_parallel_table_scan_size = 0',
          'SET min_parallel_index_scan_size = 0',
          'SET enable_indexscan = off',
          'SET enable_bitmapscan = off',
          'SET plan_cache_mode = force_generic_plan',
          `PREPARE q AS ${sql}`,
          `EXPLAIN EXECUTE q${args}`,
        ].join('; '),
      );
      assert.ok(plan.length > 0, 'no plan');
      assert.doesNotMatch(plan, /Gather/, `${name} plans parallel workers:\n${plan}`);
    });
  }
});
