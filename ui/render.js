// render.js — rows and lists built from API documents. Text only (see dom.js): a host
// name, label, pool name or GPU name is shown as the characters it holds.
import { ago, el, money, num, pct, shortId, token } from './dom.js';
import { healthCell } from './health.js';

/** "8 × NVIDIA H100 80GB HBM3" (one part per model) from the host's facts. */
export function gpuSummary(facts) {
  if (!facts) return { text: '—', title: 'not provisioned yet: no facts' };
  const gpus = Array.isArray(facts.gpus) ? facts.gpus : [];
  if (gpus.length === 0) {
    return {
      text: 'no GPU',
      title: typeof facts.gpu_error === 'string' ? facts.gpu_error.slice(0, 300) : 'nvidia-smi listed no GPU',
    };
  }
  const byModel = new Map();
  for (const g of gpus) {
    const name = typeof g.name === 'string' ? g.name : '?';
    byModel.set(name, (byModel.get(name) || 0) + 1);
  }
  const text = [...byModel].map(([name, n]) => `${n} × ${name}`).join(', ');
  const title = facts.driver_version ? `driver ${facts.driver_version}` : null;
  return { text, title };
}

function labelChips(labels) {
  if (!labels || typeof labels !== 'object') return null;
  const entries = Object.entries(labels);
  if (entries.length === 0) return null;
  return el('span', { class: 'labels' }, ...entries.map(([k, v]) => el('span', { class: 'label', text: `${k}=${v}` })));
}

function gateCell(g) {
  if (!g) return el('td', { class: 'gate', 'data-col': 'gate' }, el('span', { class: 'muted', text: 'never gated' }));
  const failing = Array.isArray(g.failing_checks) ? g.failing_checks : [];
  return el(
    'td',
    { class: 'gate', 'data-col': 'gate', title: g.finished_at ? `finished ${g.finished_at}` : null },
    el('span', { class: `verdict verdict-${token(g.verdict)}`, 'data-verdict': g.verdict, text: g.verdict }),
    failing.length ? el('span', { class: 'failing', text: failing.join(', ') }) : null,
  );
}

/**
 * One <tr> for a host. ctx: {poolName(id), stackName(id), health(id) → HostHealth or
 * undefined, liveHealth(id) → the last host.health event's {to, reason} or undefined}.
 * The row carries data-host-id, data-state and data-pool-id for the filters; the host's
 * name is a button that opens its view.
 */
export function hostRow(h, ctx) {
  const gpus = gpuSummary(h.facts);
  const seen = el('td', {
    class: 'seen',
    'data-col': 'seen',
    'data-ts': h.last_seen || '',
    title: h.last_seen || 'never reached over SSH',
    text: ago(h.last_seen),
  });
  const job = h.last_job;
  return el(
    'tr',
    { 'data-host-id': h.id, 'data-state': h.state, 'data-pool-id': h.pool_id },
    el(
      'td',
      { class: 'name', 'data-col': 'name' },
      el('button', {
        type: 'button',
        class: 'host-name',
        'data-open-host': h.id,
        title: 'Show GPUs and events',
        text: h.name,
      }),
      labelChips(h.labels),
    ),
    el(
      'td',
      {
        'data-col': 'state',
        title: job ? `last job: ${job.kind} ${job.state}${job.error_class ? ` (${job.error_class})` : ''}` : null,
      },
      el('span', { class: `state state-${token(h.state)}`, text: h.state }),
    ),
    healthCell(ctx.health ? ctx.health(h.id) : undefined, ctx.liveHealth ? ctx.liveHealth(h.id) : undefined),
    el('td', { 'data-col': 'pool', text: ctx.poolName(h.pool_id) }),
    el('td', { 'data-col': 'gpus', title: gpus.title, text: gpus.text }),
    el('td', {
      'data-col': 'stack',
      title: h.current_stack_id,
      text: h.current_stack_id ? ctx.stackName(h.current_stack_id) : '—',
    }),
    gateCell(h.last_gate),
    seen,
  );
}

/** Re-labels every "last seen" cell and "sampled … ago" label under root (called every few seconds). */
export function tickSeen(root, now = Date.now()) {
  for (const td of root.querySelectorAll('td[data-col="seen"], td[data-col="when"]')) {
    td.textContent = ago(td.getAttribute('data-ts') || null, now);
  }
  for (const span of root.querySelectorAll('.sample-age[data-ts]')) {
    const ts = span.getAttribute('data-ts');
    if (ts) span.textContent = `sampled ${ago(ts, now)}`;
  }
}

function unitCosts(group) {
  const per = group.cost_per_completed_unit || {};
  const units = Object.keys(per);
  if (units.length === 0) return el('span', { class: 'muted', text: group.no_usage_data ? 'no usage data' : '—' });
  return el(
    'span',
    { class: 'units' },
    ...units.map((u) => {
      const c = per[u];
      const done = group.completed_units ? group.completed_units[u] : undefined;
      return el('span', {
        class: 'unit',
        title: `${num(done, 0)} ${u} completed`,
        text: c ? `${money(c.per_1000)} per 1,000 ${u}` : `no ${u} completed`,
      });
    }),
  );
}

/** One <tr> of the costs-per-pool table. */
export function costRow(g) {
  return el(
    'tr',
    { 'data-pool-id': g.id || '' },
    el('td', { text: g.name || (g.id ? shortId(g.id) : '—') }),
    el('td', { class: 'num', text: money(g.total) }),
    el('td', {}, unitCosts(g)),
    el('td', {
      class: 'num',
      title: `amount ${money(g.failed_retried && g.failed_retried.amount)}`,
      text: pct(g.failed_retried && g.failed_retried.share),
    }),
    el('td', { class: 'num', text: pct(g.utilization) }),
    el('td', { class: 'num', text: num(g.held_hours, 1) }),
  );
}

/** One <li> of the recommendations. ctx: {hostName(id), poolName(id)}. */
export function recItem(r, ctx) {
  const t = r.target || {};
  const hosts = Array.isArray(t.host_ids) ? t.host_ids.map((id) => ctx.hostName(id)) : [];
  const where = [];
  if (hosts.length) where.push(hosts.join(', '));
  if (t.pool_id) where.push(`pool ${ctx.poolName(t.pool_id)}`);
  if (t.brief_id) where.push(`brief ${shortId(t.brief_id)}`);
  return el(
    'li',
    { class: 'rec', 'data-rec-id': r.id },
    el('span', { class: `action action-${token(r.action)}`, text: String(r.action || '').replace('_', ' ') }),
    el('span', { class: 'rec-target', text: where.join(' · ') || '—' }),
    el('span', {
      class: 'rec-savings',
      text: r.estimated_savings_per_hour > 0 ? `saves ${money(r.estimated_savings_per_hour)}/h` : '',
    }),
    el('span', { class: 'rec-reason', text: r.reason }),
  );
}
