// health.js — GPU health on the status page: the health cell of a host row, and the host
// view (its GPUs with their latest readings, and their recent events). Everything a host
// reported (GPU names, event messages, kernel-log lines) lands in text nodes (dom.js).
import { ago, el, num, shortId, token } from './dom.js';

const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * Why a host has its health, in words, from its HostHealth document (GET
 * /v1/hosts/{id}/health). `live` is the reason of the last host.health event seen for
 * it ({to, reason}), preferred while it names the same health; then the reason the server
 * stored with the health; words made from the summary only when it has none.
 */
export function healthReason(doc, live) {
  if (!doc) return '';
  const m = doc.monitor || {};
  const s = doc.summary || {};
  if (live && live.to === m.state && typeof live.reason === 'string') return live.reason;
  if (typeof m.reason === 'string' && m.reason !== '') return m.reason; // the server's words
  switch (m.state) {
    case 'unreachable':
      return m.missed > 0 ? `${plural(m.missed, 'sample')} missed in a row` : 'the host is unreachable';
    case 'unknown':
      return 'no sample stored yet';
    case 'critical': {
      const parts = [];
      if (s.isolating_open_events > 0) parts.push(`${plural(s.isolating_open_events, 'isolating event')} open`);
      if (s.missing_gpus > 0) parts.push(`${plural(s.missing_gpus, 'GPU')} missing`);
      return parts.join(', ') || 'critical';
    }
    case 'degraded': {
      const parts = [];
      if (s.open_events > 0) parts.push(`${plural(s.open_events, 'open event')}`);
      if (m.missed > 0) parts.push(`${plural(m.missed, 'sample')} missed`);
      return parts.join(', ') || 'degraded';
    }
    case 'ok':
      return `${plural(s.gpus || 0, 'GPU')}, no open event`;
    default:
      return '';
  }
}

/** The health badge of a host: its summary word, or "…" while not loaded. */
export function healthBadge(doc) {
  const state = doc && doc.monitor ? doc.monitor.state : null;
  return el('span', { class: `health health-${state ? token(state) : 'loading'}`, text: state || '…' });
}

/** The health <td> of a host row: the badge and the age of the last sample (re-labelled by tickSeen). */
export function healthCell(doc, live) {
  const at = doc ? doc.last_sample_at : null;
  return el(
    'td',
    {
      class: 'health-cell',
      'data-col': 'health',
      'data-health': doc && doc.monitor ? doc.monitor.state : '',
      title: healthReason(doc, live) || null,
    },
    healthBadge(doc),
    doc
      ? el('span', { class: 'sample-age', 'data-ts': at || '', text: at ? `sampled ${ago(at)}` : 'never sampled' })
      : null,
  );
}

function mib(v) {
  return typeof v === 'number' ? `${num(v / 1024, 1)} GiB` : '—';
}

/** One <tr> of the host view's GPU table. */
export function gpuRow(g) {
  const l = g.latest || {};
  const missing = Boolean(g.missing_since);
  const mem =
    typeof l.mem_used_mib === 'number' && typeof l.mem_total_mib === 'number'
      ? `${mib(l.mem_used_mib)} / ${mib(l.mem_total_mib)}`
      : mib(l.mem_used_mib);
  return el(
    'tr',
    { 'data-gpu-uuid': g.uuid, class: missing ? 'gpu-missing' : null },
    el('td', {
      class: 'num',
      'data-col': 'index',
      text: g.index === null || g.index === undefined ? '—' : String(g.index),
    }),
    el(
      'td',
      { 'data-col': 'name' },
      el('span', { text: g.name || '—' }),
      missing ? el('span', { class: 'failing', text: `missing since ${ago(g.missing_since)}` }) : null,
    ),
    el('td', { 'data-col': 'uuid', class: 'mono', title: g.pci_bus_id ? `PCI ${g.pci_bus_id}` : null, text: g.uuid }),
    el('td', {
      class: 'num',
      'data-col': 'util',
      title: typeof l.util_mem === 'number' ? `memory ${l.util_mem} %` : null,
      text: typeof l.util_gpu === 'number' ? `${l.util_gpu} %` : '—',
    }),
    el('td', { class: 'num', 'data-col': 'temp', text: typeof l.temp_c === 'number' ? `${l.temp_c} °C` : '—' }),
    el('td', {
      class: 'num',
      'data-col': 'power',
      text: typeof l.power_w === 'number' ? `${num(l.power_w, 0)} W` : '—',
    }),
    el('td', { class: 'num', 'data-col': 'memory', text: mem }),
    el('td', {
      class: `num${g.open_events > 0 ? ' has-events' : ''}`,
      'data-col': 'events',
      text: String(g.open_events || 0),
    }),
  );
}

/** "Xid 79", "SXid 20034", "fell off bus", "gpu missing". */
export function eventName(e) {
  if (e.kind === 'xid') return `Xid ${e.code}`;
  if (e.kind === 'sxid') return `SXid ${e.code}`;
  return String(e.kind || '?').replace(/_/g, ' ') + (e.code !== null && e.code !== undefined ? ` ${e.code}` : '');
}

/** One <tr> of the host view's events. gpuIndex(uuid) → index or undefined. */
export function eventRow(e, gpuIndex) {
  const idx = e.gpu_uuid ? gpuIndex(e.gpu_uuid) : undefined;
  const gpu = e.gpu_uuid ? (idx !== undefined && idx !== null ? `GPU ${idx}` : shortId(e.gpu_uuid)) : 'host';
  return el(
    'tr',
    { 'data-event-id': String(e.id), class: e.open ? null : 'closed' },
    el('td', {
      class: 'seen',
      'data-col': 'when',
      'data-ts': e.last_seen || '',
      title: `first ${e.first_seen}, last ${e.last_seen}`,
      text: ago(e.last_seen),
    }),
    el('td', { 'data-col': 'gpu', title: e.gpu_uuid || (e.pci_bus_id ? `PCI ${e.pci_bus_id}` : null), text: gpu }),
    el(
      'td',
      { 'data-col': 'event' },
      el('span', { class: 'event-name', text: eventName(e) }),
      e.category ? el('span', { class: 'muted', text: ` ${e.category}` }) : null,
    ),
    el('td', { 'data-col': 'policy' }, el('span', { class: `policy policy-${token(e.policy)}`, text: e.policy })),
    el('td', { class: 'num', 'data-col': 'count', text: `×${e.count}` }),
    el('td', { 'data-col': 'status', text: e.open ? 'open' : 'closed' }),
    el('td', { 'data-col': 'message', class: 'message', title: e.raw || null, text: e.message || e.raw || '' }),
  );
}

/**
 * A loader that fetches one thing per key at most once at a time and coalesces bursts:
 * want(key) asks for a (re)load; load(key) → Promise does the work; at most `limit` run at
 * once. reset() forgets everything (a new sign-in).
 */
export function makeLoader(load, { delayMs = 150, limit = 4 } = {}) {
  let pending = new Set();
  let inflight = new Set();
  let timer = null;
  function pump() {
    timer = null;
    for (const key of [...pending]) {
      if (inflight.size >= limit) break;
      if (inflight.has(key)) continue;
      pending.delete(key);
      inflight.add(key);
      const mine = inflight;
      Promise.resolve()
        .then(() => load(key))
        .catch(() => {})
        .finally(() => {
          if (mine !== inflight) return; // reset meanwhile
          inflight.delete(key);
          if (pending.size && !timer) timer = setTimeout(pump, 0);
        });
    }
  }
  return {
    want(key) {
      pending.add(key);
      if (!timer) timer = setTimeout(pump, delayMs);
    },
    drop(key) {
      pending.delete(key);
    },
    reset() {
      clearTimeout(timer);
      timer = null;
      pending = new Set();
      inflight = new Set();
    },
  };
}
