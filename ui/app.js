// app.js — the fleet status page: sign-in, the project selector, the host table with its
// filters and each host's health, a host's view (its GPUs and their recent events), the
// projects' budgets, the rollouts in progress, costs per pool, open recommendations, and
// live updates from the event stream. A project chosen in the selector narrows the host
// list, the costs and the recommendations (?project=), the budgets and the live updates.
//
// The token lives in sessionStorage only (this tab, until it closes or the user signs
// out): never in local storage, a cookie or a URL.
import { describeError, makeClient } from './api.js';
import { el, setText, shortId, token } from './dom.js';
import { eventRow, gpuRow, healthBadge, healthReason, makeLoader } from './health.js';
import { startLive } from './live.js';
import { budgetItem, loadProjects, projectQuery, renderSelector } from './projects.js';
import { costRow, hostRow, recItem, tickSeen } from './render.js';
import { activeRollouts, rolloutItem } from './rollouts.js';
import { loadPlacements } from './placement.js';
import { drillItem, lastDrills } from './drills.js';

const TOKEN_KEY = 'gpufleet.token';
const HOST_STATES = [
  'registered',
  'provisioning',
  'provisioned',
  'gating',
  'ready',
  'investigating',
  'quarantined',
  'draining',
  'drained',
  'diagnosing',
  'stopping',
  'stopped',
  'failed',
  'unreachable',
];
const HOST_FETCH_DELAY_MS = 150; // coalesces a burst of events about one host
const RECS_DELAY_MS = 500;
const COSTS_MIN_INTERVAL_MS = 5000; // at most one costs query per 5 s from events
const COSTS_REFRESH_MS = 300000; // the 24 h window slides: refresh it every 5 min anyway
const SEEN_TICK_MS = 5000;
const HEALTH_CONCURRENCY = 4; // health reads in flight at once (one per host)
const VIEW_EVENTS_PER_GPU = 10;
const VIEW_EVENTS_SHOWN = 30;
const LIVE_TEXT = {
  off: 'offline',
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'reconnecting…',
  unavailable: 'no live updates',
  forbidden: 'no live updates (forbidden)',
};

const $ = (id) => document.getElementById(id);
const api = makeClient(() => sessionStorage.getItem(TOKEN_KEY));

const st = {
  generation: 0, // bumped on sign-out: answers to older requests are dropped
  hosts: new Map(), // id → Host document
  rows: new Map(), // id → <tr>
  deleted: new Set(), // ids removed by host.deleted (a late answer must not bring them back)
  pools: new Map(), // id → Pool document
  stacks: new Map(), // id → name, or null while unknown
  live: null,
  timers: [],
  hostQueue: { pending: new Set(), inflight: new Set(), timer: null },
  recsTimer: null,
  costs: { last: 0, timer: null },
  health: new Map(), // host id → HostHealth document
  liveHealth: new Map(), // host id → {to, reason} of its last host.health event
  view: null, // the id of the host whose view is open
  project: '', // the selected project's id ('' for every project the caller may read)
  projects: [], // Project documents, by name
  budgetsTimer: null,
};

const ctx = {
  poolName: (id) => (st.pools.get(id) ? st.pools.get(id).name : shortId(id)),
  stackName: (id) => st.stacks.get(id) || shortId(id),
  hostName: (id) => (st.hosts.get(id) ? st.hosts.get(id).name : shortId(id)),
  health: (id) => st.health.get(id),
  liveHealth: (id) => st.liveHealth.get(id),
};

// ---- messages ----

function showError(msg) {
  setText($('error'), msg);
  $('error').hidden = !msg;
}

function setLive(state) {
  const node = $('live');
  node.className = `live live-${state}`;
  setText(node, LIVE_TEXT[state] || state);
}

/** 401 anywhere: back to sign-in with the reason. Anything else: the banner. */
function fail(err, gen) {
  if (gen !== undefined && gen !== st.generation) return;
  if (err && err.status === 401) signOut(describeError(err));
  else showError(describeError(err));
}

// ---- hosts ----

function matchesFilters(row) {
  const state = $('filter-state').value;
  const pool = $('filter-pool').value;
  return (!state || row.getAttribute('data-state') === state) && (!pool || row.getAttribute('data-pool-id') === pool);
}

function applyFilters() {
  let shown = 0;
  for (const row of st.rows.values()) {
    row.hidden = !matchesFilters(row);
    if (!row.hidden) shown++;
  }
  const total = st.rows.size;
  setText($('host-count'), shown === total ? `(${total})` : `(${shown} of ${total})`);
  $('hosts-empty').hidden = shown > 0;
}

function sortRows() {
  const ids = [...st.hosts.keys()].sort((a, b) => {
    const x = st.hosts.get(a).name;
    const y = st.hosts.get(b).name;
    return x < y ? -1 : x > y ? 1 : 0;
  });
  $('hosts').tBodies[0].append(...ids.map((id) => st.rows.get(id)));
}

function renderHost(h) {
  const row = hostRow(h, ctx);
  const old = st.rows.get(h.id);
  if (st.view === h.id) row.classList.add('selected');
  st.rows.set(h.id, row);
  if (old) old.replaceWith(row);
  row.hidden = !matchesFilters(row);
  return !old;
}

function upsertHost(h) {
  if (st.deleted.has(h.id)) return;
  const before = st.hosts.get(h.id);
  st.hosts.set(h.id, h);
  wantStack(h.current_stack_id);
  if (!st.pools.has(h.pool_id)) loadPools(st.generation);
  if (renderHost(h) || (before && before.name !== h.name)) sortRows();
  applyFilters();
}

function removeHost(id) {
  const row = st.rows.get(id);
  if (row) row.remove();
  st.rows.delete(id);
  st.hosts.delete(id);
  st.health.delete(id);
  healthLoader.drop(id);
  if (st.view === id) closeView();
  applyFilters();
}

function replaceHosts(list) {
  st.hosts.clear();
  st.rows.clear();
  for (const h of list) {
    if (st.deleted.has(h.id)) continue;
    st.hosts.set(h.id, h);
    wantStack(h.current_stack_id);
    renderHost(h);
    healthLoader.want(h.id);
  }
  $('hosts').tBodies[0].replaceChildren();
  sortRows();
  applyFilters();
  if (st.view) viewLoader.want(st.view);
}

function rerenderHosts() {
  for (const h of st.hosts.values()) renderHost(h);
  applyFilters();
}

/** Stack names, fetched once per distinct stack (hosts share a few stacks). */
function wantStack(id) {
  if (!id || st.stacks.has(id)) return;
  st.stacks.set(id, null);
  const gen = st.generation;
  api.get(`/v1/stacks/${encodeURIComponent(id)}`).then(
    (s) => {
      if (gen !== st.generation) return;
      st.stacks.set(id, s.name);
      rerenderHosts();
    },
    (err) => {
      if (gen !== st.generation) return;
      if (err.status !== 404) st.stacks.delete(id); // try again with the next update
      if (err.status === 401) fail(err, gen);
    },
  );
}

/** Host events: re-fetch that host, once per burst, never two fetches of one host at once. */
function queueHost(id) {
  const q = st.hostQueue;
  q.pending.add(id);
  if (!q.timer) q.timer = setTimeout(flushHosts, HOST_FETCH_DELAY_MS);
}

function flushHosts() {
  const q = st.hostQueue;
  q.timer = null;
  const gen = st.generation;
  for (const id of [...q.pending]) {
    if (q.inflight.has(id)) continue; // fetched again when the current answer is in
    q.pending.delete(id);
    q.inflight.add(id);
    api
      .get(`/v1/hosts/${encodeURIComponent(id)}`)
      .then(
        (h) => gen === st.generation && upsertHost(h),
        (err) => {
          if (gen !== st.generation) return;
          if (err.status === 404) removeHost(id);
          else fail(err, gen);
        },
      )
      .finally(() => {
        q.inflight.delete(id);
        if (q.pending.has(id) && !q.timer) q.timer = setTimeout(flushHosts, HOST_FETCH_DELAY_MS);
      });
  }
}

// ---- health (a read per host) and the host view ----

/** A host's health: stored, its row re-rendered (and the view's head, when open). */
async function loadHealth(id) {
  const gen = st.generation;
  try {
    const doc = await api.get(`/v1/hosts/${encodeURIComponent(id)}/health`);
    if (gen !== st.generation || !st.hosts.has(id)) return;
    st.health.set(id, doc);
    renderHost(st.hosts.get(id));
    if (st.view === id) renderViewHead(id);
  } catch (err) {
    if (gen !== st.generation) return;
    if (err.status !== 404) fail(err, gen); // 404: deleted meanwhile (host.deleted follows)
  }
}
const healthLoader = makeLoader(loadHealth, { limit: HEALTH_CONCURRENCY });

function renderViewHead(id) {
  const h = st.hosts.get(id);
  const doc = st.health.get(id);
  setText($('hv-name'), h ? h.name : doc ? doc.host_name : shortId(id));
  const state = h ? h.state : doc ? doc.host_state : null;
  $('hv-state').replaceChildren(state ? el('span', { class: `state state-${token(state)}`, text: state }) : '');
  $('hv-health').replaceChildren(healthBadge(doc));
  setText($('hv-reason'), healthReason(doc, st.liveHealth.get(id)));
  const at = doc ? doc.last_sample_at : null;
  $('hv-sampled').setAttribute('data-ts', at || '');
  setText($('hv-sampled'), at ? `sampled ${new Date(Date.parse(at)).toLocaleTimeString()}` : 'never sampled');
}

/** The view of a host: its health, its GPUs, and the recent events of each GPU and of the host. */
async function loadView(id) {
  const gen = st.generation;
  try {
    const doc = await api.get(`/v1/hosts/${encodeURIComponent(id)}/health`);
    const lists = await Promise.all(
      doc.gpus.map((g) => api.get(`/v1/gpus/${encodeURIComponent(g.uuid)}/events?limit=${VIEW_EVENTS_PER_GPU}`)),
    );
    if (gen !== st.generation || st.view !== id) return;
    st.health.set(id, doc);
    if (st.hosts.has(id)) renderHost(st.hosts.get(id));
    const events = new Map();
    for (const e of doc.open_events) events.set(e.id, e);
    for (const list of lists) for (const e of list.items) if (e.host_id === id) events.set(e.id, e);
    const shown = [...events.values()]
      .sort((a, b) => (a.last_seen < b.last_seen ? 1 : a.last_seen > b.last_seen ? -1 : b.id - a.id))
      .slice(0, VIEW_EVENTS_SHOWN);
    const index = new Map(doc.gpus.map((g) => [g.uuid, g.index]));
    renderViewHead(id);
    setText($('hv-gpu-count'), `(${doc.gpus.length})`);
    // a GPU whose sample carried no valid product name is named from the inventory the
    // provisioning and the gate recorded (the host's facts)
    const host = st.hosts.get(id);
    const factGpus = host && host.facts && Array.isArray(host.facts.gpus) ? host.facts.gpus : [];
    const named = new Map(factGpus.filter((g) => typeof g.name === 'string').map((g) => [g.uuid, g.name]));
    $('hv-gpus').tBodies[0].replaceChildren(
      ...doc.gpus.map((g) => gpuRow(g.name ? g : { ...g, name: named.get(g.uuid) || null })),
    );
    $('hv-gpus-empty').hidden = doc.gpus.length > 0;
    setText($('hv-event-count'), `(${shown.length}${events.size > shown.length ? ` of ${events.size}` : ''})`);
    $('hv-events').tBodies[0].replaceChildren(...shown.map((e) => eventRow(e, (u) => index.get(u))));
    $('hv-events-empty').hidden = shown.length > 0;
    $('hv-error').hidden = true;
  } catch (err) {
    if (gen !== st.generation || st.view !== id) return;
    if (err.status === 401) return fail(err, gen);
    setText(
      $('hv-error'),
      err.status === 404 ? 'This host no longer exists.' : `The host's health could not be read: ${describeError(err)}`,
    );
    $('hv-error').hidden = false;
  }
}
const viewLoader = makeLoader(loadView, { limit: 1, delayMs: 300 });

function openView(id) {
  const before = st.view;
  st.view = id;
  for (const other of [before, id]) if (other && st.hosts.has(other)) renderHost(st.hosts.get(other));
  for (const t of ['hv-gpus', 'hv-events']) $(t).tBodies[0].replaceChildren();
  $('hv-gpus-empty').hidden = true;
  $('hv-events-empty').hidden = true;
  $('hv-error').hidden = true;
  setText($('hv-gpu-count'), '');
  setText($('hv-event-count'), '');
  renderViewHead(id);
  $('host-view').hidden = false;
  viewLoader.want(id);
}

function closeView() {
  const id = st.view;
  st.view = null;
  $('host-view').hidden = true;
  viewLoader.reset();
  if (id && st.hosts.has(id)) renderHost(st.hosts.get(id));
}

// ---- pools (names and the pool filter) ----

function renderPoolFilter() {
  const sel = $('filter-pool');
  const keep = sel.value;
  const pools = [...st.pools.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  sel.replaceChildren(
    el('option', { value: '', text: 'all pools' }),
    ...pools.map((p) => el('option', { value: p.id, text: p.name })),
  );
  sel.value = st.pools.has(keep) ? keep : '';
}

async function loadPools(gen) {
  try {
    const pools = await api.getAll('/v1/pools?limit=500');
    if (gen !== st.generation) return;
    st.pools = new Map(pools.map((p) => [p.id, p]));
    renderPoolFilter();
    rerenderHosts();
  } catch (err) {
    fail(err, gen);
  }
}

// ---- costs and recommendations ----

function isoSeconds(ms) {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

async function loadCosts(gen) {
  const to = Date.now();
  const from = to - 24 * 3600 * 1000;
  const q = `/v1/costs?group_by=pool&from=${encodeURIComponent(isoSeconds(from))}&to=${encodeURIComponent(isoSeconds(to))}${projectQuery(st.project)}`;
  try {
    const rep = await api.get(q);
    if (gen !== st.generation) return;
    const items = rep.items.filter((g) => g.held_hours > 0 || !g.no_usage_data);
    $('costs').tBodies[0].replaceChildren(...items.map(costRow));
    $('costs-empty').hidden = items.length > 0;
    setText($('costs-window'), `last 24 h, to ${new Date(Date.parse(rep.to)).toLocaleTimeString()}`);
  } catch (err) {
    fail(err, gen);
  }
}

/** At most one costs query per COSTS_MIN_INTERVAL_MS; a request inside it runs at its end. */
function costsSoon() {
  const c = st.costs;
  if (c.timer) return;
  const wait = Math.max(0, c.last + COSTS_MIN_INTERVAL_MS - Date.now());
  const gen = st.generation;
  c.timer = setTimeout(async () => {
    c.last = Date.now();
    await loadCosts(gen);
    c.timer = null;
  }, wait);
}

async function loadRecs(gen) {
  try {
    const list = await api.get(`/v1/recommendations${projectQuery(st.project, '?')}`);
    if (gen !== st.generation) return;
    $('recs').replaceChildren(...list.items.map((r) => recItem(r, ctx)));
    setText($('rec-count'), `(${list.items.length})`);
    $('recs-empty').hidden = list.items.length > 0;
    const n = list.no_usage_data.length;
    // no_usage_data: no work report in 24 h, or an idle signal unknown (stale reports, GPU samples missing)
    setText(
      $('recs-nousage'),
      n
        ? `${n} host${n === 1 ? '' : 's'} without the evidence to judge idleness (work reports or GPU samples missing): never treated as idle.`
        : '',
    );
    $('recs-nousage').hidden = n === 0;
  } catch (err) {
    fail(err, gen);
  }
}

function recsSoon() {
  if (st.recsTimer) return;
  const gen = st.generation;
  st.recsTimer = setTimeout(() => {
    st.recsTimer = null;
    loadRecs(gen);
  }, RECS_DELAY_MS);
}

// ---- projects: the selector and the budgets ----

/** The caller's projects: the selector's options and one budget item per shown project. */
async function loadBudgets(gen) {
  try {
    const { me, projects } = await loadProjects(api);
    if (gen !== st.generation) return;
    st.projects = projects;
    st.project = renderSelector($('project'), me, projects, st.project);
    $('project-pick').hidden = projects.length === 0;
    const shown = st.project ? projects.filter((p) => p.id === st.project) : projects;
    $('budgets').replaceChildren(...shown.map(budgetItem));
    setText($('budget-count'), `(${shown.length})`);
    $('budgets-empty').hidden = shown.length > 0;
  } catch (err) {
    fail(err, gen);
  }
}

/** A budget.threshold event: the budgets are read again (once per burst). */
function budgetsSoon() {
  if (st.budgetsTimer) return;
  const gen = st.generation;
  st.budgetsTimer = setTimeout(() => {
    st.budgetsTimer = null;
    loadBudgets(gen);
  }, RECS_DELAY_MS);
}

/** Another project chosen: everything it narrows is read again. */
function chooseProject() {
  st.project = $('project').value;
  st.hostQueue.pending.clear();
  refreshAll();
}

// ---- rollouts in progress ----

/** The active rollouts (running, paused, rolling back), one item per pool. */
async function loadRollouts() {
  const gen = st.generation;
  try {
    const items = activeRollouts(await api.getAll('/v1/rollouts?state=active&limit=500'), ctx);
    if (gen !== st.generation) return;
    for (const r of items) wantStack(r.stack_id);
    $('rollouts').replaceChildren(...items.map((r) => rolloutItem(r, ctx)));
    setText($('rollout-count'), `(${items.length})`);
    $('rollouts-empty').hidden = items.length > 0;
  } catch (err) {
    if (gen !== st.generation) return;
    if (err.status !== 404) fail(err, gen); // 404: a server without rollouts
  }
}
// ---- restore drills: each pool's last ----

async function loadDrills() {
  const gen = st.generation;
  try {
    const page = await api.get(`/v1/drills?limit=500${projectQuery(st.project)}`);
    if (gen !== st.generation) return;
    const items = lastDrills(page.items || [], ctx);
    $('drills').replaceChildren(...items.map((d) => drillItem(d, ctx)));
    setText($('drill-count'), `(${items.length})`);
    $('drills-empty').hidden = items.length > 0;
  } catch (err) {
    if (gen !== st.generation) return;
    if (err.status !== 404) fail(err, gen); // 404: a server without drills
  }
}

// a burst of rollout events (a wave's hosts moving) is one read of the list
const rolloutsLoader = makeLoader(loadRollouts, { limit: 1, delayMs: 300 });

// ---- placement per brief (docs/placement.md) ----

async function loadPlacement(gen) {
  try {
    const items = await loadPlacements(api, projectQuery(st.project));
    if (gen !== st.generation) return;
    $('placements').replaceChildren(...items);
    $('placements-empty').hidden = items.length > 0;
  } catch (err) {
    if (gen !== st.generation) return;
    if (err.status !== 404) fail(err, gen);
  }
}

// ---- loading and live updates ----

/** Everything, from scratch. */
async function refreshAll() {
  const gen = st.generation;
  await loadBudgets(gen);
  if (gen !== st.generation) return;
  try {
    const [pools, hosts] = await Promise.all([
      api.getAll('/v1/pools?limit=500'),
      api.getAll(`/v1/hosts?limit=500${projectQuery(st.project)}`),
    ]);
    if (gen !== st.generation) return false;
    st.pools = new Map(pools.map((p) => [p.id, p]));
    renderPoolFilter();
    replaceHosts(hosts);
    showError('');
  } catch (err) {
    fail(err, gen);
    if (gen !== st.generation) return; // signed out
  }
  st.costs.last = Date.now();
  await Promise.all([loadCosts(gen), loadRecs(gen), loadRollouts(), loadPlacement(gen), loadDrills()]);
}

function onEvent(type, data) {
  // Another project's event, while one is selected: not about what the page shows.
  if (st.project && typeof data.project_id === 'string' && data.project_id !== st.project) return;
  if (type === 'budget.threshold') return budgetsSoon();
  if (type === 'drill.completed') loadDrills();
  if (type.startsWith('recommendation.')) return recsSoon();
  if (type.startsWith('work_reports.')) return costsSoon();
  if (type === 'rollout' || type === 'rollout.host') rolloutsLoader.want('active');
  if (type === 'rollout') return;
  const id = data.host_id;
  if (typeof id !== 'string' || !id) return;
  if (type === 'host.deleted') {
    st.deleted.add(id);
    st.hostQueue.pending.delete(id);
    removeHost(id);
    return;
  }
  if (type === 'host.health' && typeof data.to === 'string') {
    st.liveHealth.set(id, { to: data.to, reason: typeof data.reason === 'string' ? data.reason : '' });
  }
  // A GPU event or a health change leaves the Host document as it was: only its health is read again.
  if (type !== 'gpu.event' && type !== 'host.health') queueHost(id);
  if (type === 'gpu.event' || type === 'host.health' || type === 'host.state' || type === 'host.created')
    healthLoader.want(id);
  if (st.view === id) viewLoader.want(id);
}

function startStream() {
  st.live = startLive({
    api,
    onEvent,
    onStatus: setLive,
    // Whatever happened while the stream was closed, or before it first opened, is
    // picked up by one full refresh (cheap: the lists answer 304 when unchanged).
    onOpen: () => refreshAll(),
    onAuthError: (err) => signOut(describeError(err)),
  });
}

// ---- sign-in / sign-out ----

function showSignedIn(yes) {
  $('signin').hidden = yes;
  $('dashboard').hidden = !yes;
  $('signout').hidden = !yes;
  $('refresh').hidden = !yes;
}

async function start() {
  showSignedIn(true);
  showError('');
  const gen = st.generation;
  // A 401 signs out (a new generation); a 403 or a network failure stays on the banner,
  // and the stream's first open retries the load.
  await refreshAll();
  if (gen !== st.generation) return;
  startStream();
  st.timers.push(
    setInterval(() => {
      tickSeen($('hosts'));
      tickSeen($('hv-events'));
    }, SEEN_TICK_MS),
  );
  st.timers.push(setInterval(costsSoon, COSTS_REFRESH_MS));
}

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  st.generation++;
  if (st.live) st.live.stop();
  st.live = null;
  for (const t of st.timers) clearInterval(t);
  st.timers = [];
  clearTimeout(st.hostQueue.timer);
  clearTimeout(st.recsTimer);
  clearTimeout(st.costs.timer);
  clearTimeout(st.budgetsTimer);
  st.budgetsTimer = null;
  st.project = '';
  st.projects = [];
  $('project-pick').hidden = true;
  $('budgets').replaceChildren();
  st.hostQueue = { pending: new Set(), inflight: new Set(), timer: null };
  st.recsTimer = null;
  st.costs = { last: 0, timer: null };
  closeView();
  healthLoader.reset();
  rolloutsLoader.reset();
  $('rollouts').replaceChildren();
  st.health.clear();
  st.liveHealth.clear();
  st.hosts.clear();
  st.rows.clear();
  st.pools.clear();
  st.stacks.clear();
  $('hosts').tBodies[0].replaceChildren();
  $('costs').tBodies[0].replaceChildren();
  $('recs').replaceChildren();
  setLive('off');
  showError('');
  showSignedIn(false);
  setText($('signin-error'), message || '');
  $('signin-error').hidden = !message;
  $('token').focus();
}

function onSignIn(ev) {
  ev.preventDefault();
  const raw = $('token')
    .value.trim()
    .replace(/^Bearer\s+/i, '');
  $('token').value = '';
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(raw)) {
    setText($('signin-error'), 'That is not a token: a JWT is three base64url parts separated by dots.');
    $('signin-error').hidden = false;
    return;
  }
  $('signin-error').hidden = true;
  sessionStorage.setItem(TOKEN_KEY, raw);
  start();
}

function init() {
  $('filter-state').append(...HOST_STATES.map((s) => el('option', { value: s, text: s })));
  $('filter-state').addEventListener('change', applyFilters);
  $('filter-pool').addEventListener('change', applyFilters);
  $('project').addEventListener('change', chooseProject);
  $('signin-form').addEventListener('submit', onSignIn);
  $('signout').addEventListener('click', () => signOut(''));
  $('refresh').addEventListener('click', () => refreshAll());
  $('hosts').addEventListener('click', (ev) => {
    const button = ev.target.closest('button[data-open-host]');
    if (button) openView(button.getAttribute('data-open-host'));
  });
  $('hv-close').addEventListener('click', () => closeView());
  if (sessionStorage.getItem(TOKEN_KEY)) start();
  else signOut('');
}

init();
