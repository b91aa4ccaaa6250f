// The job list (#/jobs?state=running): every job with its state (live from /api/v1/events),
// progress, examples/s, latest loss and accuracy, start, elapsed and ETA; a state filter; stop,
// resume and delete. Progress is not on the list's event stream (only state changes are), so the
// list is refetched every 2 s while a job runs.
import { listJobs, jobAction, enc } from './api.js';
import { EventStream, coalescedRefresh } from './live.js';
import { h, setText, stateBadge } from './dom.js';
import { runResourceAction, resourceButtons } from './actions.js';
import * as fmt from './format.js';

export const STATES = ['queued', 'running', 'stopping', 'completed', 'failed', 'stopped', 'preempted'];
const ACTIVE = new Set(['running', 'stopping']);
const POLL_MS = 2000;

export function canStop(s) { return s === 'queued' || s === 'running' || s === 'preempted'; }
export function canResume(s) { return s === 'stopped' || s === 'failed'; }
export function canDelete(s) { return s !== 'running' && s !== 'stopping'; }

export function stepsPerSec(job) {
  const v = job.latest_scalars && job.latest_scalars['global_step/sec'];
  return job.state === 'running' && Number.isFinite(v) && v > 0 ? v : 0;
}

// Seconds left, or NaN when unknown.
export function etaSeconds(job) {
  const sps = stepsPerSec(job);
  if (!sps || !(job.max_steps > 0)) return NaN;
  return Math.max(0, job.max_steps - job.global_step) / sps;
}

export function elapsedSeconds(job, now = Date.now() / 1000) {
  if (!job.started_at) return NaN;
  if (job.state === 'running' || job.state === 'stopping') return now - job.started_at;
  return job.finished_at && job.finished_at >= job.started_at ? job.finished_at - job.started_at : NaN;
}

const JOB_ACTIONS = {
  call: jobAction,
  can: { stop: canStop, resume: canResume, delete: canDelete },
  deleteText: (job) => `This deletes job ${job.id}, its checkpoints, scalars and log. It cannot be undone.`,
  doneText: {
    stop: (job) => `Stopping ${job.name}: final checkpoint, then stopped`,
    resume: (job) => `${job.name} is back in the queue`,
  },
};

// Stop / resume / delete with feedback (actions.js); resolves to the job after the action (null
// if deleted, undefined if cancelled or refused). Shared with the job page.
export function runAction(job, action) {
  return runResourceAction(JOB_ACTIONS, job, action);
}

export function actionButtons(job, onDone) {
  return resourceButtons(JOB_ACTIONS, job, onDone);
}

export function progressCell(job) {
  const has = job.max_steps > 0;
  const frac = has ? Math.min(1, job.global_step / job.max_steps) : 0;
  return [
    h('div', { class: 'progress', role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': has ? job.max_steps : undefined, 'aria-valuenow': job.global_step },
      h('div', { class: `progress-bar state-bg-${job.state}`, style: { width: `${(frac * 100).toFixed(1)}%` } })),
    h('div', { class: 'progress-text' }, has ? `${fmt.int(job.global_step)} / ${fmt.int(job.max_steps)}` : `${fmt.int(job.global_step)} steps`),
  ];
}

export function mountJobs(root, params) {
  let filter = STATES.includes(params.get('state')) ? params.get('state') : '';
  let jobs = new Map(); // id -> job summary
  const rows = new Map(); // id -> {tr, key, state}
  let loaded = false;
  let pollTimer = 0;
  const abort = new AbortController();

  const filters = h('div', { class: 'filters', role: 'group', 'aria-label': 'Filter by state' });
  const tbody = h('tbody');
  const table = h('table', { class: 'jobs-table' },
    h('thead', {}, h('tr', {},
      ['Name', 'State', 'Progress', 'Examples/s', 'Loss', 'Accuracy', 'Started', 'Elapsed', 'ETA', '']
        .map((t) => h('th', { scope: 'col' }, t)))),
    tbody);
  const message = h('div', { class: 'empty', hidden: true });
  root.append(h('section', { class: 'page' },
    h('div', { class: 'page-head' },
      h('h1', {}, 'Jobs'),
      h('a', { class: 'btn btn-primary', href: '#/submit' }, 'New job')),
    filters,
    h('div', { class: 'table-wrap' }, table),
    message));
  table.hidden = true;
  message.hidden = false;
  message.textContent = 'Loading jobs…';

  const chips = ['', ...STATES].map((s) => {
    const count = h('span', { class: 'count' });
    const chip = h('button', {
      type: 'button', class: `chip ${s ? 'state-' + s : ''}`, dataset: { filter: s || 'all' },
      onclick: () => {
        filter = s;
        history.replaceState(null, '', s ? `#/jobs?state=${s}` : '#/jobs');
        render();
      },
    }, s || 'all', count);
    filters.append(chip);
    return { s, chip, count };
  });

  function renderFilters() {
    const counts = { '': jobs.size };
    for (const j of jobs.values()) counts[j.state] = (counts[j.state] || 0) + 1;
    for (const { s, chip, count } of chips) {
      chip.setAttribute('aria-pressed', String(filter === s));
      setText(count, fmt.int(counts[s] || 0));
    }
  }

  // A row's cells are refilled only when what they show changed, and its buttons only when the
  // state changed (so a click never lands on a button being replaced); times tick separately.
  function rowKey(j) {
    return JSON.stringify([j.global_step, j.max_steps, j.examples_per_sec, j.latest_scalars, j.error, j.reason, j.started_at, j.finished_at, j.name, j.waiting_reason, j.preempted_by]);
  }

  function createRow(j) {
    const labels = ['Name', 'State', 'Progress', 'Examples/s', 'Loss', 'Accuracy', 'Started', 'Elapsed', 'ETA', ''];
    const classes = ['cell-name', '', 'cell-progress', 'num', 'num', 'num', 'tick-started', 'num tick-elapsed', 'num tick-eta', 'cell-actions'];
    return h('tr', { dataset: { id: j.id } }, labels.map((label, i) =>
      h('td', { 'data-label': label || undefined, class: classes[i] || undefined })));
  }

  function fillRow(r, j) {
    const c = r.tr.children;
    const ls = j.latest_scalars || {};
    const val = ls['validation/accuracy'];
    const reason = j.reason || j.error || ''; // the reason reads better; the error is in the job page
    if (r.state !== j.state) {
      r.tr.dataset.state = j.state;
      const hadFocus = r.tr.contains(document.activeElement) && document.activeElement.dataset.action;
      c[9].replaceChildren(...actionButtons(j, (action, result) => onAction(j, action, result)).filter(Boolean));
      if (hadFocus) {
        const again = c[9].querySelector(`[data-action="${hadFocus}"]:not([disabled])`) || c[0].querySelector('a');
        if (again) again.focus();
      }
    }
    const key = rowKey(j);
    if (r.state === j.state && r.key === key) return;
    r.state = j.state;
    r.key = key;
    c[0].replaceChildren(h('a', { href: `#/jobs/${enc(j.id)}`, class: 'job-link', title: j.name }, j.name), h('div', { class: 'sub mono' }, j.id));
    c[1].title = [j.reason, j.error].filter(Boolean).join('\n');
    // A preempted job names its preemptor; a job a quota holds says which.
    const why = j.waiting_reason || (j.state === 'preempted' && j.preempted_by ? `preempted by ${j.preempted_by}` : reason);
    c[1].replaceChildren(stateBadge(j.state), why && j.state !== 'running' ? h('div', { class: 'sub reason' }, why) : '');
    c[2].replaceChildren(...progressCell(j));
    setText(c[3], fmt.rate(j.examples_per_sec));
    setText(c[4], fmt.metric(ls.loss));
    c[5].replaceChildren(fmt.percent(ls.accuracy), Number.isFinite(val) ? h('div', { class: 'sub' }, `val ${fmt.percent(val)}`) : '');
    c[6].title = fmt.absolute(j.started_at || j.created_at);
    tick(r.tr, j);
  }

  function tick(tr, j) {
    const now = Date.now() / 1000;
    setText(tr.querySelector('.tick-started'), j.started_at ? fmt.relative(j.started_at, now)
      : `queued ${fmt.relative(j.created_at, now)}`);
    setText(tr.querySelector('.tick-elapsed'), fmt.duration(elapsedSeconds(j, now)));
    setText(tr.querySelector('.tick-eta'), j.state === 'completed' ? 'done' : fmt.duration(etaSeconds(j)));
  }

  function render() {
    renderFilters();
    const shown = [...jobs.values()]
      .filter((j) => !filter || j.state === filter)
      .sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? 1 : -1));
    const keep = new Set(shown.map((j) => j.id));
    for (const [id, r] of rows) {
      if (!keep.has(id)) {
        r.tr.remove();
        rows.delete(id);
      }
    }
    shown.forEach((j, i) => {
      let r = rows.get(j.id);
      if (!r) {
        r = { tr: createRow(j), key: '', state: '' };
        rows.set(j.id, r);
      }
      fillRow(r, j);
      if (tbody.children[i] !== r.tr) tbody.insertBefore(r.tr, tbody.children[i] || null);
    });
    table.hidden = shown.length === 0;
    message.hidden = shown.length !== 0;
    if (!loaded) return;
    if (jobs.size === 0) {
      message.replaceChildren(h('p', {}, 'No jobs yet.'),
        h('a', { class: 'btn btn-primary', href: '#/submit' }, 'Submit your first job'));
    } else if (shown.length === 0) {
      message.replaceChildren(h('p', {}, `No ${filter} jobs.`),
        h('button', { type: 'button', class: 'btn', onclick: () => { filter = ''; history.replaceState(null, '', '#/jobs'); render(); } }, 'Show all jobs'));
    }
    root.querySelector('.page').dataset.jobs = String(jobs.size);
    schedulePoll();
  }

  // One fetch at a time, and once more after it when asked meanwhile (coalescedRefresh).
  const lister = coalescedRefresh(async () => {
    try {
      const list = await listJobs(abort.signal);
      jobs = new Map(list.map((j) => [j.id, j]));
      loaded = true;
      render();
    } catch (e) {
      if (e.name === 'AbortError') return;
      if (!loaded) {
        message.hidden = false;
        message.replaceChildren(h('p', { class: 'error' }, `Could not load the jobs: ${e.message}`),
          h('button', { type: 'button', class: 'btn', onclick: refresh }, 'Try again'));
      }
    }
  });
  const refresh = () => lister.now();
  const refreshSoon = (ms = 250) => lister.soon(ms);

  function schedulePoll() {
    clearTimeout(pollTimer);
    if (![...jobs.values()].some((j) => ACTIVE.has(j.state))) return;
    pollTimer = setTimeout(() => {
      if (document.visibilityState === 'visible') refresh();
      else schedulePoll();
    }, POLL_MS);
  }

  // result: the job after the action, null when deleted, undefined when cancelled or failed.
  function onAction(j, action, result) {
    const r = rows.get(j.id);
    if (r) r.state = ''; // rebuild its buttons (the clicked one was disabled) in any case
    if (result === null) jobs.delete(j.id);
    else if (result) jobs.set(j.id, { ...jobs.get(j.id), ...result });
    render();
  }

  // One render per frame however many events arrive (a stream replays its history at once).
  let renderQueued = false;
  function renderSoon() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => {
      renderQueued = false;
      render();
    });
  }

  // The list's event stream: a job created, changing state, or deleted. The state is applied at
  // once; the rest of the job (times, latest values) comes with a refetch shortly after.
  const stream = new EventStream('/events', {
    job: (d) => {
      if (loaded && d.state === 'deleted') {
        if (jobs.delete(d.id)) renderSoon();
        return;
      }
      const j = jobs.get(d.id);
      if (loaded && j) {
        jobs.set(d.id, {
          ...j, state: d.state, global_step: Math.max(j.global_step, d.global_step), max_steps: d.max_steps,
          error: d.error || null, reason: d.reason || null,
        });
        renderSoon();
      }
      refreshSoon();
    },
  }, { onReconnect: () => refreshSoon(0) });

  const ticker = setInterval(() => {
    for (const [id, r] of rows) {
      const j = jobs.get(id);
      if (j) tick(r.tr, j);
    }
  }, 1000);

  refresh();
  return {
    unmount() {
      stream.close();
      abort.abort();
      clearInterval(ticker);
      lister.cancel();
      clearTimeout(pollTimer);
    },
  };
}
