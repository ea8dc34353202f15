// drills.js — each pool's last restore drill on the status page (docs/hosts-and-gates.md,
// "Restore drills"): its verdict, the measured recovery time against the pool's maximum,
// and when it ran. Built from the list GET /v1/drills (newest first: the first drill of a
// pool is its last), read again when a `drill.completed` event arrives. Text only
// (dom.js): a reason a host produced is shown as the characters it holds.
import { el, token } from './dom.js';

const secs = (v) => (typeof v === 'number' && Number.isFinite(v) ? `${v.toFixed(1)} s` : '—');

/** Each pool's newest drill, from a list ordered newest first; sorted by pool name. */
export function lastDrills(items, ctx) {
  const seen = new Map();
  for (const d of items) if (d && typeof d.pool_id === 'string' && !seen.has(d.pool_id)) seen.set(d.pool_id, d);
  return [...seen.values()].sort((a, b) => {
    const x = ctx.poolName(a.pool_id);
    const y = ctx.poolName(b.pool_id);
    return x < y ? -1 : x > y ? 1 : 0;
  });
}

/** The item of one pool's last drill: <li data-pool-id data-drill-id>. */
export function drillItem(d, ctx) {
  const max = typeof d.max_recovery_seconds === 'number' ? ` (max ${d.max_recovery_seconds.toFixed(0)} s)` : '';
  return el(
    'li',
    { class: 'drill', 'data-pool-id': d.pool_id, 'data-drill-id': d.id, 'data-verdict': token(d.verdict) },
    el('strong', { class: 'drill-pool', 'data-field': 'pool', text: ctx.poolName(d.pool_id) }),
    ' ',
    el('span', { class: `state drill-verdict-${token(d.verdict)}`, 'data-field': 'verdict', text: String(d.verdict) }),
    ' ',
    el('span', { class: 'drill-recovery', 'data-field': 'recovery', text: `${secs(d.recovery_seconds)}${max}` }),
    ' ',
    el('span', { class: 'sub', 'data-field': 'finished', text: String(d.finished_at || '') }),
    d.verdict === 'fail' && d.reason
      ? el('p', { class: 'drill-reason', 'data-field': 'reason', text: String(d.reason) })
      : null,
  );
}
