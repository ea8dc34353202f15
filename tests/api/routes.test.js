'use strict';
// The server's route table and the spec must list exactly the same
// (method, path) pairs. `gpufleetd routes` prints `METHOD /path/{param}`, one
// per line. OPTIONS (CORS preflight, answered on every path) is ignored;
// HEAD is accepted wherever the spec has GET.

const { test } = require('node:test');
const assert = require('node:assert/strict');

const { runBin, cleanEnv } = require('./lib/server');
const { specRoutes } = require('./lib/openapi');

test('gpufleetd routes and openapi.yaml list the same operations', () => {
  const r = runBin(['routes'], cleanEnv({}));
  assert.equal(r.status, 0, `gpufleetd routes exited ${r.status}: ${r.stderr}`);
  const lines = r.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const server = new Set();
  for (const l of lines) {
    assert.match(l, /^[A-Z]+ \/\S*$/, `unexpected line from gpufleetd routes: ${JSON.stringify(l)}`);
    const [m] = l.split(' ');
    if (m === 'OPTIONS') continue;
    server.add(l);
  }
  const spec = specRoutes();
  for (const l of [...server]) {
    if (l.startsWith('HEAD ') && spec.has('GET ' + l.slice(5))) server.delete(l);
  }
  const onlyServer = [...server].filter((x) => !spec.has(x)).sort();
  const onlySpec = [...spec].filter((x) => !server.has(x)).sort();
  assert.deepEqual(
    { onlyServer, onlySpec },
    { onlyServer: [], onlySpec: [] },
    `route table and spec differ:\n  only in the server: ${onlyServer.join(', ') || '-'}\n  only in the spec:   ${onlySpec.join(', ') || '-'}`,
  );
});
