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

// psql -At; returns stdout (trimmed). Throws with stderr on failure.
function psql(url, sql, { allowFail = false } = {}) {
  const r = spawnSync('psql', ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', sql], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (r.status !== 0 && !allowFail) {
    throw new Error(`psql failed (${r.status}): ${sql}\n${r.stderr}`);
  }
  return (r.stdout || '').trim();
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

// A fresh, empty database in the test cluster. Returns {name, url, appUrl, drop()}: url is
// the owner's (migrations, and the tests' own fixture SQL), appUrl the application role's
// (what serve runs as).
function createDatabase(prefix, { base = baseDatabaseUrl() } = {}) {
  const name = uniqueName(prefix);
  ensureAppRole(base);
  psql(base, `CREATE DATABASE "${name}"`);
  return {
    name,
    url: databaseUrl(base, name),
    appUrl: withUser(databaseUrl(base, name), APP_ROLE),
    drop() {
      psql(base, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`, { allowFail: true });
    },
  };
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

// A private 0700 directory with a JWT secret and a master key, both made by
// `gpufleetd keygen`. Returns {dir, jwtSecretFile, masterKeyFile}.
function makeSecrets(prefix = 'gft') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
  fs.chmodSync(dir, 0o700);
  const jwtSecretFile = path.join(dir, 'jwt.secret');
  const masterKeyFile = path.join(dir, 'master.key');
  for (const f of [jwtSecretFile, masterKeyFile]) {
    const r = runBin(['keygen', f], cleanEnv({}));
    if (r.status !== 0) throw new Error(`gpufleetd keygen ${f} failed (${r.status}): ${r.stderr}`);
    const mode = fs.statSync(f).mode & 0o777;
    if (mode !== 0o600) throw new Error(`gpufleetd keygen wrote ${f} with mode ${mode.toString(8)}, want 600`);
  }
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
 *   migrate     run `gpufleetd migrate` first (default true)
 *   secrets     from makeSecrets(); default: new ones
 *   readyTimeoutMs  default 15000
 *
 * Returns {url, port, env, logPath, process, database, secrets,
 *          token(role, {sub, ttl, project, args}), jwtSecret(), alive(), stop()}.
 */
async function startServer(options = {}) {
  const name = options.name || 'server';
  ensureLogDir();
  const database = options.databaseUrl ? null : options.database || createDatabase(name);
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

  if (options.migrate !== false) {
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
    /** Mint a token with `gpufleetd token` (same configuration as the server). */
    token(role, { sub = `test-${role}`, ttl = '15m', project, args = [] } = {}) {
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
