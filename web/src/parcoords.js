// ParallelCoordinates: a canvas with one vertical axis per hyperparameter and the metric last,
// one polyline per trial with a result, coloured by its metric (the best brightest; the top
// trials drawn last, thicker). Numeric ranges have a linear axis, `log` ranges a logarithmic
// one (from the spec's space), categorical ones a point per value. Drawn by hand: 1,000 lines are
// a few milliseconds of canvas work. The element keeps data-lines (trials drawn) for tests.
import { h, setText } from './dom.js';
import * as fmt from './format.js';

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// value in [0, 1] (worst .. best) -> a colour from a muted blue to a strong orange.
function ramp(t) {
  const a = [148, 163, 184];
  const b = [234, 88, 12];
  const c = a.map((x, i) => Math.round(x + (b[i] - x) * t));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

// An axis: position of a value in [0, 1] (bottom .. top), and a few labelled ticks.
function makeAxis(name, range, values, format = fmt.metric) {
  if (range && range.type === 'categorical') {
    const cats = (range.values || []).map((v) => JSON.stringify(v));
    const n = Math.max(1, cats.length - 1);
    return {
      name, kind: 'categorical',
      pos: (v) => { const i = cats.indexOf(JSON.stringify(v)); return i < 0 ? NaN : cats.length === 1 ? 0.5 : i / n; },
      ticks: cats.map((c, i) => ({ at: cats.length === 1 ? 0.5 : i / n, text: c.replace(/^"|"$/g, '') })),
    };
  }
  const log = range && range.type === 'log';
  const nums = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  let lo = range && Number.isFinite(range.min) ? range.min : Math.min(...nums);
  let hi = range && Number.isFinite(range.max) ? range.max : Math.max(...nums);
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) { lo = 0; hi = 1; }
  for (const v of nums) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  const f = log ? Math.log10 : (x) => x;
  const a = f(lo);
  const b = f(hi);
  const span = b - a || 1;
  const pos = (v) => (Number.isFinite(v) && (!log || v > 0) ? (f(v) - a) / span : NaN);
  let ticks;
  if (log) {
    ticks = [];
    for (let e = Math.ceil(a - 1e-9); e <= Math.floor(b + 1e-9); e++) ticks.push({ at: (e - a) / span, text: fmt.metric(10 ** e) });
    if (ticks.length < 2) ticks = [{ at: 0, text: fmt.metric(lo) }, { at: 1, text: fmt.metric(hi) }];
  } else {
    const isInt = range && range.type === 'int';
    ticks = [0, 0.5, 1].map((t) => {
      const v = lo + (hi - lo) * t;
      return { at: t, text: isInt ? fmt.int(Math.round(v)) : format(v) };
    });
  }
  return { name, kind: log ? 'log' : 'linear', pos, ticks };
}

export class ParallelCoordinates {
  constructor(container, { height = 300 } = {}) {
    this.height = height;
    this.trials = [];
    this.space = {};
    this.metric = '';
    this.maximize = true;
    this.top = new Set();
    this.canvas = h('canvas', { class: 'parcoords-canvas', role: 'img' });
    this.note = h('span', { class: 'chart-note' });
    this.el = h('section', { class: 'card chart-card parcoords', dataset: { lines: '0', axes: '' } },
      h('div', { class: 'chart-head' }, h('h3', {}, 'Hyperparameters to metric'), this.note),
      h('div', { class: 'parcoords-body' }, this.canvas));
    container.append(this.el);
    this.resizer = new ResizeObserver(() => this.draw());
    this.resizer.observe(this.el);
  }

  // trials: the experiment's trials; space: the spec's space (path -> range); top: indexes drawn
  // on top.
  set({ trials, space, metric, maximize, top }) {
    Object.assign(this, { trials, space: space || {}, metric, maximize, top: top || new Set() });
    this.draw();
  }

  draw() {
    const width = Math.round(this.canvas.parentElement.clientWidth);
    if (!width) return;
    const t0 = performance.now();
    const dpr = window.devicePixelRatio || 1;
    const height = this.height;
    this.canvas.width = Math.round(width * dpr);
    this.canvas.height = Math.round(height * dpr);
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    const ctx = this.canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);

    const paths = Object.keys(this.space);
    const done = this.trials.filter((t) => Number.isFinite(t.metric));
    const metricValues = done.map((t) => t.metric);
    const axes = paths.map((p) => makeAxis(p, this.space[p], done.map((t) => t.hyperparameters[p])));
    const mLo = Math.min(...metricValues);
    const mHi = Math.max(...metricValues);
    axes.push(makeAxis(this.metric, { type: 'double', min: mLo, max: mHi }, metricValues, (v) => fmt.byTag(this.metric, v)));
    this.el.dataset.axes = axes.map((a) => `${a.name}:${a.kind}`).join(',');
    this.el.dataset.lines = String(done.length);
    this.canvas.setAttribute('aria-label', `Parallel coordinates of ${done.length} trials: ${paths.join(', ')} against ${this.metric}. The trial table below has the same values.`);
    setText(this.note, done.length < this.trials.length ? `${fmt.int(done.length)} of ${fmt.int(this.trials.length)} trials have a result` : `${fmt.int(done.length)} trials`);

    const text = cssVar('--text-muted') || '#666';
    const grid = cssVar('--border') || '#ccc';
    const top = 34;
    const bottom = 26;
    const left = 48;
    const right = 56;
    const plotH = height - top - bottom;
    const gap = axes.length > 1 ? (width - left - right) / (axes.length - 1) : 0;
    const xAt = (i) => left + i * gap;
    const yAt = (p) => top + (1 - p) * plotH;

    // The lines: worst first, so the best lie on top; the top trials last and thicker.
    const good = (v) => (mHi > mLo ? (this.maximize ? (v - mLo) / (mHi - mLo) : (mHi - v) / (mHi - mLo)) : 1);
    const order = done.slice().sort((a, b) => good(a.metric) - good(b.metric));
    const line = (t) => {
      ctx.beginPath();
      let pen = false;
      axes.forEach((a, i) => {
        const p = a.pos(i === axes.length - 1 ? t.metric : t.hyperparameters[a.name]);
        if (!Number.isFinite(p)) { pen = false; return; }
        if (pen) ctx.lineTo(xAt(i), yAt(p));
        else ctx.moveTo(xAt(i), yAt(p));
        pen = true;
      });
      ctx.stroke();
    };
    ctx.lineWidth = 1;
    ctx.globalAlpha = done.length > 200 ? 0.35 : 0.6;
    for (const t of order) {
      if (this.top.has(t.index)) continue;
      ctx.strokeStyle = ramp(good(t.metric));
      line(t);
    }
    ctx.globalAlpha = 1;
    ctx.lineWidth = 2.25;
    for (const t of order) {
      if (!this.top.has(t.index)) continue;
      ctx.strokeStyle = ramp(1);
      line(t);
    }

    // The axes, their names and ticks.
    ctx.font = '11px system-ui, sans-serif';
    ctx.lineWidth = 1;
    axes.forEach((a, i) => {
      const x = xAt(i);
      ctx.strokeStyle = grid;
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + plotH);
      ctx.stroke();
      ctx.fillStyle = text;
      ctx.textAlign = i === 0 ? 'left' : i === axes.length - 1 ? 'right' : 'center';
      const label = a.name.length > 28 ? `…${a.name.slice(-27)}` : a.name;
      ctx.fillText(label + (a.kind === 'log' ? ' (log)' : ''), i === 0 ? Math.max(2, x - left + 2) : i === axes.length - 1 ? width - 2 : x, 12);
      ctx.textAlign = i === axes.length - 1 ? 'left' : 'right';
      for (const tk of a.ticks) {
        const y = yAt(tk.at);
        ctx.beginPath();
        ctx.moveTo(x - 3, y);
        ctx.lineTo(x + 3, y);
        ctx.stroke();
        ctx.fillText(tk.text, i === axes.length - 1 ? x + 5 : x - 5, y + 4);
      }
    });
    this.el.dataset.drawMs = (performance.now() - t0).toFixed(1);
  }

  destroy() {
    this.resizer.disconnect();
    this.el.remove();
  }
}
