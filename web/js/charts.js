// Charts through Debian's Chart.js (ES module at /vendor/chart.js/chart.mjs,
// imported on first use), coloured from the page's CSS variables so dark and light
// both read. Each canvas gets an aria-label that says what the chart shows.
// Tested in a browser by tests/web/browser_test.py (ctest -R web_browser).
import { h } from './dom.js';

let chart_module = null;

async function chart_class() {
  if (!chart_module) {
    chart_module = import('/vendor/chart.js/chart.mjs').then((mod) => {
      mod.Chart.register(...mod.registerables);
      return mod.Chart;
    });
  }
  return chart_module;
}

function css(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

function base_options(y_title) {
  const grid = css('--border');
  const text = css('--muted');
  return {
    responsive: true,
    maintainAspectRatio: false,
    animation: false,
    parsing: false,
    normalized: true,
    plugins: { legend: { display: false } },
    scales: {
      x: { type: 'linear', ticks: { color: text, maxTicksLimit: 8 }, grid: { color: grid } },
      y: { ticks: { color: text, maxTicksLimit: 6 }, grid: { color: grid }, title: { display: !!y_title, text: y_title, color: text } },
    },
  };
}

// A line chart of one series; returns {el, set(points)} where points are [{x, y}].
export function line_chart(label, { y_title = '', x_title = 'step' } = {}) {
  const canvas = h('canvas', { role: 'img', 'aria-label': `${label}: no data yet` });
  const el = h('div', { class: 'chart' }, canvas);
  let chart = null;
  let pending = [];
  const ready = chart_class().then((Chart) => {
    const options = base_options(y_title);
    options.scales.x.title = { display: true, text: x_title, color: css('--muted') };
    chart = new Chart(canvas, {
      type: 'line',
      data: { datasets: [{ label, data: pending, borderColor: css('--accent'), backgroundColor: css('--accent'),
        borderWidth: 2, pointRadius: 0, tension: 0 }] },
      options,
    });
    el.dataset.drawn = 'true';
  }).catch(() => { el.replaceChildren(h('p', { class: 'notice notice-error' }, 'Charts need the libjs-chart.js package on the server.')); });
  return {
    el,
    ready,
    set(points) {
      pending = points;
      const first = points[0];
      const last = points[points.length - 1];
      canvas.setAttribute('aria-label', points.length
        ? `${label}: ${points.length} points, from ${first.y.toPrecision(4)} at ${x_title} ${first.x} to ${last.y.toPrecision(4)} at ${x_title} ${last.x}`
        : `${label}: no data yet`);
      if (chart) {
        chart.data.datasets[0].data = points;
        chart.update('none');
      }
    },
  };
}

// A bar chart of candidates' speedups (x = checking order); bars under 1× (slower
// than eager) and flagged ones get their own colours; a line marks 1×.
export function speedup_chart(label) {
  const canvas = h('canvas', { role: 'img', 'aria-label': `${label}: no correct candidates yet` });
  const el = h('div', { class: 'chart' }, canvas);
  let chart = null;
  let pending = [];
  const colours = () => pending.map((p) => (p.flagged ? css('--warn') : p.y >= 1 ? css('--good') : css('--bad')));
  const ready = chart_class().then((Chart) => {
    const options = base_options('speedup vs eager (×)');
    options.scales.x.title = { display: true, text: 'candidate (checking order)', color: css('--muted') };
    options.scales.y.beginAtZero = true;
    chart = new Chart(canvas, {
      type: 'bar',
      data: { datasets: [
        { type: 'bar', label: 'speedup', data: pending, backgroundColor: colours(), barPercentage: 0.9 },
        { type: 'line', label: 'eager (1×)', data: [], borderColor: css('--muted'), borderDash: [4, 4], pointRadius: 0, borderWidth: 1 },
      ] },
      options,
    });
    chart.data.datasets[1].data = baseline();
    fit_x(chart.options.scales.x);
    chart.update('none');
    el.dataset.drawn = 'true';
  }).catch(() => { el.replaceChildren(h('p', { class: 'notice notice-error' }, 'Charts need the libjs-chart.js package on the server.')); });
  // Whole candidates on the x axis, half a bar of margin each side.
  function fit_x(x) {
    x.ticks.callback = (value) => (Number.isInteger(value) ? value : '');
    x.min = pending.length ? pending[0].x - 0.5 : undefined;
    x.max = pending.length ? pending[pending.length - 1].x + 0.5 : undefined;
  }
  function baseline() {
    if (!pending.length) return [];
    return [{ x: pending[0].x - 0.5, y: 1 }, { x: pending[pending.length - 1].x + 0.5, y: 1 }];
  }
  return {
    el,
    ready,
    set(points) {
      pending = points;
      const best = points.reduce((m, p) => (p.flagged ? m : Math.max(m, p.y)), 0);
      canvas.setAttribute('aria-label', points.length
        ? `${label}: ${points.length} correct candidates, best ${best.toFixed(2)}× eager`
        : `${label}: no correct candidates yet`);
      if (chart) {
        chart.data.datasets[0].data = points;
        chart.data.datasets[0].backgroundColor = colours();
        chart.data.datasets[1].data = baseline();
        fit_x(chart.options.scales.x);
        chart.update('none');
      }
    },
  };
}
