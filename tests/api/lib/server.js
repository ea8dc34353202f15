'use strict';
// Test harness: real PostgreSQL databases and real gpufleetd processes.
//
//   const { startServer } = require('./lib/server');
//   const srv = await startServer({ name: 'foundation' });
//   ... srv.url, srv.token('admin') ...
//   await srv.stop();
//
// Every server gets its own database (created in the cluster named by
// GPUFLEET_TEST_DATABASE_URL), its own secrets in a private temp directory,
// its own free port, and a log file under test-artifacts/logs/ that the
// suite later greps for leaked secrets.

const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { signJwt } = require('./jwt');

const ROOT = path.resolve(__dirname, '..', '..', '..');
const BIN = path.resolve(ROOT, process.env.GPUFLEET_BIN || 'bin/gpufleetd');
const ARTIFACTS = path.join(ROOT, 'test-artifacts');
const LOG_DIR = path.join(ARTIFACTS, 'logs');

function baseDatabaseUrl() {
  const url = process.env.GPUFLEET_TEST_DATABASE_URL;
  if (!url) {
    throw new Error(
      'GPUFLEET_TEST_DATABASE_URL is not set; run the suite with tests/api/run ' +
        '(it starts scripts/local-pg and sets it)',
    );
  }
  return url;
}

// postgresql://user@/olddb?host=... -> postgresql://user@/<name>?host=...
function databaseUrl(base, name) {
  const m = /^(postgres(?:ql)?:\/\/[^/?#]*)(\/[^?#]*)?(.*)$/.exec(base);
  if (!m) throw new Error(`cannot parse database URL ${base}`);
  return `${m[1]}/${encodeURIComponent(name)}${m[3]}`;
}

// psql(url, sql): what `psql -X -q -At -v ON_ERROR_STOP=1 -d url -c sql` prints on stdout,
// trimmed (every result set's rows, fields joined by '|', NULL empty); throws with psql's
// stderr when psql would fail (allowFail: returns stdout anyway). Synchronous. Not a psql
// process a call (the suites make ~2,200 calls, each a process and a new PostgreSQL backend):
// build/pgpipe (tests/lib/pgpipe.c), one per test process, started on the first call, runs
// the SQL as psql -c does over a connection it keeps per URL, and resets the session after
// each call; we write a request on one FIFO and read the reply on another, both blocking.
// SQL about a database (DROP/ALTER/CREATE DATABASE: they fail while another session is
// connected to it) first closes the other kept connections.
const PGPIPE = path.join(ROOT, 'build', 'pgpipe');
const PSQL_TIMEOUT_MS = 60_000;
let pgpipe = null; // {pid, req, res}

function readFull(fd, n) {
  const buf = Buffer.alloc(n);
  for (let off = 0; off < n;) {
    const r = fs.readSync(fd, buf, off, n - off, null);
    if (r === 0) throw new Error(`${PGPIPE} exited (pid ${pgpipe && pgpipe.pid})`);
    off += r;
  }
  return buf;
}

function writeFull(fd, buf) {
  for (let off = 0; off < buf.length;) off += fs.writeSync(fd, buf, off, buf.length - off, null);
}

// Two FIFOs, opened so that the child holds the only other end of each: its end of death
// reads as EOF here (and a write to it fails), ours as EOF there. Opening a FIFO O_RDWR never
// blocks; with that end open, the one-way opens do not either.
function startPgpipe() {
  if (!fs.existsSync(PGPIPE)) {
    throw new Error(`${PGPIPE} not found; build it with \`make build/pgpipe\` (tests/*/run do)`);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gft-pgpipe-'));
  const reqPath = path.join(dir, 'req');
  const resPath = path.join(dir, 'res');
  const mk = spawnSync('mkfifo', ['-m', '600', reqPath, resPath], { encoding: 'utf8' });
  if (mk.status !== 0) throw new Error(`mkfifo failed: ${mk.stderr}`);
  const { O_RDWR, O_RDONLY, O_WRONLY } = fs.constants;
  const both = [fs.openSync(reqPath, O_RDWR), fs.openSync(resPath, O_RDWR)];
  const childIn = fs.openSync(reqPath, O_RDONLY);
  const req = fs.openSync(reqPath, O_WRONLY);
  const res = fs.openSync(resPath, O_RDONLY);
  const childOut = fs.openSync(resPath, O_WRONLY);
  both.forEach((fd) => fs.closeSync(fd));
  fs.rmSync(dir, { recursive: true, force: true });
  let child;
  try {
    child = spawn(PGPIPE, [], { stdio: [childIn, childOut, 'ignore'] });
  } finally {
    fs.closeSync(childIn);
    fs.closeSync(childOut);
  }
  child.on('error', () => {}); // a failed start reads as EOF on res
  child.unref();
  const self = { pid: child.pid, req, res, closed: false };
  pgpipe = self;
  // At exit: EOF to pgpipe, which closes its connections and answers with its CPU time, counted
  // with this test file's (tests/lib/times-at-exit.js counts only children waited for).
  process.on('exit', () => {
    if (self.closed) return;
    try {
      fs.closeSync(req);
      let text = '';
      const b = Buffer.alloc(64);
      for (let n; (n = fs.readSync(res, b, 0, b.length, null)) > 0;) text += b.toString('latin1', 0, n);
      const m = /^cpu (\d+)$/m.exec(text);
      const times = process.env.GPUFLEET_TEST_TIMES_FILE;
      if (m && times && process.argv[1]) {
        const file = path.relative(process.cwd(), process.argv[1]);
        fs.appendFileSync(times, `0\t${(Number(m[1]) / 1e6).toFixed(2)}\t${file}\n`);
      }
    } catch {
      // pgpipe already gone: nothing to count
    }
  });
  return pgpipe;
}

// One call: {status (psql's: 0, 1, 2; null when it ran past the timeout, as spawnSync's when it
// killed psql), stdout, stderr}. verbose: errors as `psql -v VERBOSITY=verbose` prints them.
function pgpipeCall(url, sql, timeout = PSQL_TIMEOUT_MS, verbose = false) {
  const p = pgpipe || startPgpipe();
  const u = Buffer.from(url, 'utf8');
  const q = Buffer.from(sql, 'utf8');
  const h = Buffer.alloc(14);
  h[0] = 0x51; // 'Q'
  h[1] = (/\bDATABASE\b/i.test(sql) ? 1 : 0) | (verbose ? 2 : 0);
  h.writeUInt32LE(timeout, 2);
  h.writeUInt32LE(u.length, 6);
  h.writeUInt32LE(q.length, 10);
  try {
    writeFull(p.req, Buffer.concat([h, u, q]));
    const r = readFull(p.res, 12);
    const out = readFull(p.res, r.readUInt32LE(4)).toString('utf8');
    const err = readFull(p.res, r.readUInt32LE(8)).toString('utf8');
    const status = r.readInt32LE(0);
    return { status: status < 0 ? null : status, stdout: out, stderr: err };
  } catch (e) {
    // the next call starts another
    pgpipe = null;
    p.closed = true;
    fs.closeSync(p.req);
    fs.closeSync(p.res);
    throw e;
  }
}

// timeout: ms for connecting and the whole SQL (psql was killed after 60 s).
function psql(url, sql, { allowFail = false, timeout = PSQL_TIMEOUT_MS } = {}) {
  const r = pgpipeCall(url, sql, timeout);
  if (r.status !== 0 && !allowFail) {
    throw new Error(`psql failed (${r.status}): ${sql}\n${r.stderr}`);
  }
  return r.stdout.trim();
}

// psqlHolding(url, sql, held): runs sql in a psql of its own, in the background (a
// transaction that holds a lock for a while, say), and waits until held() (polled every
// 20 ms, at most 2 s) says it holds what it should. {done: a promise of psql's exit code,
// stop(): kills it}.
async function psqlHolding(url, sql, held) {
  const child = spawn('psql', ['-X', '-q', '-d', url, '-c', sql]);
  const done = new Promise((resolve) => child.on('exit', resolve));
  for (let i = 0; i < 100 && !held(); i++) await new Promise((r) => setTimeout(r, 20));
  return { done, stop: () => child.kill() };
}

// psqlResult(url, sql): psql() that does not throw, for tests that check a refused statement's
// error: {ok (status 0), out (stdout, trimmed), err (stderr; "psql timed out" added past the
// timeout), status (0, 1, 2; null: past the timeout)}. verbose: as `psql -v VERBOSITY=verbose`
// (the SQLSTATE in every error, then its LOCATION line). The SQL is one query, as psql -c sends
// it: several statements in it are one transaction, not one each as psql reading them on stdin
// would run them.
function psqlResult(url, sql, { verbose = false, timeout = PSQL_TIMEOUT_MS } = {}) {
  const r = pgpipeCall(url, sql, timeout, verbose);
  return {
    ok: r.status === 0,
    out: r.stdout.trim(),
    err: r.stderr + (r.status === null ? 'psql timed out' : ''),
    status: r.status,
  };
}

function uniqueName(prefix) {
  const clean = String(prefix)
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 24);
  return `gft_${clean}_${process.pid}_${crypto.randomBytes(3).toString('hex')}`;
}

// postgresql://user@/db?... -> postgresql://<user>@/db?...
function withUser(url, user) {
  const m = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?(.*)$/.exec(url);
  if (!m) throw new Error(`cannot parse database URL ${url}`);
  return `${m[1]}${encodeURIComponent(user)}@${m[3]}`;
}

// The application's role of the least-privilege setup (docs/operations.md): serve logs in
// as it, migrations run as the cluster's user (the owner). Made once per cluster; two test
// files may race to make it.
const APP_ROLE = 'gpufleet_app';
let appRoleReady = false;
function ensureAppRole(base) {
  if (appRoleReady) return;
  psql(
    base,
    `DO $$ BEGIN CREATE ROLE ${APP_ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE; ` +
      'EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$',
  );
  appRoleReady = true;
}

// A fresh, empty database in the test cluster (template: a copy of the migrated template
// instead). Returns {name, url, appUrl, drop()}: url is
// the owner's (migrations, and the tests' own fixture SQL), appUrl the application role's
// (what serve runs as).
function createDatabase(prefix, { base = baseDatabaseUrl(), template } = {}) {
  const name = uniqueName(prefix);
  ensureAppRole(base);
  if (template) createFromTemplate(base, name);
  else psql(base, `CREATE DATABASE "${name}"`);
  return {
    name,
    url: databaseUrl(base, name),
    appUrl: withUser(databaseUrl(base, name), APP_ROLE),
    drop() {
      psql(base, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`, { allowFail: true });
    },
  };
}

// A migrated database to copy. Running `gpufleetd migrate` on every server's fresh database
// cost about a second each (the sanitized binary, every migration), so the servers that
// want the current schema get a copy (CREATE DATABASE … TEMPLATE) of one database that
// `gpufleetd migrate` made once per cluster and set of migrations: its name carries a hash
// of migrations/*.sql and of the binary, so a changed migration or a new build makes a new
// one (and drops the older ones). Test files race to make it:
// each migrates its own, renames it into place, and the loser drops its copy. Tests that
// are about migrating (migrate: false, or a database of their own) still run migrate.
function migrationsHash() {
  const dir = path.join(ROOT, 'migrations');
  const h = crypto.createHash('sha256');
  // the binary that migrates too: one built before a new migration file applies the old set
  const bin = fs.statSync(BIN);
  h.update(`${BIN}\0${bin.size}\0${bin.mtimeMs}\0${bin.ino}\0`);
  for (const f of fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.sql'))
    .sort()) {
    h.update(f)
      .update('\0')
      .update(fs.readFileSync(path.join(dir, f)))
      .update('\0');
  }
  return h.digest('hex').slice(0, 16);
}

let templateName = null;
function migratedTemplate(base) {
  if (templateName) return templateName;
  const name = `gft_template_${migrationsHash()}`;
  const exists = psql(base, `SELECT 1 FROM pg_database WHERE datname = '${name}'`);
  if (exists !== '1') {
    const tmp = uniqueName('template');
    ensureAppRole(base);
    psql(base, `CREATE DATABASE "${tmp}"`);
    const r = runBin(
      ['migrate'],
      cleanEnv({
        // as startServer runs it: the owner migrates and grants the application's role
        GPUFLEET_DATABASE_URL: withUser(databaseUrl(base, tmp), APP_ROLE),
        GPUFLEET_MIGRATE_DATABASE_URL: databaseUrl(base, tmp),
      }),
    );
    if (r.status !== 0) {
      psql(base, `DROP DATABASE IF EXISTS "${tmp}" WITH (FORCE)`, { allowFail: true });
      throw new Error(`gpufleetd migrate (template) failed (${r.status}):\n${r.stdout}${r.stderr}`);
    }
    const renamed = pgpipeCall(base, `ALTER DATABASE "${tmp}" RENAME TO "${name}"`);
    if (renamed.status !== 0) {
      psql(base, `DROP DATABASE IF EXISTS "${tmp}" WITH (FORCE)`, { allowFail: true });
      if (psql(base, `SELECT 1 FROM pg_database WHERE datname = '${name}'`) !== '1') {
        throw new Error(`cannot make the template database ${name}: ${renamed.stderr}`);
      }
    }
  }
  // the templates of earlier builds go (one in use by a copy just now stays: no FORCE); only
  // finished templates (the hash form): another file's copy still migrating
  // (gft_template_<pid>_<random>) is not one, and dropping it failed that file's migrate
  for (const old of psql(
    base,
    `SELECT datname FROM pg_database WHERE datname ~ '^gft_template_[0-9a-f]{16}$' AND datname <> '${name}'`,
  )
    .split('\n')
    .filter(Boolean)) {
    psql(base, `DROP DATABASE IF EXISTS "${old}"`, { allowFail: true });
  }
  templateName = name;
  return name;
}

// STRATEGY FILE_COPY: PostgreSQL 15's default (WAL_LOG) writes every page of the 11 MB
// template to the WAL, ~150 ms of the server's CPU a copy; FILE_COPY copies the files
// (after a checkpoint, cheap with the test cluster's fsync off), ~65 ms; measured over 10
// copies each, alternated. The API suite alone makes about 90 copies a run.
// CREATE DATABASE … TEMPLATE fails while another session is connected to the template;
// two files copying it at the same moment wait for each other, so try a few times.
// A template dropped meanwhile (a build's test files next to another build's) is made again.
function createFromTemplate(base, name) {
  for (let i = 0; ; i++) {
    const template = migratedTemplate(base);
    const r = pgpipeCall(base, `CREATE DATABASE "${name}" TEMPLATE "${template}" STRATEGY FILE_COPY`);
    if (r.status === 0) return;
    const gone = /does not exist/.test(r.stderr);
    if (gone) templateName = null;
    if (i >= 20 || !(gone || /being accessed by other users/.test(r.stderr))) {
      throw new Error(`psql failed (${r.status}): CREATE DATABASE ${name} TEMPLATE ${template}\n${r.stderr}`);
    }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100 + 50 * i);
  }
}

function ensureLogDir() {
  fs.mkdirSync(LOG_DIR, { recursive: true });
}

// Run the binary synchronously. Returns {status, signal, stdout, stderr}.
function runBin(args, env, { timeout = 60_000, input } = {}) {
  const r = spawnSync(BIN, args, { env, encoding: 'utf8', timeout, input });
  if (r.error && r.error.code === 'ENOENT') {
    throw new Error(`${BIN} not found; build it with \`make\` (or set GPUFLEET_BIN)`);
  }
  return { status: r.status, signal: r.signal, stdout: r.stdout || '', stderr: r.stderr || '', error: r.error };
}

// Same, but asynchronous (for concurrent runs).
function runBinAsync(args, env, { timeout = 60_000 } = {}) {
  return new Promise((resolve) => {
    const child = spawn(BIN, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeout);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ status: null, signal: null, stdout, stderr, error });
    });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
  });
}

// Environment for gpufleetd: the caller's environment without any
// GPUFLEET_* variable (so a developer's settings never leak into a test),
// plus `extra`.
function cleanEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('GPUFLEET_')) env[k] = v;
  }
  return { ...env, ...extra };
}

// A secret file as `gpufleetd keygen` writes it (common/secret.c): 48 random bytes in
// base64url and a newline, mode 0600, never over an existing file. Written here rather
// than by spawning the (sanitized) binary twice per server; tests/unit/test_util.c and
// metrics_access.test.js test keygen itself.
function writeKey(file) {
  const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600);
  try {
    fs.writeSync(fd, `${crypto.randomBytes(48).toString('base64url')}\n`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

// A private 0700 directory with a JWT secret and a master key. Returns {dir, jwtSecretFile,
// masterKeyFile}.
function makeSecrets(prefix = 'gft') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
  fs.chmodSync(dir, 0o700);
  const jwtSecretFile = path.join(dir, 'jwt.secret');
  const masterKeyFile = path.join(dir, 'master.key');
  for (const f of [jwtSecretFile, masterKeyFile]) writeKey(f);
  return { dir, jwtSecretFile, masterKeyFile };
}

// The HMAC key bytes of a secret file: the whole file, one trailing newline
// stripped.
function readSecret(file) {
  let buf = fs.readFileSync(file);
  if (buf.length && buf[buf.length - 1] === 0x0a) buf = buf.subarray(0, buf.length - 1);
  if (buf.length && buf[buf.length - 1] === 0x0d) buf = buf.subarray(0, buf.length - 1);
  return buf;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function tail(file, n = 40) {
  try {
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    return lines.slice(-n).join('\n');
  } catch {
    return '(no log)';
  }
}

// Wait until the child exits or `ms` pass. Resolves {code, signal} or null.
function waitExit(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.removeListener('exit', onExit);
      resolve(null);
    }, ms);
    function onExit(code, signal) {
      clearTimeout(timer);
      resolve({ code, signal });
    }
    child.once('exit', onExit);
  });
}

/**
 * Start gpufleetd.
 *
 * options:
 *   name        log file name (test-artifacts/logs/<name>.log); default 'server'
 *   env         extra environment (overrides the defaults below; a value of
 *               undefined removes the variable)
 *   args        extra arguments after `serve`
 *   database    {name, url, drop} from createDatabase(); default: a new one
 *   databaseUrl use this URL instead (the database is not dropped)
 *   tokenDatabaseUrl  the URL `gpufleetd token` records minted tokens' jti through
 *               (default: the server's); a test that puts a proxy in this process
 *               between the server and PostgreSQL passes the direct one, since
 *               token() runs its child synchronously and would block the proxy
 *   migrate     run `gpufleetd migrate` first (default true; a database the harness makes
 *               itself is then a copy of the migrated template, see migratedTemplate)
 *   cliTokens   token() always runs `gpufleetd token` (which records each jti), for the
 *               tests about tokens themselves
 *   secrets     from makeSecrets(); default: new ones
 *   readyTimeoutMs  default 15000
 *
 * Returns {url, port, env, logPath, process, database, secrets,
 *          token(role, {sub, ttl, project, args}), jwtSecret(), alive(), stop()}.
 */
async function startServer(options = {}) {
  const name = options.name || 'server';
  ensureLogDir();
  // A database of our own with the current schema is a copy of the migrated template.
  const copy = !options.databaseUrl && !options.database && options.migrate !== false;
  const database = options.databaseUrl
    ? null
    : options.database || createDatabase(name, copy ? { template: true } : {});
  const dbUrl = options.databaseUrl || database.url;
  // two roles: serve runs as the application's role, migrate as the owner
  const appUrl = options.databaseUrl || !database.appUrl ? dbUrl : database.appUrl;
  const secrets = options.secrets || makeSecrets(`gft-${name}`);

  const port = await freePort();
  const env = cleanEnv({
    GPUFLEET_LISTEN: `127.0.0.1:${port}`,
    GPUFLEET_DATABASE_URL: appUrl,
    GPUFLEET_MIGRATE_DATABASE_URL: appUrl === dbUrl ? undefined : dbUrl,
    GPUFLEET_JWT_SECRET_FILE: secrets.jwtSecretFile,
    GPUFLEET_MASTER_KEY_FILE: secrets.masterKeyFile,
    GPUFLEET_LOG_LEVEL: 'info',
    // The health monitor samples every watched host in the background; suites that are
    // not about it turn it off (options.env may turn it on).
    GPUFLEET_MONITOR: '0',
    // Rate limits stay on (their code runs under every test) with limits this suite, which
    // sends many requests quickly from 127.0.0.1 and many bad tokens on purpose, never
    // reaches; ratelimit.test.js sets its own. Likewise the connection cap per address,
    // and /metrics rendered on every scrape (tests change state, then scrape).
    GPUFLEET_RATE_LIMIT_PRINCIPAL_RPS: '1000000',
    GPUFLEET_RATE_LIMIT_PRINCIPAL_BURST: '1000000',
    GPUFLEET_RATE_LIMIT_REPORTER_RPS: '1000000',
    GPUFLEET_RATE_LIMIT_REPORTER_BURST: '1000000',
    GPUFLEET_RATE_LIMIT_ADDRESS_RPS: '1000000',
    GPUFLEET_RATE_LIMIT_ADDRESS_BURST: '1000000',
    GPUFLEET_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: '1000000',
    GPUFLEET_RATE_LIMIT_AUTH_FAILURE_BURST: '1000000',
    GPUFLEET_MAX_CONNECTIONS_PER_IP: '2048',
    GPUFLEET_METRICS_CACHE_SECONDS: '0',
  });
  for (const [k, v] of Object.entries(options.env || {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  if (env.GPUFLEET_MIGRATE_DATABASE_URL === undefined) delete env.GPUFLEET_MIGRATE_DATABASE_URL;

  const logPath = path.join(LOG_DIR, `${name}.log`);
  const logFd = fs.openSync(logPath, 'a');
  fs.writeSync(logFd, `\n=== ${new Date().toISOString()} start ${name} on ${env.GPUFLEET_LISTEN} ===\n`);

  if (options.migrate !== false && !copy) {
    const r = runBin(['migrate'], env);
    fs.writeSync(logFd, r.stdout + r.stderr);
    if (r.status !== 0) {
      fs.closeSync(logFd);
      throw new Error(`gpufleetd migrate failed (${r.status}):\n${r.stdout}${r.stderr}`);
    }
  }

  const child = spawn(BIN, ['serve', ...(options.args || [])], {
    env,
    stdio: ['ignore', logFd, logFd],
  });
  fs.closeSync(logFd);
  let spawnError = null;
  child.on('error', (e) => (spawnError = e));

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (options.readyTimeoutMs || 15_000);
  let ready = false;
  while (Date.now() < deadline) {
    if (spawnError) throw new Error(`cannot start ${BIN}: ${spawnError.message}`);
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `gpufleetd serve exited early (code ${child.exitCode}, signal ${child.signalCode}); log ${logPath}:\n${tail(logPath)}`,
      );
    }
    try {
      // Connection: close: no idle socket left in the pool (see api() in openapi.js)
      const res = await fetch(`${url}/healthz`, {
        headers: { Connection: 'close' },
        signal: AbortSignal.timeout(1000),
      });
      await res.arrayBuffer();
      if (res.status === 200) {
        ready = true;
        break;
      }
    } catch {
      /* not listening yet */
    }
    await sleep(100);
  }
  if (!ready) {
    child.kill('SIGKILL');
    throw new Error(`gpufleetd did not answer /healthz 200 within the timeout; log ${logPath}:\n${tail(logPath)}`);
  }

  const tokens = new Set();
  let stopped = false;

  const server = {
    url,
    port,
    env,
    logPath,
    process: child,
    database,
    secrets,
    /** Tokens handed out by token(); the secret-grep test checks the log for them. */
    tokens,
    /** A token as `gpufleetd token` mints it (same configuration as the server): minted
     *  here when nothing needs the binary (see mintLikeCli), else by the binary. */
    token(role, { sub = `test-${role}`, ttl = '15m', project, args = [] } = {}) {
      const here = options.cliTokens ? null : mintLikeCli(env, { role, sub, ttl, project, args });
      if (here) {
        tokens.add(here);
        return here;
      }
      const p = project ? ['--project', project] : [];
      const tenv = options.tokenDatabaseUrl ? { ...env, GPUFLEET_DATABASE_URL: options.tokenDatabaseUrl } : env;
      const r = runBin(['token', '--sub', sub, '--role', role, '--ttl', ttl, ...p, ...args], tenv);
      if (r.status !== 0) throw new Error(`gpufleetd token failed (${r.status}): ${r.stderr}`);
      const t = r.stdout.trim();
      tokens.add(t);
      return t;
    },
    /** The HMAC key bytes the server uses. */
    jwtSecret() {
      return readSecret(env.GPUFLEET_JWT_SECRET_FILE);
    },
    alive() {
      return child.exitCode === null && child.signalCode === null;
    },
    async stop({ dropDatabase = true } = {}) {
      if (stopped) return;
      stopped = true;
      if (server.alive()) {
        child.kill('SIGTERM');
        if (!(await waitExit(child, 10_000))) {
          child.kill('SIGKILL');
          await waitExit(child, 5_000);
        }
      }
      if (dropDatabase && database) database.drop();
    },
  };
  return server;
}

// `gpufleetd token`'s claims (cmd/token.c), signed with the server's HS256 secret, for the
// common case: no reporter scope (--pool/--host name lookups), no ES256 key, a lifetime
// under the default caps. Spawning the sanitized binary cost about 0.2 s a token. The jti
// is not recorded in the tokens table (the server does not look it up: revocations are a
// list of revoked jtis); tokens.test.js, which reads that table, sets cliTokens. Returns
// null when the binary must mint it.
const TTL_UNIT = { s: 1, m: 60, h: 3600, d: 86400 };
function mintLikeCli(env, { role, sub, ttl, project, args }) {
  if (args.length || !env.GPUFLEET_JWT_SECRET_FILE || env.GPUFLEET_JWT_PRIVATE_KEY_FILE) return null;
  if (env.GPUFLEET_TOKEN_MAX_TTL_SECONDS || env.GPUFLEET_TOKEN_REPORTER_MAX_TTL_SECONDS) return null;
  if (!['viewer', 'operator', 'admin', 'reporter'].includes(role)) return null;
  if (!/^[\x21-\x7e]{1,128}$/.test(sub)) return null;
  if (project !== undefined && !/^[a-z0-9][a-z0-9._-]{0,62}$/.test(project)) return null;
  const m = /^([1-9][0-9]{0,6})([smhd])$/.exec(String(ttl));
  if (!m) return null;
  const life = Number(m[1]) * TTL_UNIT[m[2]];
  if (life > (role === 'reporter' ? 90 * 86400 : 86400)) return null;
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    aud: env.GPUFLEET_JWT_AUDIENCE || 'gpufleet',
    exp: now + life,
    iat: now,
    iss: env.GPUFLEET_JWT_ISSUER || 'gpufleet',
    jti: crypto.randomUUID(),
    nbf: now,
    ...(project ? { project } : {}),
    role,
    sub,
  };
  return signJwt({ claims, key: readSecret(env.GPUFLEET_JWT_SECRET_FILE) });
}

/**
 * Runs fixture SQL that sets host states, gates or holds directly, with the state
 * machine's guard trigger (migrations/0012) switched off for that one transaction
 * (ALTER TABLE is transactional and locks the table, so no other session runs unguarded).
 * Only for tests that record what a worker would have done; everything else goes through
 * host_transition() or the API.
 */
function psqlUnguarded(url, sql) {
  return psql(
    url,
    // deferred triggers (host health, migrations/0017) fire before the ALTER, not after it
    `BEGIN; SET CONSTRAINTS ALL IMMEDIATE; ALTER TABLE hosts DISABLE TRIGGER hosts_guard_transition; ${sql}; ` +
      'ALTER TABLE hosts ENABLE TRIGGER hosts_guard_transition; COMMIT;',
  );
}

module.exports = {
  ROOT,
  psqlUnguarded,
  BIN,
  ARTIFACTS,
  LOG_DIR,
  baseDatabaseUrl,
  databaseUrl,
  withUser,
  APP_ROLE,
  psql,
  psqlHolding,
  psqlResult,
  createDatabase,
  runBin,
  runBinAsync,
  cleanEnv,
  makeSecrets,
  readSecret,
  freePort,
  sleep,
  tail,
  waitExit,
  startServer,
  ...require('./jwt'),
};
