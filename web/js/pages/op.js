// Op page: the reference TorchScript, input and output shapes, the best kernel
// (highlighted, with a copy button) per target and device with who wins there (PyTorch
// eager when it beats every kernel), a chart of every correct candidate's speedup, and
// every candidate with its outcome and the harness's message. Tested in a browser by tests/web/browser_test.py (ctest -R web_browser).
import * as api from '../api.js';
import { h, notice, error_text, page_header, sortable_table, speedup, ms, shape, badge, time, link, winner } from '../dom.js';
import { code_block, language_for } from '../code.js';
import { speedup_chart } from '../charts.js';

const POLL_MS = 30000;

function dist_text(dist) {
  if (dist === undefined || dist === null) return 'default';
  return typeof dist === 'string' ? dist : JSON.stringify(dist);
}

function shapes_section(op) {
  const inputs = sortable_table('Inputs (main shapes)', [
    { key: 'name', label: 'Input', cell: (r) => h('code', {}, r.name) },
    { key: 'shape', label: 'Shape', value: (r) => shape(r.shape) },
    { key: 'dtype', label: 'Type' },
    { key: 'dist', label: 'Values', value: (r) => dist_text(r.dist) },
  ]);
  inputs.update(op.inputs || []);
  const outputs = (op.outputs || []).map((o, idx) => h('li', {}, `output ${idx}: ${shape(o.shape)} ${o.dtype}`));
  const extra = (op.extra_shapes || []).map((set) => h('li', {}, Object.entries(set).map(([name, dims]) => `${name} ${shape(dims)}`).join(', ')));
  const small = (x) => (typeof x === 'number' && x !== 0 && Math.abs(x) < 1e-3 ? x.toExponential() : String(x));
  const tol = op.tolerance ? `atol ${small(op.tolerance.atol)}, rtol ${small(op.tolerance.rtol)}` : 'default';
  return h('section', { 'aria-labelledby': 'shapes' }, h('h2', { id: 'shapes' }, 'Shapes'), inputs.el,
    h('ul', {}, outputs.length ? outputs : h('li', {}, 'outputs not recorded')),
    extra.length ? h('div', {}, h('h3', {}, 'Also checked on'), h('ul', {}, extra)) : '',
    h('p', { class: 'muted' }, `Tolerance: ${tol}.`));
}

function best_summary(row) {
  const compile = typeof row.speedup_vs_compile === 'number' ? speedup(row.speedup_vs_compile) : 'not measured';
  return h('ul', { class: 'stats' },
    h('li', {}, h('span', { class: 'label' }, 'vs eager'), h('span', { class: 'value' }, speedup(row.speedup))),
    h('li', {}, h('span', { class: 'label' }, 'vs torch.compile'), h('span', { class: 'value' }, compile)),
    h('li', {}, h('span', { class: 'label' }, 'kernel'), h('span', { class: 'value' }, ms(row.kernel_ms))),
    h('li', {}, h('span', { class: 'label' }, 'eager'), h('span', { class: 'value' }, ms(row.baseline_ms))),
    h('li', {}, h('span', { class: 'label' }, 'device'), h('span', { class: 'value' }, `${row.target} · ${row.device}`)),
    h('li', {}, h('span', { class: 'label' }, 'generator'), h('span', { class: 'value' }, row.generator || 'unknown')));
}

function candidate_source(candidate) {
  const details = h('details', {}, h('summary', {}, 'kernel source'));
  details.addEventListener('toggle', () => {
    if (details.open && details.children.length === 1) {
      details.append(code_block(candidate.source || '', language_for(candidate.target), `Candidate ${candidate.id} source`));
    }
  }, { once: false });
  return details;
}

export function render(main, params) {
  const op_id = params.id;
  page_header(main, `Op ${op_id}`, notice('Loading the op…'));
  let stop_poll = () => {};
  let cancelled = false;
  api.get(`/v1/ops/${op_id}`).then((op) => {
    if (cancelled) return;
    const best_box = h('div', { 'aria-live': 'polite' }, notice('Looking for the best kernel…'));
    const per_device = sortable_table('Best kernel per target and device', [
      { key: 'target', label: 'Target' },
      { key: 'device', label: 'Device' },
      { key: 'speedup', label: 'vs eager', numeric: true, cell: (r) => speedup(r.speedup) },
      { key: 'winner', label: 'Winner', cell: winner },
      { key: 'kernel_ms', label: 'Kernel', numeric: true, cell: (r) => ms(r.kernel_ms) },
      { key: 'generator', label: 'Generator', cell: (r) => r.generator || 'unknown' },
      { key: 'candidate_id', label: 'Candidate', numeric: true },
    ], { sort_key: 'speedup', descending: true });
    const chart = speedup_chart(`Speedups of ${op.name}'s correct candidates`);
    const candidates_box = h('div', {}, notice('Loading candidates…'));
    const table = sortable_table(`Every candidate checked for ${op.name}, in checking order`, [
      { key: 'id', label: '#', numeric: true },
      { key: 'outcome', label: 'Outcome', cell: (c) => h('span', {}, badge(c.outcome), c.flagged ? ' ' : '', c.flagged ? badge('flagged') : '') },
      { key: 'speedup', label: 'vs eager', numeric: true, cell: (c) => speedup(c.speedup) },
      { key: 'kernel_ms', label: 'Kernel', numeric: true, cell: (c) => ms(c.kernel_ms) },
      { key: 'device', label: 'Device' },
      { key: 'job_id', label: 'Job', numeric: true, cell: (c) => link(`#/generations/${c.job_id}`, String(c.job_id)) },
      { key: 'message', label: 'Harness message', sortable: false, wrap: true, cell: (c) => h('div', {}, c.message ? h('span', {}, c.message) : h('span', { class: 'muted' }, 'no message'), candidate_source(c)) },
    ], { sort_key: 'id', row_class: (c) => (c.id === best_id ? 'best' : null) });
    let best_id = null;
    let best_source_for = null;
    page_header(main, op.name,
      h('p', { class: 'muted' }, `Op ${op.id}${op.level ? ` · suite level ${op.level}` : ''} · submitted `, time(op.created_at)),
      h('div', { class: 'two-columns' },
        h('section', { 'aria-labelledby': 'reference' }, h('h2', { id: 'reference' }, 'Reference'),
          code_block(op.source, 'python', `Reference TorchScript of ${op.name}`)),
        shapes_section(op)),
      h('section', { 'aria-labelledby': 'best' }, h('h2', { id: 'best' }, 'Best kernel'), best_box),
      h('section', { 'aria-labelledby': 'candidates' }, h('h2', { id: 'candidates' }, 'Candidates'),
        h('p', { class: 'muted' }, 'Correct candidates by speedup over PyTorch eager; green bars beat eager, red ones are slower, amber ones were flagged for review and are never ranked.'),
        chart.el, candidates_box));

    const candidates = [];
    let after = 0;
    stop_poll = api.poll(async () => {
      const board = await api.get(`/v1/leaderboard/ops?op_id=${op_id}&limit=100`);
      // Fetch new candidates only (the cursor is the last id seen).
      for (;;) {
        const page = await api.get(`/v1/ops/${op_id}/candidates?limit=100${after ? `&after=${after}` : ''}`);
        candidates.push(...page.data);
        if (page.data.length) after = page.data[page.data.length - 1].id;
        if (!page.has_more || candidates.length >= 2000) break;
      }
      const rows = board.data;
      const best = rows.reduce((m, r) => (!m || (r.speedup ?? 0) > (m.speedup ?? 0) ? r : m), null);
      best_id = best ? best.candidate_id : null;
      if (!best) {
        best_box.replaceChildren(notice(candidates.length
          ? `None of the ${candidates.length} candidates is both correct and unflagged yet.`
          : 'No candidates yet: submit a generation for this op.'));
      } else if (best_source_for !== best.candidate_id) {
        best_source_for = best.candidate_id;
        const known = candidates.find((c) => c.id === best.candidate_id);
        const source = known ? known.source : (await api.get(`/v1/candidates/${best.candidate_id}`)).source;
        const block = code_block(source, language_for(best.target), `Best kernel for ${op.name}: candidate ${best.candidate_id} on ${best.device}`);
        block.classList.add('best');
        per_device.update(rows);
        best_box.replaceChildren(best_summary(best), block, rows.length > 1 ? per_device.el : '');
      } else {
        per_device.update(rows);
      }
      chart.set(candidates.filter((c) => c.outcome === 'correct' && typeof c.speedup === 'number')
        .map((c, idx) => ({ x: idx + 1, y: c.speedup, flagged: c.flagged })));
      table.update(candidates);
      candidates_box.replaceChildren(candidates.length ? table.el : notice('No candidates have been checked for this op yet.'));
      return true;
    }, POLL_MS, (err) => { if (err) candidates_box.replaceChildren(notice(error_text(err, 'load the candidates'), 'error')); });
  }).catch((err) => {
    if (!cancelled) page_header(main, `Op ${op_id}`, notice(err.status === 404 ? `There is no op ${op_id}.` : error_text(err, 'load the op'), 'error'));
  });
  return () => { cancelled = true; stop_poll(); };
}
