'use strict';
// Projects and the catalog side of the fleet: briefs (and their sizing), stacks,
// credentials, pools and GPU models belong to a project. Another project's object answers
// 404 on every route (GET, PUT/PATCH, DELETE), lists never show it and `?project=` of a
// project the caller may not see answers 400; creates take `project` (left out by a caller
// in one project, required of one in several, 404 for a project the caller may not see,
// with nothing written); documents carry their project. Stacks and GPU models may be
// shared, by a platform admin only; a pool's gpu_model must be a model its project may
// use. Credentials carry their binding (allowed_users, allowed_cidrs), changed by PATCH
// and audited with before and after.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');

const { startServer, psql } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');
const fleet = require('./lib/fleet');

const uniq = () => crypto.randomBytes(4).toString('hex');

let srv, client, key;
let platform; // an admin token without a project
const A = {}; // {id, name, admin, operator, viewer}
const B = {};
let both; // admin in A (token) and in B (stored membership)
let mixed; // operator in B (token), viewer in A (stored membership)

const sql = (q) => psql(srv.database.url, q);
const get = (path, token) => client.request('GET', path, { token });
const post = (path, token, body) => client.request('POST', path, { token, body });

function briefBody(extra = {}) {
  return {
    name: `brief-${uniq()}`,
    kind: 'inference_batch',
    model: { name: 'acme/model-7b', parameter_count: 7e9, precision: 'bf16' },
    load: { concurrency: 1 },
    targets: [{ metric: 'items_per_hour', value: 10 }],
    ...extra,
  };
}
function modelBody(extra = {}) {
  return {
    key: `lab_${uniq()}`,
    display_name: 'ACME Lab Accelerator 96GB',
    memory_gib: 96,
    supported_formats: ['bf16', 'fp16'],
    ...extra,
  };
}
const credBody = (extra = {}) => ({ name: `cred-${uniq()}`, private_key: key.text, ...extra });

/** Every page of a list (the caller's view), as items. */
async function listAll(path, token) {
  const sep = path.includes('?') ? '&' : '?';
  return expectStatus(await get(`${path}${sep}limit=500`, token), 200).items;
}

/** The ETag a GET of path answers (for If-Match). */
async function etagOf(path, token) {
  const res = await get(path, token);
  expectStatus(res, 200);
  return res.headers.get('etag');
}

/** Audit rows of an action on a resource, from the database (status, project name, before, after). */
function auditRows(action, resourceId) {
  const out = sql(
    `SELECT a.status, coalesce(p.name, ''), coalesce(a.before::text, ''), coalesce(a.after::text, '')
       FROM audit_events a LEFT JOIN projects p ON p.id = a.project_id
      WHERE a.action = '${action}' AND a.resource_id = '${resourceId}' ORDER BY a.seq`,
  );
  return out
    ? out.split('\n').map((l) => {
        const [status, project, before, after] = l.split('|');
        return {
          status: Number(status),
          project,
          before: before ? JSON.parse(before) : null,
          after: after ? JSON.parse(after) : null,
        };
      })
    : [];
}

before(async () => {
  key = fleet.sshKey();
  srv = await startServer({ name: 'projects_catalog' });
  client = api(srv);
  platform = srv.token('admin', { sub: 'platform' });
  for (const [p, tag] of [
    [A, 'a'],
    [B, 'b'],
  ]) {
    const made = expectStatus(await post('/v1/projects', platform, { name: `team-${tag}-${uniq()}` }), 201);
    p.id = made.id;
    p.name = made.name;
    p.admin = srv.token('admin', { sub: `${tag}-admin`, project: p.name });
    p.operator = srv.token('operator', { sub: `${tag}-operator`, project: p.name });
    p.viewer = srv.token('viewer', { sub: `${tag}-viewer`, project: p.name });
  }
  both = srv.token('admin', { sub: 'carol', project: A.name });
  expectStatus(
    await client.request('PUT', `/v1/projects/${B.id}/members/carol`, { token: platform, body: { role: 'admin' } }),
    200,
  );
  mixed = srv.token('operator', { sub: 'dave', project: B.name });
  expectStatus(
    await client.request('PUT', `/v1/projects/${A.id}/members/dave`, { token: platform, body: { role: 'viewer' } }),
    200,
  );
});

after(async () => {
  if (srv) await srv.stop();
  if (key) fs.rmSync(key.dir, { recursive: true, force: true });
});

/**
 * The rules every project-owned collection follows. make(token, extra) posts a create
 * body (extra merged in) and returns the response; count(project) says how many rows the
 * project holds (from the database).
 */
function commonRules(what, collection, { make, count, creator }) {
  test(`${what}: a caller in one project may leave project out; the document carries it`, async () => {
    const doc = expectStatus(await make(creator(A)), 201);
    assert.deepEqual(doc.project, { id: A.id, name: A.name });
    const again = expectStatus(await get(`${collection}/${doc.id}`, creator(A)), 200);
    assert.deepEqual(again.project, { id: A.id, name: A.name });
  });

  test(`${what}: a caller in two projects must name one (400 missing_field project), and may`, async () => {
    const before_ = count(B);
    expectProblem(await make(both), 400, 'missing_field', 'project');
    assert.equal(count(B), before_);
    const byName = expectStatus(await make(both, { project: B.name }), 201);
    assert.deepEqual(byName.project, { id: B.id, name: B.name });
    const byId = expectStatus(await make(both, { project: A.id }), 201);
    assert.equal(byId.project.name, A.name);
  });

  test(`${what}: naming a project the caller may not see answers 404 and writes nothing`, async () => {
    const nA = count(A);
    expectProblem(await make(creator(B), { project: A.name }), 404, 'not_found', 'project');
    expectProblem(await make(creator(B), { project: A.id }), 404, 'not_found', 'project');
    expectProblem(await make(creator(B), { project: 'no-such-project' }), 404, 'not_found', 'project');
    assert.equal(count(A), nA);
  });

  test(`${what}: B's list never holds A's rows, and ?project=A answers 400 to B`, async () => {
    const a = expectStatus(await make(creator(A)), 201);
    const bItems = await listAll(collection, creator(B));
    assert.ok(bItems.length > 0, 'B sees its own rows');
    assert.ok(!bItems.some((x) => x.id === a.id), `B's list holds A's ${what}`);
    assert.ok(bItems.every((x) => x.project.id === B.id || x.shared === true));
    for (const ref of [A.name, A.id])
      expectProblem(await get(`${collection}?project=${ref}`, creator(B)), 400, 'invalid_parameter', 'project');
    const aOnly = await listAll(`${collection}?project=${A.name}`, creator(A));
    assert.ok(aOnly.some((x) => x.id === a.id));
    assert.ok(aOnly.every((x) => x.project.id === A.id));
    const all = await listAll(collection, platform);
    assert.ok(all.some((x) => x.id === a.id) && all.some((x) => x.project.id === B.id), 'a platform admin sees all');
    const bOnly = await listAll(`${collection}?project=${B.id}`, platform);
    assert.ok(bOnly.length > 0 && bOnly.every((x) => x.project.id === B.id));
  });
}

describe('briefs', () => {
  const make = (token, extra) => post('/v1/briefs', token, briefBody(extra));
  const count = (p) => Number(sql(`SELECT count(*) FROM briefs WHERE project_id = '${p.id}'`));
  commonRules('brief', '/v1/briefs', { make, count, creator: (p) => p.operator });

  test("another project's brief answers 404 to GET, PUT, DELETE and sizing; nothing changes", async () => {
    const brief = expectStatus(await make(A.operator), 201);
    const path = `/v1/briefs/${brief.id}`;
    const etag = await etagOf(path, A.viewer);
    expectProblem(await get(path, B.viewer), 404, 'not_found');
    expectProblem(await get(`${path}/sizing`, B.viewer), 404, 'not_found');
    const put = await client.request('PUT', path, {
      token: B.operator,
      headers: { 'If-Match': etag },
      body: briefBody({ name: 'taken-over' }),
    });
    expectProblem(put, 404, 'not_found');
    expectProblem(await client.request('DELETE', path, { token: B.admin }), 404, 'not_found');
    assert.deepEqual(expectStatus(await get(path, A.viewer), 200), brief);
    // The refusals of writes are audited as brief.denied, in A (whose object it is).
    const denied = auditRows('brief.denied', brief.id);
    assert.deepEqual(
      denied.map((d) => [d.status, d.project]),
      [
        [404, A.name],
        [404, A.name],
      ],
    );
    // A brief that does not exist answers the same, without an audit row.
    const none = crypto.randomUUID();
    expectProblem(await client.request('DELETE', `/v1/briefs/${none}`, { token: B.admin }), 404, 'not_found');
    assert.equal(auditRows('brief.denied', none).length, 0);
  });

  test('a caller that may see the brief but not write it gets 403, audited', async () => {
    const brief = expectStatus(await make(A.operator), 201);
    const path = `/v1/briefs/${brief.id}`;
    assert.deepEqual(expectStatus(await get(path, mixed), 200), brief); // viewer in A
    const put = await client.request('PUT', path, {
      token: mixed,
      headers: { 'If-Match': await etagOf(path, A.viewer) },
      body: briefBody(),
    });
    expectProblem(put, 403, 'insufficient_role');
    assert.deepEqual(
      auditRows('brief.denied', brief.id).map((d) => [d.status, d.project]),
      [[403, A.name]],
    );
    assert.deepEqual(expectStatus(await get(path, A.viewer), 200), brief);
  });

  test('PUT keeps the brief in its project: project may name it, not another', async () => {
    const brief = expectStatus(await make(both, { project: A.name }), 201);
    const path = `/v1/briefs/${brief.id}`;
    let etag = await etagOf(path, both);
    const moved = await client.request('PUT', path, {
      token: both,
      headers: { 'If-Match': etag },
      body: briefBody({ project: B.name }),
    });
    expectProblem(moved, 400, 'invalid_field', 'project');
    const same = await client.request('PUT', path, {
      token: both,
      headers: { 'If-Match': etag },
      body: briefBody({ name: 'renamed', project: A.id }),
    });
    const doc = expectStatus(same, 200);
    assert.equal(doc.name, 'renamed');
    assert.equal(doc.revision, 2);
    assert.deepEqual(doc.project, { id: A.id, name: A.name });
    etag = same.headers.get('etag');
    const unseen = await client.request('PUT', path, {
      token: A.operator,
      headers: { 'If-Match': etag },
      body: briefBody({ project: B.name }),
    });
    expectProblem(unseen, 404, 'not_found', 'project');
  });

  test('DELETE by the project admin works and is audited in the project', async () => {
    const brief = expectStatus(await make(A.operator), 201);
    expectStatus(await client.request('DELETE', `/v1/briefs/${brief.id}`, { token: A.admin }), 204);
    assert.deepEqual(
      auditRows('brief.delete', brief.id).map((d) => [d.status, d.project]),
      [[204, A.name]],
    );
  });
});

describe('stacks', () => {
  const make = (token, extra) => post('/v1/stacks', token, fleet.stackBody(extra));
  const count = (p) => Number(sql(`SELECT count(*) FROM stacks WHERE project_id = '${p.id}'`));
  commonRules('stack', '/v1/stacks', { make, count, creator: (p) => p.operator });

  test("another project's stack is hidden (GET, lineage) and may not be superseded by B", async () => {
    const stack = expectStatus(await make(A.operator), 201);
    assert.equal(stack.shared, false);
    expectProblem(await get(`/v1/stacks/${stack.id}`, B.viewer), 404, 'not_found');
    expectProblem(await get(`/v1/stacks/${stack.id}/lineage`, B.viewer), 404, 'not_found');
    const nB = count(B);
    const sup = expectProblem(await make(B.operator, { supersedes: stack.id }), 400, 'invalid_field', 'supersedes');
    const unknown = expectProblem(
      await make(B.operator, { supersedes: crypto.randomUUID() }),
      400,
      'invalid_field',
      'supersedes',
    );
    assert.equal(sup.detail, unknown.detail, 'the same answer as for a stack that does not exist');
    assert.equal(count(B), nB);
    expectStatus(await make(A.operator, { supersedes: stack.id }), 201);
  });

  test('only a platform admin shares a stack; then every project reads, lists and supersedes it', async () => {
    const stack = expectStatus(await make(A.operator), 201);
    const path = `/v1/stacks/${stack.id}`;
    expectProblem(
      await client.request('PATCH', path, { token: A.admin, body: { shared: true } }),
      403,
      'insufficient_role',
    );
    expectProblem(await client.request('PATCH', path, { token: B.admin, body: { shared: true } }), 404, 'not_found');
    expectProblem(
      await client.request('PATCH', path, { token: A.operator, body: { shared: true } }),
      403,
      'insufficient_role',
    );
    assert.equal(expectStatus(await get(path, A.viewer), 200).shared, false);
    assert.deepEqual(
      auditRows('stack.denied', stack.id).map((d) => d.status),
      [403],
      'the project admin refused by the handler is audited (the operator and B at the door)',
    );

    const shared = expectStatus(await client.request('PATCH', path, { token: platform, body: { shared: true } }), 200);
    assert.equal(shared.shared, true);
    assert.deepEqual({ ...shared, shared: false }, stack, 'nothing but shared changed');
    const [audit] = auditRows('stack.share', stack.id);
    assert.deepEqual(
      [audit.status, audit.project, audit.before, audit.after],
      [200, A.name, { shared: false }, { shared: true }],
    );

    assert.deepEqual(expectStatus(await get(path, B.viewer), 200), shared);
    assert.equal(expectStatus(await get(`${path}/lineage`, B.viewer), 200).items[0].id, stack.id);
    assert.ok((await listAll('/v1/stacks?shared=true', B.viewer)).some((x) => x.id === stack.id));
    assert.ok(!(await listAll('/v1/stacks?shared=false', B.viewer)).some((x) => x.id === stack.id));
    assert.ok(!(await listAll(`/v1/stacks?project=${B.name}`, B.viewer)).some((x) => x.id === stack.id));
    const child = expectStatus(await make(B.operator, { supersedes: stack.id }), 201);
    assert.equal(child.project.id, B.id);
    // B's lineage of its own stack shows A's shared ancestor.
    const lineage = expectStatus(await get(`/v1/stacks/${child.id}/lineage`, B.viewer), 200).items;
    assert.deepEqual(
      lineage.map((x) => x.id),
      [child.id, stack.id],
    );
    // B may not unshare it either.
    expectProblem(
      await client.request('PATCH', path, { token: B.admin, body: { shared: false } }),
      403,
      'insufficient_role',
    );

    expectStatus(await client.request('PATCH', path, { token: platform, body: { shared: false } }), 200);
    expectProblem(await get(path, B.viewer), 404, 'not_found');
    // the chain of B's stack now leaves the unshared ancestor out
    const after_ = expectStatus(await get(`/v1/stacks/${child.id}/lineage`, B.viewer), 200).items;
    assert.deepEqual(
      after_.map((x) => x.id),
      [child.id],
    );
  });

  test('PATCH of a stack that does not exist, or with a bad body', async () => {
    expectProblem(
      await client.request('PATCH', `/v1/stacks/${crypto.randomUUID()}`, { token: platform, body: { shared: true } }),
      404,
      'not_found',
    );
    const stack = expectStatus(await make(A.operator), 201);
    expectProblem(
      await client.request('PATCH', `/v1/stacks/${stack.id}`, { token: platform, body: { shared: 'yes' } }),
      400,
      'invalid_field',
      'shared',
    );
    expectProblem(
      await client.request('PATCH', `/v1/stacks/${stack.id}`, { token: platform, body: {} }),
      400,
      'missing_field',
      'shared',
    );
  });
});

describe('credentials', () => {
  const make = (token, extra) => post('/v1/credentials', token, credBody(extra));
  const count = (p) => Number(sql(`SELECT count(*) FROM credentials WHERE project_id = '${p.id}'`));
  commonRules('credential', '/v1/credentials', { make, count, creator: (p) => p.admin });

  test('the binding is stored and shown (never the key); bad entries are refused', async () => {
    const c = expectStatus(
      await make(A.admin, {
        allowed_users: ['ubuntu', 'gpu-ops'],
        allowed_cidrs: ['10.20.0.0/16', 'fd00::/8', '192.0.2.7'],
      }),
      201,
    );
    assert.deepEqual(c.allowed_users, ['ubuntu', 'gpu-ops']);
    assert.deepEqual(c.allowed_cidrs, ['10.20.0.0/16', 'fd00::/8', '192.0.2.7']);
    assert.ok(!JSON.stringify(c).includes('PRIVATE'));
    assert.deepEqual(expectStatus(await get(`/v1/credentials/${c.id}`, A.admin), 200), c);
    const nA = count(A);
    for (const [extra, field] of [
      [{ allowed_cidrs: ['10.0.0.0/33'] }, 'allowed_cidrs[0]'],
      [{ allowed_cidrs: ['10.0.0.0/8,0.0.0.0/0'] }, 'allowed_cidrs[0]'],
      [{ allowed_cidrs: ['10.0.0.0/8', 'example.com'] }, 'allowed_cidrs[1]'],
      [{ allowed_cidrs: [] }, 'allowed_cidrs'],
      [{ allowed_users: ['Root'] }, 'allowed_users[0]'],
      [{ allowed_users: ['ubuntu; rm -rf /'] }, 'allowed_users[0]'],
      [{ allowed_users: 'ubuntu' }, 'allowed_users'],
    ])
      expectProblem(await make(A.admin, extra), 400, 'invalid_field', field);
    assert.equal(count(A), nA);
  });

  test("another project's credential answers 404 to GET, PATCH and DELETE", async () => {
    const c = expectStatus(await make(A.admin), 201);
    const path = `/v1/credentials/${c.id}`;
    expectProblem(await get(path, B.admin), 404, 'not_found');
    expectProblem(
      await client.request('PATCH', path, { token: B.admin, body: { allowed_users: ['root'] } }),
      404,
      'not_found',
    );
    expectProblem(await client.request('DELETE', path, { token: B.admin }), 404, 'not_found');
    assert.deepEqual(expectStatus(await get(path, A.admin), 200), c);
    assert.deepEqual(
      auditRows('credential.denied', c.id).map((d) => [d.status, d.project]),
      [
        [404, A.name],
        [404, A.name],
      ],
    );
    // Credentials are read by admins only: an admin of B who is a viewer of A does not see
    // A's credentials, by id or in the list.
    expectProblem(await get(path, mixed), 403, 'insufficient_role'); // no admin role anywhere
    const bAdminAViewer = srv.token('admin', { sub: 'erin', project: B.name });
    expectStatus(
      await client.request('PUT', `/v1/projects/${A.id}/members/erin`, { token: platform, body: { role: 'viewer' } }),
      200,
    );
    expectProblem(await get(path, bAdminAViewer), 404, 'not_found');
    assert.ok(!(await listAll('/v1/credentials', bAdminAViewer)).some((x) => x.id === c.id));
    assert.deepEqual(await listAll(`/v1/credentials?project=${A.name}`, bAdminAViewer), []);
  });

  test("PATCH changes the binding (the project's admin or a platform admin), audited before and after", async () => {
    const c = expectStatus(await make(A.admin, { allowed_users: ['ubuntu'] }), 201);
    const path = `/v1/credentials/${c.id}`;
    const one = expectStatus(
      await client.request('PATCH', path, { token: A.admin, body: { allowed_cidrs: ['10.30.0.0/16'] } }),
      200,
    );
    assert.deepEqual([one.allowed_users, one.allowed_cidrs], [['ubuntu'], ['10.30.0.0/16']]);
    assert.deepEqual({ ...one, allowed_cidrs: null }, c, 'nothing else changed');
    const two = expectStatus(
      await client.request('PATCH', path, {
        token: platform,
        body: { allowed_users: null, allowed_cidrs: ['10.31.0.0/16'] },
      }),
      200,
    );
    assert.deepEqual([two.allowed_users, two.allowed_cidrs], [null, ['10.31.0.0/16']]);
    assert.deepEqual(expectStatus(await get(path, A.admin), 200), two);
    const rows = auditRows('credential.bind', c.id);
    assert.deepEqual(
      rows.map((r) => [r.status, r.project, r.before, r.after]),
      [
        [
          200,
          A.name,
          { allowed_users: ['ubuntu'], allowed_cidrs: null },
          { allowed_users: ['ubuntu'], allowed_cidrs: ['10.30.0.0/16'] },
        ],
        [
          200,
          A.name,
          { allowed_users: ['ubuntu'], allowed_cidrs: ['10.30.0.0/16'] },
          { allowed_users: null, allowed_cidrs: ['10.31.0.0/16'] },
        ],
      ],
    );
    expectProblem(await client.request('PATCH', path, { token: A.admin, body: {} }), 400, 'missing_field');
    expectProblem(
      await client.request('PATCH', path, { token: A.admin, body: { allowed_cidrs: ['300.1.1.1/8'] } }),
      400,
      'invalid_field',
      'allowed_cidrs[0]',
    );
    expectProblem(
      await client.request('PATCH', path, { token: A.admin, body: { private_key: key.text } }),
      400,
      'unknown_field',
      'private_key',
    );
    expectProblem(
      await client.request('PATCH', path, { token: A.operator, body: { allowed_users: null } }),
      403,
      'insufficient_role',
    );
    assert.equal(auditRows('credential.bind', c.id).length, 2);
  });

  test('names are unique within a project, not across projects', async () => {
    const name = `shared-name-${uniq()}`;
    expectStatus(await make(A.admin, { name }), 201);
    expectStatus(await make(B.admin, { name }), 201);
    expectProblem(await make(A.admin, { name }), 409, 'already_exists', 'name');
  });
});

describe('GPU models', () => {
  const make = (token, extra) => post('/v1/gpu-models', token, modelBody(extra));

  test('the catalog is shared by every project; a custom model belongs to its project', async () => {
    const h100 = expectStatus(await get('/v1/gpu-models/h100_sxm', B.viewer), 200);
    assert.equal(h100.source, 'catalog');
    assert.equal(h100.project, null);
    assert.equal(h100.shared, true);
    const m = expectStatus(await make(A.admin), 201);
    assert.deepEqual([m.project, m.shared, m.source], [{ id: A.id, name: A.name }, false, 'custom']);
    assert.deepEqual(expectStatus(await get(`/v1/gpu-models/${m.key}`, A.viewer), 200), m);
    expectProblem(await get(`/v1/gpu-models/${m.key}`, B.viewer), 404, 'not_found');
    const bList = await listAll('/v1/gpu-models', B.viewer);
    assert.ok(bList.some((x) => x.key === 'h100_sxm'));
    assert.ok(!bList.some((x) => x.key === m.key));
    assert.ok((await listAll('/v1/gpu-models', A.viewer)).some((x) => x.key === m.key));
    assert.deepEqual(
      (await listAll(`/v1/gpu-models?project=${A.name}`, A.viewer)).map((x) => x.key),
      [m.key],
      '?project= lists the project own models, not the catalog',
    );
    expectProblem(await get(`/v1/gpu-models?project=${A.name}`, B.viewer), 400, 'invalid_parameter', 'project');
    assert.ok((await listAll('/v1/gpu-models?shared=false', A.viewer)).every((x) => !x.shared));
    // The audit row of the create is in A.
    assert.deepEqual(
      auditRows('gpu_model.create', m.key).map((r) => [r.status, r.project]),
      [[201, A.name]],
    );
  });

  test('creates: project rules; the key is a catalog identifier, unique across projects', async () => {
    const body = modelBody();
    expectProblem(await post('/v1/gpu-models', both, body), 400, 'missing_field', 'project');
    expectProblem(await post('/v1/gpu-models', B.admin, { ...body, project: A.name }), 404, 'not_found', 'project');
    expectProblem(await post('/v1/gpu-models', A.operator, body), 403, 'insufficient_role');
    assert.equal(sql(`SELECT count(*) FROM gpu_models WHERE key = '${body.key}'`), '0');
    const m = expectStatus(await post('/v1/gpu-models', both, { ...body, project: B.id }), 201);
    assert.equal(m.project.id, B.id);
    expectProblem(await post('/v1/gpu-models', A.admin, { ...body }), 409, 'already_exists', 'key');
  });

  test('only a platform admin shares a model; the catalog stays shared', async () => {
    const m = expectStatus(await make(A.admin), 201);
    const path = `/v1/gpu-models/${m.key}`;
    expectProblem(
      await client.request('PATCH', path, { token: A.admin, body: { shared: true } }),
      403,
      'insufficient_role',
    );
    expectProblem(await client.request('PATCH', path, { token: B.admin, body: { shared: true } }), 404, 'not_found');
    assert.deepEqual(
      auditRows('gpu_model.denied', m.key).map((r) => [r.status, r.project]),
      [[403, A.name]],
    );
    const shared = expectStatus(await client.request('PATCH', path, { token: platform, body: { shared: true } }), 200);
    assert.deepEqual(shared, { ...m, shared: true });
    assert.deepEqual(expectStatus(await get(path, B.viewer), 200), shared);
    assert.ok((await listAll('/v1/gpu-models?shared=true', B.viewer)).some((x) => x.key === m.key));
    const [audit] = auditRows('gpu_model.share', m.key);
    assert.deepEqual(
      [audit.status, audit.project, audit.before, audit.after],
      [200, A.name, { shared: false }, { shared: true }],
    );

    expectProblem(
      await client.request('PATCH', '/v1/gpu-models/h100_sxm', { token: platform, body: { shared: false } }),
      400,
      'invalid_field',
      'shared',
    );
    assert.equal(expectStatus(await get('/v1/gpu-models/h100_sxm', B.viewer), 200).shared, true);
    expectProblem(
      await client.request('PATCH', '/v1/gpu-models/no_such_model', { token: platform, body: { shared: true } }),
      404,
      'not_found',
    );
  });
});

describe('pools', () => {
  const make = (token, extra) => post('/v1/pools', token, fleet.poolBody(extra));
  const count = (p) => Number(sql(`SELECT count(*) FROM pools WHERE project_id = '${p.id}'`));
  commonRules('pool', '/v1/pools', { make, count, creator: (p) => p.admin });

  test("another project's pool answers 404 to GET, PUT and DELETE", async () => {
    const pool = expectStatus(await make(A.admin), 201);
    const path = `/v1/pools/${pool.id}`;
    const etag = await etagOf(path, A.viewer);
    expectProblem(await get(path, B.viewer), 404, 'not_found');
    const put = await client.request('PUT', path, {
      token: B.admin,
      headers: { 'If-Match': etag },
      body: fleet.poolBody({ name: pool.name, price_per_hour: 0 }),
    });
    expectProblem(put, 404, 'not_found');
    expectProblem(await client.request('DELETE', path, { token: B.admin }), 404, 'not_found');
    assert.deepEqual(expectStatus(await get(path, A.viewer), 200), pool);
    assert.deepEqual(
      auditRows('pool.denied', pool.id).map((d) => [d.status, d.project]),
      [
        [404, A.name],
        [404, A.name],
      ],
    );
    expectStatus(await client.request('DELETE', path, { token: A.admin }), 204);
    assert.deepEqual(
      auditRows('pool.delete', pool.id).map((d) => [d.status, d.project]),
      [[204, A.name]],
    );
  });

  test("a pool's gpu_model must be one its project may use (another's answers as an unknown key)", async () => {
    const m = expectStatus(await post('/v1/gpu-models', A.admin, modelBody()), 201);
    const nB = count(B);
    const theirs = expectProblem(await make(B.admin, { gpu_model: m.key }), 400, 'invalid_field', 'gpu_model');
    const unknown = expectProblem(
      await make(B.admin, { gpu_model: `zz_${uniq()}` }),
      400,
      'invalid_field',
      'gpu_model',
    );
    assert.equal(theirs.detail, unknown.detail, 'no leak: the same answer');
    assert.equal(count(B), nB);
    const own = expectStatus(await make(A.admin, { gpu_model: m.key }), 201);
    assert.equal(own.gpu_model, m.key);
    expectStatus(await make(B.admin, { gpu_model: 'h100_sxm' }), 201); // the catalog is shared

    // Shared by a platform admin: B's pools may use it.
    expectStatus(
      await client.request('PATCH', `/v1/gpu-models/${m.key}`, { token: platform, body: { shared: true } }),
      200,
    );
    const bPool = expectStatus(await make(B.admin, { gpu_model: m.key }), 201);
    // Unshared: B's pool keeps it (a PUT that keeps the model too), new ones are refused.
    expectStatus(
      await client.request('PATCH', `/v1/gpu-models/${m.key}`, { token: platform, body: { shared: false } }),
      200,
    );
    assert.equal(expectStatus(await get(`/v1/pools/${bPool.id}`, B.viewer), 200).gpu_model, m.key);
    const path = `/v1/pools/${bPool.id}`;
    const kept = await client.request('PUT', path, {
      token: B.admin,
      headers: { 'If-Match': await etagOf(path, B.admin) },
      body: fleet.poolBody({ name: bPool.name, gpu_model: m.key, price_per_hour: 3 }),
    });
    assert.equal(expectStatus(kept, 200).price_per_hour, 3);
    expectProblem(await make(B.admin, { gpu_model: m.key }), 400, 'invalid_field', 'gpu_model');
    // Moving B's other pool to A's unshared model is refused; nothing changes.
    const other = expectStatus(await make(B.admin), 201);
    const otherPath = `/v1/pools/${other.id}`;
    const moved = await client.request('PUT', otherPath, {
      token: B.admin,
      headers: { 'If-Match': await etagOf(otherPath, B.admin) },
      body: fleet.poolBody({ name: other.name, gpu_model: m.key }),
    });
    expectProblem(moved, 400, 'invalid_field', 'gpu_model');
    assert.deepEqual(expectStatus(await get(otherPath, B.admin), 200), other);
  });

  test('PUT keeps a pool in its project', async () => {
    const pool = expectStatus(await make(both, { project: A.name }), 201);
    const path = `/v1/pools/${pool.id}`;
    const res = await client.request('PUT', path, {
      token: both,
      headers: { 'If-Match': await etagOf(path, both) },
      body: fleet.poolBody({ name: pool.name, project: B.name }),
    });
    expectProblem(res, 400, 'invalid_field', 'project');
    assert.deepEqual(expectStatus(await get(path, both), 200), pool);
  });

  test('a pool read, changed and sent back (with its project object) is accepted', async () => {
    const pool = expectStatus(await make(both, { project: B.name }), 201);
    const path = `/v1/pools/${pool.id}`;
    const res = await get(path, both);
    const body = { ...expectStatus(res, 200), price_per_hour: 7 };
    for (const k of ['id', 'revision', 'gate_version', 'created_at', 'updated_at', 'created_by']) delete body[k];
    const put = await client.request('PUT', path, {
      token: both,
      headers: { 'If-Match': res.headers.get('etag') },
      body,
    });
    const doc = expectStatus(put, 200);
    assert.deepEqual([doc.price_per_hour, doc.project], [7, { id: B.id, name: B.name }]);
    // another project's object is still refused
    const moved = await client.request('PUT', path, {
      token: both,
      headers: { 'If-Match': put.headers.get('etag') },
      body: { ...body, project: { id: A.id, name: A.name } },
    });
    expectProblem(moved, 400, 'invalid_field', 'project');
  });

  test('pool names are unique within a project only', async () => {
    const name = `pool-name-${uniq()}`;
    expectStatus(await make(A.admin, { name }), 201);
    expectStatus(await make(B.admin, { name }), 201);
    expectProblem(await make(A.admin, { name }), 409, 'already_exists', 'name');
  });
});

describe('sizing', () => {
  test("a stored brief is sized over the shared models and its project's own", async () => {
    const a = expectStatus(await post('/v1/gpu-models', A.admin, modelBody()), 201);
    const b = expectStatus(await post('/v1/gpu-models', B.admin, modelBody()), 201);
    const brief = expectStatus(await post('/v1/briefs', A.operator, briefBody()), 201);
    const keysOf = (s) => s.gpu_options.map((o) => o.gpu_model);
    for (const token of [A.viewer, platform]) {
      const keys = keysOf(expectStatus(await get(`/v1/briefs/${brief.id}/sizing`, token), 200));
      assert.ok(keys.includes('h100_sxm'), 'the catalog is there');
      assert.ok(keys.includes(a.key), "A's own model is there");
      assert.ok(!keys.includes(b.key), "B's model is not");
    }
    expectProblem(await get(`/v1/briefs/${brief.id}/sizing`, B.viewer), 404, 'not_found');

    // An unsaved brief: the models of the project the body names, else those the caller sees.
    const plain = keysOf(expectStatus(await post('/v1/sizing', B.viewer, briefBody()), 200));
    assert.ok(plain.includes(b.key) && !plain.includes(a.key));
    const inB = keysOf(expectStatus(await post('/v1/sizing', both, briefBody({ project: B.name })), 200));
    assert.ok(inB.includes(b.key) && !inB.includes(a.key));
    expectProblem(await post('/v1/sizing', B.viewer, briefBody({ project: A.name })), 404, 'not_found', 'project');
  });
});
