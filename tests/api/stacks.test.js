'use strict';
// Pinned software stacks: creation, the digest pin, driver/CUDA checks
// against the compatibility tables, strict patterns for everything that may
// reach a remote command, immutability (405; PATCH only shares), supersedes and lineage, list
// filters, ETags and the audit trail.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');

const { startServer } = require('./lib/server');
const { api } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

let srv;
let client;
let admin;
let operator;
let operatorSub;
let viewer;

const uniq = () => crypto.randomBytes(4).toString('hex');
const hex64 = () => crypto.randomBytes(32).toString('hex');
const clone = (v) => JSON.parse(JSON.stringify(v));

// A string with NUL (\u0000) is refused by the JSON parser itself
// (invalid_json, without a field); anything else must be refused by the
// field's validator.
function expectRefused(res, value, codes, field) {
  if (String(value).includes('\u0000')) return expectProblem(res, 400, ['invalid_json', ...[].concat(codes)]);
  return expectProblem(res, 400, codes, field);
}

function vllmStack(overrides = {}) {
  return {
    name: `vllm-0.6.3-${uniq()}`,
    os_image: 'ubuntu-22.04',
    driver_branch: '550',
    driver_version: '550.54.15',
    cuda_version: '12.4',
    image: `vllm/vllm-openai:v0.6.3@sha256:${hex64()}`,
    framework: { name: 'vllm', version: '0.6.3' },
    model_revision: '0e9e39f249a16976918f6564b8830bc894c89659',
    startup_config: {
      command: ['vllm', 'serve', '/models/llama-3.1-8b', '--port', '8000', '--max-model-len', '8192'],
      env: { HF_HOME: '/models/hf', VLLM_LOGGING_LEVEL: 'INFO', CUDA_VISIBLE_DEVICES: '0,1' },
      working_dir: '/srv/vllm',
      port: 8000,
    },
    ...overrides,
  };
}

/** A stack with this driver and CUDA (branch derived from the driver). */
function withDriver(driver, cuda, overrides = {}) {
  return vllmStack({ driver_version: driver, driver_branch: driver.split('.')[0], cuda_version: cuda, ...overrides });
}

/** Set (or, with value undefined, delete) a dotted path. */
function withPath(obj, dotted, value) {
  const out = clone(obj);
  const keys = dotted.split('.');
  let o = out;
  for (const k of keys.slice(0, -1)) {
    if (o[k] === undefined) o[k] = {};
    o = o[k];
  }
  if (value === undefined) delete o[keys[keys.length - 1]];
  else o[keys[keys.length - 1]] = value;
  return out;
}

async function create(body, token = operator, headers = {}) {
  const res = await client.request('POST', '/v1/stacks', { token, body, headers });
  return { res, stack: expectStatus(res, 201) };
}

async function walk(query) {
  const items = [];
  let cursor = null;
  let pages = 0;
  do {
    const q = query + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : '');
    const page = expectStatus(await client.request('GET', `/v1/stacks?${q}`, { token: viewer }), 200);
    items.push(...page.items);
    cursor = page.next_cursor;
    assert.ok(++pages < 1000, 'pagination does not end');
  } while (cursor);
  return { items, pages };
}

before(async () => {
  srv = await startServer({ name: 'stacks' });
  client = api(srv);
  admin = srv.token('admin', { sub: 'stacks-admin' });
  operatorSub = `stacks-operator-${uniq()}`;
  operator = srv.token('operator', { sub: operatorSub });
  viewer = srv.token('viewer', { sub: 'stacks-viewer' });
});

after(async () => {
  if (srv) await srv.stop();
});

describe('create and read', () => {
  let created;
  let body;
  let rid;

  test('a pinned stack is accepted (201, Location) without warnings', async () => {
    body = vllmStack();
    rid = `stack-create-${uniq()}`;
    const { res, stack } = await create(body, operator, { 'X-Request-Id': rid });
    created = stack;
    assert.equal(res.headers.get('location'), `/v1/stacks/${stack.id}`);
    assert.deepEqual(stack.warnings, []);
    assert.equal(stack.image_name, 'vllm/vllm-openai:v0.6.3');
    assert.equal(stack.image_digest, body.image.split('@')[1]);
    assert.equal(stack.created_by, operatorSub);
    for (const [k, v] of Object.entries(body)) assert.deepEqual(stack[k], v, `member ${k} not stored as sent`);
    assert.equal(stack.supersedes, undefined);
  });

  test('GET /v1/stacks/{id} returns the same stack; ETag and 304', async () => {
    const res = await client.request('GET', `/v1/stacks/${created.id}`, { token: viewer });
    assert.deepEqual(expectStatus(res, 200), created);
    const etag = res.headers.get('etag');
    const again = await client.request('GET', `/v1/stacks/${created.id}`, {
      token: viewer,
      headers: { 'If-None-Match': etag },
    });
    expectStatus(again, 304);
    assert.equal(again.headers.get('etag'), etag);
  });

  test('the minimal stack: only the required members', async () => {
    const b = vllmStack();
    delete b.model_revision;
    delete b.startup_config;
    const { stack } = await create(b);
    assert.equal(stack.model_revision, undefined);
    assert.equal(stack.startup_config, undefined);
  });

  test('an image without a tag, and a registry with a port, are fine when pinned', async () => {
    const d = hex64();
    const a = (await create(vllmStack({ image: `nvcr.io/nvidia/pytorch@sha256:${d}` }))).stack;
    assert.equal(a.image_name, 'nvcr.io/nvidia/pytorch');
    assert.equal(a.image_digest, `sha256:${d}`);
    const b = (await create(vllmStack({ image: `registry.local:5000/team/serve:1.2.3@sha256:${d}` }))).stack;
    assert.equal(b.image_name, 'registry.local:5000/team/serve:1.2.3');
  });

  test('command arguments are data, not shell: metacharacters without control characters are kept', async () => {
    const b = vllmStack();
    b.startup_config.command = ['python', '-c', 'print("a; b $(c) `d`")', "it's"];
    b.startup_config.env = { PROMPT: 'say "hi"; $(nothing)' };
    const { stack } = await create(b);
    assert.deepEqual(stack.startup_config, b.startup_config);
  });

  test('an unknown or malformed id answers 404', async () => {
    expectProblem(
      await client.request('GET', `/v1/stacks/${crypto.randomUUID()}`, { token: viewer }),
      404,
      'not_found',
    );
    expectProblem(await client.request('GET', '/v1/stacks/latest', { token: viewer }), 404, 'not_found');
  });

  test('roles: viewer reads but may not create; no token 401', async () => {
    expectProblem(
      await client.request('POST', '/v1/stacks', { token: viewer, body: vllmStack() }),
      403,
      'insufficient_role',
    );
    expectProblem(await client.request('GET', '/v1/stacks'), 401, 'missing_token');
    expectStatus(await client.request('POST', '/v1/stacks', { token: admin, body: vllmStack() }), 201);
  });

  test('the create is in the audit trail as stack.create', async () => {
    const q = `/v1/audit-events?action=stack.create&resource_id=${created.id}`;
    const evs = expectStatus(await client.request('GET', q, { token: admin }), 200).items;
    assert.equal(evs.length, 1, `want one event, got ${JSON.stringify(evs)}`);
    assert.equal(evs[0].resource_type, 'stack');
    assert.equal(evs[0].principal, operatorSub);
    assert.equal(evs[0].role, 'operator');
    assert.equal(evs[0].request_id, rid);
    assert.equal(evs[0].method, 'POST');
    assert.equal(evs[0].path, '/v1/stacks');
    assert.equal(evs[0].status, 201);
  });

  test('Idempotency-Key replays the first answer', async () => {
    const key = `stack-idem-${uniq()}`;
    const b = vllmStack();
    const first = await client.request('POST', '/v1/stacks', {
      token: operator,
      body: b,
      headers: { 'Idempotency-Key': key },
    });
    const s1 = expectStatus(first, 201);
    const second = await client.request('POST', '/v1/stacks', {
      token: operator,
      body: b,
      headers: { 'Idempotency-Key': key },
    });
    assert.deepEqual(expectStatus(second, 201), s1);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    const { items } = await walk(`name_prefix=${encodeURIComponent(b.name)}`);
    assert.equal(items.length, 1);
  });
});

describe('driver and CUDA', () => {
  test('12.4 with 550.54.15 (the 12.4.1 driver) and with 550.54.14 (12.4 GA): no warning', async () => {
    for (const d of ['550.54.15', '550.54.14'])
      assert.deepEqual((await create(withDriver(d, '12.4'))).stack.warnings, []);
  });

  test('12.4.1 needs 550.54.15: 550.54.14 gets the minor-version warning', async () => {
    assert.deepEqual((await create(withDriver('550.54.15', '12.4.1'))).stack.warnings, []);
    const { stack } = await create(withDriver('550.54.14', '12.4.1'));
    assert.equal(stack.warnings.length, 1);
    assert.equal(stack.warnings[0].code, 'cuda_minor_version_compatibility');
    assert.ok(stack.warnings[0].message.includes('550.54.15'), stack.warnings[0].message);
  });

  test('a newer driver than the toolkit needs: no warning', async () => {
    for (const [d, c] of [
      ['570.124.06', '12.4'],
      ['580.65.06', '12.4'],
      ['535.104.05', '12.2.2'],
      ['525.60.13', '12.0'],
      ['520.61.05', '11.8'],
      ['580.65.06', '13.0'],
    ]) {
      const { stack } = await create(withDriver(d, c));
      assert.deepEqual(stack.warnings, [], `${d} with CUDA ${c}`);
    }
  });

  test('12.4 with 535.104.05: accepted with a cuda_minor_version_compatibility warning naming PTX JIT and 550.54.14', async () => {
    const { stack } = await create(withDriver('535.104.05', '12.4'));
    assert.equal(stack.warnings.length, 1, JSON.stringify(stack.warnings));
    const w = stack.warnings[0];
    assert.equal(w.code, 'cuda_minor_version_compatibility');
    assert.match(w.message, /PTX JIT/i);
    assert.ok(w.message.includes('550.54.14'), `the message does not name the toolkit driver: ${w.message}`);
  });

  test('exactly the 12.x minimum (525.60.13) is accepted with the warning', async () => {
    const { stack } = await create(withDriver('525.60.13', '12.4'));
    assert.equal(stack.warnings[0].code, 'cuda_minor_version_compatibility');
  });

  test('11.x minor compatibility from 450.80.02', async () => {
    const ok = (await create(withDriver('450.80.02', '11.8'))).stack;
    assert.equal(ok.warnings.length, 1);
    assert.ok(ok.warnings[0].message.includes('520.61.05'), ok.warnings[0].message);
    const res = await client.request('POST', '/v1/stacks', { token: operator, body: withDriver('450.51.06', '11.8') });
    const p = expectProblem(res, 400, 'cuda_driver_incompatible');
    assert.ok(p.detail.includes('450.80.02'), `detail does not name the minimum: ${p.detail}`);
  });

  test('12.4 with 520.61.05: 400 cuda_driver_incompatible naming 525.60.13', async () => {
    const res = await client.request('POST', '/v1/stacks', { token: operator, body: withDriver('520.61.05', '12.4') });
    const p = expectProblem(res, 400, 'cuda_driver_incompatible');
    assert.ok(p.detail.includes('525.60.13'), `detail does not name the minimum driver: ${p.detail}`);
    const r2 = await client.request('POST', '/v1/stacks', { token: operator, body: withDriver('525.60.12', '12.0') });
    expectProblem(r2, 400, 'cuda_driver_incompatible');
  });

  test('13.0 with 575.57.08: 400 cuda_driver_incompatible naming branch 580', async () => {
    const res = await client.request('POST', '/v1/stacks', { token: operator, body: withDriver('575.57.08', '13.0') });
    const p = expectProblem(res, 400, 'cuda_driver_incompatible');
    assert.ok(p.detail.includes('580'), `detail does not name the minimum: ${p.detail}`);
  });

  test('13.0 with a 580 driver older than 580.65.06: warning', async () => {
    const { stack } = await create(withDriver('580.10.01', '13.0'));
    assert.equal(stack.warnings.length, 1);
    assert.equal(stack.warnings[0].code, 'cuda_minor_version_compatibility');
    assert.ok(stack.warnings[0].message.includes('580.65.06'), stack.warnings[0].message);
  });

  test('unknown CUDA versions: 400 unknown_cuda_version', async () => {
    for (const c of ['12.7', '12.4.9', '12.10', '99.0', '10.2', '11.9']) {
      const res = await client.request('POST', '/v1/stacks', { token: operator, body: withDriver('580.65.06', c) });
      expectProblem(res, 400, 'unknown_cuda_version');
    }
  });

  test('malformed versions: 400 invalid_field', async () => {
    const cases = [
      ['cuda_version', '12'],
      ['cuda_version', '12.4.1.1'],
      ['cuda_version', 'v12.4'],
      ['cuda_version', '12.4$(reboot)'],
      ['driver_version', '550'],
      ['driver_version', '550.54.15.1'],
      ['driver_version', '550.54.15; reboot'],
      ['driver_version', ' 550.54.15'],
      ['driver_branch', '55'],
      ['driver_branch', 'r550'],
    ];
    for (const [f, v] of cases) {
      const res = await client.request('POST', '/v1/stacks', { token: operator, body: withPath(vllmStack(), f, v) });
      expectProblem(res, 400, 'invalid_field', f);
    }
  });

  test('driver_branch must agree with driver_version', async () => {
    const res = await client.request('POST', '/v1/stacks', {
      token: operator,
      body: vllmStack({ driver_branch: '535', driver_version: '550.54.15' }),
    });
    expectProblem(res, 400, 'invalid_field', 'driver_branch');
  });
});

describe('the image must be pinned by digest', () => {
  const name = 'vllm/vllm-openai';
  const refused = [
    `${name}:latest`,
    `${name}:v0.6.3`,
    name,
    `${name}@sha256:${'a'.repeat(63)}`,
    `${name}@sha256:${'a'.repeat(65)}`,
    `${name}:v0.6.3@sha256:${'A'.repeat(64)}`,
    `${name}:v0.6.3@sha256:${'0123456789ABCDEF'.repeat(4)}`,
    `${name}:v0.6.3@sha256:${'g'.repeat(64)}`,
    `${name}:v0.6.3@sha256:`,
    `${name}:v0.6.3@sha512:${'a'.repeat(128)}`,
    `${name}:v0.6.3@${'a'.repeat(64)}`,
  ];
  for (const image of refused) {
    test(`${image.length > 60 ? image.slice(0, 60) + '…' : image} → 400 image_not_pinned`, async () => {
      const res = await client.request('POST', '/v1/stacks', { token: operator, body: vllmStack({ image }) });
      expectProblem(res, 400, 'image_not_pinned', 'image');
    });
  }

  test('an image longer than 512 characters is refused', async () => {
    const image = `${'a'.repeat(440)}/${'b'.repeat(10)}@sha256:${hex64()}`;
    const res = await client.request('POST', '/v1/stacks', { token: operator, body: vllmStack({ image }) });
    expectProblem(res, 400, ['invalid_field', 'image_not_pinned'], 'image');
  });
});

describe('no component of the image reference starts with -', () => {
  // docker would read such a word as an option; the host part was the one that let it through
  test('a registry host, path component or tag starting with - answers 400 invalid_field', async () => {
    const d = hex64();
    for (const image of [
      `-e.io/x@sha256:${d}`,
      `--help.io:5000/x@sha256:${d}`,
      `-registry:5000/team/x@sha256:${d}`,
      `reg.io/-x/y@sha256:${d}`,
      `reg.io/x:-tag@sha256:${d}`,
    ]) {
      const res = await client.request('POST', '/v1/stacks', { token: operator, body: vllmStack({ image }) });
      const p = expectProblem(res, 400, 'invalid_field', 'image');
      assert.match(p.detail, /start with '-'/, image);
    }
  });
});

describe('injection payloads are refused at the door', () => {
  const payloads = [
    '; rm -rf /',
    '$(reboot)',
    '`reboot`',
    'a\nb',
    "a'b",
    'a"b',
    '|| true',
    '&& curl x',
    '../../etc/passwd\0',
  ];
  const d = hex64();

  for (const p of payloads) {
    const label = JSON.stringify(p);
    test(`image with ${label}`, async () => {
      for (const image of [
        `vllm/vllm-openai:v1${p}@sha256:${d}`,
        `${p}@sha256:${d}`,
        `vllm/vllm-openai:v1@sha256:${d}${p}`,
      ]) {
        const res = await client.request('POST', '/v1/stacks', { token: operator, body: vllmStack({ image }) });
        expectRefused(res, image, ['invalid_field', 'image_not_pinned'], 'image');
      }
    });
    test(`os_image, framework, model_revision and working_dir with ${label}`, async () => {
      for (const f of [
        'os_image',
        'framework.name',
        'framework.version',
        'model_revision',
        'startup_config.working_dir',
      ]) {
        const base = vllmStack();
        const value = f === 'startup_config.working_dir' ? `/srv${p}` : `x${p}`;
        const res = await client.request('POST', '/v1/stacks', { token: operator, body: withPath(base, f, value) });
        expectRefused(res, value, 'invalid_field', f);
      }
    });
    test(`env key with ${label}`, async () => {
      const b = vllmStack();
      b.startup_config.env = { [`A${p}`]: 'x' };
      const res = await client.request('POST', '/v1/stacks', { token: operator, body: b });
      const prob = expectRefused(res, p, 'invalid_field');
      if (prob.code !== 'invalid_json') assert.ok(prob.field.startsWith('startup_config.env'), `field ${prob.field}`);
    });
  }

  test('control characters in command items and env values are refused', async () => {
    for (const bad of ['a\nb', 'a\rb', 'tab\there', 'nul\u0000', 'esc\u001b[0m', 'del\u007f']) {
      const b = vllmStack();
      b.startup_config.command = ['vllm', bad];
      const r1 = await client.request('POST', '/v1/stacks', { token: operator, body: b });
      const p1 = expectRefused(r1, bad, 'invalid_field');
      if (p1.code !== 'invalid_json') assert.ok(p1.field.startsWith('startup_config.command'), `field ${p1.field}`);
      const c = vllmStack();
      c.startup_config.env = { GOOD: bad };
      const r2 = await client.request('POST', '/v1/stacks', { token: operator, body: c });
      const p2 = expectRefused(r2, bad, 'invalid_field');
      if (p2.code !== 'invalid_json') assert.ok(p2.field.startsWith('startup_config.env'), `field ${p2.field}`);
    }
  });

  test('env keys must be upper-case identifiers', async () => {
    for (const key of ['lower', '1ABC', 'A-B', 'A B', '', 'A'.repeat(65)]) {
      const b = vllmStack();
      b.startup_config.env = { [key]: 'x' };
      const res = await client.request('POST', '/v1/stacks', { token: operator, body: b });
      const p = expectProblem(res, 400, 'invalid_field');
      assert.ok(p.field.startsWith('startup_config.env'), `field ${p.field}`);
    }
  });

  test('working_dir must be absolute', async () => {
    for (const w of ['srv/vllm', '', '~/x', '/srv vllm']) {
      const res = await client.request('POST', '/v1/stacks', {
        token: operator,
        body: withPath(vllmStack(), 'startup_config.working_dir', w),
      });
      expectProblem(res, 400, 'invalid_field', 'startup_config.working_dir');
    }
  });
});

describe('other validation', () => {
  const cases = [
    ['unknown top-level member', (b) => ({ ...b, tag: 'latest' }), 'unknown_field', 'tag'],
    [
      'unknown member of startup_config',
      (b) => withPath(b, 'startup_config.user', 'root'),
      'unknown_field',
      'startup_config.user',
    ],
    ['unknown member of framework', (b) => withPath(b, 'framework.vendor', 'x'), 'unknown_field', 'framework.vendor'],
    [
      'server-set member image_digest',
      (b) => ({ ...b, image_digest: `sha256:${hex64()}` }),
      'unknown_field',
      'image_digest',
    ],
    ['server-set member warnings', (b) => ({ ...b, warnings: [] }), 'unknown_field', 'warnings'],
    ['missing image', (b) => withPath(b, 'image', undefined), 'missing_field', 'image'],
    ['missing name', (b) => withPath(b, 'name', undefined), 'missing_field', 'name'],
    ['missing os_image', (b) => withPath(b, 'os_image', undefined), 'missing_field', 'os_image'],
    ['missing driver_branch', (b) => withPath(b, 'driver_branch', undefined), 'missing_field', 'driver_branch'],
    ['missing driver_version', (b) => withPath(b, 'driver_version', undefined), 'missing_field', 'driver_version'],
    ['missing cuda_version', (b) => withPath(b, 'cuda_version', undefined), 'missing_field', 'cuda_version'],
    ['missing framework', (b) => withPath(b, 'framework', undefined), 'missing_field', 'framework'],
    [
      'missing framework.version',
      (b) => withPath(b, 'framework.version', undefined),
      'missing_field',
      'framework.version',
    ],
    ['empty name', (b) => withPath(b, 'name', ''), 'invalid_field', 'name'],
    ['name of 129 characters', (b) => withPath(b, 'name', 'n'.repeat(129)), 'invalid_field', 'name'],
    ['image not a string', (b) => withPath(b, 'image', 7), 'invalid_field', 'image'],
    ['port 0', (b) => withPath(b, 'startup_config.port', 0), 'invalid_field', 'startup_config.port'],
    ['port 65536', (b) => withPath(b, 'startup_config.port', 65536), 'invalid_field', 'startup_config.port'],
    ['port as a string', (b) => withPath(b, 'startup_config.port', '8000'), 'invalid_field', 'startup_config.port'],
    ['empty command', (b) => withPath(b, 'startup_config.command', []), 'invalid_field', 'startup_config.command'],
    [
      '65 command items',
      (b) => withPath(b, 'startup_config.command', Array(65).fill('x')),
      'invalid_field',
      'startup_config.command',
    ],
    [
      'command not an array',
      (b) => withPath(b, 'startup_config.command', 'vllm serve'),
      'invalid_field',
      'startup_config.command',
    ],
    [
      '65 env entries',
      (b) =>
        withPath(b, 'startup_config.env', Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`V${i}`, 'x']))),
      'invalid_field',
      'startup_config.env',
    ],
    ['supersedes not a uuid', (b) => ({ ...b, supersedes: 'previous' }), 'invalid_field', 'supersedes'],
    ['supersedes an unknown stack', (b) => ({ ...b, supersedes: crypto.randomUUID() }), 'invalid_field', 'supersedes'],
  ];
  for (const [title, mutate, code, field] of cases) {
    test(`${title} → 400 ${code} (${field})`, async () => {
      const res = await client.request('POST', '/v1/stacks', { token: operator, body: mutate(vllmStack()) });
      expectProblem(res, 400, code, field);
    });
  }

  test('a command item of 1024 characters and 64 env entries are accepted; 1025 is not', async () => {
    const b = vllmStack();
    b.startup_config.command = ['x'.repeat(1024)];
    b.startup_config.env = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`V${i}`, 'x'.repeat(4096)]));
    expectStatus(await client.request('POST', '/v1/stacks', { token: operator, body: b }), 201);
    b.startup_config.command = ['x'.repeat(1025)];
    expectProblem(await client.request('POST', '/v1/stacks', { token: operator, body: b }), 400, 'invalid_field');
  });

  test('duplicate keys and non-object bodies', async () => {
    const dup = JSON.stringify(vllmStack()).replace(/^\{/, `{"image":"x@sha256:${hex64()}",`);
    expectProblem(
      await client.request('POST', '/v1/stacks', { token: operator, rawBody: dup, contentType: 'application/json' }),
      400,
      'duplicate_key',
    );
    expectProblem(
      await client.request('POST', '/v1/stacks', { token: operator, rawBody: '[]', contentType: 'application/json' }),
      400,
      'body_not_object',
    );
  });
});

describe('immutability', () => {
  let stack;
  before(async () => {
    stack = (await create(vllmStack())).stack;
  });

  for (const method of ['PUT', 'DELETE']) {
    test(`${method} /v1/stacks/{id} answers 405 with Allow`, async () => {
      const opts = { token: admin };
      if (method !== 'DELETE') opts.body = vllmStack();
      const res = await client.request(method, `/v1/stacks/${stack.id}`, opts);
      expectProblem(res, 405, 'method_not_allowed');
      const allow = (res.headers.get('allow') || '').split(',').map((m) => m.trim());
      assert.ok(allow.includes('GET'), `Allow: ${res.headers.get('allow')}`);
      assert.ok(!allow.includes(method), `Allow lists ${method}`);
    });
  }

  test('PATCH changes only shared: any other member is refused (unknown_field)', async () => {
    const res = await client.request('PATCH', `/v1/stacks/${stack.id}`, { token: admin, body: vllmStack() });
    expectProblem(res, 400, 'unknown_field');
    const mixed = await client.request('PATCH', `/v1/stacks/${stack.id}`, {
      token: admin,
      body: { shared: true, name: 'renamed' },
    });
    expectProblem(mixed, 400, 'unknown_field');
    assert.equal(mixed.body.field, 'name');
  });

  test('the stack is unchanged', async () => {
    assert.deepEqual(
      expectStatus(await client.request('GET', `/v1/stacks/${stack.id}`, { token: viewer }), 200),
      stack,
    );
  });
});

describe('supersedes and lineage', () => {
  test('a chain of three: lineage lists it newest first, back to the root', async () => {
    const a = (await create(vllmStack({ name: `chain-a-${uniq()}` }))).stack;
    const b = (await create(withDriver('550.54.15', '12.4.1', { name: `chain-b-${uniq()}`, supersedes: a.id }))).stack;
    assert.equal(b.supersedes, a.id);
    const c = (await create(vllmStack({ name: `chain-c-${uniq()}`, supersedes: b.id }))).stack;
    assert.equal(c.supersedes, b.id);

    const lc = await client.request('GET', `/v1/stacks/${c.id}/lineage`, { token: viewer });
    const lin = expectStatus(lc, 200);
    assert.deepEqual(
      lin.items.map((s) => s.id),
      [c.id, b.id, a.id],
    );
    assert.deepEqual(lin.items, [c, b, a]);
    assert.equal(lin.next_cursor, undefined, 'lineage is not paginated');

    const lb = expectStatus(await client.request('GET', `/v1/stacks/${b.id}/lineage`, { token: viewer }), 200);
    assert.deepEqual(
      lb.items.map((s) => s.id),
      [b.id, a.id],
    );
    const la = expectStatus(await client.request('GET', `/v1/stacks/${a.id}/lineage`, { token: viewer }), 200);
    assert.deepEqual(
      la.items.map((s) => s.id),
      [a.id],
    );

    // A branch: another stack superseding a leaves c's lineage as it was.
    const d = (await create(vllmStack({ name: `chain-d-${uniq()}`, supersedes: a.id }))).stack;
    const ld = expectStatus(await client.request('GET', `/v1/stacks/${d.id}/lineage`, { token: viewer }), 200);
    assert.deepEqual(
      ld.items.map((s) => s.id),
      [d.id, a.id],
    );
    assert.deepEqual(
      expectStatus(await client.request('GET', `/v1/stacks/${c.id}/lineage`, { token: viewer }), 200),
      lin,
    );

    const etag = lc.headers.get('etag');
    expectStatus(
      await client.request('GET', `/v1/stacks/${c.id}/lineage`, { token: viewer, headers: { 'If-None-Match': etag } }),
      304,
    );
  });

  test('lineage of an unknown stack is 404', async () => {
    expectProblem(
      await client.request('GET', `/v1/stacks/${crypto.randomUUID()}/lineage`, { token: viewer }),
      404,
      'not_found',
    );
    expectProblem(await client.request('GET', '/v1/stacks/x/lineage', { token: viewer }), 404, 'not_found');
  });
});

describe('list', () => {
  test('limit=2 walks every stack once, oldest first; name_prefix filters', async () => {
    const p = `list-${uniq()}-`;
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await create(vllmStack({ name: `${p}${i}` }))).stack.id);
    const { items, pages } = await walk(`name_prefix=${encodeURIComponent(p)}&limit=2`);
    assert.deepEqual(
      items.map((s) => s.id),
      ids,
    );
    assert.equal(pages, 3);
    const all = expectStatus(await client.request('GET', '/v1/stacks?limit=500', { token: viewer }), 200);
    const walked = (await walk('limit=2')).items.map((s) => s.id);
    assert.equal(new Set(walked).size, walked.length, 'duplicates across pages');
    assert.deepEqual(
      walked,
      all.items.map((s) => s.id),
    );
  });

  test('name_prefix is literal', async () => {
    const p = `lit-${uniq()}-`;
    await create(vllmStack({ name: `${p}50%_off` }));
    await create(vllmStack({ name: `${p}50x_off` }));
    const { items } = await walk(`name_prefix=${encodeURIComponent(`${p}50%`)}`);
    assert.deepEqual(
      items.map((s) => s.name),
      [`${p}50%_off`],
    );
  });

  test('framework filter', async () => {
    const fw = `fw-${uniq()}`;
    const a = (await create(vllmStack({ framework: { name: fw, version: '1.0.0' } }))).stack;
    const b = (await create(vllmStack({ framework: { name: fw, version: '1.1.0+cu124' } }))).stack;
    await create(vllmStack({ framework: { name: `${fw}x`, version: '1.0.0' } }));
    const { items } = await walk(`framework=${fw}&limit=1`);
    assert.deepEqual(
      items.map((s) => s.id),
      [a.id, b.id],
    );
    const vllm = (await walk('framework=vllm&limit=500')).items;
    assert.ok(vllm.length >= 1 && vllm.every((s) => s.framework.name === 'vllm'));
    expectProblem(
      await client.request('GET', '/v1/stacks?framework=a%3Bb', { token: viewer }),
      400,
      'invalid_parameter',
      'framework',
    );
  });

  test('list ETag, bad parameters', async () => {
    const a = await client.request('GET', '/v1/stacks?limit=500', { token: viewer });
    const etag = a.headers.get('etag');
    expectStatus(
      await client.request('GET', '/v1/stacks?limit=500', { token: viewer, headers: { 'If-None-Match': etag } }),
      304,
    );
    await create(vllmStack());
    const b = await client.request('GET', '/v1/stacks?limit=500', {
      token: viewer,
      headers: { 'If-None-Match': etag },
    });
    expectStatus(b, 200);
    expectProblem(
      await client.request('GET', '/v1/stacks?limit=0', { token: viewer }),
      400,
      'invalid_parameter',
      'limit',
    );
    expectProblem(
      await client.request('GET', '/v1/stacks?image=x', { token: viewer }),
      400,
      'unknown_parameter',
      'image',
    );
    expectProblem(await client.request('GET', '/v1/stacks?cursor=abc', { token: viewer }), 400, 'invalid_cursor');
  });
});
