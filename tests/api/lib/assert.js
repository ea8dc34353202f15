'use strict';
// Small assertions shared by the API tests. The schema checks themselves
// live in openapi.js (every response is validated there); these add the
// test's expectation of which status/code/field.

const assert = require('node:assert/strict');

function show(res) {
  const body = res.text && res.text.length > 800 ? res.text.slice(0, 800) + '…' : res.text;
  return `got ${res.status} ${res.headers.get('content-type') || ''} ${body}`;
}

/** Expect a problem document with this status and code (and field, if given). */
function expectProblem(res, status, code, field) {
  assert.equal(res.status, status, `want ${status} ${code}; ${show(res)}`);
  const ct = res.headers.get('content-type') || '';
  assert.match(ct, /^application\/problem\+json\b/i, `want application/problem+json; ${show(res)}`);
  const b = res.body;
  assert.ok(b && typeof b === 'object', `want a problem body; ${show(res)}`);
  for (const k of ['type', 'title', 'status', 'detail', 'code']) {
    assert.ok(b[k] !== undefined && b[k] !== '', `problem lacks ${k}; ${show(res)}`);
  }
  if (Array.isArray(code)) assert.ok(code.includes(b.code), `want code in ${code}; ${show(res)}`);
  else assert.equal(b.code, code, `want code ${code}; ${show(res)}`);
  if (field !== undefined) assert.equal(b.field, field, `want field ${field}; ${show(res)}`);
  return b;
}

/** Expect this status (with the response shown on failure). */
function expectStatus(res, status) {
  assert.equal(res.status, status, `want ${status}; ${show(res)}`);
  return res.body;
}

module.exports = { expectProblem, expectStatus, show };
