// Leaderboard (home): the best kernel per op, target and device grouped by suite
// level, with speedup vs eager and vs torch.compile (where measured), the winner
// (PyTorch eager when it beats every kernel), generator, filters (target, device,
// level; kept in the URL) and sortable columns; the Models tab ranks model versions
// by their latest evaluation (pass@1 with its 95% interval, fast_p, rule violations).
// Tested in a browser by tests/web/browser_test.py (ctest -R web_browser).
import * as api from '../api.js';
import { h, notice, error_text, page_header, sortable_table, speedup, ms, percent, time, link, winner } from '../dom.js';

const LEVEL_NAMES = { 1: 'Level 1 · single ops', 2: 'Level 2 · fusions' };
const POLL_MS = 30000;

function tabs(active) {
  const tab = (href, text, name) => h('a', { href, 'aria-current': active === name ? 'page' : null }, text);
  return h('nav', { class: 'tabs', 'aria-label': 'Leaderboards' }, tab('#/', 'Kernels', 'kernels'), tab('#/models', 'Models', 'models'));
}

// Builds a select whose change rewrites one query parameter of the hash.
function filter_select(id, label, name, options, query, base) {
  const select = h('select', { id, name }, options.map(([value, text]) => h('option', { value, selected: (query.get(name) || '') === value }, text)));
  select.addEventListener('change', () => {
    const next = new URLSearchParams(query);
    if (select.value) next.set(name, select.value); else next.delete(name);
    next.delete('tab');
    const text = next.toString();
    location.hash = `${base}${text ? `?${text}` : ''}`;
  });
  return h('div', {}, h('label', { for: id }, label), select);
}

function geomean(values) {
  const good = values.filter((v) => typeof v === 'number' && v > 0);
  if (!good.length) return null;
  return Math.exp(good.reduce((s, v) => s + Math.log(v), 0) / good.length);
}

function compile_cell(row) {
  const value = row.speedup_vs_compile;
  return typeof value === 'number' ? speedup(value) : h('span', { class: 'muted' }, 'not measured');
}

function kernels(main, query) {
  const devices = new Set(query.get('device') ? [query.get('device')] : []);
  const levels = new Set(['1', '2', query.get('level') || '1']);
  const body = h('div', { 'aria-live': 'polite', 'aria-busy': 'true' }, notice('Loading the leaderboard…'));
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter kernels', onsubmit: (e) => e.preventDefault() });
  page_header(main, 'Leaderboard', tabs('kernels'),
    h('p', { class: 'muted' }, 'The fastest verified kernel for each op on each device, timed against PyTorch eager in the same process.'),
    filters, body);

  function draw_filters() {
    filters.replaceChildren(
      filter_select('f-target', 'Target', 'target', [['', 'any target'], ['opencl', 'opencl'], ['cuda', 'cuda'], ['triton', 'triton']], query, '#/'),
      filter_select('f-device', 'Device', 'device', [['', 'any device'], ...[...devices].sort().map((d) => [d, d])], query, '#/'),
      filter_select('f-level', 'Level', 'level', [['', 'any level'], ...[...levels].sort().map((l) => [l, `level ${l}`])], query, '#/'));
  }
  draw_filters();

  const server_query = new URLSearchParams();
  for (const name of ['target', 'device', 'level']) if (query.get(name)) server_query.set(name, query.get(name));
  let last = null;
  const tables = new Map();
  return api.poll(async () => {
    const { items, truncated } = await api.collect(`/v1/leaderboard/ops?${server_query}`, 1000);
    const text = JSON.stringify(items);
    if (text === last) return true;
    last = text;
    body.removeAttribute('aria-busy');
    let grew = false;
    for (const row of items) {
      if (!devices.has(row.device)) { devices.add(row.device); grew = true; }
      if (row.level && !levels.has(String(row.level))) { levels.add(String(row.level)); grew = true; }
    }
    if (grew) draw_filters();
    if (!items.length) {
      const filtered = [...server_query.keys()].length > 0;
      body.replaceChildren(notice(filtered
        ? 'No kernels match these filters. Choose "any" to see every op.'
        : 'No verified kernels yet. Submit an op and the fastest correct kernel appears here.'));
      if (!filtered) body.append(h('p', {}, link('#/submit', 'Submit an op')));
      tables.clear();
      return true;
    }
    const groups = new Map();
    for (const row of items) {
      const key = row.level ?? 0;
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(row);
    }
    const order = [...groups.keys()].sort((a, b) => (a || 99) - (b || 99));
    const sections = order.map((level) => {
      const rows = groups.get(level);
      const title = level ? (LEVEL_NAMES[level] || `Level ${level}`) : 'Ops without a suite level';
      const ops = new Set(rows.map((r) => r.op_id)).size;
      if (!tables.has(level)) tables.set(level, make_table(title));
      tables.get(level).update(rows);
      return h('section', { 'aria-labelledby': `level-${level}` },
        h('h2', { id: `level-${level}` }, title),
        h('p', { class: 'muted' }, `${ops} op${ops === 1 ? '' : 's'}, ${rows.length} kernel${rows.length === 1 ? '' : 's'}; `
          + `geometric mean ${speedup(geomean(rows.map((r) => r.speedup)))} vs eager.`),
        tables.get(level).el);
    });
    body.replaceChildren(...sections, truncated ? notice('Showing the first 1,000 rows: narrow the filters to see the rest.', 'info') : '');
    return true;
  }, POLL_MS, (err) => {
    if (err) body.replaceChildren(notice(error_text(err, 'load the leaderboard'), 'error'));
  });
}

function make_table(title) {
  return sortable_table(`${title}: best kernel per op, target and device`, [
    { key: 'op_name', label: 'Op', cell: (r) => link(`#/ops/${r.op_id}`, r.op_name) },
    { key: 'speedup', label: 'vs eager', numeric: true, cell: (r) => h('strong', {}, speedup(r.speedup)) },
    { key: 'speedup_vs_compile', label: 'vs torch.compile', numeric: true, cell: compile_cell },
    { key: 'winner', label: 'Winner', cell: winner },
    { key: 'kernel_ms', label: 'Kernel', numeric: true, cell: (r) => ms(r.kernel_ms) },
    { key: 'baseline_ms', label: 'Eager', numeric: true, cell: (r) => ms(r.baseline_ms) },
    { key: 'target', label: 'Target' },
    { key: 'device', label: 'Device' },
    { key: 'generator', label: 'Generator', cell: (r) => r.generator || h('span', { class: 'muted' }, 'unknown') },
    { key: 'created_at', label: 'Checked', cell: (r) => time(r.created_at) },
  ], { sort_key: 'speedup', descending: true });
}

// "45.0%" or "45.0% (38.1–52.0)" when the evaluation reports an interval. `key` may
// list names to try in order (pass_at_1, then fast_0 of evaluations stored before it).
function metric_cell(metrics, key, format = percent) {
  const found = [].concat(key).find((k) => metrics && metrics[k] !== undefined && metrics[k] !== null);
  if (found === undefined) return h('span', { class: 'muted' }, '–');
  key = found;
  const value = metrics[key];
  const interval = (metrics.intervals && metrics.intervals[key]) || metrics[`${key}_ci`];
  const text = format(value);
  if (Array.isArray(interval) && interval.length === 2) {
    return h('span', { class: 'nowrap' }, text, ' ', h('span', { class: 'muted' }, `(${format(interval[0])}–${format(interval[1])})`));
  }
  return text;
}

function models(main, query) {
  const body = h('div', { 'aria-live': 'polite' }, notice('Loading model evaluations…'));
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter evaluations', onsubmit: (e) => e.preventDefault() },
    filter_select('f-suite', 'Suite', 'suite', [['', 'any suite'], ['heldout', 'held-out'], ['train', 'train'], ['all', 'all']], query, '#/models'));
  page_header(main, 'Model leaderboard', tabs('models'),
    h('p', { class: 'muted' }, 'Each model version on its latest evaluation: pass@1 (the share of samples that are correct, '
      + 'averaged over ALL tasks = fast_0), fast_p (correct and faster than eager, or torch.compile, by more than p, as KernelBench '
      + 'defines it), the rule-violation rate, and the geometric-mean speedup over correct tasks. Brackets: 95% bootstrap interval over tasks.'),
    filters, body);
  const table = sortable_table('Latest evaluation per model version, suite and target', [
    { key: 'model', label: 'Model' },
    { key: 'suite', label: 'Suite' },
    { key: 'target', label: 'Target' },
    { key: 'device', label: 'Device' },
    { key: 'compile_rate', label: 'Compiles', numeric: true, value: (r) => r.metrics?.compile_rate, cell: (r) => metric_cell(r.metrics, 'compile_rate') },
    { key: 'pass_at_1', label: 'pass@1', numeric: true, value: (r) => r.metrics?.pass_at_1 ?? r.metrics?.fast_0, cell: (r) => metric_cell(r.metrics, ['pass_at_1', 'fast_0']) },
    { key: 'fast_1', label: 'fast_1', numeric: true, value: (r) => r.metrics?.fast_1, cell: (r) => metric_cell(r.metrics, 'fast_1') },
    { key: 'fast_1_5', label: 'fast_1.5', numeric: true, value: (r) => r.metrics?.fast_1_5, cell: (r) => metric_cell(r.metrics, 'fast_1_5') },
    { key: 'fast_2', label: 'fast_2', numeric: true, value: (r) => r.metrics?.fast_2, cell: (r) => metric_cell(r.metrics, 'fast_2') },
    { key: 'fast_1_vs_compile', label: 'fast_1 vs compile', numeric: true, value: (r) => r.metrics?.fast_1_vs_compile, cell: (r) => metric_cell(r.metrics, 'fast_1_vs_compile') },
    { key: 'rule_violation_rate', label: 'Rule violations', numeric: true, value: (r) => r.metrics?.rule_violation_rate, cell: (r) => metric_cell(r.metrics, 'rule_violation_rate') },
    { key: 'geomean_speedup', label: 'Geomean', numeric: true, value: (r) => r.metrics?.geomean_speedup, cell: (r) => metric_cell(r.metrics, 'geomean_speedup', speedup) },
    { key: 'created_at', label: 'Evaluated', cell: (r) => time(r.created_at) },
  ], { sort_key: 'fast_1', descending: true });
  const suite = query.get('suite');
  let last = null;
  return api.poll(async () => {
    const { items } = await api.collect(`/v1/leaderboard/models${suite ? `?suite=${encodeURIComponent(suite)}` : ''}`, 500);
    const text = JSON.stringify(items);
    if (text === last) return true;
    last = text;
    if (!items.length) {
      body.replaceChildren(notice('No evaluations yet. An evaluation job (POST /v1/evaluations) scores a model version on the suite.'));
      return true;
    }
    table.update(items);
    body.replaceChildren(table.el);
    return true;
  }, POLL_MS, (err) => { if (err) body.replaceChildren(notice(error_text(err, 'load model evaluations'), 'error')); });
}

export function render(main, params, query) {
  return query.get('tab') === 'models' ? models(main, query) : kernels(main, query);
}
