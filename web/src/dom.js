// A few DOM helpers: element creation without innerHTML (no injection from job names or log
// lines), toasts and a confirmation dialog.

// h('a', {href: '#/x', class: 'btn', onclick: fn, dataset: {k: 'v'}}, 'text', childNode, ...)
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// Sets an element's text only when it changed (no needless layout work on every tick).
export function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

export function stateBadge(state) {
  return h('span', { class: `badge state-${state}`, dataset: { state } }, state);
}

export function toast(message, kind = 'info') {
  const box = document.getElementById('toasts');
  const el = h('div', { class: `toast toast-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, message);
  box.append(el);
  setTimeout(() => el.classList.add('toast-out'), kind === 'error' ? 6000 : 3000);
  setTimeout(() => el.remove(), kind === 'error' ? 6400 : 3400);
}

// A modal dialog; resolves to the value of the button pressed (or null on Escape).
// body: nodes to show; buttons: [{label, value, kind}]; the first non-cancel button gets focus.
export function dialog({ title, body, buttons }) {
  return new Promise((resolve) => {
    // Cancel is a plain button, so Enter in an input submits with the action button.
    const form = h('form', { method: 'dialog' },
      h('h2', {}, title),
      h('div', { class: 'dialog-body' }, body),
      h('div', { class: 'dialog-buttons' }, buttons.map((b) => b.value === 'cancel'
        ? h('button', { class: 'btn', type: 'button', value: 'cancel', onclick: () => dlg.close('cancel') }, b.label)
        : h('button', { class: `btn ${b.kind ? 'btn-' + b.kind : ''}`, value: b.value, type: 'submit' }, b.label))));
    const dlg = h('dialog', { class: 'dialog' }, form);
    document.body.append(dlg);
    dlg.addEventListener('close', () => {
      const v = dlg.returnValue;
      dlg.remove();
      resolve(v === '' || v === 'cancel' ? null : v);
    });
    dlg.showModal();
    // Focus the input if any, else Cancel: a destructive action is never one keypress away.
    const first = form.querySelector('input, textarea') || form.querySelector('button[value=cancel]');
    if (first) first.focus();
  });
}

export function confirmDialog(title, text, action = 'Delete') {
  return dialog({
    title,
    body: h('p', {}, text),
    buttons: [{ label: 'Cancel', value: 'cancel' }, { label: action, value: 'ok', kind: 'danger' }],
  }).then((v) => v === 'ok');
}

// A named throttle for a page's refreshes: later(name, ms, fn) runs fn once, ms after the first
// call of that name; calls meanwhile are absorbed. Not a debounce: events arrive in bursts of
// hundreds a second, and a debounce would postpone forever. The pending timers are in `timers`,
// for the page to clear when it unmounts.
export function throttler(timers) {
  return function later(name, ms, fn) {
    if (timers[name]) return;
    timers[name] = setTimeout(() => {
      timers[name] = 0;
      fn();
    }, ms);
  };
}
