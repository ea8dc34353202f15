'use strict';
// Writes whose transaction fails after the server rendered the answer. Every write
// renders its document (the new pool, the queued job, …) inside the transaction and only
// then records the audit event and commits. A trigger on audit_events makes that last
// part fail for one action at a time:
//   - unique: the audit INSERT raises unique_violation (a constraint after the render):
//     500 internal_error, nothing stored, and the answer is not mistaken for the
//     resource's own 409 (that one is only for the resource's write);
//   - commit: a deferred constraint trigger raises unique_violation at COMMIT: the same;
//   - retry:  the audit INSERT raises serialization_failure once: the transaction is
//     retried and the write succeeds with one audit event.
// The rendered document of the failed (or retried) attempt must be freed exactly once:
// under the sanitized build (GPUFLEET_BIN=bin/…-san, ASAN_OPTIONS=detect_leaks=1) the
// server's log, read after it exits, must hold no AddressSanitizer or LeakSanitizer
// report.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

let srv, client, admin, operator, viewer; // the server, its client and three tokens
let cred, pool, stack, brief, host; // made before the triggers are installed
let job; // queued by the provision case's successful (retried) attempt

const MODES = ['unique', 'commit', 'retry'];

function briefBody(name) {
  return {
    name,
    kind: 'inference_batch',
    model: { name: 'acme/model-1b', parameter_count: 1e9, precision: 'bf16' },
    load: { concurrency: 1 },
    targets: [{ metric: 'items_per_hour', value: 10 }],
  };
}

function modelBody() {
  return {
    key: `lab_${fleet.uniq()}`,
    display_name: 'ACME Lab Accelerator 96GB',
    memory_gib: 96,
    supported_formats: ['bf16'],
  };
}

// A PUT with the current ETag, and whether the resource now has this name (path and token
// are functions: the resource and the tokens exist only once before() ran).
function replaceCase(action, path, token, body) {
  const get = async () => client.request('GET', path(), { token: viewer });
  return {
    action,
    ok: 200,
    run: async (name) => {
      const headers = { 'If-Match': (await get()).headers.get('etag') };
      return client.request('PUT', path(), { token: token(), body: body(name), headers });
    },
    stored: async (name) => expectStatus(await get(), 200).name === name,
  };
}

function failAction(action, mode) {
  psql(srv.database.url, `DELETE FROM gft_fail; INSERT INTO gft_fail VALUES ('${action}', '${mode}')`);
}

function auditCount(action) {
  return Number(psql(srv.database.url, `SELECT count(*) FROM audit_events WHERE action = '${action}'`));
}

before(async () => {
  srv = await startServer({
    name: 'write-failures',
    env: { GPUFLEET_WORKERS: '0', GPUFLEET_SSH_ALLOW_CIDRS: '127.0.0.0/8' },
  });
  client = api(srv);
  admin = srv.token('admin', { sub: 'wf-admin' });
  operator = srv.token('operator', { sub: 'wf-operator' });
  viewer = srv.token('viewer', { sub: 'wf-viewer' });
  cred = await fleet.createCredential(client, admin, fleet.sshKey().text);
  pool = await fleet.createPool(client, admin);
  stack = await fleet.createStack(client, operator);
  brief = expectStatus(
    await client.request('POST', '/v1/briefs', { token: operator, body: briefBody(`wf-${fleet.uniq()}`) }),
    201,
  );
  host = await fleet.createHost(client, operator, {
    name: `wf-${fleet.uniq()}`,
    address: '127.0.0.1',
    port: 2222,
    user: 'gpufleet',
    credential_id: cred.id,
    pool_id: pool.id,
  });
  // The switch: which audited action fails, and how. The sequence is not rolled back,
  // so 'retry' fails the first attempt of each request and lets the second through.
  psql(
    srv.database.url,
    `CREATE TABLE gft_fail (action text PRIMARY KEY, mode text NOT NULL);
     CREATE SEQUENCE gft_retry;
     CREATE FUNCTION gft_fail_now() RETURNS trigger LANGUAGE plpgsql AS $$
     DECLARE m text;
     BEGIN
       SELECT mode INTO m FROM gft_fail WHERE action = NEW.action;
       IF m = 'unique' THEN
         RAISE EXCEPTION 'forced by write_failures.test.js' USING ERRCODE = 'unique_violation';
       ELSIF m = 'retry' AND nextval('gft_retry') % 2 = 1 THEN
         RAISE EXCEPTION 'forced by write_failures.test.js' USING ERRCODE = 'serialization_failure';
       END IF;
       RETURN NEW;
     END $$;
     CREATE FUNCTION gft_fail_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF EXISTS (SELECT 1 FROM gft_fail WHERE action = NEW.action AND mode = 'commit') THEN
         RAISE EXCEPTION 'forced at commit by write_failures.test.js' USING ERRCODE = 'unique_violation';
       END IF;
       RETURN NULL;
     END $$;
     CREATE TRIGGER gft_fail_now BEFORE INSERT ON audit_events
       FOR EACH ROW EXECUTE FUNCTION gft_fail_now();
     CREATE CONSTRAINT TRIGGER gft_fail_at_commit AFTER INSERT ON audit_events
       DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION gft_fail_at_commit();
     -- serve runs as the application's role (least privilege): the switch is for it to read
     GRANT SELECT ON gft_fail TO PUBLIC;
     GRANT USAGE, UPDATE ON SEQUENCE gft_retry TO PUBLIC`,
  );
});

after(async () => {
  if (srv) await srv.stop();
});

// Each case: the audited action, the request, its success status, and what must hold
// after a failed attempt (nothing stored) and after the retried one.
const cases = [
  {
    action: 'pool.create',
    ok: 201,
    run: (name) => client.request('POST', '/v1/pools', { token: admin, body: fleet.poolBody({ name }) }),
    stored: (name) => psql(srv.database.url, `SELECT count(*) FROM pools WHERE name = '${name}'`) === '1',
  },
  replaceCase(
    'pool.update',
    () => `/v1/pools/${pool.id}`,
    () => admin,
    (name) => fleet.poolBody({ name }),
  ),
  {
    action: 'brief.create',
    ok: 201,
    run: (name) => client.request('POST', '/v1/briefs', { token: operator, body: briefBody(name) }),
    stored: (name) => psql(srv.database.url, `SELECT count(*) FROM briefs WHERE name = '${name}'`) === '1',
  },
  replaceCase(
    'brief.update',
    () => `/v1/briefs/${brief.id}`,
    () => operator,
    briefBody,
  ),
  {
    action: 'stack.create',
    ok: 201,
    run: (name) => client.request('POST', '/v1/stacks', { token: operator, body: fleet.stackBody({ name }) }),
    stored: async (name) =>
      expectStatus(await client.request('GET', `/v1/stacks?name_prefix=${name}`, { token: viewer }), 200).items
        .length === 1,
  },
  {
    action: 'credential.create',
    ok: 201,
    run: (name) =>
      client.request('POST', '/v1/credentials', { token: admin, body: { name, private_key: fleet.sshKey().text } }),
    stored: async (name) =>
      expectStatus(await client.request('GET', `/v1/credentials?name_prefix=${name}`, { token: admin }), 200).items
        .length === 1,
  },
  {
    action: 'gpu_model.create',
    ok: 201,
    run: (name) => client.request('POST', '/v1/gpu-models', { token: admin, body: { ...modelBody(), key: name } }),
    stored: async (name) => (await client.request('GET', `/v1/gpu-models/${name}`, { token: viewer })).status === 200,
    name: () => `lab_${fleet.uniq()}`,
  },
  {
    action: 'host.create',
    ok: 201,
    run: (name) =>
      client.request('POST', '/v1/hosts', {
        token: operator,
        body: {
          name,
          address: '127.0.0.2',
          user: 'gpufleet',
          credential_id: cred.id,
          pool_id: pool.id,
          trust_on_first_use: true,
        },
      }),
    stored: (name) => psql(srv.database.url, `SELECT count(*) FROM hosts WHERE name = '${name}'`) === '1',
  },
  {
    action: 'host.update',
    ok: 200,
    run: (name) =>
      client.request('PATCH', `/v1/hosts/${host.id}`, { token: operator, body: { labels: { mark: name } } }),
    stored: async (name) =>
      expectStatus(await client.request('GET', `/v1/hosts/${host.id}`, { token: viewer }), 200).labels.mark === name,
  },
  {
    action: 'host.provision',
    ok: 202,
    run: async () => {
      const res = await client.request('POST', `/v1/hosts/${host.id}/provision`, {
        token: operator,
        body: { stack_id: stack.id },
      });
      if (res.status === 202) job = res.body;
      return res;
    },
    stored: () => psql(srv.database.url, `SELECT count(*) FROM jobs WHERE host_id = '${host.id}'`) === '1',
  },
  {
    action: 'job.cancel',
    ok: 202,
    run: () => client.request('POST', `/v1/jobs/${job.id}/cancel`, { token: operator }),
    stored: () => psql(srv.database.url, `SELECT state FROM jobs WHERE id = '${job.id}'`) === 'cancelled',
  },
];

describe('a write whose transaction fails after its document was rendered', () => {
  for (const c of cases) {
    test(`${c.action}: 500 when the audit insert or the COMMIT fails, 2xx after a retry`, async () => {
      for (const mode of MODES) {
        const name = c.name ? c.name() : `wf-${mode}-${fleet.uniq()}`;
        const before = auditCount(c.action);
        failAction(c.action, mode);
        let res;
        try {
          res = await c.run(name);
        } finally {
          failAction('', 'none');
        }
        if (mode === 'retry') {
          expectStatus(res, c.ok);
          assert.equal(await c.stored(name), true, `${c.action}: the retried write is stored`);
          assert.equal(auditCount(c.action), before + 1, `${c.action}: one audit event`);
        } else {
          expectProblem(res, 500, 'internal_error');
          assert.equal(await c.stored(name), false, `${c.action} (${mode}): nothing is stored`);
          assert.equal(auditCount(c.action), before, `${c.action} (${mode}): no audit event`);
        }
      }
    });
  }
});

// Idempotency-Key: the claim, the handler's write and the stored answer are one
// transaction. Whatever fails (the write, its COMMIT, storing the answer), nothing is
// left behind: no resource without its key's record, no claimed key without an outcome;
// the same key then runs the request once, and replays its answer after that.
describe('Idempotency-Key: the claim, the write and the stored answer commit together', () => {
  before(() => {
    psql(
      srv.database.url,
      `CREATE FUNCTION gft_fail_idem() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NEW.state = 'done' AND EXISTS (SELECT 1 FROM gft_fail WHERE action = 'idem.finish') THEN
           RAISE EXCEPTION 'forced by write_failures.test.js' USING ERRCODE = 'unique_violation';
         END IF;
         RETURN NEW;
       END $$;
       CREATE TRIGGER gft_fail_idem BEFORE INSERT OR UPDATE ON idempotency_keys
         FOR EACH ROW EXECUTE FUNCTION gft_fail_idem()`,
    );
  });
  const keyRows = (key) => psql(srv.database.url, `SELECT count(*) FROM idempotency_keys WHERE key = '${key}'`);
  const pools = (name) => psql(srv.database.url, `SELECT count(*) FROM pools WHERE name = '${name}'`);
  const create = (name, key) =>
    client.request('POST', '/v1/pools', {
      token: admin,
      body: fleet.poolBody({ name }),
      headers: { 'Idempotency-Key': key },
    });

  for (const [what, action, mode] of [
    ['storing the answer fails', 'idem.finish', 'now'],
    ['the write fails (its audit insert)', 'pool.create', 'unique'],
    ['the COMMIT fails', 'pool.create', 'commit'],
  ]) {
    test(`${what}: 500, no pool, no key; the same key then creates one pool and replays it`, async () => {
      const name = `wf-idem-${fleet.uniq()}`;
      const key = `wf-idem-${fleet.uniq()}`;
      failAction(action, mode);
      let res;
      try {
        res = await create(name, key);
      } finally {
        failAction('', 'none');
      }
      expectProblem(res, 500, 'internal_error');
      assert.equal(pools(name), '0', 'the write was rolled back with its key');
      assert.equal(keyRows(key), '0', 'no claim is left without an outcome');
      const first = expectStatus(await create(name, key), 201);
      const again = await create(name, key);
      expectStatus(again, 201);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.body.id, first.id);
      assert.equal(pools(name), '1');
      assert.equal(psql(srv.database.url, `SELECT state FROM idempotency_keys WHERE key = '${key}'`), 'done');
    });
  }

  test('two concurrent requests with one key: one pool, the second answer is the replay of the first', async () => {
    const name = `wf-idem-${fleet.uniq()}`;
    const key = `wf-idem-${fleet.uniq()}`;
    const [a, b] = await Promise.all([create(name, key), create(name, key)]);
    expectStatus(a, 201);
    expectStatus(b, 201);
    assert.equal(a.body.id, b.body.id);
    assert.equal([a, b].filter((x) => x.headers.get('idempotent-replayed') === 'true').length, 1);
    assert.equal(pools(name), '1');
  });
});

describe('the sanitized server', () => {
  test('exits without an AddressSanitizer or LeakSanitizer report', async () => {
    await srv.stop();
    const log = fs.readFileSync(srv.logPath, 'utf8');
    // Only this run's part of the log (the file is appended to across runs).
    const mine = log.slice(log.lastIndexOf('=== '));
    for (const pattern of [/AddressSanitizer/, /LeakSanitizer/, /runtime error/]) {
      assert.doesNotMatch(mine, pattern, `sanitizer report in ${srv.logPath}`);
    }
  });
});
