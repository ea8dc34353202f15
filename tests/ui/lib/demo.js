'use strict';
// A realistic fleet for the README's screenshot, on a server of its own (its own database,
// no workers): three pools, ten hosts with the facts, stacks and gate verdicts provisioning
// would have recorded, GPU samples and events stored by monitor_store as the monitor stores
// them (one host degraded by an application Xid, one isolated by Xid 79 and quarantined, one
// unreachable, one registered and never sampled), work reports, and the recommendations
// they lead to. Host states move only through host_transition(), as the workers move them.
//
//   const demo = await seedDemo(srv, client, tokens);  // → {pools, hosts, stacks}

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');

const { expectStatus } = require('../../api/lib/assert');
const fleet = require('../../api/lib/fleet');

const MODELS = {
  h100: {
    name: 'NVIDIA H100 80GB HBM3',
    mem: 81559,
    power: [95, 690],
    pci: ['18', '2A', '3A', '5D', '9A', 'AB', 'BA', 'DB'],
  },
  h200: { name: 'NVIDIA H200', mem: 143771, power: [110, 700], pci: ['19', '3B', '4C', '5D', '9B', 'BB', 'CB', 'DB'] },
  l4: { name: 'NVIDIA L4', mem: 23034, power: [16, 72], pci: ['01', '41', '81', 'C1'] },
};

function hex(n, seed) {
  let x = seed >>> 0;
  let s = '';
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    s += ((x >>> 16) & 15).toString(16);
  }
  return s;
}

function gpuUuid(hostNo, i) {
  const h = hex(32, hostNo * 131 + i * 7 + 1);
  return `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** GPU readings of a host at minute m, under a load of `load` percent. */
function gpus(model, hostNo, count, m, load) {
  const M = MODELS[model];
  return Array.from({ length: count }, (_, i) => {
    const util = Math.max(0, Math.min(100, load + ((hostNo * 7 + i * 5 + m * 3) % 9) - 4));
    return {
      uuid: gpuUuid(hostNo, i),
      pci_bus_id: `00000000:${M.pci[i]}:00.0`,
      index: i,
      name: M.name,
      util_gpu: util,
      util_mem: Math.round(util * 0.55),
      mem_used_mib: load > 0 ? Math.round(M.mem * (0.78 + ((i + m) % 5) / 100)) : 512,
      mem_total_mib: M.mem,
      temp_c: 34 + Math.round(util * 0.38) + (i % 3),
      power_w: Math.round(M.power[0] + ((M.power[1] - M.power[0]) * util) / 100) + 0.25,
      clock_event_reasons: load > 0 ? 0 : 1,
      ecc_uncorrected_volatile: 0,
      retired_pages_pending: null,
      remapped_rows_pending: false,
      remapped_rows_failure: false,
    };
  });
}

function sqlRun(url, text) {
  const r = spawnSync('psql', ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', '-d', url], {
    encoding: 'utf8',
    input: text,
    timeout: 120_000,
  });
  assert.equal(r.status, 0, `psql: ${r.stderr}`);
  return (r.stdout || '').trim();
}
const q = (s) => `'${String(s).replace(/'/g, "''")}'`;
const jlit = (v) => `$j$${JSON.stringify(v)}$j$::jsonb`;

const CHECKS = ['gpu_inventory', 'container_gpu', 'workload', 'topology', 'storage', 'observability'];

// name, pool, model, GPUs, load %, what the monitor saw
const HOSTS = [
  ['gpu-h100-017', 'inference', 'h100', 8, 86, 'ok'],
  ['gpu-h100-018', 'inference', 'h100', 8, 74, 'xid13'],
  ['gpu-h100-021', 'inference', 'h100', 8, 81, 'xid79'],
  ['gpu-h100-024', 'inference', 'h100', 8, 79, 'unreachable'],
  ['gpu-h200-003', 'training', 'h200', 8, 97, 'ok'],
  ['gpu-h200-004', 'training', 'h200', 8, 96, 'ok'],
  ['gpu-h200-007', 'training', 'h200', 8, 0, 'ok'],
  ['gpu-l4-101', 'embeddings', 'l4', 4, 58, 'ok'],
  ['gpu-l4-102', 'embeddings', 'l4', 4, 63, 'ok'],
  ['gpu-l4-103', 'embeddings', 'l4', 4, 0, 'new'],
];

async function seedDemo(srv, client, { admin, operator }) {
  const url = srv.database.url;
  const cred = await fleet.createCredential(client, admin, fleet.sshKey().text, 'fleet-ops-ed25519');
  const stacks = {
    vllm: await fleet.createStack(client, operator, { name: 'vllm-0.6.3-cu124' }),
    torch: await fleet.createStack(client, operator, { name: 'pytorch-2.4.1-cu124' }),
    tei: await fleet.createStack(client, operator, { name: 'tei-1.5-cu124' }),
  };
  const paths = { durable_path: '/srv/models', scratch_path: '/scratch' };
  const pools = {
    inference: await fleet.createPool(client, admin, {
      ...paths,
      name: 'inference-us-east',
      gpu_model: 'h100_sxm',
      gpu_count: 8,
      interconnect: 'nvlink',
      price_per_hour: 98.32,
    }),
    training: await fleet.createPool(client, admin, {
      ...paths,
      name: 'training-eu-west',
      gpu_model: 'h200_sxm',
      gpu_count: 8,
      interconnect: 'nvlink',
      price_per_hour: 84.5,
    }),
    embeddings: await fleet.createPool(client, admin, {
      ...paths,
      name: 'embeddings-batch',
      gpu_model: 'l4',
      gpu_count: 4,
      price_per_hour: 3.6,
    }),
  };
  const stackOf = { inference: stacks.vllm, training: stacks.torch, embeddings: stacks.tei };
  const hosts = {};
  let no = 0;
  for (const [name, pool, model, count, , what] of HOSTS) {
    no++;
    hosts[name] = await fleet.createHost(client, operator, {
      name,
      address: `10.20.${pool === 'inference' ? 1 : pool === 'training' ? 2 : 3}.${no * 3 + 10}`,
      port: 22,
      user: 'gpufleet',
      credential_id: cred.id,
      pool_id: pools[pool].id,
      labels: { rack: `r${12 + (no % 4)}`, zone: pool === 'training' ? 'eu-west-1b' : 'us-east-1a' },
    });
    hosts[name].no = no;
    hosts[name].what = what;
    hosts[name].model = model;
    hosts[name].count = count;
  }

  // Provisioned and gated, as the workers would have recorded it.
  const steps = [];
  for (const [name, pool, model, count, , what] of HOSTS) {
    if (what === 'new') continue;
    const h = hosts[name];
    const facts = {
      os: 'Ubuntu 22.04.4 LTS',
      kernel: '5.15.0-119-generic',
      driver_version: '550.127.05',
      cuda_version: '12.4',
      gpus: gpus(model, h.no, count, 0, 0).map((g) => ({
        index: g.index,
        name: g.name,
        uuid: g.uuid,
        memory_total_mib: g.mem_total_mib,
      })),
    };
    const checks = CHECKS.map((c) => ({ name: c, status: c === 'topology' && model === 'l4' ? 'skip' : 'pass' }));
    steps.push(`
      SELECT host_transition(${q(h.id)}, 'provision_started', 'provisioning', 'provision', NULL, 'worker:demo', NULL);
      UPDATE hosts SET facts = ${jlit(facts)}, current_stack_id = ${q(stackOf[pool].id)}, desired_stack_id = ${q(stackOf[pool].id)},
                       last_seen = now() - interval '${(h.no * 17) % 50} seconds' WHERE id = ${q(h.id)};
      SELECT host_transition(${q(h.id)}, 'provision_succeeded', 'provisioned', 'provisioned', NULL, 'worker:demo', NULL);
      SELECT host_transition(${q(h.id)}, 'gate_started', 'gating', 'gate', NULL, 'worker:demo', NULL);
      WITH g AS (INSERT INTO gate_runs (kind, host_id, stack_id, pool_id, gate_version, verdict, reason, checks, started_at, finished_at)
                 VALUES ('gate', ${q(h.id)}, ${q(stackOf[pool].id)}, ${q(pools[pool].id)}, 1, 'accept', 'every check passed',
                         ${jlit(checks)}, now() - interval '5 hours 2 minutes', now() - interval '5 hours') RETURNING id)
      SELECT host_transition(${q(h.id)}, 'gate_accepted', 'ready', 'the gate accepted the host', NULL, 'worker:demo', (SELECT id FROM g));`);
  }
  sqlRun(url, steps.join('\n'));

  // 45 minutes of samples, one a minute (the idle policy wants GPU evidence over its 30-minute
  // window); the unreachable host's stop seven minutes ago.
  const now = Date.now();
  const M = 45;
  const samples = [];
  for (const [name, , model, count, load, what] of HOSTS) {
    if (what === 'new') continue;
    const h = hosts[name];
    for (let m = 0; m < M; m++) {
      if (what === 'unreachable' && m > M - 8) break;
      const at = new Date(now - (M - m) * 60_000 + ((h.no * 3100) % 20_000)).toISOString();
      const doc = { at, gpus: gpus(model, h.no, count, m, load), events: [] };
      const g = doc.gpus;
      if (what === 'xid13' && m >= M - 4) {
        doc.events.push({
          kind: 'xid',
          code: 13,
          category: 'application',
          policy: 'record',
          pci_bus_id: g[3].pci_bus_id,
          raw: `[1843021.337415] NVRM: Xid (PCI:0000:${g[3].pci_bus_id.slice(9, 11).toLowerCase()}:00): 13, pid=48213, name=python3, Graphics SM Warp Exception on (GPC 2, TPC 1, SM 0): Out Of Range Address`,
          message: 'Xid 13: Graphics Engine Exception (application error)',
        });
      }
      if (what === 'xid79' && m === M - 2) {
        doc.events.push({
          kind: 'xid',
          code: 79,
          category: 'hardware',
          policy: 'isolate',
          pci_bus_id: g[5].pci_bus_id,
          raw: `[2201734.118702] NVRM: Xid (PCI:0000:${g[5].pci_bus_id.slice(9, 11).toLowerCase()}:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.`,
          message: 'Xid 79: GPU has fallen off the bus',
        });
      }
      if (what === 'xid79' && m === M - 1) {
        doc.gpus = g.filter((x) => x.index !== 5);
        doc.events.push({
          kind: 'gpu_missing',
          category: 'hardware',
          policy: 'isolate',
          gpu_uuid: g[5].uuid,
          pci_bus_id: g[5].pci_bus_id,
          message: `GPU ${g[5].uuid} (PCI ${g[5].pci_bus_id}, index 5) is absent from the sample`,
        });
      }
      samples.push(`SELECT monitor_store(${q(h.id)}, ${jlit(doc)});`);
    }
  }
  sqlRun(url, samples.join('\n'));
  const h021 = hosts['gpu-h100-021'];
  const h024 = hosts['gpu-h100-024'];
  sqlRun(
    url,
    `SELECT host_transition(${q(h021.id)}, 'monitor_isolated', 'quarantined', 'Xid 79: GPU has fallen off the bus (GPU 5)', NULL, 'worker:demo', NULL);
     SELECT host_transition(${q(h024.id)}, 'monitor_unreachable', 'unreachable', 'ssh: connect to 10.20.1.22 port 22: No route to host', NULL, 'worker:demo', NULL);
     UPDATE host_monitor SET missed = 6, miss_reason = 'ssh: connect to 10.20.1.22 port 22: No route to host' WHERE host_id = ${q(h024.id)};
     UPDATE hosts SET last_seen = now() - interval '7 minutes' WHERE id = ${q(h024.id)};
     UPDATE host_state_history SET at = at - interval '6 hours' WHERE host_id IN (${Object.values(hosts)
       .map((h) => q(h.id))
       .join(', ')}) AND event <> 'monitor_isolated' AND event <> 'monitor_unreachable';`,
  );

  // Work reports over the last hours: tokens served, samples trained, vectors embedded; one
  // H200 idle.
  const reporter = srv.token('reporter', { args: Object.values(pools).flatMap((p) => ['--pool', p.id]) });
  const ago = (ms) => new Date(now - ms).toISOString();
  const records = [];
  const units = { inference: 'tokens', training: 'samples', embeddings: 'vectors' };
  const rate = { inference: 9_400_000, training: 41_000, embeddings: 2_300_000 };
  for (const [name, pool, , , load, what] of HOSTS) {
    if (what === 'new') continue;
    for (let hr = 4; hr >= 1; hr--) {
      const done = Math.round((rate[pool] * load) / 100);
      records.push({
        host_id: hosts[name].id,
        window_start: ago(hr * 3600e3),
        window_end: ago((hr - 1) * 3600e3 + 60e3),
        unit: units[pool],
        completed: done,
        failed: what === 'xid13' ? Math.round(done * 0.031) : Math.round(done * 0.004),
        retried: Math.round(done * 0.002),
        busy_seconds: Math.round((3540 * load) / 100),
      });
    }
  }
  expectStatus(await client.request('POST', '/v1/work-reports', { token: reporter, body: { records } }), 201);
  return { pools, hosts, stacks };
}

module.exports = { seedDemo, gpuUuid };
