'use strict';
// The contract, enforced on every response the suite sees.
//
//   const { api } = require('./lib/openapi');
//   const client = api(server);
//   const res = await client.request('GET', '/v1/gpu-models', { token });
//   res.status, res.headers (a fetch Headers), res.text, res.body (parsed JSON)
//
// request() validates the answer against openapi/openapi.yaml and throws
// ContractError when it does not conform:
//   * the (method, path template) must be an operation of the spec; a request
//     that matches no operation must be answered with one of the root
//     `x-unrouted-responses` (404, 405 with Allow, 414, ...);
//   * the status must be documented for the operation;
//   * the Content-Type must be the documented media type (parameters in the
//     documented type, e.g. `version=0.0.4`, must be present; others such as
//     charset may be added), and a response documented without content must
//     have an empty body (always so for 304 and HEAD);
//   * the body must validate against the documented schema (Ajv, JSON Schema
//     2020-12, with formats);
//   * headers documented as required must be present and match their schema;
//   * a problem document's `status` must equal the HTTP status, and its
//     `request_id`, when present, must equal the X-Request-Id header.
//
// Escape hatch: request(..., {validate: false}) skips all of this. It exists
// only for CORS preflight (OPTIONS), which the spec deliberately does not
// list; cors.test.js is its only user.

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { isDeepStrictEqual } = require('node:util');
const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats').default;
const standaloneCode = require('ajv/dist/standalone').default;

const SPEC_PATH = path.resolve(__dirname, '..', '..', '..', 'openapi', 'openapi.yaml');
const SPEC_ID = 'https://gpufleet.invalid/openapi.yaml';
const AJV_OPTIONS = { strict: false, allErrors: true, validateFormats: true };
// what a cached validator's code depends on besides the spec and its key
const AJV_KEY = `${require('ajv/package.json').version} ${JSON.stringify(AJV_OPTIONS)} ${SPEC_ID}`;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

class ContractError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ContractError';
  }
}

let cached = null;

// Parsing the 550 kB YAML costs every test process about a second of CPU; its JSON, a
// hundredth of that. The first process of a run (per spec text: the key is its hash)
// writes the parsed document as JSON under test-artifacts/.cache/ (written to a temporary
// name, then renamed: processes side by side read a whole file or none), and the others
// read that. The JSON is written only if it reads back equal to the parsed YAML.
const CACHE_DIR = path.resolve(__dirname, '..', '..', '..', 'test-artifacts', '.cache');
const sha256 = (text) => crypto.createHash('sha256').update(text).digest('hex');

// Writes text to file by way of a temporary name (a reader sees all of it or no file); a
// write that fails is not shared, nothing more.
function cacheWrite(file, text) {
  try {
    fs.mkdirSync(CACHE_DIR, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, file);
  } catch {
    // no cache: every process does the work itself
  }
}

function parseSpec(text, hash) {
  const file = path.join(CACHE_DIR, `openapi-${hash}.json`);
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    // not there yet (or unreadable): parse the YAML
  }
  const spec = require('yaml').parse(text);
  const json = JSON.stringify(spec);
  if (isDeepStrictEqual(JSON.parse(json), spec)) cacheWrite(file, json);
  return spec;
}

function loadSpec() {
  if (cached) return cached;
  const text = fs.readFileSync(SPEC_PATH, 'utf8');
  const hash = sha256(text);
  const spec = parseSpec(text, hash);

  const routes = [];
  for (const [template, item] of Object.entries(spec.paths)) {
    const names = [];
    const re = new RegExp(
      '^' +
        template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{([^}]+)\\?\}|\{([^}]+)\}/g, (_, a, b) => {
          names.push(a || b);
          return '([^/]+)';
        }) +
        '$',
    );
    const ops = {};
    for (const m of METHODS) if (item[m]) ops[m.toUpperCase()] = item[m];
    routes.push({ template, re, names, ops });
  }
  cached = { text, hash, spec, ajv: null, routes, validators: new Map() };
  return cached;
}

// The Ajv instance, made when a validator is first compiled in this process (most
// processes of a run load every validator from the cache and never make one).
function ajvOf(s) {
  if (!s.ajv) {
    // code.source: compiled validators keep their source, for standaloneCode
    const ajv = new Ajv2020({ ...AJV_OPTIONS, code: { source: true } });
    addFormats(ajv);
    // Register the whole document so that `#/components/schemas/...` refs
    // inside component schemas resolve within it.
    ajv.addSchema({ $id: SPEC_ID, components: { schemas: s.spec.components.schemas } });
    s.ajv = ajv;
  }
  return s.ajv;
}

// Follow a local $ref (any component kind).
function deref(spec, obj) {
  let seen = 0;
  while (obj && typeof obj === 'object' && typeof obj.$ref === 'string') {
    if (!obj.$ref.startsWith('#/')) throw new Error(`unsupported $ref ${obj.$ref}`);
    obj = obj.$ref
      .slice(2)
      .split('/')
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce((o, k) => (o == null ? undefined : o[k]), spec);
    if (++seen > 20) throw new Error('$ref loop');
  }
  return obj;
}

// Rewrite `#/...` refs to point into the registered document.
function absolutize(schema) {
  if (Array.isArray(schema)) return schema.map(absolutize);
  if (!schema || typeof schema !== 'object') return schema;
  const out = {};
  for (const [k, v] of Object.entries(schema)) {
    out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#') ? SPEC_ID + v : absolutize(v);
  }
  return out;
}

// Compiling a validator (Ajv's code generation) costs a test process 0.5-1 s of CPU over
// the responses of one file, and every process of a run compiles the same ones. The first
// process to compile one writes its standalone code (Ajv's standaloneCode: the same
// function, options and formats) under test-artifacts/.cache/, keyed by the spec text's
// hash, Ajv's version and the validator's key; the others require that module. A module
// that cannot be read or loaded is compiled again; one Ajv cannot write is not shared.
function validatorFor(schema, cacheKey) {
  const s = loadSpec();
  let v = s.validators.get(cacheKey);
  if (v) return v;
  const file = path.join(CACHE_DIR, `ajv-${sha256(`${s.hash}\0${AJV_KEY}\0${cacheKey}`)}.js`);
  try {
    v = require(file);
  } catch {
    const ajv = ajvOf(s);
    v = ajv.compile(absolutize(schema));
    let code = null;
    try {
      code = standaloneCode(ajv, v);
    } catch {
      // not shared: this process validates with what it compiled, the others compile too
    }
    if (code !== null) cacheWrite(file, code);
  }
  s.validators.set(cacheKey, v);
  return v;
}

/** Set of 'METHOD /path/{param}' for every operation in the spec. */
function specRoutes() {
  const out = new Set();
  for (const r of loadSpec().routes) for (const m of Object.keys(r.ops)) out.add(`${m} ${r.template}`);
  return out;
}

/** The served-document text, for comparison with GET /openapi.yaml. */
function specText() {
  return loadSpec().text;
}

/** Find the operation for (method, path). HEAD falls back to GET. */
function findOperation(method, rawPath) {
  const { routes } = loadSpec();
  const p = rawPath.split('?')[0].split('#')[0];
  let pathMatched = null;
  for (const r of routes) {
    if (!r.re.test(p)) continue;
    pathMatched = r;
    const op = r.ops[method] || (method === 'HEAD' ? r.ops.GET : undefined);
    if (op) return { route: r, op };
  }
  return { route: pathMatched, op: null };
}

function parseMediaType(value) {
  if (!value) return null;
  const [essence, ...params] = value.split(';');
  const p = {};
  for (const kv of params) {
    const i = kv.indexOf('=');
    if (i < 0) continue;
    p[kv.slice(0, i).trim().toLowerCase()] = kv
      .slice(i + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
  }
  return { essence: essence.trim().toLowerCase(), params: p };
}

function mediaTypeMatches(documented, actual) {
  const d = parseMediaType(documented);
  const a = parseMediaType(actual);
  if (!a || d.essence !== a.essence) return false;
  return Object.entries(d.params).every(([k, v]) => a.params[k] === v);
}

function fmtErrors(errors) {
  return (errors || [])
    .slice(0, 10)
    .map((e) => `  ${e.instancePath || '(root)'} ${e.message}${e.params ? ' ' + JSON.stringify(e.params) : ''}`)
    .join('\n');
}

/**
 * Validate one response. `res` = {status, headers (Headers), text}.
 * Returns the parsed body (or undefined). Throws ContractError.
 */
function validateResponse(method, reqPath, res) {
  const s = loadSpec();
  const where = `${method} ${reqPath.length > 120 ? reqPath.slice(0, 120) + '…' : reqPath} → ${res.status}`;
  const fail = (msg) => {
    const body = res.text.length > 1500 ? res.text.slice(0, 1500) + '…' : res.text;
    throw new ContractError(
      `contract violation: ${where}: ${msg}\n  content-type: ${res.headers.get('content-type')}\n  body: ${body}`,
    );
  };

  const { route, op } = findOperation(method, reqPath);
  let responses;
  let opName;
  if (op) {
    responses = op.responses;
    opName = `${op.operationId} (${method === 'HEAD' ? 'GET' : method} ${route.template})`;
  } else {
    responses = s.spec['x-unrouted-responses'];
    opName = route ? `unrouted method on ${route.template}` : 'unrouted path';
  }
  const key = String(res.status);
  let response = responses[key] || responses[`${key[0]}XX`] || responses.default;
  if (!response) {
    fail(`status ${res.status} is not documented for ${opName} (documented: ${Object.keys(responses).join(', ')})`);
  }
  response = deref(s.spec, response);

  // Headers.
  for (const [name, h0] of Object.entries(response.headers || {})) {
    const h = deref(s.spec, h0);
    const value = res.headers.get(name);
    if (value === null) {
      if (h.required) fail(`required header ${name} is missing`);
      continue;
    }
    if (h.schema) {
      const v = validatorFor(h.schema, `header:${JSON.stringify(h.schema)}`);
      if (!v(value))
        fail(`header ${name}: ${JSON.stringify(value)} does not match its schema:\n${fmtErrors(v.errors)}`);
    }
  }
  if (!op && route && res.status === 405) {
    // Allow must list exactly what the spec lists for this path (OPTIONS,
    // and HEAD when GET exists, may be added).
    const allow = new Set(
      (res.headers.get('allow') || '')
        .split(',')
        .map((x) => x.trim().toUpperCase())
        .filter(Boolean),
    );
    for (const m of Object.keys(route.ops)) if (!allow.has(m)) fail(`Allow header lacks ${m}`);
    for (const m of allow) {
      if (!route.ops[m] && m !== 'OPTIONS' && !(m === 'HEAD' && route.ops.GET))
        fail(`Allow header lists ${m}, not in the spec`);
    }
  }

  // Body.
  const noBody = method === 'HEAD' || res.status === 304 || res.status === 204 || !response.content;
  if (noBody) {
    if (res.text.length) fail(`expected no body, got ${res.text.length} bytes`);
    return undefined;
  }
  const ct = res.headers.get('content-type');
  const mediaKey = Object.keys(response.content).find((k) => mediaTypeMatches(k, ct));
  if (!mediaKey) fail(`content-type ${ct} is not one of ${Object.keys(response.content).join(', ')}`);
  const media = response.content[mediaKey];
  let body;
  if (/json$/.test(parseMediaType(mediaKey).essence)) {
    try {
      body = JSON.parse(res.text);
    } catch (e) {
      fail(`body is not valid JSON: ${e.message}`);
    }
  } else {
    body = res.text;
  }
  if (media.schema) {
    const cacheKey = `${method} ${route ? route.template : '*'} ${key} ${mediaKey}${op ? '' : ' unrouted'}`;
    const v = validatorFor(media.schema, cacheKey);
    if (!v(body)) fail(`body does not match the schema:\n${fmtErrors(v.errors)}`);
  }
  if (parseMediaType(mediaKey).essence === 'application/problem+json') {
    if (body.status !== res.status) fail(`problem status ${body.status} differs from HTTP status ${res.status}`);
    const rid = res.headers.get('x-request-id');
    if (body.request_id !== undefined && rid !== null && body.request_id !== rid) {
      fail(`problem request_id ${body.request_id} differs from X-Request-Id ${rid}`);
    }
    if (body.type !== `urn:gpufleet:problem:${body.code}`) {
      fail(`problem type ${body.type} is not urn:gpufleet:problem:${body.code}`);
    }
  }
  return body;
}

/**
 * api(server) -> {request(method, path, options)}
 *   options.headers      extra request headers
 *   options.token        sets Authorization: Bearer <token>
 *   options.body         a JS value, sent as JSON (Content-Type application/json
 *                        unless options.contentType says otherwise)
 *   options.rawBody      a string/Buffer sent as is
 *   options.contentType  Content-Type for the body (null: send none)
 *   options.validate     false skips contract validation (CORS preflight only)
 * Resolves {status, headers, text, body}.
 */
function api(server) {
  const base = typeof server === 'string' ? server : server.url;
  return {
    async request(method, reqPath, options = {}) {
      const headers = { ...(options.headers || {}) };
      // One connection per request. A test's event loop can be blocked for a minute
      // (spawnSync of `gpufleetd token` or simfleet, the first schema compile, on a busy
      // machine) while an idle keep-alive socket sits in fetch's pool; the server closes it
      // after its idle timeout (GPUFLEET_CONNECTION_TIMEOUT, 60 s), and the next request,
      // sent on it before the close is read, fails with "other side closed".
      if (!Object.keys(headers).some((k) => k.toLowerCase() === 'connection')) headers.Connection = 'close';
      if (options.token) headers.Authorization = `Bearer ${options.token}`;
      let payload;
      if (options.rawBody !== undefined) {
        payload = options.rawBody;
      } else if (options.body !== undefined) {
        payload = JSON.stringify(options.body);
        if (options.contentType === undefined) headers['Content-Type'] = 'application/json';
      }
      if (options.contentType) headers['Content-Type'] = options.contentType;
      if (payload !== undefined && options.contentType === null && typeof payload === 'string') {
        // fetch would add text/plain for a string; a Buffer goes without.
        payload = Buffer.from(payload);
      }
      let res;
      const t0 = Date.now();
      try {
        res = await fetch(base + reqPath, {
          method,
          headers,
          body: payload,
          redirect: 'manual',
          signal: AbortSignal.timeout(options.timeoutMs || 30_000),
        });
      } catch (e) {
        // undici says only "fetch failed"; the cause (ECONNRESET, ECONNREFUSED, ...) is what helps
        if (e.cause) {
          const why = `${e.cause.code || e.cause.name}: ${e.cause.message}`;
          e.message += ` (${method} ${reqPath} after ${Date.now() - t0} ms: ${why})`;
        }
        throw e;
      }
      const text = Buffer.from(await res.arrayBuffer()).toString('utf8');
      const out = { status: res.status, headers: res.headers, text, body: undefined };
      if (options.validate === false) {
        try {
          out.body = text ? JSON.parse(text) : undefined;
        } catch {
          /* not JSON */
        }
        return out;
      }
      out.body = validateResponse(method, reqPath, out);
      return out;
    },
  };
}

let eventSchema;
/**
 * Throws unless a parsed SSE event (lib/sse.js: {id, event, data, json}) is a valid
 * #/components/schemas/Event whose type and id match its `event:` and `id:` lines.
 */
function validateEvent(ev) {
  if (!eventSchema) eventSchema = validatorFor({ $ref: '#/components/schemas/Event' }, 'event');
  if (!eventSchema(ev.json)) {
    const errs = eventSchema.errors
      .slice(0, 6)
      .map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
    throw new Error(
      `event ${ev.id} (${ev.event}) does not match the Event schema:\n  ${errs.join('\n  ')}\n  ${ev.data.slice(0, 400)}`,
    );
  }
  if (ev.json.type !== ev.event) throw new Error(`event ${ev.id}: data.type ${ev.json.type} but event: ${ev.event}`);
  if (String(ev.json.id) !== ev.id) throw new Error(`event ${ev.id}: data.id ${ev.json.id} differs from the id: line`);
}

module.exports = {
  api,
  specRoutes,
  specText,
  loadSpec,
  validateResponse,
  validateEvent,
  findOperation,
  ContractError,
  SPEC_PATH,
};
