'use strict';
// Preloaded into every node process of a test run (tests/*/run set NODE_OPTIONS=--require
// this file, and GPUFLEET_TEST_CPU_FILE): when a test file's process exits, appends
// "<CPU seconds>\t<file>" to that file. The CPU is the process's own (user + system) and
// that of the children it waited for: the servers it started and stopped, psql, the
// tools. Not PostgreSQL's. The simulated hosts' (their sshd and every command they ran)
// are added by tests/api/lib/fleet.js when it stops them (simfleet down --cpu).

const fs = require('node:fs');
const path = require('node:path');

const out = process.env.GPUFLEET_TEST_CPU_FILE;
const file = process.argv[1] || '';
// (the runner itself, `node --test FILES`, has argv[1] = its first file: not counted)
if (out && file.endsWith('.test.js') && !process.execArgv.includes('--test')) {
  process.on('exit', () => {
    try {
      const stat = fs.readFileSync('/proc/self/stat', 'utf8');
      // the fields after "(comm) ": utime, stime, cutime, cstime are the 12th to 15th
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = f.slice(11, 15).reduce((a, b) => a + Number(b), 0);
      fs.appendFileSync(out, `${(ticks / 100).toFixed(1)}\t${path.relative(process.cwd(), file)}\n`);
    } catch {
      // no /proc: no CPU column
    }
  });
}
