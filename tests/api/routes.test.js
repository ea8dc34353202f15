'use strict';
// The server's route table and the spec must list exactly the same
// (method, path) pairs. `gpufleetd routes` prints `METHOD /path/{param}`, one
// per line. OPTIONS (CORS preflight, answered on every path) is ignored;
// HEAD is accepted wherever the spec has GET.

const { test } = require('node:test');
const assert = require('node:assert/strict');

const { runBin, cleanEnv } = require('./lib/server');
const { specRoutes, loadSpec } = require('./lib/openapi');

/** "METHOD /path" -> operationId, from the spec. */
function specOperationIds() {
  const out = new Map();
  for (const r of loadSpec().routes)
    for (const [m, op] of Object.entries(r.ops)) out.set(`${m} ${r.template}`, op.operationId);
  return out;
}

test('gpufleetd routes and openapi.yaml list the same operations, each operationId naming its C handler', () => {
  const r = runBin(['routes'], cleanEnv({}));
  assert.equal(r.status, 0, `gpufleetd routes exited ${r.status}: ${r.stderr}`);
  const lines = r.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const server = new Map(); // "METHOD /path" -> handler
  for (const l of lines) {
    assert.match(
      l,
      /^[A-Z]+ \/\S* api_[a-z0-9_]+ api\/[a-z_]+\.c$/,
      `unexpected line from gpufleetd routes: ${JSON.stringify(l)}`,
    );
    const [m, p, h] = l.split(' ');
    if (m === 'OPTIONS') continue;
    server.set(`${m} ${p}`, h);
  }
  const spec = specRoutes();
  for (const l of [...server.keys()]) {
    if (l.startsWith('HEAD ') && spec.has('GET ' + l.slice(5))) server.delete(l);
  }
  const onlyServer = [...server.keys()].filter((x) => !spec.has(x)).sort();
  const onlySpec = [...spec].filter((x) => !server.has(x)).sort();
  assert.deepEqual(
    { onlyServer, onlySpec },
    { onlyServer: [], onlySpec: [] },
    `route table and spec differ:\n  only in the server: ${onlyServer.join(', ') || '-'}\n  only in the spec:   ${onlySpec.join(', ') || '-'}`,
  );
  // both directions: every operation's operationId is its route's handler, and no two
  // operations share one
  const ids = specOperationIds();
  const seen = new Set();
  for (const [route, id] of ids) {
    assert.equal(id, server.get(route), `${route}: operationId ${id}, handler ${server.get(route)}`);
    assert.ok(!seen.has(id), `operationId ${id} is used twice`);
    seen.add(id);
  }
  for (const [route, h] of server) assert.equal(ids.get(route), h, `${route}: handler ${h} has no operation`);
});
