// live.js — the event stream (GET /v1/events, Server-Sent Events) opened with a
// single-use ticket from POST /v1/event-tickets. A ticket cannot be reused, so
// EventSource's own reconnect (which would replay the same URL) is never relied on: on
// `error` the source is closed, a new ticket minted, and the stream reopened with
// `last_event_id` = the last id seen, after a backoff.

export const EVENT_TYPES = [
  'host.created',
  'host.state',
  'host.updated',
  'host.deleted',
  'job.state',
  'job.step',
  'gate.verdict',
  'diagnostics.verdict',
  'recommendation.opened',
  'recommendation.withdrawn',
  'work_reports.ingested',
  'gpu.event',
  'host.health',
  'rollout',
  'rollout.host',
  'budget.threshold',
  'drill.completed',
];

const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 30000;

/**
 * startLive({api, onEvent(type, data, id), onStatus(state, err), onOpen(reconnected), onAuthError(err)})
 * → {stop()}.
 * state: 'connecting' | 'live' | 'reconnecting' | 'unavailable' (no event stream on this
 * server) | 'forbidden'. onAuthError is called on a 401 while minting a ticket (the
 * stream then stays closed).
 */
export function startLive({ api, onEvent, onStatus, onOpen, onAuthError }) {
  let source = null;
  let timer = null;
  let stopped = false;
  let failures = 0;
  let lastId = null;
  let everOpened = false;
  let refused = 0; // streams that failed before opening although their ticket was fine

  function schedule() {
    if (stopped) return;
    const cap = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(failures, 10));
    failures++;
    const delay = cap / 2 + Math.random() * (cap / 2);
    clearTimeout(timer);
    timer = setTimeout(connect, delay);
  }

  async function connect() {
    timer = null;
    if (stopped) return;
    onStatus(everOpened || failures ? 'reconnecting' : 'connecting');
    let ticket;
    try {
      ticket = (await api.post('/v1/event-tickets')).ticket;
    } catch (err) {
      if (stopped) return;
      if (err.status === 401) {
        onAuthError(err);
        return;
      }
      onStatus(err.status === 404 ? 'unavailable' : err.status === 403 ? 'forbidden' : 'reconnecting', err);
      schedule();
      return;
    }
    if (stopped) return;
    // A server that keeps refusing the stream may no longer know that id: go on without
    // it (each open refreshes everything anyway, so nothing is lost).
    if (refused >= 3) lastId = null;
    let url = `/v1/events?ticket=${encodeURIComponent(ticket)}`;
    if (lastId !== null) url += `&last_event_id=${encodeURIComponent(lastId)}`;
    const src = new EventSource(url);
    source = src;
    let opened = false;
    src.addEventListener('open', () => {
      if (source !== src) return;
      opened = true;
      failures = 0;
      refused = 0;
      const reconnected = everOpened;
      everOpened = true;
      onStatus('live');
      onOpen(reconnected);
    });
    src.addEventListener('error', () => {
      if (source !== src) return;
      if (!opened) refused++;
      src.close();
      source = null;
      onStatus('reconnecting');
      schedule();
    });
    for (const type of EVENT_TYPES) {
      src.addEventListener(type, (ev) => {
        if (source !== src) return;
        if (ev.lastEventId) lastId = ev.lastEventId;
        let data;
        try {
          data = JSON.parse(ev.data);
        } catch {
          return; // not ours to guess at
        }
        if (data && typeof data === 'object') onEvent(type, data, ev.lastEventId);
      });
    }
  }

  connect();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      if (source) source.close();
      source = null;
    },
  };
}
