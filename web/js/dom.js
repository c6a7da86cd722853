// Small DOM helpers every page uses: an element builder, number and time formats,
// status badges, progress bars, notices in words, and sortable tables.
// Tested in a browser by tests/web/browser_test.py (ctest -R web_browser).

// h('a', {href: '#/'}, 'text', child...): attributes starting with "on" become
// listeners; null / false children are skipped; strings become text (never HTML).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = value;
    else el.setAttribute(key, value === true ? '' : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

export const num = (x, digits = 2) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : '–');
export const speedup = (x) => (typeof x === 'number' && Number.isFinite(x) ? `${x.toFixed(2)}×` : '–');
export const percent = (x) => (typeof x === 'number' && Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : '–');
export const ms = (x) => (typeof x === 'number' && Number.isFinite(x) ? `${x < 1 ? x.toFixed(4) : x.toFixed(2)} ms` : '–');
export const shape = (dims) => (Array.isArray(dims) ? (dims.length ? dims.join('×') : 'scalar') : '–');

// "3 min ago" for ISO times; the full time goes in a title.
export function ago(iso) {
  if (!iso) return '–';
  const seconds = (Date.now() - Date.parse(iso)) / 1000;
  if (!Number.isFinite(seconds)) return iso;
  if (seconds < 5) return 'just now';
  if (seconds < 90) return `${Math.round(seconds)} s ago`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 129600) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86400)} days ago`;
}
export const time = (iso) => h('time', { datetime: iso || '', title: iso || '' }, ago(iso));

// Who wins an op on a leaderboard row (GET /v1/leaderboard/ops `winner`): the kernel, or
// PyTorch eager / torch.compile in bold when they beat every verified kernel (`verdict` as tooltip).
const WINNER_TEXT = { kernel: 'kernel', pytorch_eager: 'PyTorch eager', torch_compile: 'torch.compile' };
export function winner(row) {
  if (!row.winner) return h('span', { class: 'muted' }, 'not timed');
  if (row.winner === 'kernel') return 'kernel';
  return h('strong', { class: 'eager-wins', title: row.verdict || '' }, `${WINNER_TEXT[row.winner] || row.winner} (use it)`);
}

export function badge(status) {
  return h('span', { class: `badge badge-${String(status).replace(/[^a-z_]/g, '')}` }, String(status).replace(/_/g, ' '));
}

// A labelled <progress>; value null draws an indeterminate bar.
export function progress_bar(value, max, label) {
  const bar = h('progress', { max: max > 0 ? max : 1, 'aria-label': label });
  if (value !== null && value !== undefined && max > 0) bar.value = Math.min(value, max);
  return h('span', { class: 'progress' }, bar, h('span', { class: 'progress-text' }, max > 0 ? `${value ?? 0}/${max}` : ''));
}

// Notices: empty states and errors said in words (role=alert for errors).
export function notice(text, kind = 'empty') {
  return h('p', { class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : null }, text);
}
export function error_text(err, what) {
  const status = err && err.status ? ` (HTTP ${err.status})` : '';
  return `Could not ${what}: ${err ? err.message : 'unknown error'}${status}.`;
}

// A table whose header buttons sort it. columns: [{key, label, value(row) -> sortable,
// cell(row) -> Node|string, numeric, wrap (long text), sortable}]. Returns {el, update(rows)}.
export function sortable_table(caption, columns, { sort_key = null, descending = false, row_class = null } = {}) {
  let rows = [];
  let key = sort_key;
  let desc = descending;
  const tbody = h('tbody');
  const heads = columns.map((col) => {
    const button = h('button', { type: 'button', class: 'sort', onclick: () => {
      desc = key === col.key ? !desc : !!col.numeric;
      key = col.key;
      render();
    } }, col.label);
    return h('th', { scope: 'col', class: col.numeric ? 'num' : null }, col.sortable === false ? col.label : button);
  });
  const table = h('table', {}, h('caption', {}, caption), h('thead', {}, h('tr', {}, heads)), tbody);
  function value_of(row, col) { return col.value ? col.value(row) : row[col.key]; }
  function render() {
    heads.forEach((th, idx) => {
      const sorted = columns[idx].key === key;
      if (sorted) th.setAttribute('aria-sort', desc ? 'descending' : 'ascending');
      else th.removeAttribute('aria-sort');
    });
    const col = columns.find((c) => c.key === key);
    const ordered = col ? [...rows].sort((a, b) => {
      const x = value_of(a, col);
      const y = value_of(b, col);
      // Missing values sort last either way.
      if (x === null || x === undefined || Number.isNaN(x)) return 1;
      if (y === null || y === undefined || Number.isNaN(y)) return -1;
      const order = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
      return desc ? -order : order;
    }) : rows;
    tbody.replaceChildren(...ordered.map((row) => h('tr', { class: row_class ? row_class(row) : null },
      columns.map((c) => h('td', { class: c.numeric ? 'num' : (c.wrap ? 'wrap' : null), 'data-label': c.label },
        c.cell ? c.cell(row) : String(value_of(row, c) ?? '–'))))));
  }
  return { el: h('div', { class: 'table-wrap' }, table), update(next) { rows = next; render(); } };
}

export function link(href, text) { return h('a', { href }, text); }

// Sets the document title and the page heading in one place.
export function page_header(main, title, ...extra) {
  document.title = `${title} · kforge`;
  main.replaceChildren(h('h1', { id: 'page-title', tabindex: '-1' }, title), ...extra);
}
