// A generation followed live: status, a progress bar, candidates arriving (each
// with outcome and harness message), a chart of their speedups, the best kernel
// highlighted with a copy button, and cancel. Polls the generation every 2 s
// until it is finished, and its candidates only when their count moved. Tested in a browser by tests/web/browser_test.py (ctest -R web_browser).
import * as api from '../api.js';
import { h, notice, error_text, page_header, sortable_table, speedup, ms, badge, progress_bar, time, link } from '../dom.js';
import { code_block, language_for } from '../code.js';
import { speedup_chart } from '../charts.js';

const POLL_MS = 2000;

function counts_text(gen) {
  const by = gen.candidates?.by_outcome || {};
  const parts = Object.entries(by).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${v} ${k.replace(/_/g, ' ')}`);
  return `${gen.candidates?.total ?? 0} checked${parts.length ? `: ${parts.join(', ')}` : ''}`;
}

function best_section(gen) {
  const best = gen.best;
  if (!best) {
    const finished = api.TERMINAL.has(gen.status);
    return notice(finished ? (gen.result?.message || 'No correct, unflagged kernel was found.') : 'No correct kernel yet: candidates are being checked.');
  }
  const compile = best.details && typeof best.details.speedup_vs_compile === 'number' ? speedup(best.details.speedup_vs_compile) : 'not measured';
  const generator = best.details?.generator_detail ? `${best.details.generator} (${best.details.generator_detail})` : (best.details?.generator || 'unknown');
  const block = code_block(best.source || '', language_for(best.target), `Best kernel: candidate ${best.id} on ${best.device}`);
  block.classList.add('best');
  block.id = 'best-kernel';
  return h('div', {},
    h('ul', { class: 'stats' },
      h('li', {}, h('span', { class: 'label' }, 'vs eager'), h('span', { class: 'value', id: 'best-speedup' }, speedup(best.speedup))),
      h('li', {}, h('span', { class: 'label' }, 'vs torch.compile'), h('span', { class: 'value' }, compile)),
      h('li', {}, h('span', { class: 'label' }, 'kernel'), h('span', { class: 'value' }, ms(best.kernel_ms))),
      h('li', {}, h('span', { class: 'label' }, 'eager'), h('span', { class: 'value' }, ms(best.baseline_ms))),
      h('li', {}, h('span', { class: 'label' }, 'device'), h('span', { class: 'value' }, best.device || '–')),
      h('li', {}, h('span', { class: 'label' }, 'generator'), h('span', { class: 'value' }, generator))),
    block);
}

function progress_of(gen) {
  const p = gen.progress || {};
  const total = p.total ?? gen.samples ?? 0;
  const done = p.checked ?? gen.candidates?.total ?? 0;
  if (gen.status === 'queued') return progress_bar(null, 0, 'waiting for a worker');
  return progress_bar(done, total, `${done} of ${total} candidates checked`);
}

export function render(main, params) {
  const id = params.id;
  page_header(main, `Generation ${id}`, notice('Loading the generation…'));
  const header = h('div', {});
  const best_box = h('div', { 'aria-live': 'polite' });
  const chart = speedup_chart(`Generation ${id}: speedups of correct candidates`);
  const announcer = h('p', { class: 'visually-hidden', 'aria-live': 'polite', id: 'arrivals' });
  const candidates_box = h('div', {});
  const cancel_box = h('div', {});
  let best_id = null;
  let best_shown = undefined;
  const fresh = new Set();
  const table = sortable_table(`Candidates of generation ${id}, newest last`, [
    { key: 'sample_idx', label: '#', numeric: true, value: (c) => c.sample_idx + 1 },
    { key: 'outcome', label: 'Outcome', cell: (c) => h('span', {}, badge(c.outcome), c.flagged ? ' ' : '', c.flagged ? badge('flagged') : '') },
    { key: 'speedup', label: 'vs eager', numeric: true, cell: (c) => speedup(c.speedup) },
    { key: 'kernel_ms', label: 'Kernel', numeric: true, cell: (c) => ms(c.kernel_ms) },
    { key: 'generator', label: 'Schedule', value: (c) => c.details?.generator_detail || c.details?.generator || '' },
    { key: 'message', label: 'Harness message', sortable: false, wrap: true, cell: (c) => c.message || h('span', { class: 'muted' }, 'no message') },
  ], { sort_key: 'sample_idx', row_class: (c) => [c.id === best_id ? 'best' : '', fresh.has(c.id) ? 'new' : ''].join(' ').trim() || null });
  const candidates = [];
  let after = 0;
  let laid_out = false;

  function layout(gen) {
    page_header(main, `Generation ${id}`, header, cancel_box,
      h('section', { 'aria-labelledby': 'best' }, h('h2', { id: 'best' }, 'Best kernel'), best_box),
      h('section', { 'aria-labelledby': 'arriving' }, h('h2', { id: 'arriving' }, 'Candidates'), announcer, chart.el, candidates_box));
    laid_out = true;
  }

  function draw_header(gen) {
    const note = gen.result?.note;
    header.replaceChildren(
      h('p', {}, 'Op ', link(`#/ops/${gen.op_id}`, `${gen.op_id}`), ` · target ${gen.target}${gen.device ? ` on ${gen.device}` : ''} · model ${gen.model} · created `, time(gen.created_at)),
      gen.waiting_for ? notice(`Waiting: ${gen.waiting_for}.`, 'info') : '',
      h('p', { class: 'status-line' }, badge(gen.status), ' ', h('span', { class: 'progress wide' }, progress_of(gen)), ' ',
        h('span', { id: 'counts' }, counts_text(gen))),
      gen.error ? notice(`Error (attempt ${gen.error.attempt}): ${gen.error.message}`, 'error') : '',
      note ? h('p', { class: 'muted' }, note) : '',
      gen.result?.timing?.reliable === false ? notice(gen.result.timing.note || 'Timing unreliable: the machine was busy.', 'info') : '');
    const active = !api.TERMINAL.has(gen.status);
    cancel_box.replaceChildren(active ? h('button', { type: 'button', class: 'danger', id: 'cancel', onclick: cancel }, `Cancel generation ${id}`) : '');
  }

  async function cancel(event) {
    if (!api.token()) { window.dispatchEvent(new Event('kforge-need-token')); return; }
    event.target.disabled = true;
    try {
      const gen = await api.post(`/v1/generations/${id}/cancel`);
      draw_header(gen);
    } catch (err) {
      event.target.disabled = false;
      cancel_box.append(notice(error_text(err, 'cancel'), 'error'));
    }
  }

  let last_etag = null;
  const stop = api.poll(async () => {
    const reply = await api.request('GET', `/v1/generations/${id}`);
    // The browser answers an unchanged generation from its cache after a 304; the
    // same ETag means nothing moved, so there is nothing else to ask or draw.
    if (reply.etag && reply.etag === last_etag) return true;
    last_etag = reply.etag;
    const gen = reply.data;
    if (!laid_out) {
      layout(gen);
      api.get(`/v1/ops/${gen.op_id}`).then((op) => {
        const title = document.getElementById('page-title');
        if (title && title.isConnected) title.textContent = `Generation ${id}: ${op.name}`;
        document.title = `Generation ${id}: ${op.name} · kforge`;
      }).catch(() => {});
    }
    draw_header(gen);
    fresh.clear();
    // New candidates only when the count says there are some (one request less per poll).
    if (candidates.length < (gen.candidates?.total ?? 0)) {
      for (;;) {
        const page = await api.get(`/v1/generations/${id}/candidates?limit=100${after ? `&after=${after}` : ''}`);
        for (const c of page.data) { candidates.push(c); fresh.add(c.id); }
        if (page.data.length) after = page.data[page.data.length - 1].id;
        if (!page.has_more) break;
      }
    }
    if (fresh.size) {
      const last = candidates[candidates.length - 1];
      announcer.textContent = `Candidate ${last.sample_idx + 1}: ${last.outcome.replace(/_/g, ' ')}${typeof last.speedup === 'number' ? `, ${speedup(last.speedup)} eager` : ''}.`;
    }
    best_id = gen.best ? gen.best.id : null;
    if (best_shown !== best_id || (!best_id && api.TERMINAL.has(gen.status))) {
      best_shown = best_id;
      best_box.replaceChildren(best_section(gen));
    }
    chart.set(candidates.filter((c) => c.outcome === 'correct' && typeof c.speedup === 'number')
      .map((c) => ({ x: c.sample_idx + 1, y: c.speedup, flagged: c.flagged })));
    table.update(candidates);
    candidates_box.replaceChildren(candidates.length ? table.el
      : notice(gen.status === 'queued' ? 'Waiting for a worker to claim the job.' : 'No candidate has been checked yet.'));
    // A finished job changes no more: stop asking.
    return !api.TERMINAL.has(gen.status);
  }, POLL_MS, (err) => {
    if (!err) return;
    if (err.status === 404) {
      page_header(main, `Generation ${id}`, notice(`There is no generation ${id} (job ${id} may be a training or evaluation job: see Jobs).`, 'error'));
      stop();
    } else if (laid_out) {
      candidates_box.replaceChildren(notice(error_text(err, 'refresh the generation'), 'error'));
    } else {
      page_header(main, `Generation ${id}`, notice(error_text(err, 'load the generation'), 'error'));
    }
  });
  return stop;
}
