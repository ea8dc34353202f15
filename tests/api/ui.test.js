'use strict';
// The status page's files (/ui/): served from the binary with a strict
// Content-Security-Policy and the other browser headers, exactly the files of
// ui/, nothing else whatever the path holds (dot segments, encoded slashes,
// NUL bytes), and built without anything a browser could run from data
// (no inline script or style, no innerHTML). The page in a browser is
// tests/ui/.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

const { startServer, ROOT } = require('./lib/server');
const { api, specText } = require('./lib/openapi');
const { expectProblem, expectStatus } = require('./lib/assert');

const UI_DIR = path.join(ROOT, 'ui');
const UI_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const API_CSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml; charset=utf-8',
};

let srv;
let client;
const files = fs.readdirSync(UI_DIR).filter((f) => !f.startsWith('.'));

before(async () => {
  srv = await startServer({ name: 'ui' });
  client = api(srv);
});

after(async () => {
  if (srv) await srv.stop();
});

/** A request with the path sent byte for byte (fetch would normalise dot segments). */
function raw(reqPath, method = 'GET') {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: srv.port, path: reqPath, method }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

function assertUiHeaders(res, what) {
  assert.equal(res.headers.get('content-security-policy'), UI_CSP, `${what}: CSP`);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff', `${what}: nosniff`);
  assert.equal(res.headers.get('referrer-policy'), 'no-referrer', `${what}: Referrer-Policy`);
}

describe('serving', () => {
  test('GET /ui redirects to /ui/', async () => {
    const res = await client.request('GET', '/ui');
    assert.equal(res.status, 308);
    assert.equal(res.headers.get('location'), '/ui/');
  });

  test('GET /ui/ is the page, with the strict policy and no token needed', async () => {
    const res = await client.request('GET', '/ui/');
    expectStatus(res, 200);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assertUiHeaders(res, 'GET /ui/');
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    assert.match(res.headers.get('etag'), /^"[0-9a-f]{32}"$/);
    assert.equal(res.text, fs.readFileSync(path.join(UI_DIR, 'index.html'), 'utf8'));
  });

  test('every file of ui/ is served byte for byte with its type, and nothing in ui/ is missing from the binary', async () => {
    assert.ok(files.includes('index.html') && files.includes('app.js') && files.includes('style.css'), files.join(' '));
    for (const f of files) {
      const res = await client.request('GET', `/ui/${f}`);
      expectStatus(res, 200);
      assert.equal(res.headers.get('content-type'), TYPES[path.extname(f)], f);
      assertUiHeaders(res, f);
      assert.equal(res.headers.get('cache-control'), 'no-cache', f);
      assert.equal(
        res.text,
        fs.readFileSync(path.join(UI_DIR, f), 'utf8'),
        `${f} as embedded differs from ui/${f}: rebuild`,
      );
    }
  });

  test('If-None-Match answers 304 with the ETag; a stale one answers 200; HEAD has no body', async () => {
    const first = await client.request('GET', '/ui/app.js');
    const etag = first.headers.get('etag');
    const again = await client.request('GET', '/ui/app.js', { headers: { 'If-None-Match': etag } });
    assert.equal(again.status, 304);
    assert.equal(again.headers.get('etag'), etag);
    assertUiHeaders(again, '304');
    const other = await client.request('GET', '/ui/app.js', { headers: { 'If-None-Match': '"0000"' } });
    assert.equal(other.status, 200);
    const index = await client.request('GET', '/ui/', {
      headers: { 'If-None-Match': (await client.request('GET', '/ui/index.html')).headers.get('etag') },
    });
    assert.equal(index.status, 304, '/ui/ and /ui/index.html are the same file');
    const head = await client.request('HEAD', '/ui/style.css');
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.equal(head.headers.get('content-type'), 'text/css; charset=utf-8');
  });

  test('an unknown file answers 404 problem+json, with the page policy too', async () => {
    for (const f of ['nope.js', 'index.htm', 'APP.JS', 'app.js~', '.git', 'openapi.yaml', 'Makefile']) {
      const res = await client.request('GET', `/ui/${f}`);
      expectProblem(res, 404, 'not_found');
      assertUiHeaders(res, f);
    }
  });

  test('other methods answer 405 with Allow', async () => {
    const res = await client.request('POST', '/ui/app.js', { body: {} });
    expectProblem(res, 405, 'method_not_allowed');
    assert.match(res.headers.get('allow'), /GET/);
  });

  test('every API answer carries a deny-all policy, nosniff and no-referrer', async () => {
    for (const p of ['/healthz', '/openapi.yaml', '/v1/hosts', '/nowhere']) {
      const res = await client.request('GET', p);
      assert.equal(res.headers.get('content-security-policy'), API_CSP, p);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', p);
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer', p);
    }
  });
});

describe('nothing outside the embedded files', () => {
  const embedded = files.map((f) => fs.readFileSync(path.join(UI_DIR, f)));
  const ATTEMPTS = [
    '/ui/../openapi.yaml',
    '/ui/..%2fopenapi.yaml',
    '/ui/%2e%2e/openapi.yaml',
    '/ui/%2e%2e%2fopenapi.yaml',
    '/ui/%2E%2E%2Fopenapi.yaml',
    '/ui/%2e%2e',
    '/ui/..',
    '/ui/.',
    '/ui/%2e',
    '/ui/../../../../etc/passwd',
    '/ui/..%2f..%2f..%2f..%2fetc%2fpasswd',
    '/ui/%2fetc%2fpasswd',
    '/ui//etc/passwd',
    '/ui/..%5c..%5cMakefile',
    '/ui/%252e%252e%252fopenapi.yaml',
    '/ui/./app.js',
    '/ui/%2e/app.js',
    '/ui/app.js/',
    '/ui/app.js/..',
    '/ui/app.js%2f',
    '/ui/index.html%00',
    '/ui/index.html%00.js',
    '/ui/%00',
    '/ui/api.js%3f',
    '/ui/../ui/app.js',
  ];

  for (const p of ATTEMPTS) {
    test(`${p} is refused with 4xx and serves nothing`, async () => {
      const res = await raw(p);
      assert.ok(
        res.status >= 400 && res.status < 500,
        `${p}: want 4xx, got ${res.status} ${res.body.toString('utf8', 0, 200)}`,
      );
      const body = res.body.toString('utf8');
      assert.notEqual(body, specText(), `${p} served the OpenAPI document`);
      assert.doesNotMatch(body, /root:.*:0:0:|\bCC\s*\?=/, `${p} served a system or repository file`);
      for (const e of embedded) assert.ok(!res.body.equals(e), `${p} served an embedded file`);
      if (res.body.length) assert.match(res.headers['content-type'], /^application\/problem\+json/, p);
    });
  }

  test('HEAD and a long dotted path are refused as well', async () => {
    assert.equal((await raw('/ui/../openapi.yaml', 'HEAD')).status, 404);
    const long = `/ui/${'../'.repeat(400)}etc/passwd`;
    const res = await raw(long);
    assert.ok(res.status >= 400 && res.status < 500, `got ${res.status}`);
  });
});

describe('the page builds its DOM from data without HTML', () => {
  const read = (f) => fs.readFileSync(path.join(UI_DIR, f), 'utf8');

  test('index.html has no inline script, inline style, style attribute or event handler attribute', () => {
    const html = read('index.html');
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
    assert.ok(scripts.length >= 1, 'the page loads its script');
    for (const [, attrs, body] of scripts) {
      assert.match(attrs, /\bsrc="[a-z0-9_-]+\.js"/, `external scripts only: <script${attrs}>`);
      assert.equal(body.trim(), '', 'no inline script');
    }
    assert.doesNotMatch(html, /<style\b/i, 'no <style> element');
    assert.doesNotMatch(html, /\sstyle\s*=/i, 'no style attribute');
    assert.doesNotMatch(html, /\son[a-z]+\s*=/i, 'no event handler attribute');
    assert.doesNotMatch(html, /javascript:/i);
    assert.doesNotMatch(html, /<input[^>]*\bname=/i, 'the token input has no name: a form post could not carry it');
  });

  test('the scripts never parse HTML from strings, never eval, never touch localStorage or cookies', () => {
    for (const f of files.filter((x) => x.endsWith('.js'))) {
      const js = read(f);
      for (const bad of [
        /\.innerHTML\b/,
        /\.outerHTML\b/,
        /insertAdjacentHTML/,
        /document\.write/,
        /\beval\s*\(/,
        /new Function\b/,
        /setTimeout\(\s*['"`]/,
        /localStorage/,
        /document\.cookie/,
        /\.style\.|setAttribute\(\s*['"]style/,
      ]) {
        assert.doesNotMatch(js, bad, `${f} uses ${bad}`);
      }
    }
  });

  test('every module the page imports is one of the served files, and exports what is imported', () => {
    for (const f of files.filter((x) => x.endsWith('.js'))) {
      for (const [, names, spec] of read(f).matchAll(/\bimport\s*\{([^}]*)\}\s*from\s+'([^']+)'/g)) {
        assert.match(spec, /^\.\/[a-z0-9_-]+\.js$/, `${f} imports ${spec}: relative modules only`);
        assert.ok(files.includes(spec.slice(2)), `${f} imports ${spec}, which is not in ui/`);
        const target = read(spec.slice(2));
        for (const name of names
          .split(',')
          .map((n) => n.trim().split(/\s+as\s+/)[0])
          .filter(Boolean)) {
          const re = new RegExp(`\\bexport\\s+(?:async\\s+)?(?:function|const|let|class)\\s+${name}\\b`);
          assert.match(target, re, `${f} imports ${name} from ${spec}, which does not export it`);
        }
      }
    }
  });
});
