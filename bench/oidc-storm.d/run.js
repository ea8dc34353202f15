'use strict';
// bench/oidc-storm's driver (see its header): quiet, control and storm phases, medians.

const crypto = require('node:crypto');
const http = require('node:http');

const { startServer, sleep, signJwt, nowSec, keyPair } = require('../../tests/api/lib/server');
const { startIdp } = require('../../tests/api/lib/idp');

const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const SECONDS = Number(process.env.BENCH_SECONDS || 8);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY || 4);
const DELAY_MS = Number(process.env.BENCH_PROVIDER_DELAY_MS || 5000);
const AUDIENCE = 'https://gpufleet.bench/api';
const TARGET = 1.2;

// One GET on a new connection: ms and status (Infinity / 0 past 30 s).
function get(base, path, token) {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    const req = http.get(
      `${base}${path}`,
      { agent: false, headers: token ? { authorization: `Bearer ${token}` } : {}, timeout: 30_000 },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, status: res.statusCode }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ ms: Infinity, status: 0 }));
  });
}

const pct = (a, p) => {
  if (a.length === 0) return NaN;
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const median = (a) => pct(a, 50);

// Samples /healthz for SECONDS while `load` (a token factory, or null) keeps CONCURRENCY
// clients busy on /v1/pools. Returns {health: [ms], load: [ms], bad}.
async function phase(base, makeToken) {
  const until = Date.now() + SECONDS * 1000;
  const health = [];
  const load = [];
  let bad = 0;
  const sampler = (async () => {
    while (Date.now() < until) {
      const r = await get(base, '/healthz');
      health.push(r.status === 200 ? r.ms : Infinity);
      await sleep(5);
    }
  })();
  const clients = makeToken
    ? Array.from({ length: CONCURRENCY }, async () => {
        while (Date.now() < until) {
          const r = await get(base, '/v1/pools', makeToken());
          if (r.status !== 401) bad++;
          load.push(r.ms);
        }
      })
    : [];
  await Promise.all([sampler, ...clients]);
  return { health, load, bad };
}

async function main() {
  const idp = await startIdp({
    clients: [{ id: 'admin-bot', groups: ['platform-admins'], alg: 'RS256' }],
    audience: AUDIENCE,
  });
  const srv = await startServer({
    name: 'bench-oidc-storm',
    env: {
      GPUFLEET_JWT_SECRET_FILE: undefined,
      GPUFLEET_JWT_JWKS_URL: idp.jwksUrl(),
      GPUFLEET_JWT_ISSUER: idp.issuer,
      GPUFLEET_JWT_AUDIENCE: AUDIENCE,
      GPUFLEET_JWT_ROLE_MAP: 'platform-admins:admin',
      GPUFLEET_JWT_PRINCIPAL_CLAIM: 'client_id',
      GPUFLEET_JWT_JWKS_MIN_REFRESH_SECONDS: '1',
      GPUFLEET_JWT_JWKS_TIMEOUT_SECONDS: '10',
      GPUFLEET_WORKERS: '0',
      GPUFLEET_LOG_LEVEL: 'warn',
    },
  });
  const key = keyPair('ec', { namedCurve: 'P-256' }).privateKey;
  const claims = () => ({
    iss: idp.issuer,
    aud: AUDIENCE,
    sub: 'forger',
    client_id: 'forger',
    groups: ['platform-admins'],
    iat: nowSec(),
    exp: nowSec() + 600,
  });
  // Control: the provider's real EC kid, signed by another key (401, nothing fetched).
  const control = signJwt({ alg: 'ES256', key, header: { kid: idp.keys.ec.kid }, claims: claims() });
  const forged = () =>
    signJwt({
      alg: 'ES256',
      key,
      header: { kid: `forged-${crypto.randomBytes(8).toString('hex')}` },
      claims: claims(),
    });

  const res = { quiet: [], control: [], storm: [], stormLoad: [], fetches: [], bad: 0 };
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      idp.front.mode = 'pass';
      await sleep(1100);
      const q = await phase(srv.url, null);
      const c = await phase(srv.url, () => control);
      idp.front.mode = 'delay';
      idp.front.delayMs = DELAY_MS;
      await sleep(1100);
      const hits0 = idp.front.hits;
      const s = await phase(srv.url, forged);
      const fetches = idp.front.hits - hits0;
      res.quiet.push(pct(q.health, 99));
      res.control.push(pct(c.health, 99));
      res.storm.push(pct(s.health, 99));
      res.stormLoad.push(pct(s.load, 99));
      res.fetches.push(fetches);
      res.bad += c.bad + s.bad;
      console.log(
        `round ${round}: /healthz p50/p99 ms quiet ${pct(q.health, 50).toFixed(2)}/${pct(q.health, 99).toFixed(2)}` +
          ` (${q.health.length}), control ${pct(c.health, 50).toFixed(2)}/${pct(c.health, 99).toFixed(2)} (${c.health.length}),` +
          ` storm ${pct(s.health, 50).toFixed(2)}/${pct(s.health, 99).toFixed(2)} (${s.health.length});` +
          ` forged tokens ${s.load.length}, p99 ${pct(s.load, 99).toFixed(2)} ms; JWK set fetches ${fetches} in ${SECONDS} s`,
      );
    }
  } finally {
    idp.front.mode = 'pass';
    await srv.stop();
    await idp.stop();
  }
  const mq = median(res.quiet);
  const mc = median(res.control);
  const ms = median(res.storm);
  console.log(
    `\nmedians over ${ROUNDS} rounds (${SECONDS} s each, ${CONCURRENCY} clients, provider delay ${DELAY_MS} ms):`,
  );
  console.log(`  /healthz p99: quiet ${mq.toFixed(2)} ms, control ${mc.toFixed(2)} ms, storm ${ms.toFixed(2)} ms`);
  console.log(
    `  storm/quiet ${(ms / mq).toFixed(2)} (target <= ${TARGET}: ${ms / mq <= TARGET ? 'PASS' : 'MISS'}),` +
      ` storm/control ${(ms / mc).toFixed(2)} (${ms / mc <= TARGET ? 'PASS' : 'MISS'})`,
  );
  console.log(
    `  forged requests p99 ${median(res.stormLoad).toFixed(2)} ms; JWK set fetches per round ${res.fetches.join(', ')}`,
  );
  if (res.bad > 0) {
    console.log(`  ${res.bad} answers were not 401`);
    process.exitCode = 1;
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
