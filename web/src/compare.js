// Compare runs (#/compare?jobs=a,b&tag=validation/accuracy): pick jobs, see one series of each on
// one chart, with each run's last and best value. Running jobs' series are refetched every few
// seconds; the job list's event stream keeps the picker's states current.
import { api, enc, listJobs } from './api.js';
import { EventStream } from './live.js';
import { MetricChart, colorAt } from './chart.js';
import { h, stateBadge } from './dom.js';
import * as fmt from './format.js';

const REFRESH_MS = 3000;
const PREFERRED = ['validation/accuracy', 'accuracy', 'validation/loss', 'loss'];

export function mountCompare(root, params) {
  let jobs = [];
  let selected = (params.get('jobs') || '').split(',').filter(Boolean);
  let tag = params.get('tag') || '';
  const tagsByJob = new Map();
  const abort = new AbortController();
  let refreshTimer = 0;
  let jobsTimer = 0;

  const search = h('input', { type: 'search', class: 'input', placeholder: 'Filter by name or id', 'aria-label': 'Filter jobs', oninput: renderPicker });
  const list = h('ul', { class: 'picks' });
  const tagSelect = h('select', { class: 'input', id: 'compare-tag', onchange: () => { tag = tagSelect.value; update(); } });
  const summary = h('div', { class: 'table-wrap' });
  const chartBox = h('div', {});
  const hint = h('p', { class: 'empty' }, 'Pick two or more jobs on the left to compare them.');
  root.append(h('section', { class: 'page compare-page' },
    h('div', { class: 'page-head' }, h('h1', {}, 'Compare runs')),
    h('div', { class: 'compare-layout' },
      h('aside', { class: 'card picker', 'aria-label': 'Jobs to compare' },
        h('div', { class: 'card-head' }, h('h2', {}, 'Jobs'), h('button', { type: 'button', class: 'btn btn-small', onclick: () => { selected = []; update(); } }, 'Clear')),
        search, list),
      h('div', { class: 'compare-main' },
        h('div', { class: 'toolbar' }, h('label', { for: 'compare-tag' }, 'Series'), tagSelect),
        chartBox, hint, summary))));
  const chart = new MetricChart(chartBox, { title: 'Series', series: [], height: 320, emptyText: 'No points for this series yet.' });
  chart.el.dataset.chart = 'compare';

  function colorOf(id) {
    return colorAt(Math.max(0, selected.indexOf(id)));
  }

  function renderPicker() {
    const focused = list.contains(document.activeElement) ? document.activeElement.value : null;
    const q = search.value.trim().toLowerCase();
    const shown = jobs.filter((j) => !q || j.name.toLowerCase().includes(q) || j.id.includes(q));
    list.replaceChildren(...shown.map((j) => {
      const on = selected.includes(j.id);
      const box = h('input', {
        type: 'checkbox', checked: on, value: j.id, 'aria-label': `${j.name} (${j.id})`,
        onchange: () => {
          selected = box.checked ? [...selected, j.id] : selected.filter((x) => x !== j.id);
          update();
        },
      });
      return h('li', { class: on ? 'on' : '' }, h('label', {},
        box,
        h('span', { class: 'swatch', style: { background: on ? colorOf(j.id) : 'transparent' } }),
        h('span', { class: 'pick-name' }, j.name, h('small', { class: 'mono muted' }, j.id)),
        stateBadge(j.state)));
    }));
    if (!shown.length) list.append(h('li', { class: 'muted' }, jobs.length ? 'No job matches.' : 'No jobs yet.'));
    if (focused) {
      const again = [...list.querySelectorAll('input')].find((b) => b.value === focused);
      if (again) again.focus();
    }
  }

  async function loadTags() {
    await Promise.all(selected.filter((id) => !tagsByJob.has(id)).map(async (id) => {
      try {
        const r = await api(`/jobs/${enc(id)}/scalars/tags`, { signal: abort.signal });
        tagsByJob.set(id, r.tags);
      } catch (e) {
        if (e.name !== 'AbortError') tagsByJob.set(id, []);
      }
    }));
  }

  async function update() {
    history.replaceState(null, '', `#/compare?jobs=${selected.map(enc).join(',')}${tag ? `&tag=${enc(tag)}` : ''}`);
    renderPicker();
    await loadTags();
    const all = new Set();
    for (const id of selected) for (const t of tagsByJob.get(id) || []) all.add(t);
    const options = [...all].sort();
    if (!tag || !all.has(tag)) tag = PREFERRED.find((t) => all.has(t)) || options[0] || tag;
    tagSelect.replaceChildren(...options.map((t) => h('option', { value: t }, t)));
    if (tag && !all.has(tag)) tagSelect.append(h('option', { value: tag }, tag));
    tagSelect.value = tag;
    hint.hidden = selected.length >= 2;
    const byId = new Map(jobs.map((j) => [j.id, j]));
    chart.setTitle(tag || 'Series');
    await chart.setSeries(tag ? selected.map((id) => ({ job: id, tag, label: (byId.get(id) || { name: id }).name, color: colorOf(id) })) : []);
    renderSummary();
    scheduleRefresh();
  }

  function renderSummary() {
    const lower = /loss$/.test(tag);
    const byId = new Map(jobs.map((j) => [j.id, j]));
    const rows = chart.series.map((s) => {
      const pts = s.points;
      const last = pts[pts.length - 1];
      let best = null;
      for (const p of pts) {
        const v = lower ? p.min : p.max;
        if (best === null || (lower ? v < best.v : v > best.v)) best = { v, step: p.step };
      }
      const j = byId.get(s.job);
      return h('tr', {},
        h('td', {}, h('span', { class: 'swatch', style: { background: s.color } }), h('a', { href: `#/jobs/${enc(s.job)}` }, s.label)),
        h('td', {}, j ? stateBadge(j.state) : ''),
        h('td', { class: 'num' }, last ? fmt.int(last.step) : fmt.DASH),
        h('td', { class: 'num' }, last ? fmt.byTag(tag, last.value) : fmt.DASH),
        h('td', { class: 'num' }, best ? `${fmt.byTag(tag, best.v)} @ ${fmt.int(best.step)}` : fmt.DASH));
    });
    summary.replaceChildren(rows.length ? h('table', { class: 'table-compact' },
      h('thead', {}, h('tr', {}, ['Job', 'State', 'Last step', `Last ${tag}`, `Best (${lower ? 'lowest' : 'highest'})`].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, rows)) : '');
  }

  function scheduleRefresh() {
    clearTimeout(refreshTimer);
    const byId = new Map(jobs.map((j) => [j.id, j]));
    if (!selected.some((id) => ['running', 'stopping', 'queued'].includes((byId.get(id) || {}).state))) return;
    refreshTimer = setTimeout(async () => {
      if (document.visibilityState === 'visible') {
        const missing = selected.filter((id) => !(tagsByJob.get(id) || []).includes(tag));
        for (const id of missing) tagsByJob.delete(id);
        if (missing.length) await update();
        else {
          await chart.reload();
          renderSummary();
        }
      }
      scheduleRefresh();
    }, REFRESH_MS);
  }

  async function loadJobs() {
    try {
      jobs = await listJobs(abort.signal);
      renderPicker();
    } catch (e) {
      if (e.name !== 'AbortError') list.replaceChildren(h('li', { class: 'error' }, `Could not load the jobs: ${e.message}`));
    }
  }

  const stream = new EventStream('/events', {
    job: (d) => {
      const j = jobs.find((x) => x.id === d.id);
      if (d.state === 'deleted') {
        jobs = jobs.filter((x) => x.id !== d.id);
        renderPicker();
      } else if (j) {
        if (j.state !== d.state) {
          j.state = d.state;
          renderPicker();
          scheduleRefresh();
        }
      } else {
        if (!jobsTimer) {
          jobsTimer = setTimeout(() => {
            jobsTimer = 0;
            loadJobs();
          }, 300);
        }
      }
    },
  }, { onReconnect: loadJobs });

  const scheme = matchMedia('(prefers-color-scheme: dark)');
  const restyle = () => chart.restyle();
  scheme.addEventListener('change', restyle);
  loadJobs().then(update);

  return {
    unmount() {
      abort.abort();
      stream.close();
      clearTimeout(refreshTimer);
      clearTimeout(jobsTimer);
      scheme.removeEventListener('change', restyle);
      chart.destroy();
    },
  };
}
