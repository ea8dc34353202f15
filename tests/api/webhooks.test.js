'use strict';
// Signed webhooks (POST /v1/webhooks), against real receivers: node:http servers on
// loopback whose every request is verified with the Standard Webhooks reference library
// (npm standardwebhooks 1.1.1). Events are written into the events table with psql, as
// any writer does. Covered: the secret shown once (never in GET, the idempotent replay,
// the database in plaintext, or the log); roles; URL and address validation, including
// SSRF targets (metadata, link-local, unspecified, loopback without the allow-list, a
// name that resolves to loopback, a redirect to another target); deliveries signed, in
// order, filtered by type; a receiver killed mid-stream (nothing lost, nothing out of
// order); retries with backoff recorded; a slow receiver not delaying another webhook;
// bounded, UTF-8-clean answers; persistent failure disabling the webhook with a
// webhook.disabled event; 410 Gone; replay; the Slack format; two replicas; the figures on
// /metrics (attempts by result, durations, leases), in a valid exposition format.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const { Webhook } = require('standardwebhooks');

const { startServer, psql, sleep } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

const RETRY_BASE_MS = 200;
const RETRY_MAX_S = 6;
const TIMEOUT_MS = 2000;
const WEBHOOK_ENV = {
  GPUFLEET_WORKERS: '0',
  GPUFLEET_IDLE_POLICY_INTERVAL: '0',
  GPUFLEET_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
  GPUFLEET_WEBHOOK_RETRY_BASE_MS: String(RETRY_BASE_MS),
  GPUFLEET_WEBHOOK_RETRY_MAX_SECONDS: String(RETRY_MAX_S),
  GPUFLEET_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
};
const SECRET_RE = /^whsec_[A-Za-z0-9+/]{43}=$/;
const MARKER = `receiver-body-marker-${crypto.randomBytes(6).toString('hex')}`;

let srv; // allow-list 127.0.0.0/8
let ssrf; // no allow-list: loopback refused
let client;
let ssrfClient;
let admin;
let ssrfAdmin;
const secrets = new Set();
const receivers = [];

/** A webhook receiver on loopback. behavior(req, n, res) may answer itself and return true. */
class Receiver {
  constructor(name) {
    this.name = name;
    this.requests = [];
    this.behavior = null;
    this.sockets = new Set();
    this.port = 0;
    this.held = [];
    receivers.push(this);
  }

  async start(port = this.port) {
    this.server = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), url: req.url, at: Date.now() };
        this.requests.push(r);
        if (this.behavior && this.behavior(r, this.requests.length, res)) return;
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok');
      });
    });
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', resolve);
    });
    this.port = this.server.address().port;
    return this;
  }

  get url() {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Stops listening and drops every connection at once (a crash, seen from outside). */
  kill() {
    if (!this.server) return;
    this.server.close();
    for (const s of this.sockets) s.destroy();
    this.server = null;
  }

  release() {
    for (const res of this.held.splice(0)) res.destroy();
  }

  /** The requests' payloads, each verified with the secret (throws on a bad signature). */
  verified(secret) {
    const wh = new Webhook(secret);
    return this.requests.map((r) => {
      const payload = wh.verify(r.body, r.headers);
      return {
        id: r.headers['webhook-id'],
        ts: Number(r.headers['webhook-timestamp']),
        payload,
        body: r.body,
        at: r.at,
      };
    });
  }
}

async function until(fn, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

/** Inserts n events of type (one statement, one transaction) in the project named default
 * (where the webhooks made here live: a webhook receives its project's events only);
 * resolves to their ids. Through the harness's kept connection: the INSERT holds this
 * process (and its receivers) only for its own few milliseconds, and waits on no delivery
 * (no lock of the server's is held while it delivers). */
async function emit(n, type, server = srv) {
  const url = server.database ? server.database.url : server.env.GPUFLEET_DATABASE_URL;
  const sql = `INSERT INTO events (type, project_id, data) SELECT '${type}', '00000000-0000-4000-8000-000000000001', jsonb_build_object('n', g) FROM generate_series(1, ${n}) g RETURNING id`;
  return psql(url, sql).split('\n').filter(Boolean).map(Number);
}

async function createWebhook(body, c = client, token = admin) {
  const res = await c.request('POST', '/v1/webhooks', { token, body });
  const b = expectStatus(res, 201);
  assert.match(b.secret, SECRET_RE);
  secrets.add(b.secret);
  assert.equal(res.headers.get('location'), `/v1/webhooks/${b.id}`);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  return b;
}

async function deliveries(id, query = '', c = client, token = admin) {
  return expectStatus(await c.request('GET', `/v1/webhooks/${id}/deliveries?limit=500${query}`, { token }), 200).items;
}

async function remove(id, c = client, token = admin) {
  expectStatus(await c.request('DELETE', `/v1/webhooks/${id}`, { token }), 204);
}

before(async () => {
  srv = await startServer({ name: 'webhooks', env: WEBHOOK_ENV });
  ssrf = await startServer({
    name: 'webhooks-ssrf',
    env: { ...WEBHOOK_ENV, GPUFLEET_WEBHOOK_ALLOW_CIDRS: undefined },
  });
  client = api(srv);
  ssrfClient = api(ssrf);
  admin = srv.token('admin');
  ssrfAdmin = ssrf.token('admin');
});

after(async () => {
  for (const r of receivers) {
    r.release();
    r.kill();
  }
  if (srv) await srv.stop();
  if (ssrf) await ssrf.stop();
});

describe('creating and reading webhooks', () => {
  test('201 shows the secret once; GET one and the list never do; the audit trail records it', async () => {
    const r = await new Receiver('create').start();
    const before = Number(psql(srv.database.url, 'SELECT coalesce(max(id), 0) FROM events'));
    const w = await createWebhook({ url: r.url, event_types: ['host.state', 'job.state'], description: 'on-call' });
    assert.deepEqual(
      { url: w.url, event_types: w.event_types, description: w.description, format: w.format, enabled: w.enabled },
      {
        url: r.url,
        event_types: ['host.state', 'job.state'],
        description: 'on-call',
        format: 'standard',
        enabled: true,
      },
    );
    assert.equal(w.disabled_reason, null);
    assert.ok(w.last_event_id >= before, 'a new webhook starts at the newest event');
    const one = await client.request('GET', `/v1/webhooks/${w.id}`, { token: admin });
    expectStatus(one, 200);
    assert.equal(one.body.secret, undefined);
    assert.ok(!one.text.includes(w.secret.slice(6)), 'GET shows the secret');
    const list = await client.request('GET', '/v1/webhooks', { token: admin });
    expectStatus(list, 200);
    assert.ok(list.body.items.some((x) => x.id === w.id));
    assert.ok(!list.text.includes(w.secret.slice(6)), 'the list shows the secret');
    const audit = await client.request('GET', `/v1/audit-events?action=webhook.create&resource_id=${w.id}`, {
      token: admin,
    });
    assert.equal(expectStatus(audit, 200).items.length, 1);
    await remove(w.id);
  });

  test('the secret is stored sealed: neither its text nor its key bytes are in the row', async () => {
    const r = await new Receiver('sealed').start();
    const w = await createWebhook({ url: r.url, event_types: ['host.state'] });
    const keyHex = Buffer.from(w.secret.slice(6), 'base64').toString('hex');
    const row = psql(srv.database.url, `SELECT w::text FROM webhooks w WHERE id = '${w.id}'`);
    assert.ok(row.length > 0);
    assert.ok(!row.includes(w.secret.slice(6)) && !row.includes(keyHex), 'the row holds the secret in plaintext');
    const kid = psql(
      srv.database.url,
      `SELECT secret_kid || ':' || length(secret_nonce) || ':' || length(secret_ciphertext) FROM webhooks WHERE id = '${w.id}'`,
    );
    assert.match(kid, /^[0-9a-f]{16}:12:48$/);
    await remove(w.id);
  });

  test('a create retried with the same Idempotency-Key answers the webhook without its secret, and stores none', async () => {
    const r = await new Receiver('idem').start();
    const key = `wh-${crypto.randomBytes(4).toString('hex')}`;
    const body = { url: r.url, event_types: ['host.state'] };
    const first = await client.request('POST', '/v1/webhooks', {
      token: admin,
      body,
      headers: { 'Idempotency-Key': key },
    });
    const w = expectStatus(first, 201);
    assert.match(w.secret, SECRET_RE);
    secrets.add(w.secret);
    const again = await client.request('POST', '/v1/webhooks', {
      token: admin,
      body,
      headers: { 'Idempotency-Key': key },
    });
    const w2 = expectStatus(again, 201);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(w2.id, w.id);
    assert.equal(w2.secret, undefined);
    assert.equal(psql(srv.database.url, "SELECT count(*) FROM idempotency_keys i WHERE i::text LIKE '%whsec%'"), '0');
    // A tool that ignores unevaluatedProperties (as a validating proxy did) must still
    // find one answer for each: the 201 schema is one schema, not a oneOf whose branches
    // only unevaluatedProperties told apart (both matched the first answer there).
    const { loadSpec } = require('./lib/openapi');
    const { spec } = loadSpec();
    const strip = (o) =>
      Array.isArray(o)
        ? o.map(strip)
        : o && typeof o === 'object'
          ? Object.fromEntries(
              Object.entries(o)
                .filter(([k]) => k !== 'unevaluatedProperties')
                .map(([k, v]) => [k, strip(v)]),
            )
          : o;
    const answer = spec.paths['/v1/webhooks'].post.responses['201'].content['application/json'].schema;
    assert.equal(answer.oneOf, undefined, 'POST /v1/webhooks 201 is a oneOf');
    assert.equal(answer.anyOf, undefined, 'POST /v1/webhooks 201 is an anyOf');
    const Ajv2020 = require('ajv/dist/2020').default;
    const addFormats = require('ajv-formats').default;
    const lax = new Ajv2020({ strict: false });
    addFormats(lax);
    lax.addSchema({ $id: 'lax', components: { schemas: strip(spec.components.schemas) } });
    const check = lax.compile({ $ref: 'lax#/components/schemas/WebhookCreated' });
    assert.ok(check(w), JSON.stringify(check.errors));
    assert.ok(check(w2), JSON.stringify(check.errors));
    await remove(w.id);
  });

  test('roles: viewer, operator and reporter get 403 on every webhook route; no token 401', async () => {
    const r = await new Receiver('roles').start();
    const w = await createWebhook({ url: r.url, event_types: ['host.state'] });
    const calls = [
      ['GET', '/v1/webhooks'],
      ['POST', '/v1/webhooks', { url: r.url, event_types: ['host.state'] }],
      ['GET', `/v1/webhooks/${w.id}`],
      ['DELETE', `/v1/webhooks/${w.id}`],
      ['GET', `/v1/webhooks/${w.id}/deliveries`],
      ['POST', `/v1/webhooks/${w.id}/replay`, { from_event_id: 1 }],
    ];
    for (const role of ['viewer', 'operator', 'reporter']) {
      const token = srv.token(role);
      for (const [m, p, body] of calls)
        expectProblem(await client.request(m, p, { token, body }), 403, 'insufficient_role');
    }
    for (const [m, p, body] of calls) expectProblem(await client.request(m, p, { body }), 401, 'missing_token');
    expectStatus(await client.request('GET', `/v1/webhooks/${w.id}`, { token: admin }), 200); // not deleted
    await remove(w.id);
  });

  test('malformed URLs and bodies: 400 naming the field', async () => {
    const long = `http://example.com/${'a'.repeat(2100)}`;
    const bad = [
      'ftp://example.com/hook',
      'file:///etc/passwd',
      'gopher://example.com/',
      'example.com/hook',
      'http:/example.com/',
      'http://user:password@example.com/hook',
      'http://example.com/hook#fragment',
      'http://exa mple.com/',
      'http://[fe80::1%25eth0]/',
      'http://bücher.example/',
      'http://under_score.example/',
      'http://example.123/',
      '',
      long,
    ];
    for (const url of bad) {
      const p = expectProblem(
        await client.request('POST', '/v1/webhooks', { token: admin, body: { url, event_types: ['host.state'] } }),
        400,
        'invalid_field',
        'url',
      );
      assert.ok(!/internal/i.test(p.detail), p.detail);
    }
    const url = 'https://hooks.example.com/x';
    const cases = [
      [{ url, event_types: ['host.exploded'] }, 'invalid_field', 'event_types'],
      [{ url, event_types: [] }, 'invalid_field', 'event_types'],
      [{ url, event_types: ['host.state', 'host.state'] }, 'invalid_field', 'event_types'],
      [{ url }, 'missing_field', 'event_types'],
      [{ event_types: ['host.state'] }, 'missing_field', 'url'],
      [{ url, event_types: ['host.state'], format: 'teams' }, 'invalid_field', 'format'],
      [{ url, event_types: ['host.state'], description: 'x'.repeat(501) }, 'invalid_field', 'description'],
      [{ url, event_types: ['host.state'], secret: 'whsec_mine' }, 'unknown_field', 'secret'],
    ];
    for (const [body, code, field] of cases)
      expectProblem(await client.request('POST', '/v1/webhooks', { token: admin, body }), 400, code, field);
  });

  test('list pagination, GET/DELETE of unknown ids, DELETE audited', async () => {
    const r = await new Receiver('list').start();
    const made = [];
    for (let i = 0; i < 3; i++)
      made.push(await createWebhook({ url: r.url, event_types: ['host.state'], description: `p${i}` }));
    const seen = [];
    let cursor = null;
    do {
      const res = await client.request(
        'GET',
        `/v1/webhooks?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { token: admin },
      );
      const b = expectStatus(res, 200);
      assert.ok(b.items.length <= 2);
      seen.push(...b.items.map((x) => x.id));
      cursor = b.next_cursor;
    } while (cursor);
    for (const w of made) assert.ok(seen.includes(w.id));
    for (const w of made) await remove(w.id);
    const gone = made[0].id;
    expectProblem(await client.request('GET', `/v1/webhooks/${gone}`, { token: admin }), 404, 'not_found');
    expectProblem(await client.request('DELETE', `/v1/webhooks/${gone}`, { token: admin }), 404, 'not_found');
    expectProblem(await client.request('GET', `/v1/webhooks/${gone}/deliveries`, { token: admin }), 404, 'not_found');
    expectProblem(
      await client.request('POST', `/v1/webhooks/${gone}/replay`, { token: admin, body: { from_event_id: 1 } }),
      404,
      'not_found',
    );
    expectProblem(await client.request('GET', '/v1/webhooks/not-a-uuid', { token: admin }), 404, 'not_found');
    const audit = await client.request('GET', `/v1/audit-events?action=webhook.delete&resource_id=${gone}`, {
      token: admin,
    });
    assert.equal(expectStatus(audit, 200).items.length, 1);
  });
});

describe('SSRF: the address policy', () => {
  test('metadata, link-local, unspecified, multicast and reserved addresses are refused even where loopback is allowed', async () => {
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://169.254.1.1/',
      'http://[fd00:ec2::254]/',
      'http://[fe80::1]/',
      'http://0.0.0.0:8080/',
      'http://0/',
      'http://[::]/',
      'http://224.0.0.1/',
      'http://255.255.255.255/',
      'http://[::ffff:169.254.169.254]/',
      'http://[64:ff9b::a9fe:a9fe]/',
      'http://2852039166/', // 169.254.169.254 as one number
    ]) {
      const p = expectProblem(
        await client.request('POST', '/v1/webhooks', { token: admin, body: { url, event_types: ['host.state'] } }),
        400,
        'address_not_allowed',
        'url',
      );
      assert.match(p.detail, /never allowed/, url);
    }
  });

  test('without GPUFLEET_WEBHOOK_ALLOW_CIDRS, loopback and private addresses are refused (in every spelling)', async () => {
    for (const url of [
      'http://127.0.0.1:8080/',
      'http://127.1/',
      'http://2130706433/',
      'http://0x7f000001/',
      'http://[::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://10.0.0.1/',
      'http://192.168.1.1/',
      'http://172.16.0.1/',
      'http://[fd12::1]/',
    ]) {
      const p = expectProblem(
        await ssrfClient.request('POST', '/v1/webhooks', {
          token: ssrfAdmin,
          body: { url, event_types: ['host.state'] },
        }),
        400,
        'address_not_allowed',
        'url',
      );
      assert.match(p.detail, /GPUFLEET_WEBHOOK_ALLOW_CIDRS/, url);
    }
  });

  test('a name that resolves to loopback is accepted, then refused at every connection: the receiver is never reached', async () => {
    const r = await new Receiver('dns-loopback').start();
    const w = await createWebhook(
      { url: `http://localhost:${r.port}/hook`, event_types: ['job.step'] },
      ssrfClient,
      ssrfAdmin,
    );
    const [ev] = await emit(1, 'job.step', ssrf);
    const d = await until(
      async () => {
        const items = await deliveries(w.id, '', ssrfClient, ssrfAdmin);
        return items.find((x) => x.event_id === ev && x.attempts >= 2) && items;
      },
      15000,
      'two refused attempts',
    );
    const item = d.find((x) => x.event_id === ev);
    assert.equal(item.status, 'retrying');
    assert.equal(item.response_code, null);
    assert.match(item.last_error, /address policy: (127\.0\.0\.1|::1) is a loopback or private address/);
    assert.equal(r.requests.length, 0, 'the receiver was reached');
    await remove(w.id, ssrfClient, ssrfAdmin);
  });

  test('a redirect is not followed, whether to an allowed receiver or to a metadata address; a 3xx is a failure', async () => {
    const target = await new Receiver('redirect-target').start();
    for (const location of [target.url, 'http://169.254.169.254/latest/meta-data/']) {
      const r = await new Receiver('redirector').start();
      r.behavior = (req, n, res) => {
        res.writeHead(302, { location });
        res.end();
        return true;
      };
      const w = await createWebhook({ url: r.url, event_types: ['work_reports.ingested'] });
      const [ev] = await emit(1, 'work_reports.ingested');
      const item = await until(
        async () => (await deliveries(w.id)).find((x) => x.event_id === ev),
        10000,
        'the first attempt',
      );
      assert.equal(item.response_code, 302);
      assert.equal(item.status, 'retrying');
      assert.match(item.last_error, /^HTTP 302 \(redirects are not followed\)/);
      await remove(w.id);
      r.kill();
    }
    assert.equal(target.requests.length, 0, 'the redirect was followed');
  });
});

describe('deliveries', () => {
  test('every delivery verifies with standardwebhooks; only the subscribed types; in id order; recorded', async () => {
    const r = await new Receiver('order').start();
    const w = await createWebhook({ url: r.url, event_types: ['host.state'] });
    const want = [];
    for (let i = 0; i < 5; i++) {
      want.push(...(await emit(4, 'host.state')));
      await emit(2, 'job.state');
    }
    await until(
      () => new Set(r.requests.map((q) => q.headers['webhook-id'])).size >= want.length,
      20000,
      `${want.length} deliveries`,
    );
    await sleep(300); // nothing more may come
    const got = r.verified(w.secret);
    // At least once: an event may come again only after an attempt that failed (on a
    // starved machine, a timeout), right after itself, with the same webhook-id and body.
    const receipts = new Map();
    for (const g of got) receipts.set(g.payload.data.id, (receipts.get(g.payload.data.id) || 0) + 1);
    assert.deepEqual(
      got.map((g) => g.payload.data.id).filter((id, i, a) => a[i - 1] !== id),
      want,
    );
    for (const g of got) {
      assert.equal(g.id, `evt_${g.payload.data.id}`);
      assert.equal(g.payload.type, 'host.state');
      assert.equal(g.payload.data.type, 'host.state');
      assert.equal(g.payload.timestamp, g.payload.data.at);
      assert.equal(typeof g.payload.data.n, 'number');
      assert.ok(Math.abs(g.ts - Date.now() / 1000) < 300);
    }
    assert.equal(r.requests[0].headers['content-type'], 'application/json');
    assert.match(r.requests[0].headers['user-agent'], /^gpufleet-webhooks\//);
    // Another secret does not verify.
    assert.throws(() =>
      new Webhook(`whsec_${crypto.randomBytes(32).toString('base64')}`).verify(
        r.requests[0].body,
        r.requests[0].headers,
      ),
    );
    const items = await deliveries(w.id);
    assert.equal(items.length, want.length);
    assert.deepEqual(
      items.map((x) => x.event_id),
      [...want].reverse(),
    ); // newest first
    for (const x of items) {
      assert.deepEqual(
        {
          status: x.status,
          response_code: x.response_code,
          generation: x.generation,
          last_error: x.last_error,
          event_type: x.event_type,
        },
        { status: 'delivered', response_code: 200, generation: 1, last_error: null, event_type: 'host.state' },
      );
      assert.ok(
        x.attempts >= receipts.get(x.event_id),
        `event ${x.event_id}: ${receipts.get(x.event_id)} receipts, ${x.attempts} attempts`,
      );
      assert.ok(x.latency_ms >= 0 && x.delivered_at && x.next_attempt_at === null);
    }
    // Pages of 7, and the status filter.
    const paged = [];
    let cursor = null;
    do {
      const b = expectStatus(
        await client.request(
          'GET',
          `/v1/webhooks/${w.id}/deliveries?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          { token: admin },
        ),
        200,
      );
      paged.push(...b.items.map((x) => x.event_id));
      cursor = b.next_cursor;
    } while (cursor);
    assert.deepEqual(paged, [...want].reverse());
    assert.equal((await deliveries(w.id, '&status=failed')).length, 0);
    expectProblem(
      await client.request('GET', `/v1/webhooks/${w.id}/deliveries?status=lost`, { token: admin }),
      400,
      'invalid_parameter',
      'status',
    );
    const hook = expectStatus(await client.request('GET', `/v1/webhooks/${w.id}`, { token: admin }), 200);
    assert.ok(hook.last_event_id >= want[want.length - 1]);
    await remove(w.id);
  });

  test('format slack: a {"text": ...} body naming the event, still signed', async () => {
    const r = await new Receiver('slack').start();
    const w = await createWebhook({ url: r.url, event_types: ['host.created'], format: 'slack' });
    assert.equal(w.format, 'slack');
    const [ev] = await emit(1, 'host.created');
    await until(() => r.requests.length >= 1, 10000, 'the slack delivery');
    const [got] = r.verified(w.secret);
    assert.deepEqual(Object.keys(got.payload), ['text']);
    assert.match(got.payload.text, new RegExp(`^\\[gpufleet\\] host\\.created \\(event ${ev} at `));
    assert.match(got.payload.text, /n=1/);
    assert.equal(got.id, `evt_${ev}`);
    await remove(w.id);
  });

  test('failed attempts are retried with exponential backoff, with the same webhook-id, and recorded', async () => {
    const r = await new Receiver('retries').start();
    r.behavior = (req, n, res) => {
      if (n > 3) return false;
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end(`busy ${MARKER}`);
      return true;
    };
    const w = await createWebhook({ url: r.url, event_types: ['host.updated'] });
    const [ev, ev2] = await emit(2, 'host.updated');
    await until(() => r.requests.length >= 5, 15000, 'four attempts and the next event');
    const got = r.verified(w.secret);
    assert.deepEqual(
      got.map((g) => g.id),
      [`evt_${ev}`, `evt_${ev}`, `evt_${ev}`, `evt_${ev}`, `evt_${ev2}`],
    );
    assert.ok(
      got.every((g) => g.body === got[0].body || g.payload.data.id === ev2),
      'a retry changed the body',
    );
    // The waits double from GPUFLEET_WEBHOOK_RETRY_BASE_MS (lower bounds only).
    for (let i = 1; i < 4; i++) {
      const gap = got[i].at - got[i - 1].at;
      assert.ok(gap >= RETRY_BASE_MS * 2 ** (i - 1) * 0.9, `retry ${i} came after ${gap} ms`);
    }
    const items = await until(
      async () => {
        const it = await deliveries(w.id);
        return it.length === 2 && it.every((x) => x.status === 'delivered') && it;
      },
      10000,
      'both delivered',
    );
    const first = items.find((x) => x.event_id === ev);
    assert.equal(first.attempts, 4);
    assert.equal(first.response_code, 200);
    assert.ok(Date.parse(first.last_attempt_at) > Date.parse(first.first_attempt_at));
    assert.equal(items.find((x) => x.event_id === ev2).attempts, 1);
    await remove(w.id);
  });

  test('a receiver killed mid-stream and restarted: every event arrives, in order; a repeat has the same webhook-id and body', async () => {
    const r = await new Receiver('killed').start();
    const w = await createWebhook({ url: r.url, event_types: ['host.deleted'] });
    r.behavior = (req, n) => {
      if (n !== 15) return false;
      r.kill(); // the 15th request is read, never answered, and the receiver is gone
      return true;
    };
    const want = await emit(60, 'host.deleted');
    await until(() => r.requests.length >= 15, 15000, '15 deliveries');
    await sleep(1500);
    r.behavior = null;
    await r.start(); // same port
    await until(
      () => new Set(r.requests.map((q) => q.headers['webhook-id'])).size >= want.length,
      20000,
      'all 60 events',
    );
    await sleep(300);
    const got = r.verified(w.secret);
    const order = [];
    const bodies = new Map();
    for (const g of got) {
      const id = g.payload.data.id;
      assert.equal(g.id, `evt_${id}`);
      if (bodies.has(id)) assert.equal(g.body, bodies.get(id), `event ${id} came twice with different bodies`);
      bodies.set(id, g.body);
      if (order[order.length - 1] !== id) order.push(id);
    }
    assert.deepEqual(order, want, 'lost or out of order');
    assert.ok(got.length >= want.length + 1, 'the unanswered event was not sent again');
    await remove(w.id);
  });

  test('a receiver that never answers times out and delays only its own webhook', async () => {
    const slow = await new Receiver('slow').start();
    const fast = await new Receiver('fast').start();
    slow.behavior = (req, n, res) => {
      slow.held.push(res); // never answered
      return true;
    };
    const ws = await createWebhook({ url: slow.url, event_types: ['job.step'] });
    const wf = await createWebhook({ url: fast.url, event_types: ['job.step'] });
    const want = await emit(30, 'job.step');
    await until(() => fast.requests.length >= 30, 20000, 'the fast receiver');
    assert.ok(
      slow.requests.length <= 2,
      `the slow receiver got ${slow.requests.length} requests before the fast one got 30`,
    );
    assert.deepEqual(
      fast.verified(wf.secret).map((g) => g.payload.data.id),
      want,
    );
    const item = await until(
      async () => (await deliveries(ws.id)).find((x) => x.event_id === want[0]),
      10000,
      'the timed-out attempt',
    );
    assert.equal(item.status, 'retrying');
    assert.equal(item.response_code, null);
    assert.match(item.last_error, /Timeout was reached/);
    assert.ok(item.latency_ms >= TIMEOUT_MS * 0.9);
    await remove(ws.id);
    await remove(wf.id);
    slow.release();
  });

  test('answers are bounded and cleaned: last_error holds at most 1024 bytes of valid UTF-8; the log none of it', async () => {
    const r = await new Receiver('big').start();
    r.behavior = (req, n, res) => {
      res.writeHead(500, { 'content-type': 'application/octet-stream' });
      res.end(
        Buffer.concat([
          Buffer.from(`${MARKER} \u00e9\n`),
          Buffer.from([0xff, 0xfe, 0xc0, 0xaf, 0x00]),
          Buffer.alloc(200000, 0x41),
        ]),
      );
      return true;
    };
    const w = await createWebhook({ url: r.url, event_types: ['gate.verdict'] });
    const [ev] = await emit(1, 'gate.verdict');
    const item = await until(
      async () => (await deliveries(w.id)).find((x) => x.event_id === ev),
      10000,
      'the first attempt',
    );
    assert.equal(item.response_code, 500);
    assert.ok(item.last_error.startsWith(`HTTP 500: ${MARKER} \u00e9 \ufffd`), item.last_error.slice(0, 80));
    assert.ok(Buffer.byteLength(item.last_error) <= 1024);
    assert.ok(!item.last_error.includes('\u0000') && !item.last_error.includes('\n'));
    await remove(w.id);
  });

  test('410 Gone disables the webhook at once, with a webhook.disabled event', async () => {
    const r = await new Receiver('gone').start();
    r.behavior = (req, n, res) => {
      res.writeHead(410);
      res.end();
      return true;
    };
    const w = await createWebhook({ url: r.url, event_types: ['recommendation.opened'] });
    const [ev] = await emit(2, 'recommendation.opened');
    const hook = await until(
      async () => {
        const h = expectStatus(await client.request('GET', `/v1/webhooks/${w.id}`, { token: admin }), 200);
        return !h.enabled && h;
      },
      10000,
      'the webhook disabled',
    );
    assert.match(hook.disabled_reason, /410 Gone/);
    assert.ok(hook.disabled_at);
    const [item] = await deliveries(w.id);
    assert.deepEqual(
      { event_id: item.event_id, status: item.status, attempts: item.attempts, response_code: item.response_code },
      { event_id: ev, status: 'failed', attempts: 1, response_code: 410 },
    );
    assert.equal(r.requests.length, 1);
    const n = psql(
      srv.database.url,
      `SELECT count(*) FROM events WHERE type = 'webhook.disabled' AND data->>'webhook_id' = '${w.id}'`,
    );
    assert.equal(n, '1');
    const data = JSON.parse(
      psql(
        srv.database.url,
        `SELECT data::text FROM events WHERE type = 'webhook.disabled' AND data->>'webhook_id' = '${w.id}'`,
      ),
    );
    assert.equal(data.error_class, 'gone');
    await remove(w.id);
  });

  test('persistent failure: retried until GPUFLEET_WEBHOOK_RETRY_MAX_SECONDS, then disabled with a webhook.disabled event (delivered to a watcher); replay sends the events again, in order', async () => {
    const watcher = await new Receiver('watcher').start();
    const ww = await createWebhook({ url: watcher.url, event_types: ['webhook.disabled'] });
    const r = await new Receiver('failing').start();
    r.behavior = (req, n, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`${MARKER} down`);
      return true;
    };
    const w = await createWebhook({ url: r.url, event_types: ['diagnostics.verdict'] });
    const want = await emit(3, 'diagnostics.verdict');
    // While it retries: status retrying, the answer's code and excerpt, the next attempt.
    const retrying = await until(
      async () => (await deliveries(w.id)).find((x) => x.attempts >= 2),
      10000,
      'a second attempt',
    );
    assert.equal(retrying.status, 'retrying');
    assert.equal(retrying.response_code, 500);
    assert.equal(retrying.last_error, `HTTP 500: ${MARKER} down`);
    assert.ok(retrying.next_attempt_at && Date.parse(retrying.next_attempt_at) > Date.parse(retrying.last_attempt_at));
    const hook = await until(
      async () => {
        const h = expectStatus(await client.request('GET', `/v1/webhooks/${w.id}`, { token: admin }), 200);
        return !h.enabled && h;
      },
      (RETRY_MAX_S + 10) * 1000,
      'the webhook disabled',
    );
    assert.match(
      hook.disabled_reason,
      new RegExp(
        `^event ${want[0]} could not be delivered in ${RETRY_MAX_S} s \\(\\d+ attempts\\); last error: HTTP 500`,
      ),
    );
    const [item] = await deliveries(w.id);
    assert.equal(item.status, 'failed');
    assert.equal(item.event_id, want[0]);
    assert.ok(item.attempts >= 5, `${item.attempts} attempts`);
    assert.ok(Date.parse(item.last_attempt_at) - Date.parse(item.first_attempt_at) >= RETRY_MAX_S * 1000 * 0.9);
    // In order: the later events were never sent.
    assert.ok(r.requests.every((q) => q.headers['webhook-id'] === `evt_${want[0]}`));
    // The watcher is told.
    await until(() => watcher.requests.length >= 1, 10000, 'the webhook.disabled delivery');
    const [note] = watcher.verified(ww.secret);
    assert.equal(note.payload.type, 'webhook.disabled');
    assert.deepEqual(
      {
        webhook_id: note.payload.data.webhook_id,
        event_id: note.payload.data.event_id,
        pool_id: note.payload.data.pool_id,
      },
      { webhook_id: w.id, event_id: want[0], pool_id: null },
    );
    assert.equal(note.payload.data.attempts, item.attempts);
    // Every viewer and every other webhook sees the error class, never the receiver's
    // answer; the detail stays in disabled_reason (admins).
    assert.equal(note.payload.data.error_class, 'http_5xx');
    assert.ok(!JSON.stringify(note.payload).includes(MARKER), JSON.stringify(note.payload));
    assert.match(
      note.payload.data.reason,
      new RegExp(
        `^event ${want[0]} could not be delivered in ${RETRY_MAX_S} s \\(\\d+ attempts\\); last error: http_5xx$`,
      ),
    );
    assert.ok(hook.disabled_reason.includes(MARKER), hook.disabled_reason);
    const stored = psql(
      srv.database.url,
      `SELECT data::text FROM events WHERE type = 'webhook.disabled' AND data->>'webhook_id' = '${w.id}'`,
    );
    assert.ok(stored && !stored.includes(MARKER), stored);

    // Replay: the receiver is fixed; the events come again from the first, in order.
    r.behavior = null;
    const before = r.requests.length;
    expectProblem(
      await client.request('POST', `/v1/webhooks/${w.id}/replay`, { token: admin, body: { from_event_id: 0 } }),
      400,
      'invalid_field',
      'from_event_id',
    );
    expectProblem(
      await client.request('POST', `/v1/webhooks/${w.id}/replay`, { token: admin, body: {} }),
      400,
      'missing_field',
      'from_event_id',
    );
    const replayed = expectStatus(
      await client.request('POST', `/v1/webhooks/${w.id}/replay`, { token: admin, body: { from_event_id: want[0] } }),
      200,
    );
    assert.deepEqual(
      { enabled: replayed.enabled, disabled_reason: replayed.disabled_reason, last_event_id: replayed.last_event_id },
      { enabled: true, disabled_reason: null, last_event_id: want[0] - 1 },
    );
    await until(() => r.requests.length >= before + 3, 15000, 'the replayed events');
    await sleep(300);
    const again = r.verified(w.secret).slice(before);
    assert.deepEqual(
      again.map((g) => g.payload.data.id),
      want,
    );
    const gen2 = await deliveries(w.id, '&status=delivered');
    assert.deepEqual(
      gen2.map((x) => [x.event_id, x.generation]),
      [...want].reverse().map((id) => [id, 2]),
    );
    const audit = await client.request('GET', `/v1/audit-events?action=webhook.replay&resource_id=${w.id}`, {
      token: admin,
    });
    assert.equal(expectStatus(audit, 200).items[0].reason, `from event ${want[0]}`);
    await remove(w.id);
    await remove(ww.id);
  });

  test('two replicas on one database: every event once per lease holder, in order', async () => {
    const b = await startServer({
      name: 'webhooks-b',
      databaseUrl: srv.database.url,
      migrate: false,
      secrets: srv.secrets,
      env: WEBHOOK_ENV,
    });
    try {
      const r = await new Receiver('replicas').start();
      const w = await createWebhook({ url: r.url, event_types: ['recommendation.withdrawn'] });
      const want = [];
      for (let i = 0; i < 4; i++) {
        want.push(...(await emit(25, 'recommendation.withdrawn')));
        await sleep(100);
      }
      await until(
        () => new Set(r.requests.map((q) => q.headers['webhook-id'])).size >= want.length,
        20000,
        'all 100 events',
      );
      await sleep(300);
      const got = r.verified(w.secret).map((g) => g.payload.data.id);
      const order = got.filter((id, i) => got[i - 1] !== id);
      assert.deepEqual(order, want);
      await remove(w.id);
    } finally {
      await b.stop({ dropDatabase: false });
      const log = fs.readFileSync(b.logPath, 'utf8');
      for (const s of secrets) assert.ok(!log.includes(s.slice(6)), "a secret is in replica B's log");
    }
  });
});

/** GET /metrics of server, checked against the Prometheus text format 0.0.4: each family
 * has one # HELP and one # TYPE, before its samples, which stand together; names, labels
 * and values are well formed; a histogram's buckets are cumulative and its +Inf bucket is
 * its _count. Resolves a Map of `name{labels}` (as written) to the value. */
async function scrape(server = srv) {
  const res = await api(server).request('GET', '/metrics');
  expectStatus(res, 200);
  assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const LABELS = `\\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*",?)*\\}`;
  const sampleRe = new RegExp(`^(${NAME})(${LABELS})? (-?[0-9.e+-]+|NaN|[+-]Inf)$`);
  const families = new Map(); // name -> {HELP, TYPE, samples}
  const values = new Map();
  let current = null;
  const familyOf = (name) => {
    const base = name.replace(/_(bucket|sum|count)$/, '');
    const f = families.get(base);
    return f && (f.TYPE === 'histogram' || f.TYPE === 'summary') ? base : name;
  };
  for (const line of res.text.split('\n')) {
    if (line === '') continue;
    const meta = new RegExp(`^# (HELP|TYPE) (${NAME}) (.+)$`).exec(line);
    if (meta) {
      const [, kind, name, rest] = meta;
      const f = families.get(name) || { samples: 0 };
      families.set(name, f);
      assert.equal(f.samples, 0, `# ${kind} ${name} after its samples`);
      assert.equal(f[kind], undefined, `two # ${kind} lines for ${name}`);
      if (kind === 'TYPE') assert.match(rest, /^(counter|gauge|histogram|summary|untyped)$/, line);
      f[kind] = rest;
      if (kind === 'TYPE' && name.endsWith('_total')) assert.equal(rest, 'counter', `${name} is not a counter`);
      current = name;
      continue;
    }
    assert.ok(!line.startsWith('#'), `a comment that is neither HELP nor TYPE: ${line}`);
    const m = sampleRe.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const fam = familyOf(m[1]);
    const f = families.get(fam);
    assert.ok(f && f.HELP && f.TYPE, `${m[1]} has no # HELP and # TYPE before it`);
    assert.equal(fam, current, `the samples of ${fam} are not together`);
    f.samples++;
    values.set(m[1] + (m[2] || ''), Number(m[3]));
  }
  for (const [name, f] of families) {
    assert.ok(f.HELP && f.TYPE, `${name} lacks # HELP or # TYPE`);
    if (f.TYPE !== 'histogram') continue;
    const series = new Map(); // labels without le -> [[le, value]]
    for (const [k, v] of values) {
      const b = new RegExp(`^${name}_bucket\\{(.*)\\}$`).exec(k);
      if (!b) continue;
      const le = /(?:^|,)le="([^"]*)"/.exec(b[1])[1];
      const rest = b[1].replace(/,?le="[^"]*"/, '').replace(/^,/, '');
      if (!series.has(rest)) series.set(rest, []);
      series.get(rest).push([le === '+Inf' ? Infinity : Number(le), v]);
    }
    for (const [rest, buckets] of series) {
      for (let i = 1; i < buckets.length; i++) {
        assert.ok(
          buckets[i][0] > buckets[i - 1][0] && buckets[i][1] >= buckets[i - 1][1],
          `${name}{${rest}}: buckets not cumulative`,
        );
      }
      assert.equal(buckets[buckets.length - 1][0], Infinity, `${name}{${rest}}: no +Inf bucket`);
      const count = values.get(`${name}_count${rest ? `{${rest}}` : ''}`);
      assert.equal(buckets[buckets.length - 1][1], count, `${name}{${rest}}: +Inf bucket differs from _count`);
    }
  }
  return values;
}

describe('/metrics', () => {
  test('attempts counted by result, their durations, the leases held; the exposition format holds', async () => {
    const attempts = (m, result) => m.get(`gpufleet_webhook_deliveries_total{result="${result}"}`);
    // A transfer in flight: its webhook is leased by this replica.
    const slow = await new Receiver('metrics-slow').start();
    slow.behavior = (req, n, res) => {
      slow.held.push(res);
      return true;
    };
    const ws = await createWebhook({ url: slow.url, event_types: ['gate.verdict'] });
    await emit(1, 'gate.verdict');
    await until(() => slow.requests.length >= 1, 10000, 'the held request');
    const before = await scrape();
    assert.ok(
      before.get('gpufleet_webhook_leases') >= 1,
      `gpufleet_webhook_leases ${before.get('gpufleet_webhook_leases')}`,
    );
    await remove(ws.id);
    slow.release();
    // After the tests above: deliveries, failed attempts, and events given up (410 Gone,
    // and persistent failure).
    assert.ok(attempts(before, 'delivered') > 0, 'no delivered attempt counted');
    assert.ok(attempts(before, 'failed_attempt') > 0, 'no failed attempt counted');
    assert.ok(attempts(before, 'given_up') >= 2, `given_up ${attempts(before, 'given_up')}`);
    // Three events, the first of them failing once: at least 3 delivered and 1 failed
    // attempt more, and as many durations.
    const r = await new Receiver('metrics').start();
    r.behavior = (req, n, res) => {
      if (n !== 1) return false;
      res.writeHead(503);
      res.end();
      return true;
    };
    const w = await createWebhook({ url: r.url, event_types: ['host.updated'] });
    const want = await emit(3, 'host.updated');
    await until(
      async () => (await deliveries(w.id, '&status=delivered')).length === want.length,
      10000,
      'three deliveries',
    );
    const after = await scrape();
    assert.ok(attempts(after, 'delivered') - attempts(before, 'delivered') >= 3);
    assert.ok(attempts(after, 'failed_attempt') - attempts(before, 'failed_attempt') >= 1);
    const durations = (m) => m.get('gpufleet_webhook_delivery_duration_seconds_count');
    assert.ok(durations(after) - durations(before) >= 4, `${durations(before)} → ${durations(after)} durations`);
    assert.ok(
      after.get('gpufleet_webhook_delivery_duration_seconds_sum') >
        before.get('gpufleet_webhook_delivery_duration_seconds_sum'),
    );
    assert.ok(after.get('gpufleet_webhook_delivery_duration_seconds_sum') > 0);
    await remove(w.id);
  });
});

describe('the log', () => {
  test('no secret and no receiver answer is in either server log', async () => {
    assert.ok(secrets.size >= 10);
    for (const s of [srv, ssrf]) {
      const log = fs.readFileSync(s.logPath, 'utf8');
      for (const secret of secrets) assert.ok(!log.includes(secret.slice(6)), `a webhook secret is in ${s.logPath}`);
      assert.ok(!log.includes(MARKER), `a receiver's answer is in ${s.logPath}`);
    }
  });
});
