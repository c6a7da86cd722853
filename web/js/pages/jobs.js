// Jobs: every job (generations, training, evaluations) newest first with status,
// progress bars, kind / status filters kept in the URL, and cancel (needs a token).
// Polls every 5 s. Tested in a browser by tests/web/browser_test.py (ctest -R web_browser).
import * as api from '../api.js';
import { h, notice, error_text, page_header, sortable_table, badge, progress_bar, time, link } from '../dom.js';

const POLL_MS = 5000;
const KINDS = [['', 'any kind'], ['generate', 'generation'], ['train_sft', 'SFT training'], ['train_grpo', 'GRPO training'], ['train_rft', 'expert iteration'], ['evaluate', 'evaluation']];
const STATUSES = ['', 'queued', 'running', 'retrying', 'succeeded', 'failed', 'cancelled'];

export function job_href(job) {
  if (job.kind === 'generate') return `#/generations/${job.id}`;
  if (job.kind === 'train_sft' || job.kind === 'train_grpo' || job.kind === 'train_rft') return `#/training/${job.id}`;
  return null;
}

// checked/total for generations, step/total_steps for training, ops for evaluations.
export function job_progress(job) {
  const p = job.progress || {};
  const label = `progress of job ${job.id}`;
  if (job.status === 'succeeded') {
    const total = p.total ?? p.total_steps ?? p.ops_total ?? 1;
    return progress_bar(total, total, label);
  }
  if (typeof p.total === 'number') return progress_bar(p.checked ?? 0, p.total, label);
  if (typeof p.total_steps === 'number') return progress_bar(p.step ?? 0, p.total_steps, label);
  if (typeof p.ops_total === 'number') return progress_bar(p.ops_done ?? 0, p.ops_total, label);
  if (job.status === 'running') return progress_bar(null, 0, label);
  return h('span', { class: 'muted' }, '–');
}

function what(job) {
  const a = job.args || {};
  if (job.kind === 'generate') return `op ${a.op_id} · ${a.samples ?? '?'} × ${a.model ?? ''}`;
  if (job.kind === 'evaluate') return `${a.model ?? ''} on ${a.suite ?? ''}`;
  return `${a.method ?? ''} → ${a.output_model ?? ''}`;
}

function select(id, label, name, options, query) {
  const control = h('select', { id }, options.map(([value, text]) => h('option', { value, selected: (query.get(name) || '') === value }, text)));
  control.addEventListener('change', () => {
    const next = new URLSearchParams(query);
    if (control.value) next.set(name, control.value); else next.delete(name);
    location.hash = `#/jobs${next.toString() ? `?${next}` : ''}`;
  });
  return h('div', {}, h('label', { for: id }, label), control);
}

export function render(main, params, query) {
  const body = h('div', {}, notice('Loading jobs…'));
  const status_line = h('div', { role: 'status' });
  page_header(main, 'Jobs',
    h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter jobs', onsubmit: (e) => e.preventDefault() },
      select('f-kind', 'Kind', 'kind', KINDS, query),
      select('f-status', 'Status', 'status', STATUSES.map((s) => [s, s || 'any status']), query)),
    status_line, body);

  async function cancel(job, button) {
    if (!api.token()) { window.dispatchEvent(new Event('kforge-need-token')); return; }
    button.disabled = true;
    try {
      const after = await api.cancel_job(job.kind, job.id);
      status_line.replaceChildren(notice(`Job ${job.id}: ${after.status === 'cancelled' ? 'cancelled' : 'the worker was asked to stop'}.`, 'info'));
    } catch (err) {
      button.disabled = false;
      status_line.replaceChildren(notice(error_text(err, `cancel job ${job.id}`), 'error'));
    }
  }

  const table = sortable_table('Jobs, newest first', [
    { key: 'id', label: 'Job', numeric: true, cell: (j) => (job_href(j) ? link(job_href(j), String(j.id)) : String(j.id)) },
    { key: 'kind', label: 'Kind' },
    { key: 'what', label: 'What', value: what },
    { key: 'status', label: 'Status', cell: (j) => badge(j.status) },
    { key: 'progress', label: 'Progress', sortable: false, cell: job_progress },
    { key: 'created_at', label: 'Created', cell: (j) => time(j.created_at) },
    { key: 'error', label: 'Error', wrap: true, value: (j) => j.error?.message || '', cell: (j) => (j.error ? h('span', { class: 'muted' }, j.error.message) : '') },
    { key: 'actions', label: 'Actions', sortable: false, cell: (j) => (api.TERMINAL.has(j.status) || j.cancel_requested ? ''
      : h('button', { type: 'button', class: 'danger', 'aria-label': `Cancel job ${j.id}`, onclick: (e) => cancel(j, e.target) }, 'Cancel')) },
  ], { sort_key: 'id', descending: true });

  const server_query = new URLSearchParams({ limit: '50' });
  for (const name of ['kind', 'status']) if (query.get(name)) server_query.set(name, query.get(name));
  let last = null;
  return api.poll(async () => {
    const page = await api.get(`/v1/jobs?${server_query}`);
    const text = JSON.stringify(page.data);
    if (text === last) return true;
    last = text;
    if (!page.data.length) {
      body.replaceChildren(notice(query.get('kind') || query.get('status') ? 'No jobs match these filters.' : 'No jobs yet. Submit an op to start a generation.'));
      return true;
    }
    table.update(page.data);
    body.replaceChildren(table.el, page.has_more ? h('p', { class: 'muted' }, 'Showing the newest 50 jobs.') : '');
    return true;
  }, POLL_MS, (err) => { if (err) body.replaceChildren(notice(error_text(err, 'load jobs'), 'error')); });
}
