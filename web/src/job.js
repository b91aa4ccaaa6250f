// The job page (#/jobs/<id>): state and progress, live charts of loss and accuracy (training and
// validation) and of any other series, steps/s and ETA, stop / resume / continue / delete, the
// spec, the checkpoints, a live tail of the log, the latest evaluation with its confusion matrix
// (evaluation.js), and the model panel (model.js) once there is a checkpoint. Live data comes
// from the job's event stream (/api/v1/jobs/<id>/events: state, scalar and log events).
import { api, enc, jobAction, mayChange, whyNot } from './api.js';
import { EventStream } from './live.js';
import { MetricChart } from './chart.js';
import { ModelPanel } from './model.js';
import { EvaluationPanel } from './evaluation.js';
import { h, setText, stateBadge, toast, dialog, throttler } from './dom.js';
import { canStop, canResume, canDelete, runAction, elapsedSeconds } from './jobs.js';
import * as fmt from './format.js';

const LOG_KEEP = 1000; // lines kept on the page
const SPLIT_ORDER = ['', 'train', 'validation', 'test'];
const SPLIT_COLOR = { '': '#2563eb', train: '#9333ea', validation: '#f97316', test: '#16a34a' };

// 'loss' -> ['', 'loss']; 'validation/accuracy' -> ['validation', 'accuracy'].
function splitTag(tag) {
  const i = tag.lastIndexOf('/');
  return i < 0 ? ['', tag] : [tag.slice(0, i), tag.slice(i + 1)];
}

function metricSeries(id, tags, metric) {
  return tags
    .filter((t) => splitTag(t)[1] === metric && SPLIT_ORDER.includes(splitTag(t)[0]))
    .sort((a, b) => SPLIT_ORDER.indexOf(splitTag(a)[0]) - SPLIT_ORDER.indexOf(splitTag(b)[0]))
    .map((t) => {
      const split = splitTag(t)[0];
      return { job: id, tag: t, label: split ? split : 'training', color: SPLIT_COLOR[split] };
    });
}

function isMain(tag) {
  const [split, metric] = splitTag(tag);
  return (metric === 'loss' || metric === 'accuracy') && SPLIT_ORDER.includes(split);
}

export function mountJob(root, id) {
  let job = null;
  const tags = new Set(['loss', 'accuracy']);
  let sps = 0; // steps per second, latest
  let logFrom = 1;
  let logLines = [];
  let busy = ''; // the action in flight
  let otherPicked = false; // the user chose the "other series" shown
  const timers = {};
  const later = throttler(timers); // later(name, ms, fn): dom.js
  const abort = new AbortController();

  const page = h('section', { class: 'page job-page', dataset: { jobId: id } });
  root.append(page);
  page.append(h('p', { class: 'muted loading' }, 'Loading job…'));

  const els = {};
  const charts = {};
  let stream = null;
  const panel = new ModelPanel(id, abort.signal);
  const evaluation = new EvaluationPanel(id, abort.signal);

  function build() {
    els.title = h('h1', {});
    els.badge = h('span', {});
    els.actions = h('div', { class: 'actions' });
    els.reason = h('p', { class: 'job-reason', hidden: true });
    els.preempted = h('p', { class: 'job-reason job-preempted muted', hidden: true });
    els.slurm = h('p', { class: 'job-reason job-slurm muted', hidden: true });
    els.experiment = h('p', { class: 'job-reason job-experiment muted', hidden: true });
    els.best = h('p', { class: 'job-reason job-best muted', hidden: true });
    els.bar = h('div', { class: 'progress-bar' });
    els.progressText = h('span', { class: 'stat-value' });
    els.percent = h('span', { class: 'stat-sub' });
    const stat = (label, key, sub) => {
      els[key] = h('span', { class: 'stat-value' }, fmt.DASH);
      if (sub) els[key + 'Sub'] = h('span', { class: 'stat-sub' });
      return h('div', { class: 'stat' }, h('span', { class: 'stat-label' }, label), els[key], sub ? els[key + 'Sub'] : null);
    };
    els.stats = h('div', { class: 'stats' },
      h('div', { class: 'stat stat-progress' },
        h('span', { class: 'stat-label' }, 'Global step'), els.progressText, els.percent,
        h('div', { class: 'progress' }, els.bar)),
      stat('Steps/s', 'sps', true),
      stat('ETA', 'eta', true),
      stat('Started', 'started', true),
      stat('Elapsed', 'elapsed', true),
      stat('Loss', 'loss', true),
      stat('Accuracy', 'accuracy', true));
    els.charts = h('div', { class: 'charts' });
    els.otherSelect = h('select', {
      class: 'input input-small', 'aria-label': 'Series',
      onchange: () => { otherPicked = true; setOther(els.otherSelect.value); },
    });
    els.otherWrap = h('div', { class: 'other-chart', hidden: true });
    els.log = h('pre', { class: 'log', tabindex: '0', 'aria-label': 'Log' });
    els.logCount = h('span', { class: 'muted' });
    els.checkpoints = h('div', { class: 'table-wrap' });
    els.workersTitle = h('h2', {}, 'Workers');
    els.ranks = h('div', { class: 'table-wrap' });
    els.attempts = h('div', { class: 'table-wrap' });
    els.workers = h('section', { class: 'card workers', hidden: true, 'aria-label': 'Workers' },
      h('div', { class: 'card-head' }, els.workersTitle), els.ranks, els.attempts);
    els.spec = h('pre', { class: 'spec' });
    els.specSummary = h('span', { class: 'muted' });
    page.replaceChildren(
      h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/jobs' }, 'Jobs'), ' / ', h('span', { class: 'mono' }, id)),
      h('div', { class: 'page-head' },
        h('div', { class: 'title-row' }, els.title, els.badge),
        els.actions),
      els.reason,
      els.preempted,
      els.experiment,
      els.best,
      els.slurm,
      els.stats,
      els.charts,
      els.otherWrap,
      evaluation.el,
      panel.el,
      els.workers,
      h('div', { class: 'grid2' },
        h('section', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', {}, 'Log'), els.logCount), els.log),
        h('section', { class: 'card' }, h('div', { class: 'card-head' }, h('h2', {}, 'Checkpoints')), els.checkpoints)),
      h('details', { class: 'card spec-card' },
        h('summary', {}, h('h2', {}, 'Spec'), ' ', els.specSummary),
        els.spec,
        h('a', { class: 'btn btn-small', href: `#/submit?from=${enc(id)}` }, 'Submit a copy…')));
    charts.loss = new MetricChart(els.charts, { title: 'Loss', series: metricSeries(id, [...tags], 'loss') });
    charts.accuracy = new MetricChart(els.charts, { title: 'Accuracy', series: metricSeries(id, [...tags], 'accuracy') });
    charts.loss.el.dataset.chart = 'loss';
    charts.accuracy.el.dataset.chart = 'accuracy';
  }

  // The chart of the other series (learning rate, steps/s, ...), one at a time.
  function setOther(tag) {
    if (!charts.other) {
      charts.other = new MetricChart(els.otherWrap, { title: 'Other series', series: [], height: 200 });
      charts.other.el.dataset.chart = 'other';
      charts.other.el.querySelector('.chart-head h3').after(els.otherSelect);
    }
    charts.other.setSeries([{ job: id, tag, label: tag }]);
  }

  // Adds series names; each chart gets the series it lacks (idempotent, cheap when nothing is new).
  function applyTags(list) {
    for (const t of list) tags.add(t);
    // The splits with an evaluation: each records <split>/log_loss, a regression job's
    // <split>/rmse (evaluation.js asks for no other).
    evaluation.setSplits(['validation', 'test', 'train'].filter((s) => tags.has(`${s}/log_loss`) || tags.has(`${s}/rmse`)));
    for (const metric of ['loss', 'accuracy']) {
      const want = metricSeries(id, [...tags], metric);
      if (want.map((s) => s.tag).join() !== charts[metric].series.map((s) => s.tag).join()) charts[metric].setSeries(want);
    }
    const others = [...tags].filter((t) => !isMain(t)).sort();
    const shown = [...els.otherSelect.options].map((o) => o.value);
    if (others.join() === shown.join()) return;
    els.otherWrap.hidden = others.length === 0;
    const current = els.otherSelect.value;
    els.otherSelect.replaceChildren(...others.map((t) => h('option', { value: t }, t)));
    if (others.length) {
      // Steps/s unless the user picked another series (or there is none).
      const pick = otherPicked && others.includes(current) ? current
        : ['global_step/sec', 'learning_rate'].find((t) => others.includes(t)) || others[0];
      els.otherSelect.value = pick;
      if (pick !== current) setOther(pick);
    }
  }

  function renderJob() {
    if (!job) return;
    page.dataset.state = job.state;
    setText(els.title, job.name);
    document.title = `${job.name} · trainingd`;
    els.badge.replaceChildren(stateBadge(job.state));
    // A job a quota holds says which; a preempted one names its preemptor in its reason.
    const reason = job.error || job.waiting_reason || job.reason;
    els.reason.hidden = !reason;
    els.reason.className = `job-reason ${job.error ? 'error' : 'muted'}`;
    setText(els.reason, reason ? (job.error ? `Error: ${job.error}` : reason) : '');
    renderPreemptedBy();
    // The checkpoint export and serving take by default (docs/models.md#which-checkpoint).
    const best = job.best_checkpoint;
    els.best.hidden = !best;
    els.best.dataset.step = best ? String(best.step) : '';
    setText(els.best, best ? `Best checkpoint: step ${fmt.int(best.step)}, ${best.metric} ${fmt.byTag(best.metric, best.value)} (exported and served by default)` : '');
    renderProgress();
    renderActions();
    renderSlurm();
    renderTrial();
    renderWorkers();
    if (job.spec) {
      const text = JSON.stringify(job.spec, null, 2);
      setText(els.spec, text);
      const sp = job.spec;
      const model = typeof sp.model === 'string' ? sp.model : sp.model && (sp.model.preset || `${(sp.model.layers || []).length} layers`);
      const opt = sp.optimizer || {};
      const lr = typeof opt.learning_rate === 'number' ? opt.learning_rate : opt.learning_rate && opt.learning_rate.type;
      setText(els.specSummary, `${model}, ${opt.type || 'adam'} ${lr ?? ''}, batch ${sp.batch_size}, ${sp.max_steps ? fmt.int(sp.max_steps) + ' steps' : sp.num_epochs + ' epochs'}`);
    }
  }

  // The job that preempted this one (the last one, once it runs again), as a link to its page.
  function renderPreemptedBy() {
    const by = job.preempted_by;
    els.preempted.hidden = !by;
    if (!by) return;
    const now = job.state === 'preempted' || (job.state === 'stopping' && /^preempted by /.test(job.reason || ''));
    const link = h('a', { href: `#/jobs/${enc(by)}`, class: 'mono', dataset: { field: 'preempted_by' } }, by);
    els.preempted.replaceChildren(now ? 'Preempted by job ' : 'Last preempted by job ', link);
  }

  // A job on Slurm: its Slurm job id, what Slurm says of it (why it waits) and where it runs.
  function renderSlurm() {
    const s = job.executor === 'slurm' ? job.slurm : null;
    els.slurm.hidden = !s;
    if (!s) return;
    const why = s.reason && s.reason !== 'None' ? ` (${s.reason})` : '';
    const where = s.nodes ? ` on ${s.nodes}` : '';
    const requeued = s.restarts ? `, requeued ${s.restarts}×` : '';
    setText(els.slurm, `Slurm job ${s.job_id}: ${s.state}${why}${where}${requeued}`);
  }

  // A trial of an experiment: which, its index and hyperparameters, and the way back to it.
  function renderTrial() {
    const x = job.experiment;
    els.experiment.hidden = !x;
    if (!x || els.experiment.dataset.key === JSON.stringify(x)) return;
    els.experiment.dataset.key = JSON.stringify(x);
    const hp = Object.entries(x.hyperparameters || {})
      .map(([k, v]) => `${k} = ${typeof v === 'number' ? fmt.metric(v) : JSON.stringify(v)}`).join(', ');
    els.experiment.replaceChildren(`Trial ${x.trial} of experiment `,
      h('a', { href: `#/experiments/${enc(x.id)}`, class: 'mono', dataset: { experiment: x.id } }, x.id),
      hp ? `: ${hp}` : '');
  }

  // A data-parallel job: every rank's latest step while it runs, and its attempts (the daemon
  // relaunches it from its latest checkpoint when a rank dies or stalls).
  function renderWorkers() {
    const d = job.distributed;
    els.workers.hidden = !d;
    if (!d) return;
    // (One process on a cluster has attempts too: a requeue starts another.)
    setText(els.workersTitle, d.workers > 1 ? `Workers: ${d.workers} ranks` : 'Attempts');
    els.ranks.hidden = d.workers <= 1;
    els.ranks.replaceChildren(d.ranks.length
      ? h('table', { class: 'table-compact' },
        h('thead', {}, h('tr', {}, ['Rank', 'Compute (ms/step)', 'Allreduce (ms/step)'].map((t) => h('th', { scope: 'col', class: 'num' }, t)))),
        h('tbody', {}, d.ranks.map((r) => h('tr', {},
          h('td', { class: 'num' }, r.rank === 0 ? '0 (chief)' : String(r.rank)),
          h('td', { class: 'num' }, r.compute_ms.toFixed(2)),
          h('td', { class: 'num' }, r.allreduce_ms.toFixed(2))))))
      : h('p', { class: 'muted' }, job.state === 'running' ? 'Starting the ranks…' : 'Not running.'));
    els.attempts.replaceChildren(d.attempts.length
      ? h('table', { class: 'table-compact' },
        h('thead', {}, h('tr', {}, ['Attempt', 'From step', 'Started', 'Ended', 'How it ended'].map((t, i) => h('th', { scope: 'col', class: i < 2 ? 'num' : null }, t)))),
        h('tbody', {}, d.attempts.slice().reverse().map((a) => h('tr', { dataset: { attempt: String(a.attempt) } },
          h('td', { class: 'num' }, String(a.attempt)),
          h('td', { class: 'num' }, fmt.int(a.from_step)),
          h('td', { title: fmt.absolute(a.started_at) }, fmt.relative(a.started_at)),
          h('td', { title: a.ended_at ? fmt.absolute(a.ended_at) : '' }, a.ended_at ? fmt.relative(a.ended_at) : 'running'),
          h('td', {}, a.end || '')))))
      : h('p', { class: 'muted' }, 'No attempt yet.'));
    // The ranks' times change every second: the job is read again while it runs.
    if (job.state === 'running') later('job', 3000, loadJob);
  }

  function renderProgress() {
    const has = job.max_steps > 0;
    const frac = has ? Math.min(1, job.global_step / job.max_steps) : 0;
    page.dataset.globalStep = String(job.global_step);
    setText(els.progressText, has ? `${fmt.int(job.global_step)} / ${fmt.int(job.max_steps)}` : fmt.int(job.global_step));
    setText(els.percent, has ? `${(frac * 100).toFixed(frac < 0.1 ? 1 : 0)}%` : '');
    els.bar.style.width = `${(frac * 100).toFixed(2)}%`;
    els.bar.className = `progress-bar state-bg-${job.state}`;
    const running = job.state === 'running';
    const batch = job.spec ? job.spec.batch_size : 0;
    setText(els.sps, running && sps > 0 ? fmt.rate(sps) : fmt.DASH);
    setText(els.spsSub, running ? (sps > 0 && batch ? `${fmt.rate(sps * batch)} examples/s` : '') : 'not running');
    const eta = running && sps > 0 && has ? Math.max(0, job.max_steps - job.global_step) / sps : NaN;
    setText(els.eta, job.state === 'completed' ? 'done' : fmt.duration(eta));
    setText(els.etaSub, Number.isFinite(eta) ? `at ${fmt.clock(Date.now() / 1000 + eta)}` : '');
    tick();
    const ls = job.latest_scalars || {};
    setText(els.loss, fmt.metric(ls.loss));
    setText(els.lossSub, ['validation/loss', 'test/loss'].filter((t) => Number.isFinite(ls[t]))
      .map((t) => `${t.startsWith('validation') ? 'val' : 'test'} ${fmt.metric(ls[t])}`).join(' · '));
    setText(els.accuracy, fmt.percent(ls.accuracy));
    const acc = ['validation/accuracy', 'test/accuracy'].filter((t) => Number.isFinite(ls[t]))
      .map((t) => `${t.startsWith('validation') ? 'val' : 'test'} ${fmt.percent(ls[t])}`);
    setText(els.accuracySub, acc.join(' · '));
  }

  function tick() {
    if (!job) return;
    const now = Date.now() / 1000;
    setText(els.started, job.started_at ? fmt.relative(job.started_at, now) : job.state === 'queued' ? 'queued' : fmt.DASH);
    els.started.title = fmt.absolute(job.started_at);
    setText(els.startedSub, (job.started_at ? `at ${fmt.clock(job.started_at)}` : `created ${fmt.relative(job.created_at, now)}`) +
      (job.owner ? ` · by ${job.owner}` : ''));
    setText(els.elapsed, fmt.duration(elapsedSeconds(job, now)));
    setText(els.elapsedSub, job.finished_at && !['running', 'stopping', 'queued'].includes(job.state)
      ? `until ${fmt.clock(job.finished_at)}` : job.state === 'running' ? 'this run' : '');
  }

  function renderActions() {
    const s = job.state;
    const focused = els.actions.contains(document.activeElement) ? document.activeElement.dataset.action : '';
    const may = mayChange(job);
    const btn = (action, label, enabled, kind, fn) => h('button', {
      type: 'button', class: `btn ${kind || ''}`, disabled: !enabled || !may || Boolean(busy), dataset: { action },
      title: may ? undefined : whyNot(job),
      onclick: fn || (() => act(action)),
    }, busy === action ? `${label}…` : label);
    els.actions.replaceChildren(...[
      canStop(s) || s === 'stopping' ? btn('stop', s === 'stopping' ? 'Stopping' : 'Stop', canStop(s)) : null,
      canResume(s) ? btn('resume', 'Resume', true, 'btn-primary') : null,
      s === 'completed' || canResume(s) ? btn('continue', 'Continue…', true, '', continueDialog) : null,
      h('a', { class: 'btn', href: `#/compare?jobs=${enc(id)}` }, 'Compare'),
      btn('delete', 'Delete', canDelete(s), 'btn-ghost-danger'),
    ].filter(Boolean));
    // Keyboard users keep their place while the buttons follow the state.
    if (focused) {
      const again = els.actions.querySelector(`[data-action="${focused}"]:not([disabled])`) || els.actions.querySelector('button:not([disabled]), a');
      if (again) again.focus();
    }
  }

  async function act(action, body) {
    busy = action;
    renderActions();
    let result;
    if (body) {
      try {
        result = await jobAction(id, action, body);
        toast(`${job.name} continues to step ${fmt.int(body.max_steps)}`);
      } catch (e) {
        toast(`Could not ${action} ${job.name}: ${e.message}`, 'error');
      }
    } else {
      result = await runAction(job, action);
    }
    busy = '';
    if (result === null) {
      location.hash = '#/jobs';
      return;
    }
    if (result) job = { ...job, ...result };
    renderJob();
  }

  async function continueDialog() {
    const input = h('input', {
      type: 'number', class: 'input', min: job.global_step + 1, step: 1, required: true,
      value: Math.max(job.max_steps * 2, job.global_step + 1000), 'aria-label': 'New max_steps', name: 'max_steps',
    });
    const v = await dialog({
      title: `Continue ${job.name}`,
      body: [h('p', {}, `From its latest checkpoint (now at step ${fmt.int(job.global_step)}) until max_steps:`), input],
      buttons: [{ label: 'Cancel', value: 'cancel' }, { label: 'Continue', value: 'ok', kind: 'primary' }],
    });
    if (v === 'ok') act('resume', { max_steps: Math.floor(Number(input.value)) });
  }

  async function loadJob() {
    try {
      job = await api(`/jobs/${enc(id)}`, { signal: abort.signal });
      const gs = job.latest_scalars && job.latest_scalars['global_step/sec'];
      if (Number.isFinite(gs)) sps = gs;
      if (els.title) renderJob();
      return true;
    } catch (e) {
      if (e.name === 'AbortError') return false;
      if (e.status === 404) {
        page.replaceChildren(h('div', { class: 'empty' }, h('p', {}, `There is no job ${id}. It may have been deleted.`),
          h('a', { class: 'btn', href: '#/jobs' }, 'All jobs')));
        return false;
      }
      if (!els.title) {
        page.replaceChildren(h('div', { class: 'empty' }, h('p', { class: 'error' }, `Could not load the job: ${e.message}`),
          h('button', { type: 'button', class: 'btn', onclick: start }, 'Try again')));
      }
      return false;
    }
  }

  async function fetchTags() {
    try {
      return (await api(`/jobs/${enc(id)}/scalars/tags`, { signal: abort.signal })).tags;
    } catch {
      return []; // the charts show their own errors
    }
  }

  async function loadTags() {
    applyTags(await fetchTags());
  }

  async function loadCheckpoints() {
    try {
      const r = await api(`/jobs/${enc(id)}/checkpoints`, { signal: abort.signal });
      const list = r.checkpoints.slice().reverse();
      panel.setCheckpoints(r.checkpoints);
      els.checkpoints.replaceChildren(list.length
        ? h('table', { class: 'table-compact' },
          h('thead', {}, h('tr', {}, ['Step', 'Name', 'Size', 'Saved'].map((t) => h('th', { scope: 'col' }, t)))),
          h('tbody', {}, list.map((c) => h('tr', {},
            h('td', { class: 'num' }, fmt.int(c.global_step)),
            h('td', { class: 'mono' }, c.name),
            h('td', { class: 'num' }, fmt.bytes(c.bytes)),
            h('td', { title: fmt.absolute(c.mtime) }, fmt.relative(c.mtime))))))
        : h('p', { class: 'muted' }, 'No checkpoints yet.'));
    } catch (e) {
      if (e.name !== 'AbortError') els.checkpoints.replaceChildren(h('p', { class: 'error' }, e.message));
    }
  }

  // The log by line number: everything new since the last call (the page keeps the tail).
  // One call at a time; a call asked for meanwhile runs after it.
  let logBusy = false;
  let logAgain = false;
  async function loadLog() {
    if (logBusy) {
      logAgain = true;
      return;
    }
    logBusy = true;
    const first = logFrom === 1;
    try {
      for (let i = 0; i < 50; i++) {
        const r = await api(`/jobs/${enc(id)}/logs?from=${logFrom}&limit=10000`, { signal: abort.signal });
        if (!r.lines.length) break;
        const atBottom = els.log.scrollHeight - els.log.scrollTop - els.log.clientHeight < 24;
        logLines = logLines.concat(r.lines).slice(-LOG_KEEP);
        logFrom = r.next_from;
        els.log.textContent = logLines.map((l) => l.text).join('\n');
        setText(els.logCount, `${fmt.int(logFrom - 1)} lines${logFrom - 1 > LOG_KEEP ? `, last ${fmt.int(LOG_KEEP)} shown` : ''}`);
        if (atBottom || first) els.log.scrollTop = els.log.scrollHeight;
        if (r.lines.length < 10000) break;
      }
      if (!logLines.length) setText(els.log, 'No log lines yet.');
    } catch (e) {
      if (e.name !== 'AbortError') setText(els.logCount, `could not load: ${e.message}`);
    }
    logBusy = false;
    if (logAgain) {
      logAgain = false;
      loadLog();
    }
  }

  // After a reconnect or a restart from a checkpoint: everything from the daemon again.
  function reloadCharts() {
    for (const c of Object.values(charts)) c.reload(false, true);
  }

  function onState(d) {
    if (!job) return;
    const was = job.state;
    const wasStep = job.global_step;
    // (A job that went back to a checkpoint has a lower step: loadJob below brings it.)
    job = { ...job, state: d.state, global_step: Math.max(d.global_step, job.global_step), max_steps: d.max_steps, error: d.error || null, reason: d.reason || null };
    if (d.state !== 'running') sps = 0;
    renderJob();
    // Slurm's state, reason or nodes changed: the job says which.
    if (d.state === was && job.executor === 'slurm') later('job', 300, loadJob);
    if (d.state !== was) {
      // Timestamps, latest values and checkpoints change with the state; a job that runs again
      // may have gone back to a checkpoint, so its series are reloaded too.
      later('job', 300, loadJob);
      later('checkpoints', 800, loadCheckpoints);
      later('evaluation', 1500, () => evaluation.load());
      if (d.state === 'running' && wasStep > 0) later('charts', 1500, reloadCharts);
    }
  }

  function onScalar(d) {
    if (!job) return;
    if (!tags.has(d.tag)) applyTags([d.tag]);
    for (const c of Object.values(charts)) c.append(id, d.tag, d.step, d.value);
    if (d.step >= job.global_step) {
      job.global_step = d.step;
      job.latest_scalars = { ...job.latest_scalars, [d.tag]: d.value };
    }
    if (d.tag === 'global_step/sec') sps = d.value;
    // An evaluation's whole record (its confusion matrix) is stored right after its scalars.
    if (/\/(log_loss|rmse)$/.test(d.tag)) later('evaluation', 1500, () => evaluation.load());
    later('progress', 250, renderProgress);
  }

  async function start() {
    // The series names first, so each chart is made with all its series and fetches them once.
    const [ok, tagList] = await Promise.all([loadJob(), fetchTags()]);
    if (!ok) return;
    tagList.forEach((t) => tags.add(t));
    if (!els.title) {
      build();
      renderJob();
    }
    applyTags(tagList);
    loadCheckpoints();
    loadLog();
    evaluation.load();
    if (!stream) {
      stream = new EventStream(`/jobs/${enc(id)}/events`, {
        state: onState,
        scalar: onScalar,
        log: (d) => {
          later('log', 250, loadLog);
          if (/checkpoint/i.test(d.text || '')) later('checkpoints', 800, loadCheckpoints);
          if (/^INFO:trainingd:attempt \d+ of|^WARNING:trainingd:attempt \d+/.test(d.text || '')) later('job', 300, loadJob);
        },
      }, {
        onReconnect: () => {
          loadJob();
          loadTags();
          loadCheckpoints();
          loadLog();
          evaluation.load();
          reloadCharts();
        },
      });
    }
  }

  const ticker = setInterval(tick, 1000);
  const scheme = matchMedia('(prefers-color-scheme: dark)');
  const restyle = () => { for (const c of Object.values(charts)) c.restyle(); };
  scheme.addEventListener('change', restyle);
  start();

  return {
    unmount() {
      abort.abort();
      if (stream) stream.close();
      clearInterval(ticker);
      for (const t of Object.values(timers)) clearTimeout(t);
      for (const c of Object.values(charts)) c.destroy();
      panel.destroy();
      scheme.removeEventListener('change', restyle);
      document.title = 'trainingd';
    },
  };
}
