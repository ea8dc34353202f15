'use strict';
// `gpufleetd migrate` and the schema check at start-up: idempotent runs,
// checksums, refusing tampered / unmigrated / newer databases, and
// concurrent migrators.

const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const {
  ROOT,
  createDatabase,
  makeSecrets,
  cleanEnv,
  runBin,
  runBinAsync,
  psql,
  freePort,
  startServer,
} = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectStatus } = require('./lib/assert');

const secrets = makeSecrets('gft-migrations');
const dbs = [];
after(() => {
  for (const d of dbs) d.drop();
  fs.rmSync(secrets.dir, { recursive: true, force: true });
});

function freshDb(tag) {
  const d = createDatabase(`mig_${tag}`);
  dbs.push(d);
  return d;
}

function envFor(db, port = 1) {
  return cleanEnv({
    GPUFLEET_DATABASE_URL: db.url,
    GPUFLEET_JWT_SECRET_FILE: secrets.jwtSecretFile,
    GPUFLEET_MASTER_KEY_FILE: secrets.masterKeyFile,
    GPUFLEET_LOG_LEVEL: 'info',
    GPUFLEET_LISTEN: `127.0.0.1:${port}`,
  });
}

const migrationFiles = fs
  .readdirSync(path.join(ROOT, 'migrations'))
  .filter((f) => f.endsWith('.sql'))
  .sort();

const out = (r) =>
  `exit ${r.status}${r.signal ? ` (${r.signal})` : ''}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

// `serve` that must refuse to start: it must exit non-zero within 15 s.
async function serveMustRefuse(db, args = []) {
  const env = envFor(db, await freePort());
  const r = await runBinAsync(['serve', ...args], env, { timeout: 15_000 });
  assert.ok(r.signal === null, `serve did not exit by itself within 15 s (killed): ${out(r)}`);
  assert.notEqual(r.status, 0, `serve should have refused to start: ${out(r)}`);
  return r.stdout + r.stderr;
}

test('migrations/ is not empty', () => {
  assert.ok(migrationFiles.length >= 1);
});

test('migrate twice: the second run applies nothing; one row per file with its sha256', () => {
  const db = freshDb('twice');
  const env = envFor(db);
  const first = runBin(['migrate'], env);
  assert.equal(first.status, 0, out(first));
  const second = runBin(['migrate'], env);
  assert.equal(second.status, 0, out(second));
  assert.match(
    second.stdout + second.stderr,
    /nothing|no (new |pending )?migrations?|up[ -]to[ -]date|already|\b0 (migrations? )?applied/i,
    `second run should say nothing was applied: ${out(second)}`,
  );
  const rows = psql(db.url, 'SELECT name, sha256 FROM schema_migrations ORDER BY name')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('|'));
  assert.deepEqual(
    rows.map(([n]) => path.basename(n)),
    migrationFiles,
  );
  for (const [name, sha] of rows) {
    assert.match(sha, /^[0-9a-f]{64}$/, `${name}: sha256 ${sha}`);
    const want = crypto
      .createHash('sha256')
      .update(fs.readFileSync(path.join(ROOT, 'migrations', path.basename(name))))
      .digest('hex');
    assert.equal(sha, want, `${name}: recorded sha256 is not the file's`);
  }
});

test('a tampered checksum: migrate and serve refuse, naming the file', async () => {
  const db = freshDb('tamper');
  const env = envFor(db);
  assert.equal(runBin(['migrate'], env).status, 0);
  const name = psql(db.url, 'SELECT min(name) FROM schema_migrations');
  psql(
    db.url,
    "UPDATE schema_migrations SET sha256 = repeat('0',64) WHERE name = (SELECT min(name) FROM schema_migrations)",
  );
  const r = runBin(['migrate'], env);
  assert.notEqual(r.status, 0, `migrate should refuse: ${out(r)}`);
  assert.match(r.stdout + r.stderr, /checksum/i, out(r));
  assert.ok((r.stdout + r.stderr).includes(path.basename(name)), `message should name ${name}: ${out(r)}`);
  const s = await serveMustRefuse(db);
  assert.match(s, /checksum/i, s);
});

test('an unmigrated database: serve refuses and says to migrate; serve --migrate starts', async () => {
  const db = freshDb('unmigrated');
  const s = await serveMustRefuse(db);
  assert.match(s, /migrate/i, s);

  const srv = await startServer({
    name: 'migrations-serve-migrate',
    database: db,
    migrate: false,
    args: ['--migrate'],
  });
  try {
    const res = await api(srv).request('GET', '/readyz');
    const b = expectStatus(res, 200);
    assert.equal(b.migrations_applied, migrationFiles.length);
  } finally {
    await srv.stop({ dropDatabase: false });
  }
});

test('a database with a newer, unknown migration: serve refuses, saying newer', async () => {
  const db = freshDb('newer');
  assert.equal(runBin(['migrate'], envFor(db)).status, 0);
  // Copy an existing row so that any other NOT NULL columns get values.
  const cols = psql(
    db.url,
    "SELECT string_agg(quote_ident(column_name), ',') FROM information_schema.columns " +
      "WHERE table_name = 'schema_migrations' AND column_name NOT IN ('name','sha256') AND is_identity = 'NO' AND column_default IS NULL",
  );
  const extra = cols ? `, ${cols}` : '';
  psql(
    db.url,
    `INSERT INTO schema_migrations (name, sha256${extra}) SELECT '9999_future.sql', repeat('0',64)${extra} FROM schema_migrations ORDER BY name LIMIT 1`,
  );
  const s = await serveMustRefuse(db);
  assert.match(s, /newer/i, s);
});

test('two concurrent migrate runs on a fresh database both succeed and apply each file once', async () => {
  const db = freshDb('concurrent');
  const env = envFor(db);
  const [a, b] = await Promise.all([runBinAsync(['migrate'], env), runBinAsync(['migrate'], env)]);
  assert.equal(a.status, 0, out(a));
  assert.equal(b.status, 0, out(b));
  const n = psql(db.url, 'SELECT count(*), count(DISTINCT name) FROM schema_migrations');
  assert.equal(n, `${migrationFiles.length}|${migrationFiles.length}`);
  const again = runBin(['migrate'], env);
  assert.equal(again.status, 0, out(again));
});
