'use strict';
// Bounded tokens (issue 25, item 7): `gpufleetd token` refuses a lifetime over the cap
// (GPUFLEET_TOKEN_MAX_TTL_SECONDS, 24 h; reporters GPUFLEET_TOKEN_REPORTER_MAX_TTL_SECONDS,
// 90 d) and records each jti; POST /v1/tokens/revoke (platform admin) puts a jti, or every
// token of a subject issued up to now, on the revocation list that every request's token
// is checked against (in memory; another replica picks it up within
// GPUFLEET_TOKEN_REVOCATION_REFRESH_SECONDS); an event stream ends when its token expires
// or is revoked; expired entries are pruned.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const { startServer, runBin, psql, sleep, decodeJwt, signJwt, nowSec } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const { openStream } = require('./lib/sse');

let srv;
let client;
let admin;

before(async () => {
  srv = await startServer({ name: 'tokens', cliTokens: true, env: { GPUFLEET_WORKERS: '0' } });
  client = api(srv);
  admin = srv.token('admin', { sub: 'root-admin' });
});

after(async () => {
  if (srv) await srv.stop();
});

const jtiOf = (t) => decodeJwt(t).claims.jti;
const revoke = (body, token = admin) => client.request('POST', '/v1/tokens/revoke', { token, body });

describe('gpufleetd token: the lifetime cap and the recorded jti', () => {
  test('a --ttl over the cap is refused (naming the cap and its variable), within it minted', () => {
    const over = runBin(['token', '--sub', 'x', '--role', 'viewer', '--ttl', '25h'], srv.env);
    assert.notEqual(over.status, 0);
    assert.equal(over.stdout, '', 'no token printed');
    assert.match(over.stderr, /86400 s.*GPUFLEET_TOKEN_MAX_TTL_SECONDS/);
    const ten = runBin(['token', '--sub', 'x', '--role', 'admin', '--ttl', '3650d'], srv.env);
    assert.notEqual(ten.status, 0, 'the 10-year token of the audit is refused');
    const day = srv.token('viewer', { sub: 'day', ttl: '24h' });
    const c = decodeJwt(day).claims;
    assert.equal(c.exp - c.iat, 86400);
    // Reporters: up to 90 days.
    const rep = runBin(['token', '--sub', 'r', '--role', 'reporter', '--ttl', '91d'], srv.env);
    assert.notEqual(rep.status, 0);
    assert.match(rep.stderr, /7776000 s.*GPUFLEET_TOKEN_REPORTER_MAX_TTL_SECONDS/);
    srv.token('reporter', { sub: 'r', ttl: '90d' });
    // The cap is configuration.
    const raised = runBin(['token', '--sub', 'x', '--role', 'viewer', '--ttl', '48h'], {
      ...srv.env,
      GPUFLEET_TOKEN_MAX_TTL_SECONDS: '172800',
    });
    assert.equal(raised.status, 0, raised.stderr);
    srv.tokens.add(raised.stdout.trim());
  });

  test('a token that lives longer than its cap (minted before it, or by hand) is refused by the server', async () => {
    const base = decodeJwt(srv.token('viewer', { sub: 'legacy' })).claims;
    const sign = (claims) => {
      const t = signJwt({ claims: { ...base, ...claims }, key: srv.jwtSecret() });
      srv.tokens.add(t);
      return t;
    };
    const now = nowSec();
    const tenYears = sign({ iat: now, nbf: now, exp: now + 3650 * 86400 });
    const p = expectProblem(await client.request('GET', '/v1/pools', { token: tenYears }), 401, 'invalid_token');
    assert.match(p.detail, /GPUFLEET_TOKEN_MAX_TTL_SECONDS/);
    // Without iat the lifetime counts from nbf, or from now.
    expectProblem(
      await client.request('GET', '/v1/pools', { token: sign({ iat: undefined, nbf: now, exp: now + 2 * 86400 }) }),
      401,
      'invalid_token',
    );
    expectStatus(await client.request('GET', '/v1/pools', { token: sign({ iat: now, exp: now + 86400 }) }), 200);
    // A reporter's cap is 90 days: a 30-day reporter token is valid (a reporter may not list pools: 403, not 401).
    const rep = sign({ role: 'reporter', iat: now, exp: now + 30 * 86400 });
    expectProblem(await client.request('GET', '/v1/pools', { token: rep }), 403, 'insufficient_role');
    expectProblem(
      await client.request('GET', '/v1/pools', { token: sign({ role: 'reporter', iat: now, exp: now + 91 * 86400 }) }),
      401,
      'invalid_token',
    );
  });

  test('the jti is recorded with the subject, role, project and lifetime; no database, no token', () => {
    const t = srv.token('operator', { sub: 'rec-op', ttl: '2h' });
    const c = decodeJwt(t).claims;
    const row = psql(
      srv.database.url,
      `SELECT sub || ' ' || role || ' ' || coalesce(project, '-') || ' ' || extract(epoch FROM expires_at - issued_at)::int || ' ' || (extract(epoch FROM expires_at)::bigint = ${c.exp})
         FROM tokens WHERE jti = '${c.jti}'`,
    );
    assert.equal(row, 'rec-op operator - 7200 true');
    const none = runBin(['token', '--sub', 'x', '--role', 'viewer'], { ...srv.env, GPUFLEET_DATABASE_URL: undefined });
    assert.notEqual(none.status, 0);
    assert.equal(none.stdout, '');
    assert.match(none.stderr, /GPUFLEET_DATABASE_URL/);
  });
});

describe('POST /v1/tokens/revoke', () => {
  test('revoking a jti: that token answers 401 token_revoked, another token of the subject still works; audited', async () => {
    const a = srv.token('viewer', { sub: 'alice' });
    const b = srv.token('viewer', { sub: 'alice' });
    expectStatus(await client.request('GET', '/v1/pools', { token: a }), 200); // verified and cached
    const r = expectStatus(await revoke({ jti: jtiOf(a), reason: 'laptop stolen' }), 200);
    assert.equal(r.jti, jtiOf(a));
    assert.equal(r.sub, null);
    assert.equal(r.tokens_known, 1);
    assert.equal(r.revoked_by, 'root-admin');
    assert.equal(r.reason, 'laptop stolen');
    assert.ok(Date.parse(r.expires_at) >= decodeJwt(a).claims.exp * 1000, 'kept until the token expires');
    const p = expectProblem(await client.request('GET', '/v1/pools', { token: a }), 401, 'token_revoked');
    assert.match(p.detail, /revoked/);
    expectProblem(await client.request('POST', '/v1/event-tickets', { token: a }), 401, 'token_revoked');
    expectStatus(await client.request('GET', '/v1/pools', { token: b }), 200);
    // Again: the same entry, refreshed.
    expectStatus(await revoke({ jti: jtiOf(a) }), 200);
    const audit = expectStatus(
      await client.request('GET', '/v1/audit-events?action=token.revoke&limit=10', { token: admin }),
      200,
    );
    const row = audit.items.find((e) => e.resource_id === jtiOf(a));
    assert.ok(row, JSON.stringify(audit.items));
    assert.equal(row.resource_type, 'token');
    assert.equal(row.principal, 'root-admin');
  });

  test('revoking a subject: every token it was issued up to now is refused, one minted later works', async () => {
    const t1 = srv.token('operator', { sub: 'bob' });
    const t2 = srv.token('viewer', { sub: 'bob' });
    const other = srv.token('viewer', { sub: 'carol' });
    const r = expectStatus(await revoke({ sub: 'bob', reason: 'left the team' }), 200);
    assert.equal(r.sub, 'bob');
    assert.equal(r.jti, null);
    assert.equal(r.tokens_known, 2);
    assert.ok(r.issued_before);
    expectProblem(await client.request('GET', '/v1/pools', { token: t1 }), 401, 'token_revoked');
    expectProblem(await client.request('GET', '/v1/hosts', { token: t2 }), 401, 'token_revoked');
    expectStatus(await client.request('GET', '/v1/pools', { token: other }), 200);
    await sleep(1100); // iat has whole seconds: the second of the revocation counts as before
    expectStatus(await client.request('GET', '/v1/pools', { token: srv.token('viewer', { sub: 'bob' }) }), 200);
  });

  test('only a platform admin may revoke: 403 for operator, viewer and a project admin', async () => {
    const victim = srv.token('viewer', { sub: 'dave' });
    for (const role of ['operator', 'viewer']) {
      expectProblem(await revoke({ jti: jtiOf(victim) }, srv.token(role)), 403, 'insufficient_role');
    }
    expectStatus(await client.request('POST', '/v1/projects', { token: admin, body: { name: 'team-t' } }), 201);
    const projectAdmin = srv.token('admin', { sub: 'team-admin', project: 'team-t' });
    const p = expectProblem(await revoke({ jti: jtiOf(victim) }, projectAdmin), 403, 'insufficient_role');
    assert.match(p.detail, /platform admin/);
    expectStatus(await client.request('GET', '/v1/pools', { token: victim }), 200);
  });

  test('a bad body: 400 naming the field', async () => {
    expectProblem(await revoke({}), 400, 'missing_field');
    let p = expectProblem(await revoke({ jti: 'a', sub: 'b' }), 400, 'invalid_field');
    assert.equal(p.field, 'sub');
    p = expectProblem(await revoke({ jti: 'has space' }), 400, 'invalid_field');
    assert.equal(p.field, 'jti');
    p = expectProblem(await revoke({ jti: 'x'.repeat(129) }), 400, 'invalid_field');
    assert.equal(p.field, 'jti');
    p = expectProblem(await revoke({ sub: 7 }), 400, 'invalid_field');
    assert.equal(p.field, 'sub');
    p = expectProblem(await revoke({ jti: 'abc', until: 'never' }), 400, 'unknown_field');
    assert.equal(p.field, 'until');
    p = expectProblem(await revoke({ jti: 'abc', reason: 'x'.repeat(501) }), 400, 'invalid_field');
    assert.equal(p.field, 'reason');
    expectProblem(
      await client.request('POST', '/v1/tokens/revoke', {
        token: admin,
        rawBody: '{"jti":',
        contentType: 'application/json',
      }),
      400,
      'invalid_json',
    );
  });
});

describe('event streams end with their token', () => {
  test('at expiry: a short-lived token\'s stream gets {"code":"token_expired"} and ends', async () => {
    const t = srv.token('viewer', { sub: 'short', ttl: '3s' });
    const exp = decodeJwt(t).claims.exp;
    const s = await openStream(srv.url, { token: t });
    assert.equal(s.status, 200);
    await s.waitFor((ev) => ev.some((e) => e.event === 'error'), 10_000);
    const last = s.events[s.events.length - 1];
    assert.equal(last.event, 'error');
    assert.deepEqual(last.json, { code: 'token_expired' });
    assert.equal(last.id, undefined);
    await s.ended;
    assert.ok(Date.now() / 1000 >= exp, 'not before exp');
    assert.ok(Date.now() / 1000 < exp + 5, 'within a few seconds of exp');
  });

  test('on revocation: the stream gets {"code":"token_revoked"} and ends; a ticket of a revoked token is refused', async () => {
    const t = srv.token('viewer', { sub: 'streamer', ttl: '1h' });
    const s = await openStream(srv.url, { token: t });
    assert.equal(s.status, 200);
    // A ticket minted before the revocation, redeemed after it.
    const ticket = expectStatus(await client.request('POST', '/v1/event-tickets', { token: t }), 201).ticket;
    await sleep(300);
    expectStatus(await revoke({ jti: jtiOf(t) }), 200);
    await s.waitFor((ev) => ev.some((e) => e.event === 'error'), 5000);
    assert.deepEqual(s.events[s.events.length - 1].json, { code: 'token_revoked' });
    await s.ended;
    const viaTicket = await openStream(srv.url, { query: `?ticket=${ticket}` });
    assert.equal(viaTicket.status, 401);
    viaTicket.close();
  });

  test('a stream opened with a ticket ends when the token that minted it is revoked', async () => {
    const t = srv.token('viewer', { sub: 'ticketed', ttl: '1h' });
    const ticket = expectStatus(await client.request('POST', '/v1/event-tickets', { token: t }), 201).ticket;
    const s = await openStream(srv.url, { query: `?ticket=${ticket}` });
    assert.equal(s.status, 200);
    expectStatus(await revoke({ sub: 'ticketed' }), 200);
    await s.waitFor((ev) => ev.some((e) => e.event === 'error'), 5000);
    assert.deepEqual(s.events[s.events.length - 1].json, { code: 'token_revoked' });
    await s.ended;
  });
});

describe('across replicas, and pruning', () => {
  test('a revocation made on one replica is applied by another within its refresh period; expired rows are pruned', async () => {
    const url = srv.database.url;
    // Expired rows (a token and a revocation long past), and live ones that must stay.
    psql(
      url,
      `INSERT INTO tokens (jti, sub, role, issued_at, expires_at)
         VALUES ('00000000-0000-4000-8000-000000000001', 'old', 'viewer', now() - interval '2 days', now() - interval '1 day');
       INSERT INTO token_revocations (jti, expires_at, revoked_by)
         VALUES ('old-jti', now() - interval '1 hour', 'someone'), ('live-jti', now() + interval '1 hour', 'someone')`,
    );
    const b = await startServer({
      name: 'tokens-b',
      databaseUrl: url,
      migrate: false,
      secrets: srv.secrets,
      env: { GPUFLEET_WORKERS: '0', GPUFLEET_TOKEN_REVOCATION_REFRESH_SECONDS: '1' },
    });
    try {
      // B pruned at start.
      assert.equal(psql(url, "SELECT count(*) FROM tokens WHERE sub = 'old'"), '0');
      assert.equal(
        psql(url, "SELECT string_agg(jti, ',' ORDER BY jti) FROM token_revocations WHERE jti LIKE '%-jti'"),
        'live-jti',
      );
      const cb = api(b);
      const t = srv.token('viewer', { sub: 'erin' });
      expectStatus(await cb.request('GET', '/v1/pools', { token: t }), 200); // cached on B
      expectStatus(await revoke({ jti: jtiOf(t) }), 200); // on A
      const t0 = Date.now();
      let res;
      while ((res = await cb.request('GET', '/v1/pools', { token: t })).status === 200 && Date.now() - t0 < 10_000)
        await sleep(200);
      expectProblem(res, 401, 'token_revoked');
      assert.ok(Date.now() - t0 < 4000, `B applied it in ${Date.now() - t0} ms (refresh 1 s)`);
    } finally {
      await b.stop({ dropDatabase: false });
    }
  });
});
