'use strict';
// A Server-Sent Events client on raw node:http (no EventSource, no mocks), for the
// event stream tests and bench/events.
//
//   const { openStream } = require('./lib/sse');
//   const s = await openStream(srv.url, { token, query: '?types=host.state' });
//   s.status, s.headers.get('content-type'), s.text (the raw bytes so far)
//   await s.waitFor((events) => events.length >= 3, 5000);
//   s.events: [{id, event, data, json, at}], s.comments: [': heartbeat', ...]
//   s.close();  await s.ended;
//
// `validate(ev)` (an option) is called for every event; what it throws is collected in
// s.errors and makes every waitFor reject.

const http = require('node:http');

/** A fetch-like Headers view of a node response's headers. */
function headersOf(res) {
  return {
    get(name) {
      const v = res.headers[name.toLowerCase()];
      if (v === undefined) return null;
      return Array.isArray(v) ? v.join(', ') : String(v);
    },
  };
}

/** Incremental parser (HTML Living Standard, "event stream interpretation"). */
class SseParser {
  constructor(handlers) {
    this.h = handlers;
    this.buf = '';
    this.data = [];
    this.event = '';
    this.id = undefined;
    this.sawCr = false;
  }

  push(chunk) {
    this.buf += chunk;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      if (!m) return;
      // A lone CR at the very end may be the first half of CRLF: wait for more.
      if (m[0] === '\r' && m.index === this.buf.length - 1) return;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      this.line(line);
    }
  }

  line(line) {
    if (line === '') {
      if (this.data.length > 0) {
        this.h.event({ id: this.id, event: this.event || 'message', data: this.data.join('\n') });
      }
      this.data = [];
      this.event = '';
      return;
    }
    if (line.startsWith(':')) {
      this.h.comment(line);
      return;
    }
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id') this.id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.h.retry(Number(value));
  }
}

/**
 * Opens GET <base><path><query>. Resolves once the response head arrived (for a non-200
 * answer: once its whole body arrived, in s.text).
 *   token        Authorization: Bearer
 *   headers      extra request headers
 *   validate     called with every event (see above)
 *   method       default GET
 */
function openStream(
  base,
  { path = '/v1/events', query = '', token, headers = {}, validate, method = 'GET', timeoutMs = 15000 } = {},
) {
  const url = new URL(base + path + query);
  const h = { Accept: 'text/event-stream', ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  return new Promise((resolve, reject) => {
    const s = {
      status: 0,
      headers: null,
      text: '',
      events: [],
      comments: [],
      retry: undefined,
      errors: [],
      closedByUs: false,
      endedFlag: false,
      req: null,
      res: null,
      waiters: [],
    };
    let endedResolve;
    s.ended = new Promise((r) => (endedResolve = r));
    const notify = () => {
      for (const w of [...s.waiters]) w.check();
    };
    const parser = new SseParser({
      event(ev) {
        ev.at = process.hrtime.bigint();
        try {
          ev.json = JSON.parse(ev.data);
        } catch {
          s.errors.push(new Error(`event ${ev.id} (${ev.event}): data is not JSON: ${ev.data.slice(0, 200)}`));
        }
        if (validate && ev.json !== undefined) {
          try {
            validate(ev);
          } catch (e) {
            s.errors.push(e);
          }
        }
        s.events.push(ev);
        notify();
      },
      comment(line) {
        s.comments.push(line);
        notify();
      },
      retry(ms) {
        s.retry = ms;
      },
    });
    s.waitFor = (pred, ms = 10000, what = 'condition') =>
      new Promise((res2, rej2) => {
        const w = {
          check() {
            if (s.errors.length) {
              done();
              rej2(s.errors[0]);
            } else if (pred(s.events, s)) {
              done();
              res2(s.events);
            } else if (s.endedFlag) {
              done();
              rej2(new Error(`stream ended before ${what}; ${s.events.length} events`));
            }
          },
        };
        const timer = setTimeout(() => {
          done();
          rej2(
            new Error(
              `timed out after ${ms} ms waiting for ${what}; ${s.events.length} events: ${s.events
                .slice(-5)
                .map((e) => `${e.id}:${e.event}`)
                .join(' ')}`,
            ),
          );
        }, ms);
        function done() {
          clearTimeout(timer);
          s.waiters = s.waiters.filter((x) => x !== w);
        }
        s.waiters.push(w);
        w.check();
      });
    s.close = () => {
      s.closedByUs = true;
      s.req.destroy();
    };
    s.pause = () => s.res && s.res.pause();
    s.resume = () => s.res && s.res.resume();

    const req = http.request(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers: h, agent: false },
      (res) => {
        s.res = res;
        s.status = res.statusCode;
        s.headers = headersOf(res);
        res.setEncoding('utf8');
        const finish = () => {
          if (s.endedFlag) return;
          s.endedFlag = true;
          notify();
          endedResolve();
        };
        res.on('data', (chunk) => {
          s.text += chunk;
          if (s.status === 200) parser.push(chunk);
        });
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
        if (s.status === 200) resolve(s);
        else res.on('end', () => resolve(s));
      },
    );
    s.req = req;
    req.on('error', (e) => {
      if (s.status === 0) reject(e);
      else if (!s.endedFlag) {
        s.endedFlag = true;
        notify();
        endedResolve();
      }
    });
    req.setTimeout(timeoutMs, () => {
      if (s.status === 0) req.destroy(new Error(`no response head within ${timeoutMs} ms`));
    });
    req.end();
  });
}

module.exports = { openStream, SseParser, headersOf };
