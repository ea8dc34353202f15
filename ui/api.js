// api.js — calls to the gpufleet API with the bearer token. Same origin only; no cookies
// are sent or accepted, no referrer leaves, and the token travels in the Authorization
// header only (never in a URL).

/** An API answer that is not 2xx (status > 0), or a network failure (status 0). */
export class ApiError extends Error {
  constructor(status, problem, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.problem = problem; // the RFC 9457 document, when the server sent one
  }
}

/** Plain words for an ApiError, for the page's error banner. */
export function describeError(err) {
  if (!(err instanceof ApiError)) return `Unexpected error: ${err && err.message ? err.message : String(err)}`;
  if (err.status === 0) return `Cannot reach the gpufleet server (${err.message}).`;
  const p = err.problem;
  const detail = p && typeof p.detail === 'string' ? p.detail : err.message;
  if (err.status === 401) return `The token was refused: ${detail}`;
  if (err.status === 403) return `Not allowed with this token: ${detail}`;
  return `${err.status} ${p && p.title ? p.title : 'error'}: ${detail}`;
}

/**
 * makeClient(getToken) → {get(path), post(path, body?), getAll(path)}.
 * getToken() returns the current token (or null). Every call rejects with ApiError.
 */
export function makeClient(getToken) {
  async function call(method, path, body) {
    const headers = { Accept: 'application/json' };
    const token = getToken();
    if (token) headers.Authorization = `Bearer ${token}`;
    const init = { method, headers, credentials: 'omit', referrerPolicy: 'no-referrer', redirect: 'error' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, null, e && e.message ? e.message : 'network error');
    }
    let text;
    try {
      text = await res.text();
    } catch (e) {
      throw new ApiError(0, null, e && e.message ? e.message : 'the connection broke');
    }
    let doc = null;
    if (text) {
      try {
        doc = JSON.parse(text);
      } catch {
        doc = null;
      }
    }
    if (!res.ok) {
      const problem = doc && typeof doc === 'object' && typeof doc.code === 'string' ? doc : null;
      throw new ApiError(res.status, problem, problem ? problem.detail : `HTTP ${res.status}`);
    }
    if (doc === null && text) throw new ApiError(res.status, null, 'the answer is not JSON');
    return doc;
  }

  return {
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body),
    /** Every item of a paginated list (follows next_cursor). */
    async getAll(path) {
      const items = [];
      let cursor = null;
      for (let guard = 0; guard < 1000; guard++) {
        const sep = path.includes('?') ? '&' : '?';
        const page = await call('GET', cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path);
        items.push(...page.items);
        cursor = page.next_cursor;
        if (!cursor) return items;
      }
      throw new ApiError(0, null, `too many pages for ${path}`);
    },
  };
}
