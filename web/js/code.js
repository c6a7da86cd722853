// Source code blocks: highlighted by Debian's highlight.js (served at /vendor/,
// loaded on first use) with a copy button. Plain text stays readable if the
// library is missing. Tested in a browser by tests/web/browser_test.py (ctest -R web_browser).
import { h } from './dom.js';

let loading = null;

function load_highlighter() {
  if (window.hljs) return Promise.resolve(window.hljs);
  if (!loading) {
    loading = new Promise((resolve) => {
      const script = h('script', { src: '/vendor/highlight.js/highlight.min.js' });
      script.onload = () => {
        // highlight.js 9 prints an end-of-life note on first use; Debian 12 maintains it.
        window.hljs.configure({ hideUpgradeWarningAcceptNoSupportOrSecurityUpdates: true });
        resolve(window.hljs);
      };
      script.onerror = () => resolve(null);
      document.head.append(script);
    });
  }
  return loading;
}

// Kernel programs: OpenCL / CUDA read as C++, Triton and TorchScript as Python.
export function language_for(target) { return target === 'triton' || target === 'torchscript' ? 'python' : 'cpp'; }

async function copy_text(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch (err) {
    // No clipboard permission (plain http on another host): select the text instead.
    const range = document.createRange();
    range.selectNodeContents(button.closest('figure').querySelector('code'));
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    button.textContent = 'Selected: press Ctrl+C';
  }
  setTimeout(() => { button.textContent = 'Copy'; }, 2000);
}

// A <figure> holding the source; `label` names it for screen readers and the caption.
export function code_block(source, language, label, { copy = true } = {}) {
  const code = h('code', { class: `language-${language}` }, source);
  const button = copy ? h('button', { type: 'button', class: 'copy', 'aria-label': `Copy ${label}` }, 'Copy') : null;
  if (button) button.addEventListener('click', () => copy_text(source, button));
  const figure = h('figure', { class: 'code' },
    h('figcaption', {}, h('span', {}, label), button),
    h('pre', { tabindex: '0', 'aria-label': label }, code));
  load_highlighter().then((hljs) => {
    if (!hljs) return;
    code.innerHTML = hljs.highlight(language, source, true).value;  // hljs escapes the text it wraps
    code.classList.add('hljs');
    figure.dataset.highlighted = 'true';
  });
  return figure;
}
