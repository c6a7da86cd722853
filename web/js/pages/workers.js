// Workers: who is alive (heartbeat within 30 s), on what device, running which
// jobs. GET /v1/workers needs an admin token, so without one the page says so
// instead of asking. Polls every 10 s. Tested in a browser by tests/web/browser_test.py (ctest -R web_browser).
import * as api from '../api.js';
import { h, notice, error_text, page_header, sortable_table, badge, time, link } from '../dom.js';

const POLL_MS = 10000;

export function render(main) {
  const body = h('div', {});
  page_header(main, 'Workers', h('p', { class: 'muted' }, 'kforge-worker processes: each claims jobs from the queue and checks kernels on its device.'), body);
  const table = sortable_table('Workers, newest first', [
    { key: 'id', label: 'Worker', numeric: true },
    { key: 'host', label: 'Host', value: (w) => `${w.host}:${w.pid}` },
    { key: 'device', label: 'Device' },
    { key: 'alive', label: 'State', value: (w) => (w.alive ? 'alive' : w.state), cell: (w) => badge(w.alive ? 'alive' : (w.state === 'stopped' ? 'stopped' : 'dead')) },
    { key: 'slots', label: 'Slots', numeric: true },
    { key: 'running', label: 'Running', value: (w) => (w.running_job_ids || []).length,
      cell: (w) => ((w.running_job_ids || []).length ? h('span', {}, (w.running_job_ids || []).flatMap((id, idx) => [idx ? ', ' : '', link(`#/jobs`, `job ${id}`)])) : h('span', { class: 'muted' }, 'idle')) },
    { key: 'heartbeat_at', label: 'Heartbeat', cell: (w) => time(w.heartbeat_at) },
    { key: 'version', label: 'Version' },
  ], { sort_key: 'id', descending: true });

  let stop = () => {};
  function start() {
    stop();
    if (!api.token()) {
      body.replaceChildren(notice('The workers list needs an admin token. ', 'info'),
        h('button', { type: 'button', onclick: () => window.dispatchEvent(new Event('kforge-need-token')) }, 'Enter a token'));
      return;
    }
    body.replaceChildren(notice('Loading workers…'));
    stop = api.poll(async () => {
      const page = await api.request('GET', '/v1/workers?limit=100', { auth: true });
      const workers = page.data.data;
      if (!workers.length) {
        body.replaceChildren(notice('No worker has registered yet. Start one with build/bin/kforge-worker (make run starts one).'));
        return true;
      }
      const alive = workers.filter((w) => w.alive).length;
      table.update(workers);
      body.replaceChildren(h('p', {}, `${alive} of ${workers.length} alive.`), table.el);
      return true;
    }, POLL_MS, (err) => {
      if (!err) return;
      body.replaceChildren(notice(err.status === 401 || err.status === 403
        ? `${err.message}. The workers list needs a token with scope admin.` : error_text(err, 'load workers'), 'error'));
    });
  }
  start();
  window.addEventListener('kforge-token', start);
  return () => { stop(); window.removeEventListener('kforge-token', start); };
}
