'use strict';
// node tests/lib/print-times.js WALL_FILE CPU_FILE: the per-file table printed at the end of
// tests/*/run, longest first: wall and CPU seconds per test file (see
// tests/lib/file-times-reporter.js and tests/lib/cpu-at-exit.js), and the sums.

const fs = require('node:fs');

const read = (f) => {
  const m = new Map();
  let text = '';
  try {
    text = fs.readFileSync(f, 'utf8');
  } catch {
    return m;
  }
  for (const line of text.split('\n')) {
    const [v, file] = line.split('\t');
    if (file) m.set(file, (m.get(file) || 0) + Number(v));
  }
  return m;
};
const [wallFile, cpuFile] = process.argv.slice(2);
const wall = read(wallFile);
const cpu = read(cpuFile);
const rows = [...wall.keys()].sort((a, b) => wall.get(b) - wall.get(a));
const col = (v) => (v === undefined ? '-' : v.toFixed(1)).padStart(7);
let sw = 0;
let sc = 0;
console.log(`per-file times (s), longest first\n  ${'wall'.padStart(7)} ${'cpu'.padStart(7)}  file`);
for (const f of rows) {
  sw += wall.get(f);
  sc += cpu.get(f) || 0;
  console.log(`  ${col(wall.get(f))} ${col(cpu.get(f))}  ${f}`);
}
console.log(`  ${col(sw)} ${col(sc)}  sum of ${rows.length} file${rows.length === 1 ? '' : 's'}`);
