// The UI's entry point: a hash router (#/, #/ops/3, #/submit, #/generations/7,
// #/jobs, #/training/5, #/workers), the token dialog and the server status line.
// Each page module exports render(main, params, query) and returns a cleanup that
// stops its polling. Tested in a browser by tests/web/browser_test.py (ctest -R web_browser).
import * as api from './api.js';
import { notice } from './dom.js';
import * as leaderboard from './pages/leaderboard.js';
import * as op from './pages/op.js';
import * as submit from './pages/submit.js';
import * as generation from './pages/generation.js';
import * as jobs from './pages/jobs.js';
import * as training from './pages/training.js';
import * as workers from './pages/workers.js';

// [pattern, module, nav entry]; ":id" captures a positive integer.
const ROUTES = [
  ['/', leaderboard, 'leaderboard'],
  ['/models', leaderboard, 'leaderboard'],
  ['/ops/:id', op, 'leaderboard'],
  ['/submit', submit, 'submit'],
  ['/generations/:id', generation, 'jobs'],
  ['/jobs', jobs, 'jobs'],
  ['/training', training, 'training'],
  ['/training/:id', training, 'training'],
  ['/workers', workers, 'workers'],
];

let cleanup = null;

function parse_hash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, query_text = ''] = raw.split('?');
  return { path, query: new URLSearchParams(query_text) };
}

function match(pattern, path) {
  const want = pattern.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return null;
  const params = {};
  for (let idx = 0; idx < want.length; idx++) {
    if (want[idx] === ':id') {
      if (!/^[1-9][0-9]*$/.test(got[idx])) return null;
      params.id = Number(got[idx]);
    } else if (want[idx] !== got[idx]) {
      return null;
    }
  }
  return params;
}

function route() {
  const { path, query } = parse_hash();
  const main = document.getElementById('main');
  if (cleanup) cleanup();
  cleanup = null;
  for (const [pattern, page, nav] of ROUTES) {
    const params = match(pattern, path);
    if (!params) continue;
    if (pattern === '/models') query.set('tab', 'models');
    document.querySelectorAll('[data-nav]').forEach((a) => {
      if (a.dataset.nav === nav) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    });
    cleanup = page.render(main, params, query) || null;
    return;
  }
  document.title = 'Not found · kforge';
  main.replaceChildren(notice(`There is no page at #${path}. Try the leaderboard.`, 'error'));
}

// Route changes move focus to the new page's heading, so screen readers announce it;
// filters that only rewrite the query keep focus where it is.
let last_path = null;
function on_hash_change() {
  const { path } = parse_hash();
  route();
  if (last_path !== null && path !== last_path) {
    const title = document.getElementById('page-title');
    if (title) title.focus({ preventScroll: false });
  }
  last_path = path;
}

function setup_token_dialog() {
  const dialog = document.getElementById('token-dialog');
  const input = document.getElementById('token-input');
  const button = document.getElementById('token-button');
  const label = () => { button.textContent = api.token() ? 'Token ✓' : 'Token'; button.title = api.token() ? 'a token is saved in this browser' : 'no token saved'; };
  button.addEventListener('click', () => {
    input.value = api.token();
    dialog.showModal();
    input.focus();
  });
  dialog.addEventListener('close', () => {
    if (dialog.returnValue === 'save') api.setToken(input.value);
    if (dialog.returnValue === 'forget') api.setToken('');
    label();
    window.dispatchEvent(new Event('kforge-token'));
    button.focus();
  });
  label();
}

// Pages open the dialog when an action needs a token.
window.addEventListener('kforge-need-token', () => document.getElementById('token-button').click());

async function show_server_status() {
  const status = document.getElementById('server-status');
  try {
    const ready = await api.get('/v1/ready');
    status.textContent = `kforge ${ready.version}: ready`;
  } catch (err) {
    status.textContent = err.status === 503 ? `kforge: not ready (${err.message})` : `kforge: ${err.message}`;
  }
}

setup_token_dialog();
window.addEventListener('hashchange', on_hash_change);
on_hash_change();
show_server_status();
