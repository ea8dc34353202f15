// rollouts.js — the rollouts in progress on the status page (docs/rollouts.md, "Status
// page"): for each pool's active rollout (running, paused, rolling back) its target stack,
// state, wave k of n, hosts done / in flight / pending, hosts out of service against the
// limit, and the last error. Built from the list GET /v1/rollouts?state=active, read again
// when a `rollout` or `rollout.host` event arrives. Text only (dom.js): a stack name or an
// error a host produced is shown as the characters it holds.
import { el, shortId, token } from './dom.js';

export const ACTIVE_STATES = new Set(['running', 'paused', 'rolling_back']);

const STATE_TEXT = { running: 'running', paused: 'paused', rolling_back: 'rolling back' };
const IN_FLIGHT = new Set(['draining', 'provisioning', 'gating', 'comparing', 'resuming']);

const int = (v) => (Number.isInteger(v) && v >= 0 ? v : 0);

/**
 * What the card shows, from a Rollout document: {wave, waves, done, inFlight, pending,
 * unavailable, limit, error}. The counts come from the document's `counts`, or from its
 * hosts when a server sends none.
 */
export function rolloutSummary(r) {
  const hosts = Array.isArray(r.hosts) ? r.hosts : [];
  const c = r.counts && typeof r.counts === 'object' ? r.counts : null;
  const count = (pred) => hosts.filter(pred).length;
  const waves = int(r.wave_count) || (Array.isArray(r.waves) ? r.waves.length : 0);
  const lastHostError = hosts
    .filter((h) => typeof h.error === 'string' && h.error !== '')
    .sort((a, b) => ((a.finished_at || '') < (b.finished_at || '') ? 1 : -1))
    .map((h) => `${h.name}: ${h.error}`)[0];
  return {
    wave: Math.min(int(r.current_wave) + 1, Math.max(waves, 1)),
    waves,
    done: c ? int(c.done) : count((h) => h.step === 'done' && !h.rollback_step),
    inFlight: c ? int(c.in_flight) : count((h) => IN_FLIGHT.has(h.step) || IN_FLIGHT.has(h.rollback_step)),
    pending: c ? int(c.pending) : count((h) => h.step === 'pending' && !h.rollback_step),
    unavailable: int(r.unavailable),
    limit: int(r.max_unavailable_hosts),
    error: typeof r.error === 'string' && r.error !== '' ? r.error : lastHostError || null,
  };
}

function field(name, label, value, extra = {}) {
  return el(
    'span',
    { class: `rollout-field rollout-${name}`, 'data-field': name, ...extra },
    el('span', { class: 'sub', text: `${label} ` }),
    el('strong', { text: value }),
  );
}

/** The item of one rollout: <li data-rollout-id data-pool-id>. ctx: {poolName(id), stackName(id)}. */
export function rolloutItem(r, ctx) {
  const s = rolloutSummary(r);
  const stack = typeof r.stack_name === 'string' && r.stack_name ? r.stack_name : ctx.stackName(r.stack_id);
  const pool = typeof r.pool_name === 'string' && r.pool_name ? r.pool_name : ctx.poolName(r.pool_id);
  const state = STATE_TEXT[r.state] || String(r.state);
  const over = s.unavailable > s.limit;
  return el(
    'li',
    { class: 'rollout', 'data-rollout-id': r.id, 'data-pool-id': r.pool_id, 'data-state': token(r.state) },
    el(
      'div',
      { class: 'rollout-head' },
      el('strong', { class: 'rollout-pool', 'data-field': 'pool', text: pool }),
      el('span', { class: 'sub', text: ' → ' }),
      el('span', { class: 'rollout-stack', 'data-field': 'stack', text: stack, title: `stack ${shortId(r.stack_id)}` }),
      ' ',
      el('span', { class: `state rollout-state-${token(r.state)}`, 'data-field': 'state', text: state }),
    ),
    el(
      'div',
      { class: 'rollout-figures' },
      field('wave', 'wave', `${s.wave} of ${s.waves}`),
      field('done', 'done', String(s.done)),
      field('in-flight', 'in flight', String(s.inFlight)),
      field('pending', 'pending', String(s.pending)),
      field(
        'unavailable',
        'out of service',
        `${s.unavailable} of ${s.limit}`,
        over ? { class: 'rollout-field rollout-unavailable over' } : {},
      ),
    ),
    s.error ? el('p', { class: 'rollout-error', 'data-field': 'error', text: s.error }) : null,
  );
}

/** The active rollouts of a list, ordered by pool name. */
export function activeRollouts(items, ctx) {
  return items
    .filter((r) => r && ACTIVE_STATES.has(r.state))
    .sort((a, b) => {
      const x = a.pool_name || ctx.poolName(a.pool_id);
      const y = b.pool_name || ctx.poolName(b.pool_id);
      return x < y ? -1 : x > y ? 1 : 0;
    });
}
