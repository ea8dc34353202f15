'use strict';
// A Unix-socket proxy in front of the test PostgreSQL, to partition one gpufleetd from
// its database: cut() drops every proxied connection and refuses new ones (libpq then
// fails at once, as after a network partition its keepalives detect); heal() lets
// connections through again. Only for tests.
//
//   const p = await pgProxy(db.url);   // db.url: postgresql://…?host=/dir&port=5433
//   startServer({ databaseUrl: p.url, … });
//   p.cut(); …; p.heal(); p.close();

const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

async function pgProxy(databaseUrl) {
  // libpq URLs may have an empty host (postgresql://user@/db?host=/dir): parse the query only
  const q = new URLSearchParams(databaseUrl.split('?')[1] || '');
  const hostDir = q.get('host');
  const port = q.get('port') || '5432';
  if (!hostDir || !hostDir.startsWith('/')) throw new Error(`pgProxy needs a Unix-socket URL, got ${databaseUrl}`);
  const target = path.join(hostDir, `.s.PGSQL.${port}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gft-pgproxy-'));
  const listenPath = path.join(dir, `.s.PGSQL.${port}`);
  const sockets = new Set();
  let cut = false;
  let refused = 0;
  const server = net.createServer((client) => {
    if (cut) {
      refused++;
      client.destroy();
      return;
    }
    const upstream = net.connect(target);
    sockets.add(client);
    sockets.add(upstream);
    const done = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', done).on('close', done);
    upstream.on('error', done).on('close', done);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise((resolve, reject) => server.once('error', reject).listen(listenPath, resolve));
  q.set('host', dir);
  return {
    url: `${databaseUrl.split('?')[0]}?${q.toString()}`,
    get refused() {
      return refused;
    },
    cut() {
      cut = true;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    heal() {
      cut = false;
    },
    close() {
      this.cut();
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

module.exports = { pgProxy };
