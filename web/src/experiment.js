// The experiment page (#/experiments/<id>): state, budget bars and stop / resume / delete; the
// best metric so far against time; the top trials' learning curves on one chart; the rung ladder
// (per rung its steps, results, cut and promotions, and which trials); a parallel-coordinates
// plot of hyperparameters to metric; the trial table (trial_table.js, sorted and paged by the
// daemon); the spec. Live: the `experiment` events of /api/v1/events, and the `job` events of
// its trials, trigger refetches: at most one a second for the experiment and the table page;
// the whole trial list (what the ladder, the plot and the best-so-far chart are drawn from) when
// the experiment's counts changed, at most every 2 s. Trials' progress is not on the stream, so
// while the experiment runs it is also fetched every 2 s (only while the tab is visible).
import { api, enc, allTrials } from './api.js';
import { EventStream } from './live.js';
import { MetricChart, colorAt } from './chart.js';
import { ParallelCoordinates } from './parcoords.js';
import { TrialTable } from './trial_table.js';
import { h, setText, stateBadge, throttler } from './dom.js';
import { budgetParts, budgetBar, bestText, experimentButtons } from './experiments.js';
import * as fmt from './format.js';

const TOP = 5; // learning curves drawn
const LADDER_CHIPS = 24; // trials shown per rung before "more"
const ACTIVE = new Set(['running', 'stopping']);
const POLL_MS = 2000;

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// The best-so-far curve: every rung result at the time it was recorded, and after each the
// experiment's best then, as the daemon ranks it: the best of each trial's latest result (failed
// trials left out). So it ends at the experiment's best, and may step down when the best trial's
// next rung scores below its last.
export function bestSoFar(e, trials) {
  const better = (a, b) => (e.mode === 'min' ? a < b : a > b);
  const pts = [];
  for (const t of trials) {
    if (t.state === 'failed') continue;
    t.rung_metrics.forEach((v, k) => {
      const at = (t.rung_recorded_at || [])[k] ?? (k === t.rung_metrics.length - 1 ? t.finished_at : null);
      if (Number.isFinite(v) && at) pts.push({ t: at, v, trial: t.index });
    });
  }
  pts.sort((a, b) => a.t - b.t || a.trial - b.trial);
  const latest = new Map();
  const best = [];
  let cur = null;
  let curTrial = -1;
  for (const p of pts) {
    latest.set(p.trial, p.v);
    if (cur === null || better(p.v, cur)) {
      cur = p.v;
      curTrial = p.trial;
    } else if (p.trial === curTrial) {
      // The best trial's newer result is worse: the best is whichever trial leads now.
      cur = null;
      for (const [trial, v] of latest) {
        if (cur === null || better(v, cur) || (v === cur && trial < curTrial)) {
          cur = v;
          curTrial = trial;
        }
      }
    }
    best.push(cur);
  }
  return { xs: pts.map((p) => p.t), results: pts.map((p) => p.v), best };
}

// A trial promoted from rung k: it has a result further up, or trains toward one.
function promotedFrom(t, k, rungs) {
  return t.rung > k || (t.rung === k && k + 1 < rungs.length && t.target_steps > rungs[k].steps);
}

export function mountExperiment(root, id) {
  let exp = null;
  let expKey = '';
  let trials = [];
  let trialJobs = new Set();
  let topKey = '';
  const timers = {};
  const later = throttler(timers); // later(name, ms, fn): dom.js
  const abort = new AbortController();
  const els = {};
  let table = null;
  let curves = null;
  let parcoords = null;
  let bestPlot = null;
  let bestWidth = 0;
  let resizer = null;
  const t0 = performance.now();

  const page = h('section', { class: 'page experiment-page', dataset: { experimentId: id } });
  root.append(page);
  page.append(h('p', { class: 'muted loading' }, 'Loading experiment…'));

  function build() {
    els.title = h('h1', {});
    els.badge = h('span', {});
    els.actions = h('div', { class: 'actions' });
    els.reason = h('p', { class: 'job-reason', hidden: true });
    els.budget = h('div', { class: 'budgets' });
    const stat = (label, key) => {
      els[key] = h('span', { class: 'stat-value' }, fmt.DASH);
      els[key + 'Sub'] = h('span', { class: 'stat-sub' });
      return h('div', { class: 'stat', dataset: { stat: key } }, h('span', { class: 'stat-label' }, label), els[key], els[key + 'Sub']);
    };
    els.stats = h('div', { class: 'stats' },
      h('div', { class: 'stat stat-progress' }, h('span', { class: 'stat-label' }, 'Budget'), els.budget),
      stat('Best', 'best'),
      stat('Trials', 'trials'),
      stat('Searcher', 'searcher'),
      stat('Disk', 'disk'),
      stat('Ran', 'ran'));
    els.bestPlot = h('div', { class: 'chart-plot' });
    els.bestEmpty = h('div', { class: 'chart-empty' }, 'No results yet.');
    els.bestReadout = h('div', { class: 'chart-readout', 'aria-live': 'off' });
    els.bestCard = h('section', { class: 'card chart-card', dataset: { chart: 'best', points: '0' } },
      h('div', { class: 'chart-head' }, h('h3', {}, 'Best so far'),
        h('span', { class: 'chart-note' }, 'dots: every rung result when recorded; line: the best trial then')),
      h('div', { class: 'chart-body' }, els.bestPlot, els.bestEmpty),
      els.bestReadout);
    els.charts = h('div', { class: 'charts' }, els.bestCard);
    // A cross-validation's result: each fold's metric, their mean and sample standard deviation.
    els.cvBody = h('div', { class: 'cv-folds' });
    els.cvCard = h('section', { class: 'card cv-card', 'aria-label': 'Cross-validation', hidden: true },
      h('div', { class: 'card-head' }, h('h2', {}, 'Cross-validation'),
        h('span', { class: 'muted' }, 'each fold validated by the model trained on the others')),
      els.cvBody);
    els.ladder = h('div', { class: 'ladder' });
    els.ladderCard = h('section', { class: 'card ladder-card', 'aria-label': 'Rungs' },
      h('div', { class: 'card-head' }, h('h2', {}, 'Rungs'),
        h('span', { class: 'muted' }, 'promoted trials are marked ↑')),
      els.ladder);
    els.plots = h('div', {});
    els.tableBox = h('div', {});
    els.spec = h('pre', { class: 'spec' });
    page.replaceChildren(
      h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/experiments' }, 'Experiments'), ' / ', h('span', { class: 'mono' }, id)),
      h('div', { class: 'page-head' },
        h('div', { class: 'title-row' }, els.title, els.badge),
        els.actions),
      els.reason,
      els.stats,
      els.cvCard,
      els.charts,
      els.ladderCard,
      els.plots,
      els.tableBox,
      h('details', { class: 'card spec-card' }, h('summary', {}, h('h2', {}, 'Spec')), els.spec));
    curves = new MetricChart(els.charts, { title: `Top ${TOP} trials: ${exp.metric}`, series: [], emptyText: 'No results yet.' });
    curves.el.dataset.chart = 'top';
    parcoords = new ParallelCoordinates(els.plots);
    table = new TrialTable(els.tableBox, exp);
    resizer = new ResizeObserver(() => {
      if (bestPlot && Math.abs(els.bestPlot.clientWidth - bestWidth) > 1) {
        bestWidth = els.bestPlot.clientWidth;
        bestPlot.setSize({ width: bestWidth, height: 240 });
      }
    });
    resizer.observe(els.bestPlot);
    setText(els.spec, JSON.stringify(exp.spec, null, 2));
  }

  function renderExperiment() {
    const e = exp;
    page.dataset.state = e.state;
    setText(els.title, e.name);
    document.title = `${e.name} · trainingd`;
    els.badge.replaceChildren(stateBadge(e.state));
    const reason = e.error || e.reason;
    els.reason.hidden = !reason;
    els.reason.className = `job-reason ${e.error ? 'error' : 'muted'}`;
    setText(els.reason, reason ? (e.error ? `Error: ${e.error}` : `Ended: ${reason}`) : '');
    els.budget.replaceChildren(...budgetParts(e).map((p) => budgetBar(p, e.state)));
    setText(els.best, bestText(e));
    els.bestSub.replaceChildren(e.best
      ? h('a', { href: `#/jobs/${enc(e.best.job_id)}` }, `trial ${e.best.trial} at step ${fmt.int(e.best.step)}`)
      : `${e.mode === 'min' ? 'lowest' : 'highest'} ${e.metric}`);
    setText(els.trials, fmt.int(e.trials_started));
    setText(els.trialsSub, [`of ${fmt.int(e.max_trials)}`, ...Object.entries(e.trials_by_state || {})
      .filter(([, n]) => n > 0).map(([s, n]) => `${fmt.int(n)} ${s}`)].join(', '));
    setText(els.searcher, e.searcher);
    setText(els.searcherSub, `${e.mode} ${e.metric}, ${fmt.int(e.steps_used)} steps`);
    setText(els.disk, fmt.bytes(e.disk_bytes));
    setText(els.diskSub, `peak ${fmt.bytes(e.peak_disk_bytes)}`);
    setText(els.ran, fmt.duration(e.seconds_used));
    els.ranSub.title = `created ${fmt.absolute(e.created_at)}${e.finished_at ? `, ended ${fmt.absolute(e.finished_at)}` : ''}`;
    setText(els.ranSub, `${fmt.clock(e.created_at)} – ${e.finished_at ? fmt.clock(e.finished_at) : 'now'}`);
    renderCrossValidation();
    renderActions();
  }

  function renderCrossValidation() {
    const cv = exp.cross_validation;
    els.cvCard.hidden = !cv;
    if (!cv) return;
    const value = (v) => (v === null || v === undefined ? fmt.DASH : fmt.byTag(exp.metric, v));
    const jobOf = (k) => trials.find((t) => t.index === k)?.job_id;
    els.cvCard.dataset.foldsDone = String(cv.folds_done);
    els.cvCard.dataset.mean = cv.mean === null ? '' : String(cv.mean);
    els.cvCard.dataset.std = cv.std === null ? '' : String(cv.std);
    els.cvBody.replaceChildren(
      h('p', { class: 'cv-summary' },
        h('strong', { dataset: { cv: 'mean' } }, `${exp.metric} ${value(cv.mean)}`),
        ' ± ', h('span', { dataset: { cv: 'std' } }, value(cv.std)),
        h('small', { class: 'muted' }, ` (mean ± sample standard deviation of ${fmt.int(cv.folds_done)} of ${fmt.int(cv.folds)} folds${cv.stratified ? ', stratified' : ''})`)),
      h('table', { class: 'table-compact cv-table' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Fold'), h('th', { scope: 'col' }, exp.metric))),
        h('tbody', {}, cv.fold_metrics.map((m, k) => {
          const job = jobOf(k);
          return h('tr', { dataset: { fold: String(k) } },
            h('td', {}, job ? h('a', { href: `#/jobs/${enc(job)}` }, `fold ${k}`) : `fold ${k}`),
            h('td', { class: 'num' }, value(m)));
        }))));
  }

  function renderActions() {
    const focused = els.actions.contains(document.activeElement) ? document.activeElement.dataset.action : null;
    els.actions.replaceChildren(...experimentButtons(exp, (action, result) => {
      if (result === null) {
        location.hash = '#/experiments';
        return;
      }
      if (result) exp = { ...exp, ...result, spec: exp.spec };
      renderExperiment();
      loadExperiment();
    }).filter(Boolean));
    if (focused) els.actions.querySelector(`[data-action="${focused}"]:not([disabled])`)?.focus();
  }

  function renderLadder() {
    // With searcher.brackets, one ladder per bracket: its rungs, its trials (answers of daemons
    // before brackets have neither field: one bracket).
    const bracketOf = (x) => x.bracket ?? 0;
    const brackets = new Set(exp.plan.rungs.map(bracketOf)).size;
    const better = (a, b) => (exp.mode === 'min' ? a - b : b - a);
    const open = new Set([...els.ladder.querySelectorAll('details[open]')].map((d) => d.dataset.key));
    els.ladder.replaceChildren(...exp.plan.rungs.map((r) => {
      const b = bracketOf(r), k = r.index, key = `${b}.${k}`;
      const rungs = exp.plan.rungs.filter((x) => bracketOf(x) === b);
      const at = trials.filter((t) => bracketOf(t) === b && t.rung_metrics.length > k && t.state !== 'failed')
        .sort((x, y) => better(x.rung_metrics[k], y.rung_metrics[k]) || x.index - y.index);
      const promoted = at.filter((t) => promotedFrom(t, k, rungs));
      const chip = (t) => {
        const up = promoted.includes(t);
        const v = fmt.byTag(exp.metric, t.rung_metrics[k]);
        return h('a', {
          class: `rung-trial${up ? ' rung-promoted' : ''}`, href: `#/jobs/${enc(t.job_id)}`,
          title: `Trial ${t.index}: ${v}${up ? ', promoted' : ''}`, 'aria-label': `Trial ${t.index}, ${v}${up ? ', promoted' : ''}`,
          dataset: { trial: String(t.index) },
        }, up ? '↑' : '', `#${t.index}`, h('small', {}, v));
      };
      const more = at.length - LADDER_CHIPS;
      let rest = null;
      if (more > 0) {
        rest = h('details', { class: 'rung-more', dataset: { key } }, h('summary', {}, `${fmt.int(more)} more`));
        // The rest is drawn when opened: a first rung of 1,000 trials stays 24 links until asked.
        const fill = () => {
          if (rest.open && rest.children.length === 1) rest.append(h('div', { class: 'rung-trials' }, at.slice(LADDER_CHIPS).map(chip)));
        };
        rest.addEventListener('toggle', fill);
        if (open.has(key)) {
          rest.open = true;
          fill();
        }
      }
      const last = k === rungs.length - 1;
      return h('div', { class: 'rung', dataset: { bracket: String(b), rung: String(k), trials: String(r.trials), promoted: String(r.promoted) } },
        h('div', { class: 'rung-head' },
          h('strong', {}, brackets > 1 ? `Bracket ${b}, rung ${k}` : `Rung ${k}`),
          h('span', {}, `${fmt.int(r.steps)} steps`),
          h('span', {}, `${fmt.int(r.trials)} results`, h('small', { class: 'muted' }, ` (planned ${fmt.int(r.max_trials)})`)),
          last ? h('span', { class: 'muted' }, 'last rung') : h('span', {}, `cut ${r.cut === null ? fmt.DASH : fmt.byTag(exp.metric, r.cut)}`),
          last ? '' : h('span', {}, `${fmt.int(r.promoted)} promoted`)),
        h('div', { class: 'rung-trials' }, at.slice(0, LADDER_CHIPS).map(chip)),
        rest);
    }));
  }

  function bestOptions(width) {
    const text = cssVar('--text-muted') || '#666';
    const grid = cssVar('--grid') || 'rgba(128,128,128,.15)';
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, font: '11px system-ui, sans-serif' };
    return {
      width,
      height: 240,
      legend: { show: false },
      padding: [8, 20, 0, 0],
      cursor: { drag: { x: false, y: false }, points: { size: 6 } },
      scales: { x: { time: true } },
      axes: [axis, { ...axis, size: 58, values: (u, ticks) => ticks.map((v) => fmt.byTag(exp.metric, v)) }],
      series: [
        {},
        { label: 'result', stroke: 'transparent', paths: () => null, points: { show: true, size: 4, fill: colorAt(0), stroke: colorAt(0) } },
        { label: 'best so far', stroke: colorAt(1), width: 2, paths: window.uPlot.paths.stepped({ align: 1 }), points: { show: false } },
      ],
      hooks: {
        setCursor: [(u) => {
          const i = u.cursor.idx;
          setText(els.bestReadout, i == null ? '' : `${fmt.clock(u.data[0][i])} · best ${fmt.byTag(exp.metric, u.data[2][i])} · result ${fmt.byTag(exp.metric, u.data[1][i])}`);
        }],
      },
    };
  }

  function renderBest() {
    const { xs, results, best } = bestSoFar(exp, trials);
    els.bestCard.dataset.points = String(xs.length);
    els.bestCard.dataset.best = best.length ? String(best[best.length - 1]) : '';
    els.bestEmpty.hidden = xs.length > 0;
    if (!xs.length) {
      bestPlot?.destroy();
      bestPlot = null;
      return;
    }
    const data = [xs, results, best];
    if (!bestPlot) {
      bestWidth = Math.max(100, els.bestPlot.clientWidth);
      bestPlot = new window.uPlot(bestOptions(bestWidth), data, els.bestPlot);
    } else {
      bestPlot.setData(data);
    }
  }

  function renderCurves() {
    const sign = exp.mode === 'min' ? 1 : -1;
    const top = trials.filter((t) => t.state !== 'failed' && Number.isFinite(t.metric))
      .sort((a, b) => sign * (a.metric - b.metric) || a.index - b.index)
      .slice(0, TOP);
    const key = top.map((t) => t.index).join(',');
    parcoords.set({ trials, space: exp.spec.space, metric: exp.metric, maximize: exp.mode !== 'min', top: new Set(top.map((t) => t.index)) });
    if (key !== topKey) {
      topKey = key;
      curves.setSeries(top.map((t, i) => ({ job: t.job_id, tag: exp.metric, label: `#${t.index}`, color: colorAt(i) })));
    } else if (ACTIVE.has(exp.state)) {
      curves.reload();
    }
  }

  function renderTrials() {
    if (exp.cross_validation) renderCrossValidation();  // the folds' links to their jobs
    renderLadder();
    renderBest();
    renderCurves();
    page.dataset.trials = String(trials.length);
  }

  async function loadExperiment() {
    try {
      const e = await api(`/experiments/${enc(id)}`, { signal: abort.signal });
      const first = !exp;
      exp = e;
      if (first) build();
      renderExperiment();
      // What the trial list shows changed: fetch it (soon, or now once the experiment ended).
      const key = JSON.stringify([e.state, e.trials_started, e.steps_used, e.trials_by_state, e.best, e.plan.rungs]);
      if (!first && key !== expKey) {
        if (ACTIVE.has(e.state)) later('trials', POLL_MS, loadTrials);
        else loadTrials();
      }
      expKey = key;
      schedulePoll();
      return true;
    } catch (e) {
      if (e.name === 'AbortError') return false;
      if (!exp) {
        page.replaceChildren(h('nav', { class: 'crumbs' }, h('a', { href: '#/experiments' }, 'Experiments')),
          h('p', { class: 'error' }, e.status === 404 ? `No experiment ${id}.` : `Could not load the experiment: ${e.message}`));
      }
      return false;
    }
  }

  // One fetch of the trial list at a time; a call meanwhile fetches again after it.
  let trialsInflight = null;
  let trialsAgain = false;
  async function loadTrials() {
    if (trialsInflight) {
      trialsAgain = true;
      return trialsInflight;
    }
    trialsInflight = (async () => {
      try {
        trials = await allTrials(id, abort.signal);
        trialJobs = new Set(trials.map((t) => t.job_id));
        renderTrials();
      } catch (e) {
        if (e.name !== 'AbortError') page.dataset.trialsError = e.message;
      } finally {
        trialsInflight = null;
        if (trialsAgain && !abort.signal.aborted) {
          trialsAgain = false;
          loadTrials();
        }
      }
    })();
    return trialsInflight;
  }

  function schedulePoll() {
    clearTimeout(timers.poll);
    if (!ACTIVE.has(exp.state)) return;
    timers.poll = setTimeout(() => {
      if (document.visibilityState === 'visible') onChange();
      else schedulePoll();
    }, POLL_MS);
  }

  async function start() {
    if (!(await loadExperiment())) return;
    await Promise.all([table.load(), loadTrials()]);
    // For the browser test: navigation to table and charts drawn (the curves fetch on).
    page.dataset.renderedMs = (performance.now() - t0).toFixed(0);
  }

  function onChange() {
    later('experiment', 1000, () => {
      loadExperiment();
      table?.load();
    });
  }

  const stream = new EventStream('/events', {
    experiment: (d) => {
      if (d.id !== id || !exp) return;
      if (d.state === 'deleted') {
        page.dataset.state = 'deleted';
        setText(els.reason, 'This experiment was deleted.');
        els.reason.hidden = false;
        return;
      }
      if (d.state !== exp.state) {
        exp = { ...exp, state: d.state };
        renderExperiment();
      }
      onChange();
    },
    // A trial's job started, ended, or was promoted (re-queued).
    job: (d) => {
      if (exp && (trialJobs.has(d.id) || ACTIVE.has(exp.state))) onChange();
    },
  }, { onReconnect: () => {
    onChange();
    later('trials', POLL_MS, loadTrials);
  } });

  const scheme = matchMedia('(prefers-color-scheme: dark)');
  const restyle = () => {
    curves?.restyle();
    parcoords?.draw();
    bestPlot?.destroy();
    bestPlot = null;
    if (exp) renderBest();
  };
  scheme.addEventListener('change', restyle);
  start();

  return {
    unmount() {
      stream.close();
      abort.abort();
      for (const t of Object.values(timers)) clearTimeout(t);
      scheme.removeEventListener('change', restyle);
      resizer?.disconnect();
      bestPlot?.destroy();
      curves?.destroy();
      parcoords?.destroy();
      table?.destroy();
    },
  };
}
