// The job page's evaluation card: a split's latest evaluation (GET /api/v1/jobs/<id>/evaluation)
// -- its metrics, each class's precision, recall, F1 and support, and the confusion matrix as a
// heat map (rows: the true class, columns: the predicted one; class names on both axes; each
// cell shaded by its share of its row, so the diagonal is each class's recall); a regression
// job's RMSE, MAE and R² and its predicted-against-actual scatter with the line y = x.
import { api, enc } from './api.js';
import { h, setText } from './dom.js';
import * as fmt from './format.js';

const SPLITS = ['validation', 'test', 'train'];
const METRICS = [
  ['accuracy', 'Accuracy'], ['precision_macro', 'Precision (macro)'], ['recall_macro', 'Recall (macro)'],
  ['f1_macro', 'F1 (macro)'], ['auc', 'ROC AUC'], ['log_loss', 'Log loss'], ['loss', 'Loss'],
];
const REGRESSION_METRICS = [['rmse', 'RMSE'], ['mae', 'MAE'], ['r2', 'R²'], ['loss', 'Loss']];
// The scatter's size in CSS pixels, and its margin for the axis labels.
const SCATTER = { width: 420, height: 320, margin: 44 };
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
    // The page went away while the answer was read (api() then gives null): nothing to show.
    if (!e || (this.signal && this.signal.aborted)) return;
    this.el.hidden = false;
    this.select.value = e.split;
    setText(this.status, `step ${fmt.int(e.step)} · ${fmt.int(num(e.examples))} examples`);
    if (e.task === 'regression') {
      this.body.replaceChildren(this.metrics(e, REGRESSION_METRICS), this.scatter(e));
      return;
    }
    this.body.replaceChildren(this.metrics(e), this.heatMap(e), this.classTable(e));
  }

  metrics(e, list = METRICS) {
    return h('div', { class: 'stats evaluation-metrics' }, list.map(([key, label]) =>
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

  // A regression evaluation's predicted-against-actual scatter (its sample of at most 1,000
  // examples, spread evenly over the split) on a canvas, with the line y = x where a perfect
  // model's points would lie; both axes share one range, so the line is the diagonal.
  scatter(e) {
    const xs = (e.scatter && e.scatter.actual || []).map(num);
    const ys = (e.scatter && e.scatter.predicted || []).map(num);
    const { width, height, margin } = SCATTER;
    const canvas = h('canvas', {
      class: 'scatter', role: 'img', style: { width: `${width}px`, height: `${height}px` },
      'aria-label': `Predicted against actual, ${xs.length} examples`,
      dataset: { points: String(xs.length) },
    });
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    const ctx = canvas.getContext('2d');
    ctx.scale(ratio, ratio);
    const finite = [...xs, ...ys].filter(Number.isFinite);
    let lo = Math.min(...finite), hi = Math.max(...finite);
    if (!finite.length) { lo = 0; hi = 1; }
    if (hi === lo) { lo -= 1; hi += 1; }
    const pad = (hi - lo) * 0.04;
    lo -= pad; hi += pad;
    const px = (v) => margin + ((v - lo) / (hi - lo)) * (width - margin - 8);
    const py = (v) => height - margin - ((v - lo) / (hi - lo)) * (height - margin - 8);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, width, height);
    ctx.strokeStyle = '#94a3b8';
    ctx.lineWidth = 1;
    ctx.strokeRect(margin, 8, width - margin - 8, height - margin - 8);
    ctx.fillStyle = 'rgba(37, 99, 235, 0.55)';
    for (let i = 0; i < xs.length; i++) {
      if (!Number.isFinite(xs[i]) || !Number.isFinite(ys[i])) continue;
      ctx.beginPath();
      ctx.arc(px(xs[i]), py(ys[i]), 2.5, 0, 2 * Math.PI);
      ctx.fill();
    }
    // y = x, over the points so that it stays visible where they crowd
    ctx.strokeStyle = 'rgb(220, 38, 38)';
    ctx.lineWidth = 2;
    ctx.setLineDash([6, 4]);
    ctx.beginPath();
    ctx.moveTo(px(lo), py(lo));
    ctx.lineTo(px(hi), py(hi));
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = '#475569';
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'center';
    ctx.fillText('actual', margin + (width - margin) / 2, height - 8);
    ctx.fillText(fmt.metric(lo + pad), px(lo + pad), height - margin + 14);
    ctx.fillText(fmt.metric(hi - pad), px(hi - pad), height - margin + 14);
    ctx.textAlign = 'right';
    ctx.fillText(fmt.metric(lo + pad), margin - 4, py(lo + pad) + 4);
    ctx.fillText(fmt.metric(hi - pad), margin - 4, py(hi - pad) + 8);
    ctx.textAlign = 'center';
    ctx.save();
    ctx.translate(12, (height - margin) / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.fillText('predicted', 0, 0);
    ctx.restore();
    // Where the line's ends are, for a reader of the page (and the browser test).
    canvas.dataset.diagonal = [px(lo), py(lo), px(hi), py(hi)].map((v) => v.toFixed(1)).join(',');
    return h('figure', { class: 'evaluation-scatter' }, canvas,
      h('figcaption', { class: 'muted' }, `Predicted against actual: ${fmt.int(xs.length)} of ${fmt.int(num(e.examples))} examples` +
        `${xs.length < num(e.examples) ? ', evenly spread over the split' : ''}; the dashed line is predicted = actual.`));
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
