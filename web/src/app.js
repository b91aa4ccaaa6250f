// The dashboard's shell: hash routes to views, the disconnected banner, the nav, and who is
// signed in (name and role from GET /api/v1/whoami, Sign out, Switch user).
//
// Routes: #/jobs, #/jobs/<id>, #/experiments, #/experiments/<id>, #/compare?jobs=a,b&tag=t,
// #/datasets, #/submit?preset=mlp&dataset=name. A view is
// mount(container, params) -> {unmount()}; switching routes unmounts the old one (closing its
// event stream, timers and charts).
import { connectivity, loadPrincipal, token, signOut, switchUser } from './api.js';
import { h } from './dom.js';
import { mountJobs } from './jobs.js';
import { mountJob } from './job.js';
import { mountCompare } from './compare.js';
import { mountSubmit } from './submit.js';
import { mountDatasets } from './datasets.js';
import { mountExperiments } from './experiments.js';
import { mountExperiment } from './experiment.js';

const view = document.getElementById('view');
const banner = document.getElementById('banner');
let current = null;

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query = ''] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  return { parts, params: new URLSearchParams(query) };
}

function route() {
  const { parts, params } = parseHash();
  if (current) current.unmount();
  view.replaceChildren();
  let name = parts[0] || 'jobs';
  if (name === 'jobs' && parts[1]) {
    current = mountJob(view, parts[1]);
  } else if (name === 'experiments' && parts[1]) {
    current = mountExperiment(view, parts[1]);
  } else if (name === 'experiments') {
    current = mountExperiments(view, params);
  } else if (name === 'compare') {
    current = mountCompare(view, params);
  } else if (name === 'datasets') {
    current = mountDatasets(view, params);
  } else if (name === 'submit') {
    current = mountSubmit(view, params);
  } else {
    name = 'jobs';
    current = mountJobs(view, params);
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === name && !((name === 'jobs' || name === 'experiments') && parts[1])) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

// While the daemon is unreachable: the banner, and /healthz (no token needed) polled with backoff
// so pages without an event stream also notice when it is back.
let healthTimer = 0;
function pollHealth(delay) {
  clearTimeout(healthTimer);
  healthTimer = setTimeout(async () => {
    try {
      const r = await fetch('/healthz', { cache: 'no-store' });
      if (r.ok) {
        connectivity.report('up');
        return;
      }
    } catch {
      // still down
    }
    if (connectivity.state === 'down') pollHealth(Math.min(delay * 2, 15000));
  }, delay);
}

connectivity.listen((state) => {
  if (state === 'down') {
    banner.textContent = 'Lost the connection to the daemon. Reconnecting… what you see may be out of date.';
    banner.hidden = false;
    document.body.classList.add('offline');
    pollHealth(1000);
  } else {
    banner.hidden = true;
    document.body.classList.remove('offline');
    clearTimeout(healthTimer);
  }
});

// The header's account: the principal's name and role, "Switch user" (another token) and
// "Sign out" (forget the token; only while this tab holds one: without a token a loopback
// client is the admin, docs/operations.md#team-use, and there is nothing to forget).
function renderWho(who) {
  const el = document.getElementById('who');
  if (!who) {
    el.hidden = true;
    return;
  }
  const parts = [
    h('span', { class: 'who-name', title: `Signed in as ${who.name} (${who.role})` }, who.name),
    h('span', { class: 'who-role badge', dataset: { role: who.role } }, who.role),
    h('button', { type: 'button', class: 'btn btn-small', dataset: { action: 'switch-user' }, onclick: switchUser }, 'Switch user'),
  ];
  if (token()) parts.push(h('button', { type: 'button', class: 'btn btn-small', dataset: { action: 'sign-out' }, onclick: signOut }, 'Sign out'));
  el.replaceChildren(...parts);
  el.hidden = false;
}

window.addEventListener('hashchange', route);
if (!location.hash) history.replaceState(null, '', '#/jobs');
// Who the token is first (a 401 asks for it), so that the pages offer only what that user may do.
loadPrincipal().then(renderWho, () => renderWho(null)).finally(route);
