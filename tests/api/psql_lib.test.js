'use strict';
// The harness's psql() (tests/api/lib/server.js over build/pgpipe, one kept connection per
// URL) against the real thing, `psql -X -q -At -v ON_ERROR_STOP=1 -d URL -c SQL`: the same
// output for several statements and result sets, NULLs, '|' and newlines in values, COPY TO
// STDOUT; the same error text (DETAIL, HINT, CONTEXT, LINE and caret, notices) and status;
// allowFail; each call a session as new; a connection the server closed (terminated,
// database dropped) made again or failing as psql fails; a kept connection never blocking
// DROP DATABASE; the timeout.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');

const { psql, createDatabase, baseDatabaseUrl, databaseUrl } = require('./lib/server');

let db;
let url;

// What psql() would have returned or thrown, from psql itself.
function realPsql(u, sql, { allowFail = false } = {}) {
  const r = spawnSync('psql', ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-d', u, '-c', sql], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (r.status !== 0 && !allowFail) return { error: `psql failed (${r.status}): ${sql}\n${r.stderr}` };
  return { value: (r.stdout || '').trim() };
}

function ours(u, sql, opts) {
  try {
    return { value: psql(u, sql, opts) };
  } catch (e) {
    return { error: e.message };
  }
}

function same(sql, { u = url, allowFail = false } = {}) {
  const want = realPsql(u, sql, { allowFail });
  const got = ours(u, sql, { allowFail });
  assert.deepEqual(got, want, sql);
  return got;
}

// the backends of our kept connections to the test database
const keptPids = () =>
  realPsql(
    baseDatabaseUrl(),
    `SELECT pid FROM pg_stat_activity WHERE application_name = 'pgpipe' AND datname = '${db.name}'`,
  ).value;

before(() => {
  db = createDatabase('psql_lib');
  url = db.url;
  psql(url, "CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'a|b'), (2, NULL)");
});

after(() => {
  if (db) db.drop();
});

test('several statements, several result sets, NULLs, | and newlines in values', () => {
  const r = same("SELECT 1; SELECT id, v FROM t ORDER BY id; SELECT 'l1\nl2', NULL, ''; SELECT 2 WHERE false");
  assert.equal(r.value, '1\n1|a|b\n2|\nl1\nl2||');
  same('INSERT INTO t VALUES (3, $$x$$) RETURNING id; DELETE FROM t WHERE id = 3; SELECT; SELECT count(*) FROM t');
  same('   ');
  same('SELECT 1;;');
  same("COPY (SELECT id, v FROM t ORDER BY id) TO STDOUT; SELECT 'after'");
  same("SELECT 'ünïcödé', E'tab\\there'");
});

test('errors: the message psql prints, with DETAIL, HINT, CONTEXT, LINE and notices', () => {
  assert.match(same('SELECT 1; SELECT 1/0; SELECT 3').error, /^psql failed \(1\): .*\nERROR: {2}division by zero\n$/);
  same('SELEC 1');
  same("SELECT 1; INSERT INTO nosuch VALUES (1); SELECT 'a|b'");
  const r = same("DO $$ BEGIN RAISE NOTICE 'hi'; RAISE EXCEPTION 'boom' USING DETAIL = 'd1', HINT = 'h1'; END $$");
  assert.match(r.error, /NOTICE: {2}hi\nERROR: {2}boom\nDETAIL: {2}d1\nHINT: {2}h1\nCONTEXT: /);
  same("INSERT INTO t VALUES (1, 'dup')");
});

test('allowFail returns what psql printed before the error', () => {
  assert.equal(same('SELECT 1; SELECT 2; SELECT 1/0', { allowFail: true }).value, '1\n2');
  assert.equal(same('SELEC', { allowFail: true }).value, '');
});

test('one string is one implicit transaction, and each call starts a new session', () => {
  same('CREATE TABLE gone (a int); INSERT INTO gone VALUES (1); SELECT 1/0');
  same("SELECT to_regclass('gone') IS NULL");
  // what a session leaves behind: settings, an open transaction, temporary tables, locks
  psql(url, "SET statement_timeout = '5s'; SET application_name = 'other'");
  same('SHOW statement_timeout');
  psql(url, 'BEGIN; CREATE TABLE open_tx (a int)');
  same("SELECT to_regclass('open_tx') IS NULL");
  psql(url, 'CREATE TEMP TABLE tmp (a int); PREPARE p AS SELECT 1; SELECT pg_advisory_lock(42)');
  same("SELECT to_regclass('pg_temp.tmp') IS NULL, (SELECT count(*) FROM pg_prepared_statements)");
  // (this database's: files that run side by side take advisory locks of their own)
  same(
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
  );
  psql(url, 'BEGIN; SELECT 1/0', { allowFail: true });
  same('SELECT 1');
  // one backend for all of it
  assert.match(keptPids(), /^\d+$/);
});

test('a kept connection the server closed is made again', () => {
  psql(url, 'SELECT 1');
  const pid = keptPids();
  assert.match(pid, /^\d+$/);
  assert.equal(realPsql(baseDatabaseUrl(), `SELECT pg_terminate_backend(${pid})`).value, 't');
  for (let i = 0; i < 50 && keptPids() === pid; i++) spawnSync('sleep', ['0.05']);
  same('SELECT count(*) FROM t');
  assert.notEqual(keptPids(), pid);
  // the connection's own end: psql's message and status 2; the next call connects again
  assert.match(
    same('SELECT 1; SELECT pg_terminate_backend(pg_backend_pid())').error,
    /^psql failed \(2\): [^\n]*\nFATAL: .*\n(.*\n)*connection to server was lost\n$/,
  );
  same('SELECT 2');
});

test('no server, no database: the failure psql reports', () => {
  same('SELECT 1', { u: url.replace(/port=\d+/, 'port=1') });
  same('SELECT 1', { u: databaseUrl(baseDatabaseUrl(), 'gft_no_such_database') });
  same('SELECT 1', { u: databaseUrl(baseDatabaseUrl(), 'gft_no_such_database'), allowFail: true });
});

test('a kept connection never blocks DROP DATABASE, and a dropped database fails as psql', () => {
  const other = createDatabase('psql_lib_drop');
  try {
    assert.equal(psql(other.url, 'SELECT 1'), '1');
    // no FORCE: fails while any session is connected to it
    psql(baseDatabaseUrl(), `DROP DATABASE "${other.name}"`);
  } finally {
    other.drop();
  }
  assert.match(same('SELECT 1', { u: other.url }).error, /database "[^"]+" does not exist/);
  // and WITH (FORCE) from another process, under a kept connection
  const third = createDatabase('psql_lib_force');
  assert.equal(psql(third.url, 'SELECT 1'), '1');
  realPsql(baseDatabaseUrl(), `DROP DATABASE "${third.name}" WITH (FORCE)`);
  same('SELECT 1', { u: third.url });
});

test('a call that runs past its timeout fails (status null) and the next one works', () => {
  const t0 = Date.now();
  assert.throws(() => psql(url, 'SELECT pg_sleep(30)', { timeout: 300 }), /^Error: psql failed \(null\)/);
  assert.ok(Date.now() - t0 < 10_000, `took ${Date.now() - t0} ms`);
  assert.equal(psql(url, 'SELECT pg_sleep(30)', { timeout: 300, allowFail: true }), '');
  same('SELECT 3');
  // the cancelled queries are gone from the server
  const sleeping = () =>
    realPsql(url, "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)'").value;
  for (let i = 0; i < 100 && sleeping() !== '0'; i++) spawnSync('sleep', ['0.05']);
  assert.equal(sleeping(), '0');
});
