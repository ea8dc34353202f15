'use strict';
// bench/fleet.d/pgdelay.js - a Unix-socket proxy in front of PostgreSQL that adds a fixed
// delay to every round trip: each chunk a client sends reaches the server DELAY_MS after
// it arrived (in order, per connection); replies pass at once. Only for bench/fleet
// (after tests/api/lib/pgproxy.js).
//
//   node bench/fleet.d/pgdelay.js TARGET_SOCKET LISTEN_SOCKET DELAY_MS
//
// TARGET_SOCKET is the server's .s.PGSQL.<port>; LISTEN_SOCKET must be named
// .s.PGSQL.<port> inside a directory of its own (libpq: host=<dir>&port=<port>). Prints
// "ready" on stdout once it listens; on SIGTERM, how many connections and chunks it
// forwarded (stderr), then exits.

const fs = require('node:fs');
const net = require('node:net');

const [target, listenPath, delayArg] = process.argv.slice(2);
const delay = Number(delayArg);
if (!target || !listenPath || !Number.isFinite(delay) || delay < 0) {
  process.stderr.write('usage: pgdelay.js TARGET_SOCKET LISTEN_SOCKET DELAY_MS\n');
  process.exit(2);
}

const stats = { connections: 0, chunks: 0 };
const server = net.createServer((client) => {
  stats.connections++;
  const upstream = net.connect(target);
  const both = [client, upstream];
  const close = () => both.forEach((s) => s.destroy());
  both.forEach((s) => s.on('error', close).on('close', close));
  // Timers of one duration fire in the order they were set, so the bytes stay in order.
  const later = (fn) => setTimeout(fn, delay);
  client.on('data', (b) => {
    stats.chunks++;
    later(() => upstream.destroyed || upstream.write(b));
  });
  client.on('end', () => later(() => upstream.end()));
  upstream.pipe(client);
});

fs.rmSync(listenPath, { force: true });
server.listen(listenPath, () => process.stdout.write('ready\n'));
process.on('SIGTERM', () => {
  process.stderr.write(`pgdelay: ${stats.connections} connections, ${stats.chunks} chunks delayed ${delay} ms\n`);
  fs.rmSync(listenPath, { force: true });
  process.exit(0);
});
