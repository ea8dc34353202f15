// placement.js — per brief, the placement table on the status page (docs/placement.md):
// every pool that could run the brief and each of its alternatives, cheapest first, with
// the cost per 1M completed units, whether the figure is measured, estimated or declared,
// whether it meets the brief's success metric, and the rightsize recommendation when
// there is one. Built from GET /v1/briefs/{id}/placement for the first PLACEMENT_BRIEFS
// briefs. Text only (dom.js): names are shown as the characters they hold.
import { el, token } from './dom.js';

export const PLACEMENT_BRIEFS = 20;

const money = (v) => (typeof v === 'number' && Number.isFinite(v) ? `$${v.toFixed(2)}` : '—');
const meets = (v) => (v === true ? 'yes' : v === false ? 'no' : 'unknown');

/** One row of the table: <tr data-option data-basis>. */
export function placementRow(r) {
  return el(
    'tr',
    { 'data-option': r.option, 'data-basis': token(r.basis), class: r.current ? 'current' : null },
    el('td', { 'data-col': 'option', text: r.current ? `${r.option} (current)` : r.option }),
    el('td', { 'data-col': 'kind', text: r.kind }),
    el('td', { 'data-col': 'basis', text: r.basis }),
    el('td', { 'data-col': 'cost', text: money(r.cost_per_million_units) }),
    el('td', { 'data-col': 'meets', text: meets(r.meets_success_metric), title: r.why || null }),
  );
}

/** The item of one brief: <li data-brief-id> with its table and its recommendation. */
export function placementItem(brief, doc) {
  const unit = doc.unit ? `per 1M ${doc.unit}` : 'per 1M units';
  const rec = doc.recommendation;
  return el(
    'li',
    { class: 'placement', 'data-brief-id': brief.id },
    el('h3', { text: brief.name }),
    el(
      'table',
      { class: 'placement-table' },
      el(
        'thead',
        {},
        el('tr', {}, ...['option', 'kind', 'basis', unit, 'meets target'].map((h) => el('th', { text: h }))),
      ),
      el('tbody', {}, ...(Array.isArray(doc.items) ? doc.items : []).map(placementRow)),
    ),
    el('p', {
      class: rec ? 'placement-rec' : 'placement-rec none',
      'data-field': 'recommendation',
      text: rec ? `rightsize: ${rec.reason}` : 'no rightsize recommendation',
    }),
  );
}

/** The briefs' placement items (the first PLACEMENT_BRIEFS briefs of the query). */
export async function loadPlacements(api, query) {
  const briefs = (await api.get(`/v1/briefs?limit=${PLACEMENT_BRIEFS}${query}`)).items;
  const docs = await Promise.all(briefs.map((b) => api.get(`/v1/briefs/${b.id}/placement`)));
  return briefs.map((b, i) => placementItem(b, docs[i]));
}
