'use strict';
// A node:test reporter (tests/*/run pass it as one more --test-reporter): one line per
// test file, "<wall seconds>\t<file>", when the file's process has ended. The wall time is
// the runner's own measure of the file (process start to exit, hooks and servers
// included). tests/lib/print-times.js joins it with tests/lib/cpu-at-exit.js's CPU times.

const path = require('node:path');

module.exports = async function* fileTimes(source) {
  for await (const ev of source) {
    const d = ev.data;
    // The file's own entry: nesting 0, named by its path.
    if (ev.type === 'test:complete' && d && d.nesting === 0 && d.file && d.name === d.file) {
      const secs = (d.details && d.details.duration_ms) / 1000;
      yield `${secs.toFixed(1)}\t${path.relative(process.cwd(), d.file)}\n`;
    }
  }
};
