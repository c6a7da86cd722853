// Submit: paste TorchScript, name the inputs and their shapes, pick target, device
// and model, and POST /v1/generations. The API's field errors (problem+json `errors`,
// e.g. "op.inputs[0].shape") are shown next to the field they name; on success the
// page follows the generation live (#/generations/{id}).
// Tested in a browser by tests/web/browser_test.py (ctest -R web_browser).
import * as api from '../api.js';
import { h, notice, page_header } from '../dom.js';

const EXAMPLE_SOURCE = 'def forward(x: Tensor) -> Tensor:\n    return torch.relu(x)\n';
const DTYPES = ['float32', 'float16', 'bfloat16', 'int32', 'int64', 'bool'];
const DISTS = ['normal', 'uniform', 'ones', 'zeros'];

let input_seq = 0;

// One input row: name, shape ("64, 64" or "64x64"), dtype, distribution.
function input_row(list, values = {}) {
  const seq = input_seq++;
  const field = (key, label, control) => {
    control.id = `f-input-${seq}-${key}`;
    control.dataset.field = key;
    return h('div', {}, h('label', { for: control.id }, label), control);
  };
  const remove = h('button', { type: 'button', 'aria-label': 'Remove this input', class: 'remove' }, 'Remove');
  const row = h('div', { class: 'input-row', role: 'group', 'aria-label': 'Input' },
    field('name', 'Name', h('input', { value: values.name || '', required: true, autocomplete: 'off', spellcheck: 'false' })),
    field('shape', 'Shape', h('input', { value: values.shape || '', placeholder: '64, 64', inputmode: 'numeric', autocomplete: 'off' })),
    field('dtype', 'Type', h('select', {}, DTYPES.map((d) => h('option', { value: d, selected: d === (values.dtype || 'float32') }, d)))),
    field('dist', 'Values', h('select', {}, DISTS.map((d) => h('option', { value: d, selected: d === (values.dist || 'normal') }, d)))),
    h('div', {}, h('span', { class: 'visually-hidden' }, 'Actions'), remove));
  remove.addEventListener('click', () => {
    if (list.children.length > 1) row.remove();
  });
  list.append(row);
  return row;
}

// "64, 64", "64x64", "[64, 64]" or "" (a scalar) -> [64, 64]; null if it is not that.
function parse_shape(text) {
  const trimmed = text.trim().replace(/^\[|\]$/g, '');
  if (!trimmed) return [];
  const parts = trimmed.split(/\s*[,x×]\s*|\s+/);
  if (!parts.every((p) => /^[0-9]+$/.test(p))) return null;
  return parts.map(Number);
}

// Field name from the API -> the control that shows its error.
function control_for(form, field) {
  const simple = { 'op.name': 'f-name', 'op.source': 'f-source', 'op.level': 'f-level', target: 'f-target', device: 'f-device', model: 'f-model',
    samples: 'f-samples', time_budget_s: 'f-budget', 'op.tolerance': 'f-atol', 'op.tolerance.atol': 'f-atol', 'op.tolerance.rtol': 'f-rtol' };
  if (simple[field]) return form.querySelector(`#${simple[field]}`);
  const match = /^op\.inputs\[(\d+)\](?:\.(\w+))?/.exec(field);
  if (match) {
    const row = form.querySelectorAll('.input-row')[Number(match[1])];
    if (row) return row.querySelector(`[data-field="${match[2] || 'name'}"]`) || row.querySelector('input');
  }
  if (field === 'op.inputs') return form.querySelector('#f-inputs-legend');
  return null;
}

function clear_errors(form) {
  form.querySelectorAll('.field-error').forEach((el) => el.remove());
  form.querySelectorAll('[aria-invalid]').forEach((el) => { el.removeAttribute('aria-invalid'); el.removeAttribute('aria-describedby'); });
}

// Puts `message` right after the control (inside its wrapper) and links it for screen readers.
function show_field_error(control, message) {
  const id = `${control.id}-error`;
  const existing = document.getElementById(id);
  if (existing) { existing.textContent += `; ${message}`; return; }
  const note = h('p', { class: 'field-error', id }, message);
  control.setAttribute('aria-invalid', 'true');
  control.setAttribute('aria-describedby', id);
  control.insertAdjacentElement('afterend', note);
}

export function render(main) {
  const inputs = h('div', { id: 'f-inputs' });
  const general = h('div', { id: 'submit-errors', 'aria-live': 'assertive' });
  const submit_button = h('button', { type: 'submit', class: 'primary', id: 'f-submit' }, 'Generate kernels');
  const models = h('datalist', { id: 'model-names' });
  const form = h('form', { class: 'submit', novalidate: true, 'aria-describedby': 'submit-help' },
    h('p', { id: 'submit-help', class: 'muted' }, 'An op is TorchScript defining forward(...) over named tensor inputs. '
      + 'F.x spellings are rewritten to torch.x. The server compiles and runs it once on small inputs before queueing the job.'),
    h('div', { class: 'row' },
      h('div', {}, h('label', { for: 'f-name' }, 'Op name'),
        h('input', { id: 'f-name', value: 'relu', required: true, autocomplete: 'off', spellcheck: 'false' }),
        h('p', { class: 'hint' }, 'letters, digits and _')),
      h('div', {}, h('label', { for: 'f-level' }, 'Suite level'),
        h('select', { id: 'f-level' }, h('option', { value: '' }, 'none'), h('option', { value: '1' }, '1 · single op'), h('option', { value: '2' }, '2 · fusion')))),
    h('div', {}, h('label', { for: 'f-source' }, 'TorchScript'),
      h('textarea', { id: 'f-source', spellcheck: 'false', rows: 7 }, EXAMPLE_SOURCE)),
    h('fieldset', {}, h('legend', { id: 'f-inputs-legend', tabindex: '-1' }, 'Inputs (in forward()\'s order)'), inputs,
      h('button', { type: 'button', onclick: () => input_row(inputs) }, 'Add an input')),
    h('div', { class: 'row' },
      h('div', {}, h('label', { for: 'f-target' }, 'Target'),
        h('select', { id: 'f-target' }, ['opencl', 'cuda', 'triton'].map((t) => h('option', { value: t }, t)))),
      h('div', {}, h('label', { for: 'f-device' }, 'Device'),
        h('select', { id: 'f-device' }, [['auto', 'auto'], ['cpu', 'cpu (PoCL)'], ['gpu', 'gpu']].map(([v, t]) => h('option', { value: v }, t))),
        h('p', { class: 'hint' }, 'auto: cpu for opencl, gpu for cuda and triton')),
      h('div', {}, h('label', { for: 'f-model' }, 'Model'),
        h('input', { id: 'f-model', value: 'kforge-tiny', list: 'model-names', autocomplete: 'off', spellcheck: 'false' }), models,
        h('p', { class: 'hint' }, 'name or name@version; the teacher compiler answers until a version is trained')),
      h('div', {}, h('label', { for: 'f-samples' }, 'Candidates'), h('input', { id: 'f-samples', type: 'number', min: 1, max: 256, value: 4 })),
      h('div', {}, h('label', { for: 'f-budget' }, 'Time budget (s)'), h('input', { id: 'f-budget', type: 'number', min: 1, max: 86400, value: 300 }))),
    h('details', {}, h('summary', {}, 'Tolerance'),
      h('div', { class: 'row' },
        h('div', {}, h('label', { for: 'f-atol' }, 'atol'), h('input', { id: 'f-atol', value: '1e-4', inputmode: 'decimal' })),
        h('div', {}, h('label', { for: 'f-rtol' }, 'rtol'), h('input', { id: 'f-rtol', value: '1e-4', inputmode: 'decimal' })))),
    general,
    h('div', { class: 'buttons' }, submit_button));
  input_row(inputs, { name: 'x', shape: '64, 64' });
  const token_note = h('div', {});
  const show_token_note = () => token_note.replaceChildren(api.token() ? '' : h('p', { class: 'notice notice-info' },
    'Submitting needs a token with scope submit. ',
    h('button', { type: 'button', onclick: () => window.dispatchEvent(new Event('kforge-need-token')) }, 'Enter a token')));
  show_token_note();
  window.addEventListener('kforge-token', show_token_note);
  page_header(main, 'Submit an op', token_note, form);

  api.get('/v1/models?limit=100').then((page) => {
    const names = new Set(page.data.map((m) => m.name));
    page.data.forEach((m) => names.add(m.model));
    models.replaceChildren(...[...names].map((n) => h('option', { value: n })));
  }).catch(() => {});

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clear_errors(form);
    general.replaceChildren();
    const local = [];
    const op_inputs = [...inputs.querySelectorAll('.input-row')].map((row, idx) => {
      const get = (key) => row.querySelector(`[data-field="${key}"]`);
      const dims = parse_shape(get('shape').value);
      if (dims === null) local.push([get('shape'), 'write the sizes as numbers, like 64, 64']);
      return { name: get('name').value.trim(), shape: dims ?? [], dtype: get('dtype').value, dist: get('dist').value };
    });
    const atol = Number(form.querySelector('#f-atol').value);
    const rtol = Number(form.querySelector('#f-rtol').value);
    if (!Number.isFinite(atol)) local.push([form.querySelector('#f-atol'), 'a number, like 1e-4']);
    if (!Number.isFinite(rtol)) local.push([form.querySelector('#f-rtol'), 'a number, like 1e-4']);
    if (local.length) {
      local.forEach(([control, message]) => show_field_error(control, message));
      local[0][0].focus();
      return;
    }
    const op = { name: form.querySelector('#f-name').value.trim(), source: form.querySelector('#f-source').value,
      inputs: op_inputs, tolerance: { atol, rtol } };
    const level = form.querySelector('#f-level').value;
    if (level) op.level = Number(level);
    const body = { op, target: form.querySelector('#f-target').value, device: form.querySelector('#f-device').value,
      model: form.querySelector('#f-model').value.trim(),
      samples: Number(form.querySelector('#f-samples').value), time_budget_s: Number(form.querySelector('#f-budget').value) };
    submit_button.disabled = true;
    submit_button.textContent = 'Checking the op…';
    try {
      const generation = await api.post('/v1/generations', body);
      location.hash = `#/generations/${generation.id}`;
    } catch (err) {
      submit_button.disabled = false;
      submit_button.textContent = 'Generate kernels';
      const unplaced = [];
      for (const { field, message } of err.fields || []) {
        const control = control_for(form, field);
        if (control) show_field_error(control, message);
        else unplaced.push(`${field}: ${message}`);
      }
      const first = form.querySelector('[aria-invalid="true"]');
      if (err.status === 401 || err.status === 403) {
        general.replaceChildren(notice(`${err.message}. Enter a token with scope submit (Token, top right).`, 'error'));
      } else if (!err.fields || !err.fields.length || unplaced.length) {
        general.replaceChildren(notice(`The server refused the op: ${err.message}${unplaced.length ? ` (${unplaced.join('; ')})` : ''}`, 'error'));
      } else {
        general.replaceChildren(h('p', { class: 'visually-hidden' }, `The server refused the op: ${err.fields.length} field${err.fields.length === 1 ? '' : 's'} to fix.`));
      }
      if (first) first.focus();
    }
  });
  return () => window.removeEventListener('kforge-token', show_token_note);
}
