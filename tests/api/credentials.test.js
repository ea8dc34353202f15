'use strict';
// SSH credentials: store (admin only), the key type and the fingerprint that
// ssh-keygen prints, every refusal, and the key never leaving the server: not
// in any answer, not in the log, not in plaintext in the database.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

let srv;
let client;
let admin;
let operator;
let viewer;
let tmp;
const keys = {}; // name -> {text, fingerprint, type}
const secretLines = new Set(); // base64 lines of every private key sent

const uniq = () => crypto.randomBytes(4).toString('hex');

/** ssh-keygen a key into tmp; returns {text, fingerprint} (fingerprint from ssh-keygen -lf). */
function keygen(name, args, passphrase = '') {
  const file = path.join(tmp, name);
  execFileSync('ssh-keygen', ['-q', ...args, '-N', passphrase, '-C', `gft-${name}`, '-f', file]);
  const text = fs.readFileSync(file, 'utf8');
  const fingerprint = execFileSync('ssh-keygen', ['-lf', file], { encoding: 'utf8' }).split(' ')[1];
  for (const line of text.split('\n')) if (/^[A-Za-z0-9+/=]{20,}$/.test(line)) secretLines.add(line);
  return { text, fingerprint };
}

/** The answer carries none of the key material sent so far. */
function assertNoSecret(text, where) {
  for (const line of secretLines) {
    // The first line of every openssh-key-v1 body is the same public header; it is
    // not secret. Every other line is compared, and the JSON-escaped form too.
    if (line.startsWith('b3BlbnNzaC1rZXktdjEAAAAA')) continue;
    assert.ok(!text.includes(line), `${where} contains a line of a private key`);
    assert.ok(!text.includes(line.slice(0, 24)), `${where} contains part of a private key`);
  }
}

async function create(body, token = admin) {
  const res = await client.request('POST', '/v1/credentials', { token, body });
  assertNoSecret(res.text, 'POST /v1/credentials');
  return res;
}

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gft-keys-'));
  keys.ed25519 = { ...keygen('ed25519', ['-t', 'ed25519']), type: 'ssh-ed25519' };
  keys.p256 = { ...keygen('p256', ['-t', 'ecdsa', '-b', '256']), type: 'ecdsa-sha2-nistp256' };
  keys.p384 = { ...keygen('p384', ['-t', 'ecdsa', '-b', '384']), type: 'ecdsa-sha2-nistp384' };
  keys.p521 = { ...keygen('p521', ['-t', 'ecdsa', '-b', '521']), type: 'ecdsa-sha2-nistp521' };
  keys.rsa = { ...keygen('rsa', ['-t', 'rsa', '-b', '3072']), type: 'ssh-rsa' };
  keys.weak = keygen('weak', ['-t', 'rsa', '-b', '1024']);
  keys.encrypted = keygen('encrypted', ['-t', 'ed25519'], 'correct horse battery');
  keys.pem = keygen('pem', ['-t', 'rsa', '-b', '2048', '-m', 'PEM']);
  srv = await startServer({ name: 'credentials' });
  client = api(srv);
  admin = srv.token('admin', { sub: 'creds-admin' });
  operator = srv.token('operator', { sub: 'creds-operator' });
  viewer = srv.token('viewer', { sub: 'creds-viewer' });
});

after(async () => {
  if (srv) await srv.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('store and read', () => {
  const made = {};

  test('every key type is stored; the fingerprint equals ssh-keygen -lf', async () => {
    for (const k of ['ed25519', 'p256', 'p384', 'p521']) {
      const name = `key-${k}-${uniq()}`;
      const res = await create({ name, private_key: keys[k].text });
      const c = expectStatus(res, 201);
      assert.equal(res.headers.get('location'), `/v1/credentials/${c.id}`);
      assert.equal(c.name, name);
      assert.equal(c.key_type, keys[k].type);
      assert.equal(c.fingerprint, keys[k].fingerprint, `${k}: fingerprint differs from ssh-keygen -lf`);
      assert.equal(c.created_by, 'creds-admin');
      assert.deepEqual(Object.keys(c).sort(), [
        'allowed_cidrs',
        'allowed_users',
        'created_at',
        'created_by',
        'fingerprint',
        'id',
        'key_type',
        'name',
        'project',
      ]);
      assert.equal(c.project.name, 'default');
      assert.equal(c.allowed_users, null);
      assert.equal(c.allowed_cidrs, null);
      made[k] = c;
    }
  });

  test('GET and the list show the same documents, never the key', async () => {
    for (const c of Object.values(made)) {
      const res = await client.request('GET', `/v1/credentials/${c.id}`, { token: admin });
      assert.deepEqual(expectStatus(res, 200), c);
      assertNoSecret(res.text, 'GET /v1/credentials/{id}');
    }
    const res = await client.request('GET', '/v1/credentials?limit=500', { token: admin });
    const page = expectStatus(res, 200);
    assertNoSecret(res.text, 'GET /v1/credentials');
    for (const c of Object.values(made))
      assert.deepEqual(
        page.items.find((x) => x.id === c.id),
        c,
      );
  });

  test('at rest: ciphertext only, a fresh nonce per row, one key id', async () => {
    const rows = psql(srv.database.url, "SELECT id, kid, encode(nonce, 'hex') FROM credentials")
      .split('\n')
      .map((l) => l.split('|'));
    assert.ok(rows.length >= 4); // ed25519 and three ecdsa curves (RSA is refused)
    const nonces = new Set(rows.map((r) => r[2]));
    assert.equal(nonces.size, rows.length, 'a nonce was reused');
    assert.equal(new Set(rows.map((r) => r[1])).size, 1, 'rows sealed under different key ids');
    assert.match(rows[0][1], /^[0-9a-f]{16}$/);
    const all = psql(srv.database.url, "SELECT string_agg(encode(ciphertext, 'escape'), '') FROM credentials");
    assert.ok(!all.includes('OPENSSH'), 'plaintext key text in the credentials table');
    const cols = psql(
      srv.database.url,
      "SELECT string_agg(column_name, ',') FROM information_schema.columns WHERE table_name = 'credentials'",
    );
    assert.ok(!/private|plain/.test(cols), `unexpected columns ${cols}`);
  });

  test('a ciphertext moved to another row is detected (the id is the AAD)', async () => {
    // Swapping is a database-level attack; the server still serves metadata, and the
    // C unit tests prove crypt_open refuses a foreign AAD. Here: the rows' ciphertexts
    // all differ, so no two rows are interchangeable by accident.
    const n = psql(srv.database.url, 'SELECT count(DISTINCT ciphertext) = count(*) FROM credentials');
    assert.equal(n, 't');
  });

  test('list: name_prefix filter and pagination', async () => {
    const p = `page-${uniq()}-`;
    const ids = [];
    for (let i = 0; i < 3; i++)
      ids.push(expectStatus(await create({ name: `${p}${i}`, private_key: keys.ed25519.text }), 201).id);
    const seen = [];
    let cursor = null;
    let pages = 0;
    do {
      const q = `/v1/credentials?limit=1&name_prefix=${encodeURIComponent(p)}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = expectStatus(await client.request('GET', q, { token: admin }), 200);
      seen.push(...page.items.map((c) => c.id));
      cursor = page.next_cursor;
      pages += 1;
    } while (cursor && pages < 10);
    assert.deepEqual(seen, ids);
    assert.equal(pages, 3);
    expectProblem(
      await client.request('GET', '/v1/credentials?cursor=garbage', { token: admin }),
      400,
      'invalid_cursor',
    );
    expectProblem(
      await client.request('GET', '/v1/credentials?key_type=ssh-rsa', { token: admin }),
      400,
      'unknown_parameter',
      'key_type',
    );
  });

  test('ETag and If-None-Match on GET', async () => {
    const c = made.ed25519;
    const a = await client.request('GET', `/v1/credentials/${c.id}`, { token: admin });
    const etag = a.headers.get('etag');
    assert.ok(etag);
    const b = await client.request('GET', `/v1/credentials/${c.id}`, {
      token: admin,
      headers: { 'If-None-Match': etag },
    });
    expectStatus(b, 304);
  });
});

describe('roles', () => {
  test('operator and viewer get 403 on every credential route; no token 401', async () => {
    const c = expectStatus(await create({ name: `roles-${uniq()}`, private_key: keys.ed25519.text }), 201);
    for (const token of [operator, viewer]) {
      expectProblem(
        await create({ name: `x-${uniq()}`, private_key: keys.ed25519.text }, token),
        403,
        'insufficient_role',
      );
      expectProblem(await client.request('GET', '/v1/credentials', { token }), 403, 'insufficient_role');
      expectProblem(await client.request('GET', `/v1/credentials/${c.id}`, { token }), 403, 'insufficient_role');
      expectProblem(await client.request('DELETE', `/v1/credentials/${c.id}`, { token }), 403, 'insufficient_role');
    }
    expectProblem(await client.request('GET', '/v1/credentials'), 401, 'missing_token');
    expectStatus(await client.request('GET', `/v1/credentials/${c.id}`, { token: admin }), 200);
  });
});

describe('refusals', () => {
  test('missing, unknown and mistyped members', async () => {
    expectProblem(await create({ private_key: keys.ed25519.text }), 400, 'missing_field', 'name');
    expectProblem(await create({ name: `m-${uniq()}` }), 400, 'missing_field', 'private_key');
    expectProblem(
      await create({ name: `m-${uniq()}`, private_key: keys.ed25519.text, comment: 'x' }),
      400,
      'unknown_field',
      'comment',
    );
    expectProblem(await create({ name: `m-${uniq()}`, private_key: 42 }), 400, 'invalid_field', 'private_key');
    expectProblem(await create({ name: `m-${uniq()}`, private_key: '' }), 400, 'invalid_field', 'private_key');
    expectProblem(await create({ name: '', private_key: keys.ed25519.text }), 400, 'invalid_field', 'name');
    expectProblem(
      await create({ name: 'x'.repeat(129), private_key: keys.ed25519.text }),
      400,
      'invalid_field',
      'name',
    );
    expectProblem(
      await create({ name: `m-${uniq()}`, private_key: 'x'.repeat(20000) }),
      400,
      'invalid_field',
      'private_key',
    );
  });

  test('a passphrase-protected key: 400 invalid_private_key', async () => {
    const p = expectProblem(
      await create({ name: `enc-${uniq()}`, private_key: keys.encrypted.text }),
      400,
      'invalid_private_key',
      'private_key',
    );
    assert.match(p.detail, /passphrase-protected keys are not accepted/);
  });

  test('a PEM key: 400 invalid_private_key, saying how to convert', async () => {
    const p = expectProblem(
      await create({ name: `pem-${uniq()}`, private_key: keys.pem.text }),
      400,
      'invalid_private_key',
      'private_key',
    );
    assert.match(p.detail, /ssh-keygen -p -f KEY -m OpenSSH/);
  });

  test('rsa-3072: 400 invalid_private_key (libssh2 1.10 can only sign ssh-rsa/SHA-1)', async () => {
    const res = await create({ name: `rsa-${uniq()}`, private_key: keys.rsa.text });
    const p = expectProblem(res, 400, 'invalid_private_key', 'private_key');
    assert.match(p.detail, /ed25519/);
  });

  test('rsa-1024: 400 weak_key', async () => {
    const p = expectProblem(
      await create({ name: `weak-${uniq()}`, private_key: keys.weak.text }),
      400,
      'weak_key',
      'private_key',
    );
    assert.match(p.detail, /1024 bits/);
  });

  test('truncated, garbled, public-key and random text: 400 invalid_private_key', async () => {
    const lines = keys.ed25519.text.trim().split('\n');
    const truncated = [...lines.slice(0, 3), lines[lines.length - 1]].join('\n');
    const garbled = keys.ed25519.text.replace(lines[2], lines[2].split('').reverse().join(''));
    const pub = fs.readFileSync(path.join(tmp, 'ed25519.pub'), 'utf8');
    for (const bad of [
      truncated,
      garbled,
      pub,
      'hello',
      '-----BEGIN OPENSSH PRIVATE KEY-----\n!!\n-----END OPENSSH PRIVATE KEY-----',
    ]) {
      expectProblem(
        await create({ name: `bad-${uniq()}`, private_key: bad }),
        400,
        'invalid_private_key',
        'private_key',
      );
    }
  });

  test('a duplicate name: 409 already_exists', async () => {
    const name = `dup-${uniq()}`;
    expectStatus(await create({ name, private_key: keys.ed25519.text }), 201);
    expectProblem(await create({ name, private_key: keys.p256.text }), 409, 'already_exists', 'name');
  });

  test('malformed JSON around a key never echoes the key', async () => {
    const body = JSON.stringify({ name: `j-${uniq()}`, private_key: keys.rsa.text });
    const lines = keys.rsa.text.split('\n');
    const variants = [
      body.replace(lines[5], `${lines[5]}\\q`), // invalid escape inside the key
      body.replace('\\n', '\n'), // a raw newline inside the string
      body.slice(0, body.length - 40), // truncated
      body.replace(`"private_key":"`, '"private_key":'), // an unquoted token
    ];
    for (const raw of variants) {
      const res = await client.request('POST', '/v1/credentials', {
        token: admin,
        rawBody: raw,
        contentType: 'application/json',
      });
      expectProblem(res, 400, 'invalid_json');
      assertNoSecret(res.text, 'invalid_json problem');
    }
  });
});

describe('delete', () => {
  test('DELETE answers 204, then 404; both are audited', async () => {
    const c = expectStatus(await create({ name: `del-${uniq()}`, private_key: keys.p384.text }), 201);
    expectStatus(await client.request('DELETE', `/v1/credentials/${c.id}`, { token: admin }), 204);
    expectProblem(await client.request('GET', `/v1/credentials/${c.id}`, { token: admin }), 404, 'not_found');
    expectProblem(await client.request('DELETE', `/v1/credentials/${c.id}`, { token: admin }), 404, 'not_found');
    expectProblem(await client.request('DELETE', '/v1/credentials/not-a-uuid', { token: admin }), 404, 'not_found');
    for (const action of ['credential.create', 'credential.delete']) {
      const q = `/v1/audit-events?action=${action}&resource_id=${c.id}`;
      const evs = expectStatus(await client.request('GET', q, { token: admin }), 200).items;
      assert.equal(evs.length, 1, `${action}: ${JSON.stringify(evs)}`);
      assert.equal(evs[0].resource_type, 'credential');
      assert.equal(evs[0].principal, 'creds-admin');
    }
  });

  test('a referenced credential: 409 credential_in_use', async () => {
    const c = expectStatus(await create({ name: `used-${uniq()}`, private_key: keys.ed25519.text }), 201);
    // A stand-in for hosts.credential_id (ON DELETE RESTRICT), independent of the hosts schema.
    psql(
      srv.database.url,
      'CREATE TABLE IF NOT EXISTS test_credential_refs (credential_id uuid REFERENCES credentials (id) ON DELETE RESTRICT)',
    );
    psql(srv.database.url, `INSERT INTO test_credential_refs VALUES ('${c.id}')`);
    expectProblem(
      await client.request('DELETE', `/v1/credentials/${c.id}`, { token: admin }),
      409,
      'credential_in_use',
    );
    expectStatus(await client.request('GET', `/v1/credentials/${c.id}`, { token: admin }), 200);
    psql(srv.database.url, 'DELETE FROM test_credential_refs');
    expectStatus(await client.request('DELETE', `/v1/credentials/${c.id}`, { token: admin }), 204);
  });
});

describe('secrets in the log', () => {
  test('the server log holds no line of any private key', async () => {
    const log = fs.readFileSync(srv.logPath, 'utf8');
    assert.ok(secretLines.size > 20);
    assertNoSecret(log, 'the server log');
  });
});
