'use strict';
// node tests/lib/print-times.js TIMES_FILE: the per-file table printed at the end of
// tests/*/run, longest first: wall and CPU seconds per test file (the lines
// "<wall>\t<cpu>\t<file>" of tests/lib/times-at-exit.js and tests/api/lib/fleet.js, summed
// per file), and the sums.

const fs = require('node:fs');

let text = '';
try {
  text = fs.readFileSync(process.argv[2], 'utf8');
} catch {
  // no file: an empty table
}
const wall = new Map();
const cpu = new Map();
for (const line of text.split('\n')) {
  const [w, c, file] = line.split('\t');
  if (!file) continue;
  wall.set(file, (wall.get(file) || 0) + Number(w));
  cpu.set(file, (cpu.get(file) || 0) + Number(c));
}
const rows = [...wall.keys()].sort((a, b) => wall.get(b) - wall.get(a));
const col = (v) => v.toFixed(1).padStart(7);
let sw = 0;
let sc = 0;
console.log(`per-file times (s), longest first\n  ${'wall'.padStart(7)} ${'cpu'.padStart(7)}  file`);
for (const f of rows) {
  sw += wall.get(f);
  sc += cpu.get(f);
  console.log(`  ${col(wall.get(f))} ${col(cpu.get(f))}  ${f}`);
}
console.log(`  ${col(sw)} ${col(sc)}  sum of ${rows.length} file${rows.length === 1 ? '' : 's'}`);
