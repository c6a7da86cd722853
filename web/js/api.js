// The v1 API as the pages use it: JSON fetches that turn problem+json into an
// ApiError (with field errors), the token kept in localStorage, cursor paging, and
// a visibility-aware poller. Tested in a browser by tests/web/browser_test.py (ctest -R web_browser).

const TOKEN_KEY = 'kforge.token';

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.title = problem.title || '';
    this.fields = Array.isArray(problem.errors) ? problem.errors : [];
  }
}

export function token() { return localStorage.getItem(TOKEN_KEY) || ''; }
export function setToken(value) {
  if (value) localStorage.setItem(TOKEN_KEY, value.trim());
  else localStorage.removeItem(TOKEN_KEY);
}

// GETs go out without the token unless asked (public reads stay cheap for the
// server: no token lookup); the browser revalidates them with If-None-Match
// because every API response says Cache-Control: no-cache.
export async function request(method, path, { body, auth = method !== 'GET' } = {}) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (auth && token()) headers.Authorization = `Bearer ${token()}`;
  let resp;
  try {
    resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    throw new ApiError(0, { detail: 'the server did not answer (is kforge-server running?)' });
  }
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (err) { data = { detail: text.slice(0, 200) }; }
  if (!resp.ok) throw new ApiError(resp.status, data || {});
  return { data, etag: resp.headers.get('ETag') || '', status: resp.status };
}

export async function get(path, options) { return (await request('GET', path, options)).data; }
export async function post(path, body) { return (await request('POST', path, { body })).data; }

// Follows next_cursor until `max` items or the end; returns {items, truncated}.
export async function collect(path, max = 500) {
  const items = [];
  let after = '';
  const sep = path.includes('?') ? '&' : '?';
  for (;;) {
    const page = await get(`${path}${sep}limit=100${after ? `&after=${encodeURIComponent(after)}` : ''}`);
    items.push(...page.data);
    if (!page.has_more) return { items, truncated: false };
    if (items.length >= max) return { items, truncated: true };
    after = page.next_cursor;
  }
}

// Runs `tick` now and then every `interval_ms` while the tab is visible; a hidden
// tab stops asking until it is shown again. Errors back off (doubling, up to 30 s)
// and go to `on_error`. tick may return false to stop polling (a finished job).
export function poll(tick, interval_ms, on_error = () => {}) {
  let timer = null;
  let stopped = false;
  let delay = interval_ms;
  const schedule = (ms) => {
    clearTimeout(timer);
    if (!stopped && !document.hidden) timer = setTimeout(run, ms);
  };
  async function run() {
    if (stopped) return;
    try {
      const again = await tick();
      delay = interval_ms;
      on_error(null);
      if (again === false) { stopped = true; return; }
    } catch (err) {
      delay = Math.min(delay * 2, 30000);
      on_error(err);
    }
    schedule(delay);
  }
  const on_visibility = () => { if (!document.hidden) schedule(0); };
  document.addEventListener('visibilitychange', on_visibility);
  run();
  return () => {
    stopped = true;
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', on_visibility);
  };
}

// Statuses after which a job changes no more.
export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

// POST .../cancel for any job kind; returns the job as the API shows it.
export function cancel_job(kind, id) {
  const collection = kind === 'generate' ? 'generations' : kind === 'evaluate' ? 'evaluations' : 'training-jobs';
  return post(`/v1/${collection}/${id}/cancel`);
}
