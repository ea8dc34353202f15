// projects.js — the project selector and the budget bars (docs/projects.md): who the
// caller is (GET /v1/me), the projects it may see (GET /v1/projects: each with its budget
// and the spend the budget pass last computed), the selector's options, and one budget
// item per project. The selection is a project id ('' for every project the caller may
// read); the page passes it to the lists as ?project=.
import { el, money, num, setText, token } from './dom.js';

const byName = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** {me, projects} — the caller, and the projects it may see sorted by name. */
export async function loadProjects(api) {
  const [me, projects] = await Promise.all([api.get('/v1/me'), api.getAll('/v1/projects?limit=500')]);
  return { me, projects: projects.slice().sort(byName) };
}

/**
 * Fills the selector: "all projects" (a platform admin) or "all my projects", then one
 * option per project. Keeps `keep` selected when it is still there; returns the selection.
 */
export function renderSelector(sel, me, projects, keep) {
  const all = me && me.platform_admin ? 'all projects' : 'all my projects';
  sel.replaceChildren(
    el('option', { value: '', text: all }),
    ...projects.map((p) => el('option', { value: p.id, text: p.name })),
  );
  sel.value = projects.some((p) => p.id === keep) ? keep : '';
  // one project only: nothing to choose
  sel.disabled = projects.length < 2 && sel.value === '';
  return sel.value;
}

/** The ?project= part of a list's query for the selection ('' for none). */
export function projectQuery(selected, sep = '&') {
  return selected ? `${sep}project=${encodeURIComponent(selected)}` : '';
}

/** A labelled figure: "<label> <strong>value</strong>". */
function figure(name, label, value, cls) {
  return el(
    'span',
    { class: `budget-field budget-${name}${cls ? ` ${cls}` : ''}`, 'data-field': name },
    el('span', { class: 'sub', text: `${label} ` }),
    el('strong', { text: value }),
  );
}

/**
 * One <li> for a project: its spend this month against its monthly budget as a <meter>
 * (no style attribute: the page's policy allows none), the share used, the forecast, and
 * each threshold (crossed or not); a project without a budget shows its spend only.
 */
export function budgetItem(p) {
  const b = p.budget || {};
  const u = p.usage || {};
  const spend = typeof u.month_to_date === 'number' ? u.month_to_date : null;
  const has = typeof b.monthly === 'number';
  const thresholds = Array.isArray(b.thresholds_pct) ? b.thresholds_pct.slice().sort((x, y) => x - y) : [];
  const used = typeof u.budget_used_pct === 'number' ? u.budget_used_pct : null;
  const head = el(
    'div',
    { class: 'budget-head' },
    el('strong', { class: 'budget-name', 'data-field': 'name', text: p.name }),
    u.exhausted
      ? el('span', {
          class: `state budget-exhausted on-${token(b.on_exhausted)}`,
          'data-field': 'exhausted',
          text: `exhausted (${b.on_exhausted})`,
        })
      : null,
  );
  if (!has) {
    return el(
      'li',
      { class: 'budget no-budget', 'data-project-id': p.id },
      head,
      el(
        'div',
        { class: 'budget-figures' },
        figure('spend', 'this month', spend === null ? '—' : money(spend)),
        el('span', { class: 'sub', 'data-field': 'no-budget', text: 'no budget' }),
      ),
    );
  }
  const meter = document.createElement('meter');
  meter.className = 'budget-bar';
  meter.setAttribute('data-field', 'bar');
  meter.min = 0;
  meter.max = b.monthly > 0 ? b.monthly : 1;
  meter.value = spend === null ? 0 : Math.min(spend, meter.max);
  if (thresholds.length) meter.low = (meter.max * thresholds[0]) / 100;
  meter.high = (meter.max * (thresholds.length > 1 ? thresholds[thresholds.length - 2] : 80)) / 100;
  meter.optimum = 0;
  const title = spend === null ? 'not computed yet' : `${money(spend)} of ${money(b.monthly)}`;
  meter.title = title;
  setText(meter, title);
  const over = typeof u.forecast === 'number' && u.forecast > b.monthly;
  return el(
    'li',
    { class: 'budget', 'data-project-id': p.id },
    head,
    meter,
    el(
      'div',
      { class: 'budget-figures' },
      figure('spend', 'spent', spend === null ? '—' : `${money(spend)} of ${money(b.monthly)}`),
      figure('used', 'used', used === null ? '—' : `${num(used, 1)} %`),
      figure('forecast', 'forecast', typeof u.forecast === 'number' ? money(u.forecast) : '—', over ? 'over' : ''),
      el(
        'span',
        { class: 'budget-field budget-thresholds', 'data-field': 'thresholds' },
        el('span', { class: 'sub', text: 'thresholds ' }),
        ...thresholds.map((t) =>
          el('span', {
            class: `threshold${used !== null && used >= t ? ' crossed' : ''}`,
            'data-threshold': t,
            title: used !== null && used >= t ? 'crossed this month' : 'not crossed',
            text: `${t} %`,
          }),
        ),
      ),
    ),
  );
}
