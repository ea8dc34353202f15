'use strict';
// ESLint (flat config) for the project's JavaScript: the tests (node:test, CommonJS),
// the bench helpers (CommonJS) and the status page (ui/, ES modules in the browser).
// make fmt-check runs it on every tracked .js file (make test runs make fmt-check).

const js = require('@eslint/js');
const globals = require('globals');

module.exports = [
  {
    ignores: ['node_modules/', 'var/', 'build/', 'bin/', 'test-artifacts/', 'tests/fixtures/'],
  },
  js.configs.recommended,
  {
    // Node: the tests, the bench helpers, this file.
    files: ['**/*.js', 'scripts/layers'],
    ignores: ['ui/**'],
    languageOptions: {
      ecmaVersion: 2023,
      sourceType: 'commonjs',
      globals: { ...globals.node },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // `const { id, ...rest } = o` is how the tests drop members before a comparison.
      'no-unused-vars': ['error', { ignoreRestSiblings: true }],
      // Node 20 deadlocks exporting (or signing with) a key generateKeyPairSync returned
      // when a garbage collection lands inside; keyPair() in tests/api/lib/jwt.js is the
      // one way the tests make keys.
      'no-restricted-properties': [
        'error',
        { property: 'generateKeyPairSync', message: 'use keyPair() from tests/api/lib/jwt.js' },
        { property: 'generateKeyPair', message: 'use keyPair() from tests/api/lib/jwt.js' },
      ],
    },
  },
  {
    // keyPair() itself.
    files: ['tests/api/lib/jwt.js'],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    // The status page: ES modules in the browser.
    files: ['ui/**/*.js'],
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: { ...globals.browser } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: { 'no-unused-vars': ['error', { ignoreRestSiblings: true }] },
  },
  {
    // The UI tests pass functions to page.evaluate(), which run in the browser.
    files: ['tests/ui/**/*.js'],
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
  },
];
