// TrialTable: an experiment's trials, one page at a time, sorted by the daemon
// (GET /experiments/<id>/trials?sort=&order=&offset=&limit=): index, state, metric, step and a
// column per hyperparameter sort; restarts and reason do not (the API sorts by neither). Only
// PAGE rows are ever in the DOM, so 1,000 trials or 100,000 cost the same to show. The table keeps
// data-sort, data-order, data-offset, data-total and data-version (bumped on each render) for
// tests.
import { api, enc } from './api.js';
import { h, setText } from './dom.js';
import * as fmt from './format.js';

export const PAGE = 50;

// A hyperparameter's value as the table shows it.
export function paramText(range, v) {
  if (typeof v === 'number') return range && range.type === 'int' ? fmt.int(v) : fmt.metric(v);
  if (typeof v === 'string') return v;
  return v === undefined ? fmt.DASH : JSON.stringify(v);
}

export class TrialTable {
  // experiment: the experiment (its id, metric, mode and spec.space).
  constructor(container, experiment) {
    this.id = experiment.id;
    this.metric = experiment.metric;
    this.maximize = experiment.mode !== 'min';
    this.space = (experiment.spec && experiment.spec.space) || {};
    this.sort = 'metric';
    this.order = this.maximize ? 'desc' : 'asc';
    this.offset = 0;
    this.total = 0;
    this.version = 0;
    this.abort = null;
    this.destroyed = false;

    const paths = Object.keys(this.space);
    this.columns = [
      { key: 'index', label: '#', sort: 'index', cls: 'num' },
      { key: 'state', label: 'State', sort: 'state' },
      { key: 'metric', label: this.metric, sort: 'metric', cls: 'num' },
      { key: 'rung', label: 'Rung', cls: 'num' },
      { key: 'step', label: 'Step', sort: 'global_step', cls: 'num' },
      ...paths.map((p) => ({ key: `hp:${p}`, label: p, sort: p, cls: 'num mono-num', path: p })),
      { key: 'restarts', label: 'Restarts', cls: 'num' },
      { key: 'reason', label: 'Reason' },
    ];
    this.headRow = h('tr');
    this.tbody = h('tbody');
    this.table = h('table', { class: 'table-compact trials-table', dataset: { version: '0' } },
      h('caption', { class: 'visually-hidden' }, 'Trials; the column headers sort the table'),
      h('thead', {}, this.headRow), this.tbody);
    this.range = h('span', { class: 'muted pager-range', 'aria-live': 'polite' });
    this.prev = h('button', { type: 'button', class: 'btn btn-small', dataset: { page: 'prev' }, onclick: () => this.go(this.offset - PAGE) }, '‹ Prev');
    this.next = h('button', { type: 'button', class: 'btn btn-small', dataset: { page: 'next' }, onclick: () => this.go(this.offset + PAGE) }, 'Next ›');
    this.error = h('p', { class: 'error', hidden: true, role: 'alert' });
    this.el = h('section', { class: 'card trials-card', 'aria-label': 'Trials' },
      h('div', { class: 'card-head' }, h('h2', {}, 'Trials'),
        h('div', { class: 'pager' }, this.range, this.prev, this.next)),
      this.error,
      h('div', { class: 'table-wrap' }, this.table));
    container.append(this.el);
    this.renderHead();
  }

  renderHead() {
    const focused = this.headRow.contains(document.activeElement) ? document.activeElement.dataset.sort : null;
    this.headRow.replaceChildren(...this.columns.map((c) => {
      const on = c.sort && c.sort === this.sort;
      const th = h('th', { scope: 'col', class: `${c.cls && c.cls.includes('num') ? 'num' : 'txt'}`, 'aria-sort': on ? (this.order === 'asc' ? 'ascending' : 'descending') : undefined });
      if (!c.sort) {
        th.append(c.label);
        return th;
      }
      th.append(h('button', {
        type: 'button', class: 'sort-button', dataset: { sort: c.sort }, title: `Sort by ${c.label}`,
        onclick: () => this.sortBy(c.sort),
      }, c.label, h('span', { class: 'sort-arrow', 'aria-hidden': 'true' }, on ? (this.order === 'asc' ? '▲' : '▼') : '')));
      return th;
    }));
    if (focused) this.headRow.querySelector(`[data-sort="${CSS.escape(focused)}"]`)?.focus();
  }

  // A column's first click sorts it best first for the metric, ascending otherwise; a second
  // click reverses.
  sortBy(key) {
    if (this.sort === key) this.order = this.order === 'asc' ? 'desc' : 'asc';
    else {
      this.sort = key;
      this.order = key === 'metric' && this.maximize ? 'desc' : 'asc';
    }
    this.offset = 0;
    this.renderHead();
    return this.load();
  }

  go(offset) {
    this.offset = Math.max(0, Math.min(offset, Math.max(0, this.total - 1)));
    this.offset -= this.offset % PAGE;
    return this.load();
  }

  // Fetches and shows the current page; a call cancels the one in flight.
  async load() {
    this.abort?.abort();
    const abort = (this.abort = new AbortController());
    this.table.dataset.loading = 'true';
    try {
      const q = `sort=${enc(this.sort)}&order=${this.order}&offset=${this.offset}&limit=${PAGE}`;
      const r = await api(`/experiments/${enc(this.id)}/trials?${q}`, { signal: abort.signal });
      if (this.destroyed || abort.signal.aborted) return;
      this.total = r.total;
      if (this.offset > 0 && this.offset >= r.total) {
        this.go(r.total - 1);
        return;
      }
      this.error.hidden = true;
      this.render(r.trials);
    } catch (e) {
      if (e.name === 'AbortError') return;
      this.error.hidden = false;
      setText(this.error, `Could not load the trials: ${e.message}`);
      delete this.table.dataset.loading;
    }
  }

  render(trials) {
    this.tbody.replaceChildren(...trials.map((t) => this.row(t)));
    const end = Math.min(this.total, this.offset + trials.length);
    setText(this.range, this.total ? `${fmt.int(this.offset + 1)}–${fmt.int(end)} of ${fmt.int(this.total)}` : 'No trials yet');
    this.prev.disabled = this.offset === 0;
    this.next.disabled = end >= this.total;
    const d = this.table.dataset;
    d.sort = this.sort;
    d.order = this.order;
    d.offset = String(this.offset);
    d.total = String(this.total);
    d.rows = String(trials.length);
    delete d.loading;
    d.version = String(++this.version);
  }

  row(t) {
    const cells = this.columns.map((c) => {
      switch (c.key) {
        case 'index':
          return h('td', { class: 'num' }, h('a', { href: `#/jobs/${enc(t.job_id)}`, title: `Trial ${t.index}: job ${t.job_id}` }, `#${t.index}`));
        case 'state':
          return h('td', {}, h('span', { class: `badge state-${t.state}`, dataset: { state: t.state } }, t.state));
        case 'metric':
          return h('td', { class: 'num', title: t.rung_metrics.length > 1 ? `by rung: ${t.rung_metrics.map((m) => fmt.byTag(this.metric, m)).join(', ')}` : undefined },
            fmt.byTag(this.metric, t.metric));
        case 'rung':
          return h('td', { class: 'num' }, t.rung === null ? fmt.DASH : String(t.rung));
        case 'step':
          return h('td', { class: 'num' }, fmt.int(t.global_step));
        case 'restarts':
          return h('td', { class: 'num' }, String(t.restarts));
        case 'reason':
          return h('td', { class: 'reason', title: t.reason || undefined }, t.reason || '');
        default:
          return h('td', { class: 'num' }, paramText(this.space[c.path], t.hyperparameters[c.path]));
      }
    });
    return h('tr', { dataset: { trial: String(t.index), state: t.state } }, cells);
  }

  destroy() {
    this.destroyed = true;
    this.abort?.abort();
    this.el.remove();
  }
}
