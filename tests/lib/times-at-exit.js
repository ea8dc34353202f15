'use strict';
// Preloaded into every node process of a test run (tests/*/run set NODE_OPTIONS=--require
// this file, and GPUFLEET_TEST_TIMES_FILE): when a test file's process exits, appends
// "<wall seconds>\t<CPU seconds>\t<file>" to that file. The wall time is the process's
// life (hooks and servers included); the CPU is its own (user + system) and that of the
// children it waited for: the servers it started and stopped, psql, the tools. Not
// PostgreSQL's. The simulated hosts' (their sshd and every command they ran) are added by
// tests/api/lib/fleet.js when it stops them (simfleet down --cpu), as "0\t<CPU>\t<file>".
// tests/lib/print-times.js prints the table.

const fs = require('node:fs');
const path = require('node:path');

const out = process.env.GPUFLEET_TEST_TIMES_FILE;
const file = process.argv[1] || '';
// (the runner itself, `node --test FILES`, has argv[1] = its first file: not counted)
if (out && file.endsWith('.test.js') && !process.execArgv.includes('--test')) {
  process.on('exit', () => {
    try {
      const stat = fs.readFileSync('/proc/self/stat', 'utf8');
      // the fields after "(comm) ": utime, stime, cutime, cstime are the 12th to 15th
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = f.slice(11, 15).reduce((a, b) => a + Number(b), 0);
      const rel = path.relative(process.cwd(), file);
      fs.appendFileSync(out, `${process.uptime().toFixed(1)}\t${(ticks / 100).toFixed(1)}\t${rel}\n`);
    } catch {
      // no /proc: nothing recorded
    }
  });
}
