'use strict';
// The documentation states facts that drift when the code changes. Each test here compares
// one such fact with its source of truth, so that a change to the code that the docs do
// not follow (or a doc that names something the code does not have) fails:
//
//   routes          every route of `gpufleetd routes` is named in docs/*.md, and every
//                   "METHOD /path" the pages (and README.md) name is a route
//   environment     every environment variable the server reads is a row of the
//                   configuration table in docs/operations.md, and every row is read
//   commands        every command `gpufleetd` prints in its usage is in docs/operations.md
//   error codes     api/errors.def = the table in docs/api.md = the table in the spec
//                   (code and status), and every "NNN code" the pages write is one of them
//                   with its status
//   host states     the states table of docs/state-machine.md = the states of
//                   `gpufleetd state-machine`
//   event types     every type of db/event_types.def is named in docs/events.md
//   links           every relative link of README.md and docs/*.md resolves to a file, and
//                   its #anchor to a heading there; the README links every docs/ page
//   fixtures        tests/fixtures/nvidia/SOURCES.md has one row per fixture file
//   outside paths   no file of the repository refers to the project's shared folder beside
//                   the checkout (the product contract and the data sources are carried in
//                   docs/)
//
// No server and no database: it reads files and runs `gpufleetd routes`, `state-machine`
// and its usage. Run alone with `node --test tests/api/docs.test.js`.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.resolve(ROOT, process.env.GPUFLEET_BIN || 'bin/gpufleetd');
const rel = (p) => path.relative(ROOT, p);
const read = (p) => fs.readFileSync(path.join(ROOT, p), 'utf8');

function run(args) {
  // the binary's own configuration never comes into it: no GPUFLEET_* variable is passed
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GPUFLEET_')));
  const r = spawnSync(BIN, args, { encoding: 'utf8', timeout: 60_000, env });
  if (r.error && r.error.code === 'ENOENT') throw new Error(`${BIN} not found; build it with \`make\``);
  return r;
}

/** The Markdown pages the checks read: README.md and every docs/*.md. */
function pages() {
  const docs = fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

/** A page's lines outside fenced code blocks, each with its 1-based line number. */
function prose(text) {
  const out = [];
  let fence = null;
  text.split('\n').forEach((line, i) => {
    const m = /^\s*(```+|~~~+)/.exec(line);
    if (m) {
      if (fence === null) fence = m[1];
      else if (m[1].startsWith(fence)) fence = null;
      return;
    }
    if (fence === null) out.push({ line, n: i + 1 });
  });
  return out;
}

// ---------------------------------------------------------------- routes

/** "/v1/hosts/{id}/gate" and "/v1/hosts/<host id>/gate" -> "/v1/hosts/{}/gate". */
function normalizePath(p) {
  return p
    .replace(/<[^>]*>/g, '{}')
    .split('/')
    .map((seg) => (/^[{$]/.test(seg) ? '{}' : seg))
    .join('/');
}

/** Does a named "METHOD /path" (placeholders or example values) name this route? */
function names(named, route) {
  const [nm, np] = named.split(' ');
  const [rm, rp] = route.split(' ');
  if (nm !== rm) return false;
  const a = np.split('/');
  const b = rp.split('/');
  return a.length === b.length && a.every((seg, i) => seg === b[i] || (b[i] === '{}' && seg !== ''));
}

function serverRoutes() {
  const r = run(['routes']);
  assert.equal(r.status, 0, `gpufleetd routes exited ${r.status}: ${r.stderr}`);
  const routes = [];
  for (const l of r.stdout.split('\n').filter(Boolean)) {
    const [m, p] = l.trim().split(/\s+/);
    if (m === 'OPTIONS' || m === 'HEAD') continue;
    routes.push({ m, p, key: `${m} ${normalizePath(p)}` });
  }
  assert.ok(routes.length > 50, `gpufleetd routes printed only ${routes.length} routes`);
  return routes;
}

/** Every "METHOD /path" a page names (in prose or in code), with where. */
function namedRoutes(file) {
  const out = [];
  const re = /\b(GET|POST|PUT|PATCH|DELETE) (\/(?:[A-Za-z0-9_.{}$-]|<[^>\n]*>|\/)*)/g;
  read(file)
    .split('\n')
    .forEach((line, i) => {
      for (const m of line.matchAll(re)) {
        const p = m[2].replace(/[.]+$/, '');
        if (p === '/') continue;
        out.push({ key: `${m[1]} ${normalizePath(p)}`, where: `${file}:${i + 1}`, text: `${m[1]} ${p}` });
      }
    });
  return out;
}

test('every route of gpufleetd routes is named in docs/, and every route the pages name exists', () => {
  const routes = serverRoutes();
  const named = pages().flatMap(namedRoutes);
  const inDocs = named.filter((n) => n.where.startsWith('docs/'));
  const missing = routes.filter((r) => !inDocs.some((n) => names(n.key, r.key))).map((r) => `${r.m} ${r.p}`);
  assert.deepEqual(
    missing,
    [],
    `routes the server has and no page of docs/ names (add them to docs/api.md#routes and their topic page):\n  ${missing.join('\n  ')}`,
  );
  const unknown = named.filter((n) => !routes.some((r) => names(n.key, r.key))).map((n) => `${n.where}: ${n.text}`);
  assert.deepEqual(unknown, [], `the pages name routes the server does not have:\n  ${unknown.join('\n  ')}`);
});

// ---------------------------------------------------------------- environment

/** The server's C sources (every .c/.h outside tests, benchmarks and build outputs). */
function cSources() {
  const skip = new Set([
    'tests',
    'bench',
    'build',
    'bin',
    'node_modules',
    'var',
    'test-artifacts',
    '.git',
    'tools',
    'examples',
  ]);
  const out = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (e.name.startsWith('.') || (dir === ROOT && skip.has(e.name))) continue;
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.[ch]$/.test(e.name)) out.push(p);
    }
  };
  walk(ROOT);
  return out;
}

/** Variables the server reads: getenv("X") anywhere, and every "GPUFLEET_..." string
 * literal (the configuration is read through a getenv-like function by name). */
function variablesRead() {
  const vars = new Map(); // name -> first file
  for (const f of cSources()) {
    const src = fs.readFileSync(f, 'utf8');
    for (const m of src.matchAll(/\bgetenv\s*\(\s*"([A-Za-z_][A-Za-z0-9_]*)"/g))
      if (!vars.has(m[1])) vars.set(m[1], rel(f));
    for (const m of src.matchAll(/"(GPUFLEET_[A-Z0-9_]*[A-Z0-9])"/g)) if (!vars.has(m[1])) vars.set(m[1], rel(f));
  }
  return vars;
}

/** The rows of the configuration table: name -> the row's text. */
function configRows() {
  const rows = new Map();
  for (const { line } of prose(read('docs/operations.md'))) {
    const m = /^\| `([A-Za-z_][A-Za-z0-9_]*)` \|(.*)$/.exec(line);
    if (m) rows.set(m[1], m[2]);
  }
  return rows;
}

test('every environment variable the server reads is a row of the table in docs/operations.md, and every row is read', () => {
  const vars = variablesRead();
  assert.ok(vars.size > 40, `found only ${vars.size} variables in the C sources: the scan is broken`);
  assert.ok(vars.has('GPUFLEET_DATABASE_URL'), 'the scan did not find GPUFLEET_DATABASE_URL');
  const rows = configRows();
  const undocumented = [...vars].filter(([v]) => !rows.has(v)).map(([v, f]) => `${v} (read in ${f})`);
  assert.deepEqual(
    undocumented,
    [],
    `variables read by the server without a row \`| \\\`NAME\\\` |\` in docs/operations.md:\n  ${undocumented.join('\n  ')}`,
  );
  // rows for variables nothing reads: allowed only when the row says so (scripts' variables)
  const stale = [...rows].filter(([v, text]) => !vars.has(v) && !/Scripts only/i.test(text)).map(([v]) => v);
  assert.deepEqual(
    stale,
    [],
    `docs/operations.md documents variables the server does not read (remove them, or say "Scripts only"):\n  ${stale.join('\n  ')}`,
  );
});

test('every command of the gpufleetd usage is in docs/operations.md', () => {
  const r = run([]);
  const usage = r.stdout + r.stderr;
  const cmds = [...usage.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]);
  assert.ok(cmds.includes('serve') && cmds.includes('routes'), `cannot read the usage of gpufleetd:\n${usage}`);
  const ops = read('docs/operations.md');
  const missing = cmds.filter((c) => !ops.includes(`bin/gpufleetd ${c}`));
  assert.deepEqual(
    missing,
    [],
    `commands of gpufleetd without a "bin/gpufleetd NAME" line in docs/operations.md: ${missing.join(', ')}`,
  );
});

// ---------------------------------------------------------------- error codes

function errorsDef() {
  const codes = new Map();
  for (const m of read('api/errors.def').matchAll(/^X\(\s*\w+\s*,\s*([a-z0-9_]+)\s*,\s*(\d{3})\s*,/gm))
    codes.set(m[1], Number(m[2]));
  assert.ok(codes.size > 30, `read only ${codes.size} codes from api/errors.def`);
  return codes;
}

function tableCodes(text, re) {
  const codes = new Map();
  for (const m of text.matchAll(re)) {
    assert.ok(!codes.has(m[1]), `${m[1]} is listed twice`);
    codes.set(m[1], Number(m[2]));
  }
  return codes;
}

function diffCodes(want, got, what) {
  const problems = [];
  for (const [c, s] of want) {
    if (!got.has(c)) problems.push(`${c} (${s}) is missing from ${what}`);
    else if (got.get(c) !== s) problems.push(`${c}: ${what} says ${got.get(c)}, api/errors.def ${s}`);
  }
  for (const c of got.keys()) if (!want.has(c)) problems.push(`${what} lists ${c}, which api/errors.def does not have`);
  return problems;
}

test('every error code of api/errors.def is in the tables of docs/api.md and of the spec, with its status', () => {
  const codes = errorsDef();
  const api = read('docs/api.md');
  const a = api.indexOf('<!-- error-codes:begin');
  const b = api.indexOf('<!-- error-codes:end');
  assert.ok(a >= 0 && b > a, 'docs/api.md has no <!-- error-codes:begin --> … <!-- error-codes:end --> table');
  const docs = tableCodes(api.slice(a, b), /^\| `([a-z0-9_]+)` \| (\d{3}) \|/gm);
  const spec = tableCodes(read('openapi/openapi.yaml'), /^ {4}\| `([a-z0-9_]+)` \| (\d{3}) \|/gm);
  const problems = [
    ...diffCodes(codes, docs, 'docs/api.md'),
    ...diffCodes(codes, spec, "the spec's table (openapi.yaml info)"),
  ];
  assert.deepEqual(problems, [], problems.join('\n'));
});

test('every "STATUS code" the pages write is an error code with that status', () => {
  const codes = errorsDef();
  const problems = [];
  for (const file of pages()) {
    const text = read(file);
    // "409 host_busy", "`409 host_busy`", "409 `host_busy`", also across a line break; a code
    // has a _ (or a wrong -)
    for (const m of text.matchAll(/(?<![\w.,=])([45]\d\d)\s+`?([a-z][a-z0-9]*(?:[_-][a-z0-9]+)+)\b/g)) {
      const [, status, code] = m;
      const where = `${file}:${text.slice(0, m.index).split('\n').length}: ${status} ${code}`;
      if (!codes.has(code.replace(/-/g, '_'))) problems.push(`${where}: no such error code in api/errors.def`);
      else if (code.includes('-')) problems.push(`${where}: codes are snake_case (${code.replace(/-/g, '_')})`);
      else if (codes.get(code) !== Number(status))
        problems.push(`${where}: api/errors.def answers ${code} with ${codes.get(code)}`);
    }
  }
  assert.deepEqual(problems, [], problems.join('\n'));
});

// ---------------------------------------------------------------- host states, events

test('the states table of docs/state-machine.md lists exactly the states of gpufleetd state-machine', () => {
  const r = run(['state-machine']);
  assert.equal(r.status, 0, r.stderr);
  const states = new Set();
  for (const line of r.stdout.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 5 || cells[3] === 'from → to' || !/→|\(unchanged\)/.test(cells[3])) continue;
    for (const s of cells[3].matchAll(/[a-z_]+/g)) if (s[0] !== 'unchanged') states.add(s[0]);
  }
  assert.ok(states.size >= 10, `read only ${states.size} states from gpufleetd state-machine`);
  const doc = read('docs/state-machine.md');
  const a = doc.indexOf('<!-- host-states:begin');
  const b = doc.indexOf('<!-- host-states:end');
  assert.ok(
    a >= 0 && b > a,
    'docs/state-machine.md has no <!-- host-states:begin --> … <!-- host-states:end --> table',
  );
  const documented = new Set([...doc.slice(a, b).matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]));
  assert.deepEqual(
    [...documented].sort(),
    [...states].sort(),
    'docs/state-machine.md states differ from the state machine',
  );
});

test('every event type of db/event_types.def is named in docs/events.md', () => {
  const types = [...read('db/event_types.def').matchAll(/^EVENT_TYPE\("([^"]+)"\)/gm)].map((m) => m[1]);
  assert.ok(types.length > 10, `read only ${types.length} event types`);
  const events = read('docs/events.md');
  const missing = types.filter((t) => !events.includes('`' + t + '`'));
  assert.deepEqual(missing, [], `event types docs/events.md does not name: ${missing.join(', ')}`);
});

// ---------------------------------------------------------------- links

/** GitHub's heading anchors of a Markdown file (code blocks skipped, duplicates -1, -2). */
function anchors(file) {
  const seen = new Map();
  const out = new Set();
  for (const { line } of prose(fs.readFileSync(file, 'utf8'))) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    let slug = m[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const k = seen.get(slug) || 0;
    seen.set(slug, k + 1);
    if (k) slug += `-${k}`;
    out.add(slug);
  }
  return out;
}

function links(file) {
  const out = [];
  for (const { line, n } of prose(read(file))) {
    const noCode = line.replace(/`[^`]*`/g, '');
    for (const m of noCode.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g))
      out.push({ target: m[1], where: `${file}:${n}` });
  }
  return out;
}

test('every relative link of README.md and docs/*.md resolves, anchors included', () => {
  const problems = [];
  let count = 0;
  for (const file of pages()) {
    for (const { target, where } of links(file)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      count++;
      const [p, anchor] = target.split('#');
      const dest = p === '' ? path.join(ROOT, file) : path.resolve(path.dirname(path.join(ROOT, file)), decodeURI(p));
      if (!dest.startsWith(ROOT + path.sep)) {
        problems.push(`${where}: ${target} leaves the repository`);
        continue;
      }
      if (!fs.existsSync(dest)) {
        problems.push(`${where}: ${target}: no such file`);
        continue;
      }
      if (anchor !== undefined && dest.endsWith('.md') && !anchors(dest).has(anchor)) {
        problems.push(`${where}: ${target}: ${rel(dest)} has no heading #${anchor}`);
      }
    }
  }
  assert.ok(count > 50, `found only ${count} relative links: the scan is broken`);
  assert.deepEqual(problems, [], problems.join('\n'));
});

test('the README links every page of docs/', () => {
  const linked = new Set(links('README.md').map((l) => path.normalize(l.target.split('#')[0])));
  const missing = pages()
    .filter((p) => p.startsWith('docs/'))
    .filter((p) => !linked.has(p));
  assert.deepEqual(missing, [], `docs/ pages the README does not link: ${missing.join(', ')}`);
});

// ---------------------------------------------------------------- fixtures, outside paths

test('tests/fixtures/nvidia/SOURCES.md has a row for every fixture and no row for a missing one', () => {
  const dir = 'tests/fixtures/nvidia';
  const files = new Set(fs.readdirSync(path.join(ROOT, dir)).filter((f) => f !== 'SOURCES.md'));
  const rows = [...read(`${dir}/SOURCES.md`).matchAll(/^\| ([^|\s]+) \|/gm)]
    .map((m) => m[1])
    .filter((f) => f !== 'file' && !/^-+$/.test(f));
  assert.ok(rows.length > 50, `read only ${rows.length} rows`);
  const unlisted = [...files].filter((f) => !rows.includes(f)).sort();
  const absent = rows.filter((f) => !files.has(f)).sort();
  assert.deepEqual({ unlisted, absent }, { unlisted: [], absent: [] }, `${dir}/SOURCES.md and the directory differ`);
});

test('no file of the repository refers to the shared folder outside it', () => {
  // the shared folder beside the checkout, relative or absolute; spelled so that this file
  // does not match itself
  const OUTSIDE = new RegExp(['\\.\\.', '\\/work'].map((p) => `${p}\\/${'shared'}\\b`).join('|'));
  const skip = new Set(['node_modules', 'build', 'bin', 'var', 'test-artifacts', '.git']);
  const hits = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (dir === ROOT && skip.has(e.name)) continue;
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && fs.statSync(p).size < 4 << 20) {
        const text = fs.readFileSync(p, 'utf8');
        if (text.includes('\0')) continue; // binary
        text.split('\n').forEach((line, i) => {
          if (OUTSIDE.test(line)) hits.push(`${rel(p)}:${i + 1}: ${line.trim().slice(0, 120)}`);
        });
      }
    }
  };
  walk(ROOT);
  assert.deepEqual(
    hits,
    [],
    `references to a path outside the repository (carry what is needed in docs/):\n  ${hits.join('\n  ')}`,
  );
});
