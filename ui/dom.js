// dom.js — DOM building without HTML parsing. Every string from the API lands in a text
// node (textContent) or in a harmless attribute; nothing here ever assigns innerHTML.

// Attributes the page's own code may set. Values may come from data; names never do, and
// none of these can carry script (no on*, href, src or style).
const SAFE_ATTRS = new Set(['class', 'title', 'role', 'colspan', 'datetime', 'value', 'type', 'for', 'id']);

/**
 * el('td', {class: 'x', text: 'hello', title: '…', 'data-id': id}, child, …) → a new element.
 * `text` sets textContent; null/undefined/false props are skipped; children are nodes or
 * strings (strings become text nodes).
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') node.textContent = String(v);
    else if (k === 'hidden') node.hidden = Boolean(v);
    else if (SAFE_ATTRS.has(k) || k.startsWith('data-') || k.startsWith('aria-')) node.setAttribute(k, String(v));
    else throw new Error(`el: attribute ${k} is not allowed`);
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return node;
}

/** Sets an element's text (never markup). */
export function setText(node, text) {
  node.textContent = text == null ? '' : String(text);
}

/** A CSS class suffix from a server enum value: only [a-z0-9_]; anything else → 'other'. */
export function token(v) {
  return typeof v === 'string' && /^[a-z0-9_]{1,40}$/.test(v) ? v : 'other';
}

/** "just now", "42 s ago", "5 min ago", "3 h ago", "2 d ago"; "never" for null. */
export function ago(iso, now = Date.now()) {
  if (!iso) return 'never';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return 'unknown';
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 5) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** The first 8 characters of an id, for when a name is not known (yet). */
export function shortId(id) {
  return typeof id === 'string' ? id.slice(0, 8) : '?';
}

/** A number with at most `digits` decimals and thousands separators. */
export function num(v, digits = 2) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '—';
  return v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/** A share 0..1 as a percentage. */
export function pct(v) {
  return typeof v === 'number' && Number.isFinite(v) ? `${(v * 100).toFixed(1)} %` : '—';
}

/** A small cost: 4 significant digits, never exponent notation. */
export function money(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '—';
  if (v === 0) return '0';
  if (Math.abs(v) >= 1) return v.toLocaleString('en-US', { maximumFractionDigits: 2, minimumFractionDigits: 2 });
  return v.toLocaleString('en-US', { maximumSignificantDigits: 4 });
}
