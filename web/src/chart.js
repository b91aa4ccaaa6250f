// MetricChart: series of scalars against step, drawn with uPlot (window.uPlot, vendor/).
//
// A series is (job id, tag). The chart fetches each one downsampled to about its pixel width
// (GET scalars?max_points=), draws the value as the line and, where the daemon merged points into
// buckets (min != max), the bucket's min..max as a band behind it. Dragging selects a step range:
// the chart zooms and refetches that range at full resolution (every point, up to DETAIL_POINTS;
// beyond that, buckets again); a double-click or "Reset zoom" goes back. Live points are appended
// with append(). The element keeps data-points (points drawn), data-series and data-downsampled
// up to date, for tests and for the curious.
import { scalars } from './api.js';
import { h, setText } from './dom.js';
import * as fmt from './format.js';

const DETAIL_POINTS = 10000;
const DRAW_EVERY_MS = 250;
const PALETTE = ['#2563eb', '#f97316', '#16a34a', '#db2777', '#9333ea', '#0891b2', '#ca8a04', '#dc2626', '#4f46e5', '#65a30d'];

export function colorAt(i) {
  return PALETTE[i % PALETTE.length];
}

function alpha(hex, a) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${n >> 16}, ${(n >> 8) & 255}, ${n & 255}, ${a})`;
}

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// Accuracy ticks as percentages with as many decimals as the spacing needs.
function percentTicks(ticks) {
  const gap = ticks.length > 1 ? Math.abs(ticks[1] - ticks[0]) * 100 : 10;
  const decimals = Math.min(3, Math.max(0, -Math.floor(Math.log10(gap))));
  return ticks.map((t) => `${(t * 100).toFixed(decimals)}%`);
}

// Dots on a series' points when they are few in view (a final evaluation is a single point).
function sparse(u, si, i0, i1) {
  const d = u.data[si];
  if (i0 == null) [i0, i1] = u.series[0].idxs || [0, d.length - 1];
  let n = 0;
  for (let i = i0; i <= i1; i++) if (d[i] != null) n++;
  return n * 12 < u.bbox.width / (window.devicePixelRatio || 1);
}

function lastStep(points) {
  return points.length ? points[points.length - 1].step : -Infinity;
}

export class MetricChart {
  // series: [{job, tag, label, color?}]; title; options: {height, emptyText, log}.
  constructor(container, { title, series, height = 240, emptyText = 'No points yet.', log = false }) {
    this.title = title;
    this.height = height;
    this.emptyText = emptyText;
    this.log = log;
    this.series = [];
    this.plot = null;
    this.zoom = null; // [from, to] while zoomed in
    this.detail = null; // the zoomed range's points per series key, when fetched
    this.abort = null;
    this.redrawQueued = false;
    this.destroyed = false;
    this.plotWidth = 0;

    this.readout = h('div', { class: 'chart-readout', 'aria-live': 'off' });
    this.legend = h('div', { class: 'chart-legend' });
    this.logBox = h('input', { type: 'checkbox', checked: log, onchange: () => this.setLog(this.logBox.checked) });
    this.resetBtn = h('button', { type: 'button', class: 'btn btn-small', hidden: true, onclick: () => this.resetZoom() }, 'Reset zoom');
    this.note = h('span', { class: 'chart-note' });
    this.plotEl = h('div', { class: 'chart-plot', style: { height: `${height}px` } });
    this.emptyEl = h('div', { class: 'chart-empty' }, emptyText);
    this.el = h('section', { class: 'card chart-card', dataset: { points: '0', series: '0', downsampled: 'false' } },
      h('div', { class: 'chart-head' },
        h('h3', {}, title),
        this.legend,
        h('div', { class: 'chart-tools' },
          this.note,
          this.resetBtn,
          h('label', { class: 'toggle', title: 'Logarithmic y axis' }, this.logBox, 'log'))),
      h('div', { class: 'chart-body' }, this.plotEl, this.emptyEl),
      this.readout);
    container.append(this.el);

    this.resizer = new ResizeObserver(() => this.fit());
    this.resizer.observe(this.plotEl);
    this.setSeries(series);
  }

  setTitle(title) {
    this.title = title;
    setText(this.el.querySelector('.chart-head h3'), title);
  }

  key(s) {
    return `${s.job}\u0000${s.tag}`;
  }

  // Replaces the series shown (and fetches them). Keeps the points of series already loaded.
  setSeries(list) {
    const old = new Map(this.series.map((s) => [this.key(s), s]));
    this.series = list.map((s, i) => {
      const prev = old.get(this.key(s));
      return { ...s, color: s.color || colorAt(i), points: prev ? prev.points : [], loaded: prev ? prev.loaded : false };
    });
    this.legend.replaceChildren(...this.series.map((s) => h('span', { class: 'legend-item' },
      h('span', { class: 'swatch', style: { background: s.color } }), s.label)));
    this.el.dataset.series = String(this.series.length);
    this.rebuild();
    return this.reload(true);
  }

  // Fetches every series again (the whole range, downsampled), or with onlyNew the series not
  // loaded yet; then the zoomed range if any. A call cancels the one in flight and takes over
  // its work (a full reload stays full). Live points newer than the answer are kept (the daemon
  // writes scalars in batches, so the newest may not be queryable yet); with dropOld only those
  // that arrived while the answer was on its way (after a job went back to a checkpoint, older
  // ones past the answer's end are the ones the daemon dropped).
  async reload(onlyNew = false, dropOld = false) {
    if (this.abort) {
      this.abort.abort();
      if (this.reloadingAll) onlyNew = false;
    }
    this.reloadingAll = !onlyNew;
    const todo = this.series.filter((s) => !onlyNew || !s.loaded);
    const before = todo.map((s) => s.points.length);
    const abort = (this.abort = new AbortController());
    const width = Math.max(200, Math.round(this.plotEl.clientWidth || 600));
    try {
      const lists = await Promise.all(todo.map((s) =>
        scalars(s.job, s.tag, { maxPoints: width, signal: abort.signal }).catch((e) => {
          if (e.name === 'AbortError') throw e;
          if (e.status === 404) return [];
          throw e;
        })));
      if (this.destroyed || abort.signal.aborted) return;
      this.abort = null;
      this.reloadingAll = false;
      todo.forEach((s, i) => {
        const fresh = lists[i];
        const tail = s.points.slice(dropOld ? before[i] : 0).filter((p) => p.step > lastStep(fresh));
        s.points = fresh.concat(tail);
        s.loaded = true;
      });
      this.el.classList.remove('chart-error');
      if (this.zoom) await this.fetchDetail(this.zoom, abort);
      this.draw(!this.zoom);
    } catch (e) {
      if (e.name === 'AbortError') return;
      this.el.classList.add('chart-error');
      setText(this.emptyEl, `Could not load: ${e.message}`);
      this.emptyEl.hidden = false;
    }
  }

  async fetchDetail(range, abort) {
    const lists = await Promise.all(this.series.map((s) =>
      scalars(s.job, s.tag, { from: range[0], to: range[1], maxPoints: DETAIL_POINTS, signal: abort.signal })));
    if (this.destroyed || abort.signal.aborted) return;
    this.detail = new Map(this.series.map((s, i) => [this.key(s), lists[i]]));
  }

  // A live point for (job, tag), kept only when it is past the series' last step: an event
  // stream replays recent history on connecting, and those points are already here. (A job that
  // went back to a checkpoint after a crash records steps again; the page reloads the series
  // when the job starts running or the stream reconnects, which brings the daemon's truth.)
  append(job, tag, step, value) {
    const s = this.series.find((x) => x.job === job && x.tag === tag);
    if (!s || step <= lastStep(s.points)) return false;
    const p = { step, value, min: value, max: value };
    s.points.push(p);
    const d = this.detail && this.zoom && this.detail.get(this.key(s));
    if (d && step >= this.zoom[0] && step <= this.zoom[1] && step > lastStep(d)) d.push(p);
    if (s.loaded) this.queueDraw();
    // Raw live points pile up on a long watch: fetch a downsampled overview again now and then.
    const width = Math.max(200, this.plotEl.clientWidth || 600);
    if (s.points.length > 4 * width && !this.reloadQueued) {
      this.reloadQueued = true;
      setTimeout(() => { this.reloadQueued = false; this.reload(); }, 1000);
    }
    return true;
  }

  // Live points are drawn at most DRAW_EVERY_MS apart: a job logging hundreds of scalars a second
  // must not keep the page (or the machine it trains on) busy redrawing.
  queueDraw() {
    if (this.redrawQueued) return;
    this.redrawQueued = true;
    const wait = Math.max(0, DRAW_EVERY_MS - (performance.now() - (this.lastDraw || 0)));
    setTimeout(() => requestAnimationFrame(() => {
      this.redrawQueued = false;
      if (!this.destroyed) this.draw(!this.zoom);
    }), wait);
  }

  // The points shown for a series: the overview outside the zoomed range, the detail inside.
  effective(s) {
    const d = this.detail && this.zoom && this.detail.get(this.key(s));
    if (!d) return s.points;
    const [a, b] = this.zoom;
    const out = [];
    for (const p of s.points) if (p.step < a) out.push(p);
    for (const p of d) out.push(p);
    for (const p of s.points) if (p.step > b) out.push(p);
    return out;
  }

  // uPlot's columns: steps (union of all series), then min and max of each series (the bands),
  // then each series' values; undefined where a series has no point at a step.
  columns() {
    const lists = this.series.map((s) => this.effective(s));
    const steps = new Set();
    for (const l of lists) for (const p of l) steps.add(p.step);
    const xs = Float64Array.from(steps).sort();
    const index = new Map();
    xs.forEach((x, i) => index.set(x, i));
    const n = xs.length;
    const bands = [];
    const values = [];
    let total = 0;
    let downsampled = false;
    const ok = (v) => (this.log && !(v > 0) ? null : v);
    for (const l of lists) {
      const lo = new Array(n).fill(undefined);
      const hi = new Array(n).fill(undefined);
      const val = new Array(n).fill(undefined);
      const merged = l.some((p) => p.min !== p.max);
      downsampled ||= merged;
      for (const p of l) {
        const i = index.get(p.step);
        val[i] = ok(p.value);
        if (merged) {
          lo[i] = ok(p.min);
          hi[i] = ok(p.max);
        }
      }
      total += l.length;
      bands.push(lo, hi);
      values.push(val);
    }
    return { data: [Array.from(xs), ...bands, ...values], total, downsampled };
  }

  options(width) {
    const text = cssVar('--text-muted') || '#666';
    const grid = cssVar('--grid') || 'rgba(128,128,128,.15)';
    const n = this.series.length;
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, font: '11px system-ui, sans-serif' };
    const isAcc = this.series.length > 0 && this.series.every((s) => /accuracy$/.test(s.tag));
    const bandSeries = [];
    const bands = [];
    this.series.forEach((s, i) => {
      bandSeries.push({ label: `${s.label} min`, stroke: 'transparent', width: 0, points: { show: false } },
        { label: `${s.label} max`, stroke: 'transparent', width: 0, points: { show: false } });
      bands.push({ series: [2 + 2 * i, 1 + 2 * i], fill: alpha(s.color, 0.18) });
    });
    return {
      width,
      height: this.height,
      legend: { show: false },
      padding: [8, 20, 0, 0],
      cursor: {
        drag: { x: true, y: false, setScale: true },
        hover: { skip: [null, undefined] },
        points: { size: 6 },
      },
      scales: {
        x: { time: false },
        y: this.log ? { distr: 3 } : {},
      },
      axes: [
        { ...axis, values: (u, ticks) => ticks.map((t) => fmt.int(t)) },
        { ...axis, size: 58, values: (u, ticks) => (isAcc && !this.log ? percentTicks(ticks) : ticks.map(fmt.metric)) },
      ],
      series: [
        { label: 'step' },
        ...bandSeries,
        ...this.series.map((s) => ({ label: s.label, stroke: s.color, width: 1.75, points: { show: sparse, size: 6, fill: s.color } })),
      ],
      bands,
      hooks: {
        setScale: [(u, key) => { if (key === 'x') this.onScale(u); }],
        setCursor: [(u) => this.onCursor(u, n)],
      },
    };
  }

  rebuild() {
    if (this.plot) {
      this.plot.destroy();
      this.plot = null;
    }
    this.draw(true);
  }

  draw(resetScales) {
    this.lastDraw = performance.now();
    const { data, total, downsampled } = this.columns();
    this.el.dataset.points = String(total);
    this.el.dataset.seriesPoints = this.series.map((s) => this.effective(s).length).join(',');
    this.el.dataset.downsampled = String(downsampled);
    setText(this.note, downsampled ? 'band: min–max per bucket' : '');
    this.emptyEl.hidden = total > 0 || this.el.classList.contains('chart-error');
    if (!this.emptyEl.hidden) setText(this.emptyEl, this.series.some((s) => !s.loaded) ? 'Loading…' : this.emptyText);
    if (total === 0) {
      if (this.plot) {
        this.plot.destroy();
        this.plot = null;
      }
      return;
    }
    const width = Math.max(100, this.plotEl.clientWidth);
    if (!this.plot) {
      // A new plot scales itself to all the data; keep a zoom through rebuilds.
      const zoom = this.zoom;
      this.building = true;
      this.plot = new window.uPlot(this.options(width), data, this.plotEl);
      this.building = false;
      this.plotWidth = width;
      if (zoom) {
        this.zoom = zoom;
        this.plot.setScale('x', { min: zoom[0], max: zoom[1] });
      }
      return;
    }
    const plot = this.plot;
    plot.batch(() => plot.setData(data, resetScales));
  }

  fit() {
    if (!this.plot) return;
    const width = Math.max(100, this.plotEl.clientWidth);
    if (Math.abs(width - this.plotWidth) < 2) return;
    this.plotWidth = width;
    this.plot.setSize({ width, height: this.height });
  }

  // The x scale changed: a drag-zoom, a double-click reset, or our own setData.
  onScale(u) {
    if (this.building) return;
    const xs = u.data[0];
    if (!xs.length) return;
    const { min, max } = u.scales.x;
    const lo = xs[0];
    const hi = xs[xs.length - 1];
    const zoomed = min > lo + 1e-9 || max < hi - 1e-9;
    if (!zoomed) {
      if (this.zoom) {
        this.zoom = null;
        this.detail = null;
        this.resetBtn.hidden = true;
        this.queueDraw();
      }
      return;
    }
    const range = [Math.max(0, Math.floor(min)), Math.ceil(max)];
    if (this.zoom && range[0] === this.zoom[0] && range[1] === this.zoom[1]) return;
    this.zoom = range;
    this.resetBtn.hidden = false;
    clearTimeout(this.detailTimer);
    this.detailTimer = setTimeout(async () => {
      if (this.destroyed || !this.zoom) return;
      const abort = new AbortController();
      this.detailAbort?.abort();
      this.detailAbort = abort;
      try {
        await this.fetchDetail(this.zoom, abort);
        if (!abort.signal.aborted) this.draw(false);
      } catch (e) {
        if (e.name !== 'AbortError') this.el.classList.add('chart-error');
      }
    }, 120);
  }

  onCursor(u, n) {
    const idx = u.cursor.idx;
    if (idx == null) {
      setText(this.readout, '');
      return;
    }
    const parts = [];
    let step = u.data[0][idx];
    for (let i = 0; i < n; i++) {
      const si = 1 + 2 * n + i;
      const j = u.cursor.idxs ? u.cursor.idxs[si] : idx;
      if (j == null) continue;
      const v = u.data[si][j];
      if (v == null) continue;
      if (j === idx) step = u.data[0][j];
      parts.push(`${this.series[i].label} ${fmt.byTag(this.series[i].tag, v)}`);
    }
    setText(this.readout, parts.length ? `step ${fmt.int(step)} · ${parts.join(' · ')}` : '');
  }

  resetZoom() {
    if (!this.plot) return;
    const xs = this.plot.data[0];
    this.plot.setScale('x', { min: xs[0], max: xs[xs.length - 1] });
  }

  setLog(on) {
    this.log = on;
    this.logBox.checked = on;
    this.rebuild();
  }

  // Colours come from CSS (light or dark): called when the system theme changes.
  restyle() {
    this.rebuild();
  }

  destroy() {
    this.destroyed = true;
    this.abort?.abort();
    this.detailAbort?.abort();
    clearTimeout(this.detailTimer);
    this.resizer.disconnect();
    if (this.plot) this.plot.destroy();
    this.el.remove();
  }
}
