// The experiment list (#/experiments?state=running): every hyperparameter search with its state
// (live from the `experiment` events of /api/v1/events), searcher, trials started, budget used and
// best metric; a state filter; stop, resume and delete. Shared with the experiment page: the
// actions and the budget's progress.
import { listExperiments, experimentAction, enc } from './api.js';
import { EventStream, coalescedRefresh } from './live.js';
import { h, setText, stateBadge } from './dom.js';
import { resourceButtons } from './actions.js';
import * as fmt from './format.js';

export const EXPERIMENT_STATES = ['running', 'stopping', 'completed', 'failed', 'stopped'];
const POLL_MS = 2000;

export function canStopExperiment(s) { return s === 'running'; }
export function canResumeExperiment(s) { return s === 'stopped' || s === 'failed'; }
export function canDeleteExperiment(s) { return s !== 'running' && s !== 'stopping'; }

const EXPERIMENT_ACTIONS = {
  call: experimentAction,
  can: { stop: canStopExperiment, resume: canResumeExperiment, delete: canDeleteExperiment },
  deleteText: (e) => `This deletes experiment ${e.id} and its ${fmt.int(e.trials_started)} trials: their jobs, checkpoints, scalars and logs. It cannot be undone.`,
  doneText: {
    stop: (e) => `Stopping ${e.name}: its running trials write a final checkpoint`,
    resume: (e) => `${e.name} goes on`,
  },
};

// Stop / resume / delete with feedback (actions.js); the buttons are shared with the experiment
// page.
export function experimentButtons(e, onDone) {
  return resourceButtons(EXPERIMENT_ACTIONS, e, onDone);
}

// What the budget bar measures: steps of budget.max_steps, else seconds of budget.max_seconds,
// else trials started of max_trials. [{label, used, max, text}]; both budgets when both are set.
export function budgetParts(e) {
  const parts = [];
  const b = e.budget || {};
  if (b.max_steps > 0) {
    parts.push({ key: 'steps', label: 'Steps', used: e.steps_used, max: b.max_steps, text: `${fmt.int(e.steps_used)} / ${fmt.int(b.max_steps)} steps` });
  }
  if (b.max_seconds > 0) {
    parts.push({ key: 'seconds', label: 'Time', used: e.seconds_used, max: b.max_seconds, text: `${fmt.duration(e.seconds_used)} / ${fmt.duration(b.max_seconds)}` });
  }
  if (!parts.length) {
    parts.push({ key: 'trials', label: 'Trials', used: e.trials_started, max: e.max_trials, text: `${fmt.int(e.trials_started)} / ${fmt.int(e.max_trials)} trials` });
  }
  return parts;
}

export function budgetBar(part, state) {
  const frac = part.max > 0 ? Math.min(1, part.used / part.max) : 0;
  return h('div', { class: 'budget', dataset: { budget: part.key } },
    h('div', {
      class: 'progress', role: 'progressbar', 'aria-label': `${part.label} used`,
      'aria-valuemin': 0, 'aria-valuemax': part.max, 'aria-valuenow': part.used, 'aria-valuetext': part.text,
    }, h('div', { class: `progress-bar state-bg-${state}`, style: { width: `${(frac * 100).toFixed(1)}%` } })),
    h('div', { class: 'progress-text' }, part.text));
}

export function bestText(e) {
  return e.best ? fmt.byTag(e.metric, e.best.metric) : fmt.DASH;
}

export function mountExperiments(root, params) {
  let filter = EXPERIMENT_STATES.includes(params.get('state')) ? params.get('state') : '';
  let experiments = new Map(); // id -> summary
  let loaded = false;
  let pollTimer = 0;
  const abort = new AbortController();

  const filters = h('div', { class: 'filters', role: 'group', 'aria-label': 'Filter by state' });
  const tbody = h('tbody');
  const heads = ['Name', 'State', 'Searcher', 'Budget', 'Trials', 'Best', 'Created', ''];
  const table = h('table', { class: 'jobs-table experiments-table' },
    h('thead', {}, h('tr', {}, heads.map((t, i) => h('th', { scope: 'col', class: [4, 5].includes(i) ? 'num' : 'txt' }, t)))),
    tbody);
  const message = h('div', { class: 'empty' }, 'Loading experiments…');
  const page = h('section', { class: 'page experiments-page' },
    h('div', { class: 'page-head' }, h('h1', {}, 'Experiments')),
    filters,
    h('div', { class: 'table-wrap' }, table),
    message);
  root.append(page);
  table.hidden = true;
  document.title = 'Experiments · trainingd';

  const chips = ['', ...EXPERIMENT_STATES].map((s) => {
    const count = h('span', { class: 'count' });
    const chip = h('button', {
      type: 'button', class: `chip ${s ? 'state-' + s : ''}`, dataset: { filter: s || 'all' },
      onclick: () => {
        filter = s;
        history.replaceState(null, '', s ? `#/experiments?state=${s}` : '#/experiments');
        render();
      },
    }, s || 'all', count);
    filters.append(chip);
    return { s, chip, count };
  });

  function row(e) {
    const trials = e.trials_by_state || {};
    const counts = Object.entries(trials).map(([s, n]) => `${n} ${s}`).join(', ');
    const tr = h('tr', { dataset: { id: e.id, state: e.state } },
      h('td', { class: 'cell-name', 'data-label': 'Name' },
        h('a', { href: `#/experiments/${enc(e.id)}`, class: 'job-link', title: e.name }, e.name),
        h('div', { class: 'sub mono' }, e.id)),
      h('td', { 'data-label': 'State', title: [e.reason, e.error].filter(Boolean).join('\n') },
        stateBadge(e.state), (e.reason || e.error) ? h('div', { class: 'sub reason' }, e.error || e.reason) : ''),
      h('td', { 'data-label': 'Searcher' }, e.searcher, h('div', { class: 'sub' }, `${e.mode} ${e.metric}`)),
      h('td', { class: 'cell-progress', 'data-label': 'Budget' }, budgetParts(e).map((p) => budgetBar(p, e.state))),
      h('td', { class: 'num', 'data-label': 'Trials', title: counts }, `${fmt.int(e.trials_started)} / ${fmt.int(e.max_trials)}`),
      h('td', { class: 'num', 'data-label': 'Best' }, bestText(e), e.best ? h('div', { class: 'sub' }, `trial ${e.best.trial}`) : ''),
      h('td', { 'data-label': 'Created', title: fmt.absolute(e.created_at) }, fmt.relative(e.created_at)),
      h('td', { class: 'cell-actions' }, experimentButtons(e, (action, result) => onAction(e, action, result)).filter(Boolean)));
    return tr;
  }

  function render() {
    const counts = { '': experiments.size };
    for (const e of experiments.values()) counts[e.state] = (counts[e.state] || 0) + 1;
    for (const { s, chip, count } of chips) {
      chip.setAttribute('aria-pressed', String(filter === s));
      setText(count, fmt.int(counts[s] || 0));
    }
    const shown = [...experiments.values()]
      .filter((e) => !filter || e.state === filter)
      .sort((a, b) => b.created_at - a.created_at || (a.id < b.id ? 1 : -1));
    // Keyboard focus stays on the same control when the rows are redrawn.
    const active = document.activeElement;
    const focus = tbody.contains(active) ? { id: active.closest('tr').dataset.id, action: active.dataset.action } : null;
    tbody.replaceChildren(...shown.map(row));
    if (focus) {
      const tr = tbody.querySelector(`tr[data-id="${CSS.escape(focus.id)}"]`);
      const again = tr && (tr.querySelector(`[data-action="${focus.action}"]:not([disabled])`) || tr.querySelector('a'));
      if (again) again.focus();
    }
    table.hidden = shown.length === 0;
    message.hidden = shown.length !== 0;
    page.dataset.experiments = String(experiments.size);
    if (loaded && !shown.length) {
      message.replaceChildren(experiments.size
        ? h('p', {}, `No ${filter} experiments.`)
        : h('p', {}, 'No experiments yet. Start one with POST /api/v1/experiments (docs/experiments.md).'));
    }
    clearTimeout(pollTimer);
    // Budget used is not on the event stream between changes: poll while one runs.
    if ([...experiments.values()].some((e) => e.state === 'running' || e.state === 'stopping')) {
      pollTimer = setTimeout(() => (document.visibilityState === 'visible' ? refresh() : render()), POLL_MS);
    }
  }

  const lister = coalescedRefresh(async () => {
    try {
      const list = await listExperiments(abort.signal);
      experiments = new Map(list.map((e) => [e.id, e]));
      loaded = true;
      render();
    } catch (e) {
      if (e.name === 'AbortError') return;
      if (!loaded) {
        message.replaceChildren(h('p', { class: 'error' }, `Could not load the experiments: ${e.message}`),
          h('button', { type: 'button', class: 'btn', onclick: refresh }, 'Try again'));
      }
    }
  });
  const refresh = () => lister.now();
  const refreshSoon = (ms = 300) => lister.soon(ms);

  function onAction(e, action, result) {
    if (result === null) experiments.delete(e.id);
    else if (result) experiments.set(e.id, { ...experiments.get(e.id), ...result });
    render();
  }

  const stream = new EventStream('/events', {
    experiment: (d) => {
      if (loaded && d.state === 'deleted') {
        if (experiments.delete(d.id)) render();
        return;
      }
      const e = experiments.get(d.id);
      if (loaded && e && e.state !== d.state) {
        experiments.set(d.id, { ...e, state: d.state });
        render();
      }
      refreshSoon();
    },
  }, { onReconnect: () => refreshSoon(0) });

  refresh();
  return {
    unmount() {
      stream.close();
      abort.abort();
      lister.cancel();
      clearTimeout(pollTimer);
    },
  };
}
