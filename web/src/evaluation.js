// The job page's evaluation card: a split's latest evaluation (GET /api/v1/jobs/<id>/evaluation)
// -- its metrics, each class's precision, recall, F1 and support, and the confusion matrix as a
// heat map (rows: the true class, columns: the predicted one; class names on both axes; each
// cell shaded by its share of its row, so the diagonal is each class's recall).
import { api, enc } from './api.js';
import { h, setText } from './dom.js';
import * as fmt from './format.js';

const SPLITS = ['validation', 'test', 'train'];
const METRICS = [
  ['accuracy', 'Accuracy'], ['precision_macro', 'Precision (macro)'], ['recall_macro', 'Recall (macro)'],
  ['f1_macro', 'F1 (macro)'], ['auc', 'ROC AUC'], ['log_loss', 'Log loss'], ['loss', 'Loss'],
];
// A larger matrix is not drawn (its cells would be unreadable); the CLI prints any size.
export const MAX_DRAWN_CLASSES = 64;

// "NaN" and the other strings the API writes for non-finite numbers.
function num(v) {
  return typeof v === 'number' ? v : Number.NaN;
}

export class EvaluationPanel {
  constructor(jobId, signal) {
    this.jobId = jobId;
    this.signal = signal;
    this.split = ''; // '' = the latest of any split, until the user picks one
    this.splits = []; // the splits the job has evaluated: only those are asked for (no 404s)
    this.select = h('select', {
      class: 'input input-small', 'aria-label': 'Split',
      onchange: () => { this.split = this.select.value; this.load(); },
    }, SPLITS.map((s) => h('option', { value: s }, s)));
    this.status = h('span', { class: 'muted' });
    this.body = h('div', { class: 'evaluation-body' });
    this.el = h('section', { class: 'card evaluation', hidden: true, 'aria-label': 'Evaluation' },
      h('div', { class: 'card-head' }, h('h2', {}, 'Evaluation'), this.status, this.select),
      this.body);
  }

  // The splits with an evaluation (those whose <split>/log_loss series exists); the others are
  // offered disabled.
  setSplits(splits) {
    if (splits.join() === this.splits.join()) return;
    this.splits = splits;
    for (const o of this.select.options) {
      o.disabled = !splits.includes(o.value);
      o.textContent = o.disabled ? `${o.value} (none)` : o.value;
    }
  }

  async load() {
    if (!this.splits.length) return; // nothing evaluated yet: the card stays hidden
    const q = this.split ? `?split=${enc(this.split)}` : '';
    let e;
    try {
      e = await api(`/jobs/${enc(this.jobId)}/evaluation${q}`, { signal: this.signal });
    } catch (err) {
      if (err.name === 'AbortError') return;
      if (!this.split) return; // no evaluation yet: the card stays hidden
      this.el.hidden = false;
      setText(this.status, '');
      this.body.replaceChildren(h('p', { class: 'muted' }, err.message));
      return;
    }
    this.el.hidden = false;
    this.select.value = e.split;
    setText(this.status, `step ${fmt.int(e.step)} · ${fmt.int(num(e.examples))} examples`);
    this.body.replaceChildren(this.metrics(e), this.heatMap(e), this.classTable(e));
  }

  metrics(e) {
    return h('div', { class: 'stats evaluation-metrics' }, METRICS.map(([key, label]) =>
      h('div', { class: 'stat', dataset: { metric: key } },
        h('span', { class: 'stat-label' }, label),
        h('span', { class: 'stat-value' }, fmt.metric(num(e[key]))))));
  }

  heatMap(e) {
    const names = e.classes.map((c) => c.name);
    if (names.length > MAX_DRAWN_CLASSES) {
      return h('p', { class: 'muted' }, `${names.length} classes: too many to draw the confusion matrix here ` +
        `(trainingd jobs evaluation ${this.jobId} prints it).`);
    }
    const rows = e.confusion_matrix;
    const head = h('tr', {}, h('th', { scope: 'col', class: 'corner' }, 'true \\ predicted'),
      names.map((n) => h('th', { scope: 'col', class: 'pred', title: `predicted ${n}` }, n)));
    const body = rows.map((row, t) => {
      const total = row.reduce((a, b) => a + num(b), 0);
      return h('tr', {}, h('th', { scope: 'row', class: 'true', title: `true ${names[t]}` }, names[t]),
        row.map((v, p) => {
          const share = total > 0 ? num(v) / total : 0;
          // Blue for the diagonal (right), red elsewhere (wrong), opacity by the row's share.
          const rgb = t === p ? '37, 99, 235' : '220, 38, 38';
          return h('td', {
            class: 'num cell',
            style: { background: `rgba(${rgb}, ${(0.08 + 0.82 * share).toFixed(3)})`, color: share > 0.55 ? '#fff' : '' },
            title: `true ${names[t]}, predicted ${names[p]}: ${v} (${fmt.percent(share)} of ${names[t]})`,
            dataset: { true: String(t), pred: String(p) },
          }, fmt.int(num(v)));
        }));
    });
    return h('div', { class: 'table-wrap' },
      h('table', { class: 'table-compact confusion', 'aria-label': 'Confusion matrix' },
        h('thead', {}, head), h('tbody', {}, body)));
  }

  classTable(e) {
    return h('div', { class: 'table-wrap' },
      h('table', { class: 'table-compact per-class', 'aria-label': 'Per-class metrics' },
        h('thead', {}, h('tr', {}, ['Class', 'Precision', 'Recall', 'F1', 'Support'].map((t, i) => h('th', { scope: 'col', class: i ? 'num' : null }, t)))),
        h('tbody', {}, e.classes.map((c) => h('tr', {},
          h('td', {}, c.name),
          h('td', { class: 'num' }, fmt.metric(num(c.precision))),
          h('td', { class: 'num' }, fmt.metric(num(c.recall))),
          h('td', { class: 'num' }, fmt.metric(num(c.f1))),
          h('td', { class: 'num' }, fmt.int(num(c.support))))))));
  }
}
