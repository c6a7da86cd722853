// Training: the list of SFT / GRPO runs, and one run live: loss, reward, correct
// rate, speedup, KL and rule-violation rate per step (charts that grow while the
// run is going), checkpoints (the model versions it registered) and events.
// Polls the run every 5 s until it ends; metrics and events only when it moved. Tested in a browser by tests/web/browser_test.py (ctest -R web_browser).
import * as api from '../api.js';
import { h, notice, error_text, page_header, sortable_table, badge, time, link, num } from '../dom.js';
import { line_chart } from '../charts.js';
import { job_progress } from './jobs.js';

const POLL_MS = 5000;

// [metric key, title, y axis]; SFT records loss (and val_loss), GRPO the rest.
const SERIES = [
  ['loss', 'Loss', 'loss'],
  ['reward_mean', 'Reward (mean)', 'reward'],
  ['correct_rate', 'Correct rate', 'share of samples'],
  ['mean_speedup_correct', 'Speedup of correct samples', '× eager'],
  ['kl', 'KL to the reference', 'KL'],
  ['rule_violation_rate', 'Rule-violation rate', 'share of samples'],
];

function list(main) {
  const body = h('div', {}, notice('Loading training runs…'));
  page_header(main, 'Training runs', h('p', { class: 'muted' }, 'SFT and GRPO jobs (POST /v1/training-jobs or kforge train).'), body);
  const table = sortable_table('Training runs, newest first', [
    { key: 'id', label: 'Run', numeric: true, cell: (j) => link(`#/training/${j.id}`, String(j.id)) },
    { key: 'method', label: 'Method' },
    { key: 'output_model', label: 'Output model' },
    { key: 'status', label: 'Status', cell: (j) => badge(j.status) },
    { key: 'progress', label: 'Progress', sortable: false, cell: job_progress },
    { key: 'created_at', label: 'Created', cell: (j) => time(j.created_at) },
  ], { sort_key: 'id', descending: true });
  let last = null;
  return api.poll(async () => {
    const page = await api.get('/v1/training-jobs?limit=50');
    const text = JSON.stringify(page.data);
    if (text === last) return true;
    last = text;
    if (!page.data.length) {
      body.replaceChildren(notice('No training runs yet. Start one with kforge train sft --suite builtin (docs/training.md).'));
      return true;
    }
    table.update(page.data);
    body.replaceChildren(table.el);
    return true;
  }, 5000, (err) => { if (err) body.replaceChildren(notice(error_text(err, 'load training runs'), 'error')); });
}

function summary(job, last_point) {
  const p = job.progress || {};
  const items = [['status', badge(job.status)], ['method', job.method || '–'], ['base', job.base_model || 'from scratch'],
    ['output', job.output_model || '–'], ['step', p.total_steps ? `${p.step ?? 0} / ${p.total_steps}` : (last_point ? String(last_point.step) : '–')]];
  for (const [key, title] of SERIES) {
    if (last_point && typeof last_point.metrics[key] === 'number') items.push([title.toLowerCase(), num(last_point.metrics[key], 4)]);
  }
  return h('ul', { class: 'stats' }, items.map(([label, value]) => h('li', {}, h('span', { class: 'label' }, label), h('span', { class: 'value' }, value))));
}

function run(main, id) {
  page_header(main, `Training run ${id}`, notice('Loading the run…'));
  const head = h('div', {});
  const charts_box = h('div', { class: 'charts' });
  const checkpoints_box = h('div', {});
  const events_box = h('div', {});
  const charts = new Map();
  const slots = new Map();
  for (const [key, title, y_title] of SERIES) {
    const slot = h('div', {}, notice('not recorded yet'));
    slots.set(key, slot);
    charts_box.append(h('section', { 'aria-labelledby': `chart-${key}` }, h('h3', { id: `chart-${key}` }, title), slot));
    charts.set(key, { title, y_title, chart: null });
  }
  const points = [];
  const events = [];
  let after_step = null;
  let after_event = 0;
  let laid_out = false;
  const checkpoints = sortable_table('Checkpoints registered as model versions', [
    { key: 'step', label: 'Step', numeric: true },
    { key: 'model', label: 'Model version' },
    { key: 'model_id', label: 'Model id', numeric: true, cell: (c) => link(`/v1/models/${c.model_id}`, String(c.model_id)) },
    { key: 'created_at', label: 'Saved', cell: (c) => time(c.created_at) },
  ], { sort_key: 'step' });
  const events_table = sortable_table('Events, oldest first', [
    { key: 'id', label: '#', numeric: true },
    { key: 'level', label: 'Level', cell: (e) => badge(e.level) },
    { key: 'message', label: 'Message', wrap: true },
    { key: 'created_at', label: 'When', cell: (e) => time(e.created_at) },
  ], { sort_key: 'id' });

  function draw_charts(method) {
    for (const [key, entry] of charts) {
      const series = points.filter((p) => typeof p.metrics[key] === 'number').map((p) => ({ x: p.step, y: p.metrics[key] }));
      const slot = slots.get(key);
      if (!series.length) {
        const why = method === 'sft' && key !== 'loss' ? 'SFT does not record this (it trains on fixed kernels).' : 'Not recorded yet.';
        if (!entry.chart) slot.replaceChildren(notice(why));
        continue;
      }
      if (!entry.chart) {
        entry.chart = line_chart(entry.title, { y_title: entry.y_title });
        entry.chart.el.id = `chart-${key}-canvas`;
        slot.replaceChildren(entry.chart.el);
      }
      entry.chart.set(series);
    }
  }

  function draw_checkpoints() {
    const rows = events.filter((e) => e.data && typeof e.data.model_id === 'number' && typeof e.data.step === 'number')
      .map((e) => ({ step: e.data.step, model_id: e.data.model_id, model: (/registered as (\S+)/.exec(e.message) || [])[1] || '–', created_at: e.created_at }));
    if (!rows.length) { checkpoints_box.replaceChildren(notice('No checkpoint yet.')); return; }
    checkpoints.update(rows);
    checkpoints_box.replaceChildren(checkpoints.el);
  }

  let last_etag = null;
  return api.poll(async () => {
    const reply = await api.request('GET', `/v1/training-jobs/${id}`);
    // Each step updates the job's progress, so an unchanged job (same ETag) means no
    // new metrics or events: skip those requests.
    if (reply.etag && reply.etag === last_etag) return true;
    last_etag = reply.etag;
    const job = reply.data;
    for (;;) {
      const page = await api.get(`/v1/training-jobs/${id}/metrics?limit=100${after_step !== null ? `&after=${after_step}` : ''}`);
      points.push(...page.data);
      if (page.data.length) after_step = page.data[page.data.length - 1].step;
      if (!page.has_more || points.length > 100000) break;
    }
    for (;;) {
      const page = await api.get(`/v1/training-jobs/${id}/events?limit=100${after_event ? `&after=${after_event}` : ''}`);
      events.push(...page.data);
      if (page.data.length) after_event = page.data[page.data.length - 1].id;
      if (!page.has_more) break;
    }
    if (!laid_out) {
      page_header(main, `Training run ${id}`, head,
        h('section', { 'aria-labelledby': 'metrics' }, h('h2', { id: 'metrics' }, 'Per-step metrics'), charts_box),
        h('section', { 'aria-labelledby': 'checkpoints' }, h('h2', { id: 'checkpoints' }, 'Checkpoints'), checkpoints_box),
        h('section', { 'aria-labelledby': 'events' }, h('h2', { id: 'events' }, 'Events'), events_box),
        h('details', {}, h('summary', {}, 'Hyperparameters'), h('pre', {}, JSON.stringify(job.hyperparameters, null, 2))));
      laid_out = true;
    }
    head.replaceChildren(
      h('p', {}, `${(job.method || '').toUpperCase()} on ${job.suite ? `suite ${job.suite}` : `dataset ${job.dataset}`} · created `, time(job.created_at), ' · ',
        h('span', { class: 'progress wide' }, job_progress(job))),
      summary(job, points[points.length - 1]),
      job.error ? notice(`Error (attempt ${job.error.attempt}): ${job.error.message}`, 'error') : '',
      job.result && job.result.model ? h('p', {}, `Trained model: ${job.result.model}.`) : '');
    draw_charts(job.method);
    draw_checkpoints();
    if (events.length) {
      events_table.update(events);
      events_box.replaceChildren(events_table.el);
    } else {
      events_box.replaceChildren(notice('No events yet.'));
    }
    return !api.TERMINAL.has(job.status);
  }, POLL_MS, (err) => {
    if (!err) return;
    const text = err.status === 404 ? `There is no training run ${id}.` : error_text(err, 'load the training run');
    if (laid_out) head.append(notice(text, 'error'));
    else page_header(main, `Training run ${id}`, notice(text, 'error'));
  });
}

export function render(main, params) {
  return params.id ? run(main, params.id) : list(main);
}
