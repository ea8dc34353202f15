'use strict';
// Bearer JWT authentication and role checks, including the classic attacks
// on libjwt 1.10 (alg:none, HS/ES confusion, tampering). Tokens are minted by
// `gpufleetd token` (what operators use) and crafted by hand (lib/jwt.js).
// Finally, the server logs must not contain any token used here.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const {
  startServer,
  makeSecrets,
  signJwt,
  decodeJwt,
  tamperJwt,
  nowSec,
  generateEcKeyPair,
  readSecret,
} = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

let hs; // HS256 server
let es; // ES256 server
let hsClient;
let esClient;
let esDir;
let baseClaims; // claims of a server-minted viewer token
const usedTokens = new Set();

function remember(t) {
  usedTokens.add(t);
  return t;
}

// HS256 token with the server's secret and the minted claims, overridden.
function hsToken(overrides = {}, { key, alg = 'HS256', header } = {}) {
  const claims = { ...baseClaims, iat: nowSec(), exp: nowSec() + 600, ...overrides };
  for (const [k, v] of Object.entries(claims)) if (v === undefined) delete claims[k];
  return remember(signJwt({ claims, alg, key: key === undefined ? hs.jwtSecret() : key, header }));
}

const GPU_MODELS = '/v1/gpu-models?limit=1';

before(async () => {
  hs = await startServer({ name: 'auth-hs256' });
  hsClient = api(hs);
  const minted = remember(hs.token('viewer', { sub: 'auth-viewer' }));
  baseClaims = decodeJwt(minted).claims;
});

after(async () => {
  if (hs) await hs.stop();
  if (es) await es.stop();
  if (esDir) fs.rmSync(esDir, { recursive: true, force: true });
});

describe('HS256', () => {
  test('a minted token carries sub, role, exp, iss and aud', () => {
    for (const c of ['sub', 'role', 'exp', 'iss', 'aud']) {
      assert.ok(baseClaims[c] !== undefined, `minted token lacks ${c}: ${JSON.stringify(baseClaims)}`);
    }
    assert.equal(baseClaims.role, 'viewer');
    assert.equal(baseClaims.sub, 'auth-viewer');
    const header = decodeJwt([...usedTokens][0]).header;
    assert.equal(header.alg, 'HS256');
  });

  test('a minted token is accepted', async () => {
    expectStatus(await hsClient.request('GET', GPU_MODELS, { token: [...usedTokens][0] }), 200);
  });

  test('a hand-signed token with the right secret is accepted (harness sanity)', async () => {
    expectStatus(await hsClient.request('GET', GPU_MODELS, { token: hsToken() }), 200);
  });

  test('no token answers 401 missing_token with a Bearer challenge', async () => {
    const res = await hsClient.request('GET', GPU_MODELS);
    expectProblem(res, 401, 'missing_token');
    assert.match(res.headers.get('www-authenticate'), /^Bearer\b/);
  });

  test('a non-Bearer Authorization answers 401', async () => {
    const res = await hsClient.request('GET', GPU_MODELS, { headers: { Authorization: 'Basic YWRtaW46YWRtaW4=' } });
    expectProblem(res, 401, ['missing_token', 'invalid_token']);
  });

  for (const [what, t] of [
    ['garbage', 'not-a-jwt'],
    ['two parts', 'abc.def'],
    ['empty parts', '..'],
    ['bad base64', '!!!.@@@.###'],
  ]) {
    test(`a ${what} token answers 401 invalid_token`, async () => {
      const res = await hsClient.request('GET', GPU_MODELS, { token: remember(t) });
      expectProblem(res, 401, 'invalid_token');
      assert.match(res.headers.get('www-authenticate'), /^Bearer\b/);
    });
  }

  test('alg:none answers 401', async () => {
    for (const alg of ['none', 'None', 'NONE']) {
      const t = hsToken({ role: 'admin' }, { alg: 'none', header: { alg } });
      expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
    }
  });

  test('alg:none with the original HMAC signature kept answers 401', async () => {
    const good = hsToken();
    const [, p, s] = good.split('.');
    const h = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    const t = remember(`${h}.${p}.${s}`);
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('a header claiming HS512/HS384 answers 401 (algorithm is pinned)', async () => {
    const t = hsToken({}, { header: { alg: 'HS512' } });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('HS256 signed with a wrong secret answers 401', async () => {
    const t = hsToken({}, { key: Buffer.from('not-the-secret-not-the-secret-32') });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('HS256 signed with the secret file contents including its newline (if any) is judged consistently', async () => {
    // The key is the file minus one trailing newline; a token signed with
    // the raw file bytes must be refused when they differ.
    const raw = fs.readFileSync(hs.env.GPUFLEET_JWT_SECRET_FILE);
    const key = readSecret(hs.env.GPUFLEET_JWT_SECRET_FILE);
    if (Buffer.compare(raw, key) === 0) return;
    const t = hsToken({}, { key: raw });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('exp 10 minutes in the past answers 401 token_expired', async () => {
    const t = hsToken({ exp: nowSec() - 600, iat: nowSec() - 1200 });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'token_expired');
  });

  test('exp 30 s in the past is accepted (60 s leeway)', async () => {
    const t = hsToken({ exp: nowSec() - 30, iat: nowSec() - 600 });
    expectStatus(await hsClient.request('GET', GPU_MODELS, { token: t }), 200);
  });

  test('exp 90 s in the past answers 401 token_expired', async () => {
    const t = hsToken({ exp: nowSec() - 90, iat: nowSec() - 600 });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'token_expired');
  });

  test('nbf 5 minutes in the future answers 401', async () => {
    const t = hsToken({ nbf: nowSec() + 300 });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('nbf in the past is accepted', async () => {
    const t = hsToken({ nbf: nowSec() - 300 });
    expectStatus(await hsClient.request('GET', GPU_MODELS, { token: t }), 200);
  });

  test('a wrong iss answers 401', async () => {
    const t = hsToken({ iss: 'https://evil.example' });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('a missing iss answers 401', async () => {
    const t = hsToken({ iss: undefined });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('a wrong aud answers 401', async () => {
    const t = hsToken({ aud: 'someone-else' });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
    const t2 = hsToken({ aud: ['someone-else'] });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t2 }), 401, 'invalid_token');
  });

  test('a missing aud answers 401', async () => {
    const t = hsToken({ aud: undefined });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('a missing exp answers 401', async () => {
    const t = hsToken({ exp: undefined });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('a non-numeric exp answers 401', async () => {
    const t = hsToken({ exp: 'tomorrow' });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('a missing sub answers 401', async () => {
    const t = hsToken({ sub: undefined });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('a tampered payload (role raised to admin, signature kept) answers 401', async () => {
    const viewerTok = remember(hs.token('viewer', { sub: 'tamper' }));
    const t = remember(tamperJwt(viewerTok, (c) => ({ ...c, role: 'admin' })));
    expectProblem(await hsClient.request('GET', '/v1/audit-events', { token: t }), 401, 'invalid_token');
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('a missing role answers 401', async () => {
    const t = hsToken({ role: undefined });
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('an unknown role answers 401', async () => {
    for (const role of ['superuser', 'Admin', '', 42]) {
      const t = hsToken({ role });
      expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
    }
  });

  test('two Authorization schemes / extra spaces do not confuse the parser', async () => {
    const t = hsToken();
    const res = await hsClient.request('GET', GPU_MODELS, { headers: { Authorization: `Bearer ${t} extra` } });
    expectProblem(res, 401, 'invalid_token');
  });
});

describe('roles', () => {
  const model = (key) => ({ key, display_name: `Role test ${key}`, memory_gib: 16, supported_formats: ['fp16'] });

  test('viewer may GET gpu-models but not POST (403 insufficient_role)', async () => {
    const t = remember(hs.token('viewer', { sub: 'role-viewer' }));
    expectStatus(await hsClient.request('GET', GPU_MODELS, { token: t }), 200);
    expectStatus(await hsClient.request('GET', '/v1/gpu-models/h100_sxm', { token: t }), 200);
    const res = await hsClient.request('POST', '/v1/gpu-models', { token: t, body: model('role_viewer_gpu') });
    expectProblem(res, 403, 'insufficient_role');
  });

  test('operator may not POST gpu-models (403)', async () => {
    const t = remember(hs.token('operator', { sub: 'role-operator' }));
    expectStatus(await hsClient.request('GET', GPU_MODELS, { token: t }), 200);
    const res = await hsClient.request('POST', '/v1/gpu-models', { token: t, body: model('role_operator_gpu') });
    expectProblem(res, 403, 'insufficient_role');
  });

  test('admin may POST gpu-models (201)', async () => {
    const t = remember(hs.token('admin', { sub: 'role-admin' }));
    const res = await hsClient.request('POST', '/v1/gpu-models', { token: t, body: model('role_admin_gpu') });
    expectStatus(res, 201);
  });

  test('viewer and operator may not read the audit trail (403); admin may', async () => {
    for (const role of ['viewer', 'operator', 'reporter']) {
      const t = remember(hs.token(role, { sub: `role-${role}` }));
      expectProblem(await hsClient.request('GET', '/v1/audit-events', { token: t }), 403, 'insufficient_role');
    }
    const a = remember(hs.token('admin', { sub: 'role-admin' }));
    expectStatus(await hsClient.request('GET', '/v1/audit-events', { token: a }), 200);
  });

  test('reporter may not read gpu-models (403)', async () => {
    const t = remember(hs.token('reporter', { sub: 'role-reporter' }));
    expectProblem(await hsClient.request('GET', GPU_MODELS, { token: t }), 403, 'insufficient_role');
    expectProblem(await hsClient.request('GET', '/v1/gpu-models/h100_sxm', { token: t }), 403, 'insufficient_role');
  });

  test('the role is checked before the body is parsed (403 even for a bad body)', async () => {
    const t = remember(hs.token('viewer', { sub: 'role-viewer' }));
    const res = await hsClient.request('POST', '/v1/gpu-models', {
      token: t,
      rawBody: '{bad',
      contentType: 'application/json',
    });
    expectProblem(res, 403, 'insufficient_role');
  });

  test('service endpoints need no token', async () => {
    for (const p of ['/healthz', '/readyz', '/metrics', '/openapi.yaml']) {
      expectStatus(await hsClient.request('GET', p), 200);
    }
  });
});

describe('ES256', () => {
  let priv;
  let pubPem;
  let esBase;

  before(async () => {
    esDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gft-es256-'));
    priv = path.join(esDir, 'priv.pem');
    const pub = path.join(esDir, 'pub.pem');
    execFileSync('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', priv], { stdio: 'pipe' });
    execFileSync('openssl', ['ec', '-in', priv, '-pubout', '-out', pub], { stdio: 'pipe' });
    fs.chmodSync(priv, 0o600);
    pubPem = fs.readFileSync(pub);
    const secrets = makeSecrets('gft-es256');
    es = await startServer({
      name: 'auth-es256',
      secrets,
      env: { GPUFLEET_JWT_SECRET_FILE: undefined, GPUFLEET_JWT_PUBLIC_KEY_FILE: pub },
    });
    esClient = api(es);
    const minted = remember(es.token('viewer', { sub: 'es-viewer', args: ['--private-key-file', priv] }));
    esBase = decodeJwt(minted).claims;
    assert.equal(decodeJwt(minted).header.alg, 'ES256');
  });

  const esClaims = (o = {}) => ({ ...esBase, iat: nowSec(), exp: nowSec() + 600, ...o });

  test('a token minted with --private-key-file is accepted', async () => {
    const t = remember(es.token('viewer', { sub: 'es-viewer', args: ['--private-key-file', priv] }));
    expectStatus(await esClient.request('GET', GPU_MODELS, { token: t }), 200);
  });

  test('a hand-signed ES256 token with the right key is accepted (harness sanity)', async () => {
    const t = remember(signJwt({ alg: 'ES256', key: fs.readFileSync(priv), claims: esClaims() }));
    expectStatus(await esClient.request('GET', GPU_MODELS, { token: t }), 200);
  });

  test('HS256 keyed with the public key PEM (key confusion) answers 401', async () => {
    for (const key of [pubPem, Buffer.from(pubPem.toString().trim())]) {
      const t = remember(signJwt({ alg: 'HS256', key, claims: esClaims({ role: 'admin' }) }));
      expectProblem(await esClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
    }
  });

  test('ES256 signed by another key answers 401', async () => {
    const other = generateEcKeyPair();
    const t = remember(signJwt({ alg: 'ES256', key: other.privateKeyPem, claims: esClaims() }));
    expectProblem(await esClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('alg:none answers 401', async () => {
    const t = remember(signJwt({ alg: 'none', claims: esClaims({ role: 'admin' }) }));
    expectProblem(await esClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('an HS256 token from the HS256 server is refused', async () => {
    const t = remember(hs.token('viewer', { sub: 'cross' }));
    expectProblem(await esClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });

  test('an ES256 token with a DER (not raw r||s) signature answers 401', async () => {
    const crypto = require('node:crypto');
    const h = Buffer.from(JSON.stringify({ alg: 'ES256', typ: 'JWT' })).toString('base64url');
    const p = Buffer.from(JSON.stringify(esClaims())).toString('base64url');
    const der = crypto.sign('sha256', Buffer.from(`${h}.${p}`), { key: fs.readFileSync(priv), dsaEncoding: 'der' });
    const t = remember(`${h}.${p}.${der.toString('base64url')}`);
    expectProblem(await esClient.request('GET', GPU_MODELS, { token: t }), 401, 'invalid_token');
  });
});

describe('secret file modes', () => {
  test('a JWT secret or master key file readable by its group or others stops serve and token at start', () => {
    const { runBin } = require('./lib/server');
    const secrets = makeSecrets('gft-mode');
    try {
      for (const [name, file] of [
        ['GPUFLEET_JWT_SECRET_FILE', secrets.jwtSecretFile],
        ['GPUFLEET_MASTER_KEY_FILE', secrets.masterKeyFile],
      ]) {
        for (const mode of [0o644, 0o640, 0o604, 0o620]) {
          fs.chmodSync(file, mode);
          const env = {
            ...hs.env,
            GPUFLEET_JWT_SECRET_FILE: secrets.jwtSecretFile,
            GPUFLEET_MASTER_KEY_FILE: secrets.masterKeyFile,
          };
          const r = runBin(['serve'], env, { timeout: 20_000 });
          const m = mode.toString(8).padStart(4, '0');
          assert.notEqual(r.status, 0, `${name} with mode ${m} was accepted`);
          assert.ok(r.stderr.includes(file) && r.stderr.includes(`mode ${m}`), `${name} ${m}: ${r.stderr}`);
          fs.chmodSync(file, 0o600);
        }
      }
      fs.chmodSync(secrets.jwtSecretFile, 0o644);
      const t = runBin(['token', '--sub', 'x', '--role', 'viewer'], {
        ...hs.env,
        GPUFLEET_JWT_SECRET_FILE: secrets.jwtSecretFile,
      });
      assert.notEqual(t.status, 0, 'gpufleetd token read a 0644 secret');
      assert.match(t.stderr, /mode 0644/);
      fs.chmodSync(secrets.jwtSecretFile, 0o400);
      const ok = runBin(['token', '--sub', 'x', '--role', 'viewer'], {
        ...hs.env,
        GPUFLEET_JWT_SECRET_FILE: secrets.jwtSecretFile,
      });
      assert.equal(ok.status, 0, `a 0400 secret was refused: ${ok.stderr}`);
    } finally {
      fs.rmSync(secrets.dir, { recursive: true, force: true });
    }
  });
});

describe('secrets stay out of the logs', () => {
  test('no token, signature or secret appears in the server logs', async () => {
    await hs.stop();
    if (es) await es.stop();
    const logs = [hs.logPath, es && es.logPath].filter(Boolean).map((p) => [p, fs.readFileSync(p, 'utf8')]);
    const needles = [];
    for (const t of [...usedTokens, ...hs.tokens, ...(es ? es.tokens : [])]) {
      if (t.length >= 20) needles.push(['token', t]);
      const sig = t.split('.')[2];
      if (sig && sig.length >= 20) needles.push(['token signature', sig]);
    }
    const secret = readSecret(hs.env.GPUFLEET_JWT_SECRET_FILE).toString('utf8');
    if (secret.length >= 8) needles.push(['jwt secret', secret]);
    const master = readSecret(hs.env.GPUFLEET_MASTER_KEY_FILE).toString('utf8');
    if (master.length >= 8) needles.push(['master key', master]);
    for (const [p, text] of logs) {
      for (const [what, n] of needles) {
        assert.ok(!text.includes(n), `${p} contains a ${what} (${n.slice(0, 12)}…)`);
      }
    }
  });
});
