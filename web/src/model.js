// The model panel of a job's page, shown once the job has a checkpoint: download the model as
// ONNX (GET /api/v1/jobs/<id>/model?format=onnx[&step=N]) and try it: a test example of the
// job's dataset (GET /api/v1/datasets/<name>/examples) or an image file decoded in the browser,
// sent to the model server (POST /v2/models/<id>[/versions/<step>]/infer), with the predicted
// class and every class's probability. The class names and the input's shape come from the
// model's metadata (GET /v2/models/<id>).
import { api, enc, request } from './api.js';
import { h, setText } from './dom.js';
import * as fmt from './format.js';

// The file name of a Content-Disposition header (attachment; filename="x.onnx"), or null.
function dispositionName(header) {
  const m = /filename="([^"]*)"/.exec(header || '') || /filename=([^;\s]+)/.exec(header || '');
  return m ? m[1] : null;
}

// RGBA pixels (an ImageData's data) to the model's C channels as bytes: grey for 1 (Rec. 601
// luma), grey and alpha for 2, RGB for 3, RGBA for 4.
export function toChannels(rgba, channels) {
  const n = rgba.length / 4;
  const out = new Array(n * channels);
  for (let i = 0; i < n; i++) {
    const r = rgba[4 * i], g = rgba[4 * i + 1], b = rgba[4 * i + 2], a = rgba[4 * i + 3];
    const grey = Math.round(0.299 * r + 0.587 * g + 0.114 * b);
    const px = channels === 1 ? [grey] : channels === 2 ? [grey, a] : channels === 3 ? [r, g, b] : [r, g, b, a];
    for (let c = 0; c < channels; c++) out[i * channels + c] = px[c];
  }
  return out;
}

export class ModelPanel {
  constructor(jobId, signal) {
    this.id = jobId;
    this.signal = signal;
    this.meta = null; // GET /v2/models/<id>
    this.steps = []; // checkpoints' global steps, newest first
    this.total = 0; // test examples of the dataset
    this.input = null; // what was last sent: {data, datatype, label, source}
    this.seq = 0; // the latest request's number: older answers are dropped

    this.stepSelect = h('select', {
      class: 'input input-small', id: `model-step-${jobId}`, name: 'step',
      onchange: () => this.onStep(),
    });
    this.downloadBtn = h('button', { type: 'button', class: 'btn btn-small', dataset: { action: 'download-onnx' }, onclick: () => this.download() }, 'Download ONNX');
    this.downloadNote = h('span', { class: 'muted model-download-note', role: 'status' });
    this.summary = h('span', { class: 'muted model-summary' });
    this.error = h('p', { class: 'error model-error', role: 'alert', hidden: true });

    this.indexInput = h('input', {
      type: 'number', class: 'input input-small model-index', min: 0, step: 1, value: 0,
      id: `model-example-${jobId}`, name: 'example',
      onchange: () => this.loadExample(Number(this.indexInput.value)),
    });
    this.prevBtn = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': 'Previous example', onclick: () => this.loadExample(this.index() - 1) }, '‹ Prev');
    this.nextBtn = h('button', { type: 'button', class: 'btn btn-small', 'aria-label': 'Next example', onclick: () => this.loadExample(this.index() + 1) }, 'Next ›');
    this.ofTotal = h('span', { class: 'muted' });
    this.fileInput = h('input', {
      type: 'file', accept: 'image/*', id: `model-file-${jobId}`, class: 'model-file-input',
      onchange: () => { if (this.fileInput.files[0]) this.tryFile(this.fileInput.files[0]); },
    });
    this.drop = h('label', { class: 'model-drop', for: `model-file-${jobId}` },
      h('span', {}, 'Drop an image here, or ', h('span', { class: 'linkish' }, 'choose a file')),
      h('span', { class: 'muted model-drop-hint' }));
    for (const ev of ['dragenter', 'dragover']) {
      this.drop.addEventListener(ev, (e) => { e.preventDefault(); this.drop.classList.add('over'); });
    }
    for (const ev of ['dragleave', 'drop']) {
      this.drop.addEventListener(ev, () => this.drop.classList.remove('over'));
    }
    this.drop.addEventListener('drop', (e) => {
      e.preventDefault();
      const file = e.dataTransfer && e.dataTransfer.files[0];
      if (file) this.tryFile(file);
    });

    this.canvas = h('canvas', { class: 'model-canvas', width: 28, height: 28, role: 'img', 'aria-label': 'The example' });
    this.table = h('div', { class: 'table-wrap model-row', hidden: true });
    this.truth = h('p', { class: 'model-truth' });
    this.prediction = h('p', { class: 'model-prediction', 'aria-live': 'polite' });
    this.bars = h('ol', { class: 'model-bars', 'aria-label': 'Probability of each class' });

    this.el = h('section', { class: 'card model-panel', hidden: true, 'aria-labelledby': `model-title-${jobId}` },
      h('div', { class: 'card-head' }, h('h2', { id: `model-title-${jobId}` }, 'Model'), this.summary),
      h('div', { class: 'model-toolbar' },
        h('label', { class: 'field-label', for: `model-step-${jobId}` }, 'Checkpoint'), this.stepSelect,
        this.downloadBtn, this.downloadNote),
      this.error,
      h('div', { class: 'model-try' },
        h('div', { class: 'model-input' },
          h('h3', {}, 'Try the model'),
          h('div', { class: 'model-pick' },
            h('label', { class: 'field-label', for: `model-example-${jobId}` }, 'Test example'),
            this.prevBtn, this.indexInput, this.nextBtn, this.ofTotal),
          h('div', { class: 'model-view' }, this.canvas, this.table),
          this.truth,
          this.fileInput, this.drop),
        h('div', { class: 'model-output' }, this.prediction, this.bars)));
  }

  index() {
    return Math.floor(Number(this.indexInput.value)) || 0;
  }

  // The job's checkpoints ({global_step}, oldest first): the panel shows from the first.
  setCheckpoints(list) {
    const steps = list.map((c) => c.global_step).reverse();
    if (steps.join() === this.steps.join()) return;
    this.steps = steps;
    const current = this.stepSelect.value;
    this.stepSelect.replaceChildren(
      h('option', { value: '' }, this.defaultLabel()),
      ...steps.map((s) => h('option', { value: String(s) }, `step ${fmt.int(s)}`)));
    this.stepSelect.value = steps.includes(Number(current)) ? current : '';
    this.el.hidden = !steps.length;
    // The first checkpoint; or a later one after the metadata could not be read.
    if (steps.length && !this.meta && !this.starting) this.start();
  }

  step() {
    return this.stepSelect.value;
  }

  // The default checkpoint, as the daemon picks it: the best when the job kept one (the model's
  // metadata says which), else the latest (docs/models.md#which-checkpoint).
  defaultLabel() {
    const best = this.meta && this.meta.parameters && this.meta.parameters.best_version;
    if (best !== undefined && best !== null) return `best (step ${fmt.int(Number(best))})`;
    return this.steps.length ? `latest (step ${fmt.int(this.steps[0])})` : 'latest';
  }

  showError(e) {
    if (e && e.name === 'AbortError') return;
    this.error.hidden = !e;
    setText(this.error, e ? e.message : '');
  }

  async start() {
    this.starting = true;
    try {
      const res = await request(`/v2/models/${enc(this.id)}`, { signal: this.signal });
      this.meta = await res.json();
    } catch (e) {
      this.showError(e);
      return;
    } finally {
      this.starting = false;
    }
    if (this.stepSelect.options.length) {
      this.stepSelect.options[0].textContent = this.defaultLabel();
      this.stepSelect.dataset.default = this.meta.parameters?.checkpoint || '';
    }
    const shape = this.meta.inputs[0].shape.slice(1);
    this.image = shape.length === 3;
    const p = this.meta.parameters || {};
    const names = p.class_names || [];
    const takes = this.image ? `${shape.join('×')} images` : `${shape[0]} features`;
    // A regression model's second output is its prediction, in the target's units
    // (docs/models.md#regression-models); its one "class" is the label column.
    this.regression = (this.meta.outputs || []).some((o) => o.name === 'prediction');
    setText(this.summary, `${p.dataset || ''} · ${takes} · ${this.regression ? `predicts ${names[0] || 'a number'}` : `${names.length} classes`}`);
    this.drop.hidden = !this.image;
    this.fileInput.hidden = !this.image;
    setText(this.drop.querySelector('.model-drop-hint'), this.image
      ? `resized to ${shape[1]}×${shape[0]}, ${shape[2] === 1 ? 'grey' : shape[2] === 3 ? 'RGB' : `${shape[2]} channels`}` : '');
    this.el.dataset.ready = 'true';
    await this.loadExample(0);
  }

  onStep() {
    setText(this.downloadNote, '');
    if (this.input) this.infer();
  }

  async download() {
    this.downloadBtn.disabled = true;
    setText(this.downloadNote, 'Exporting…');
    this.showError(null);
    try {
      const step = this.step();
      const res = await request(`/api/v1/jobs/${enc(this.id)}/model?format=onnx${step ? `&step=${enc(step)}` : ''}`, { signal: this.signal });
      const name = dispositionName(res.headers.get('Content-Disposition')) || `${this.id}.onnx`;
      const blob = await res.blob();
      if (this.blobUrl) URL.revokeObjectURL(this.blobUrl);
      this.blobUrl = URL.createObjectURL(blob);
      const link = h('a', { href: this.blobUrl, download: name, class: 'mono' }, name);
      this.downloadNote.replaceChildren(link, ` (${fmt.bytes(blob.size)})`);
      link.click();
    } catch (e) {
      setText(this.downloadNote, '');
      this.showError(e);
    }
    this.downloadBtn.disabled = false;
  }

  async loadExample(i) {
    if (!this.meta) return;
    const name = (this.meta.parameters || {}).dataset;
    const index = Math.max(0, this.total ? Math.min(i, this.total - 1) : i);
    this.indexInput.value = String(index);
    const seq = ++this.seq;
    try {
      const r = await api(`/datasets/${enc(name)}/examples?split=test&offset=${index}&limit=1`, { signal: this.signal });
      if (seq !== this.seq) return;
      this.total = r.total;
      this.indexInput.max = String(Math.max(0, r.total - 1));
      setText(this.ofTotal, `of ${fmt.int(r.total)}`);
      this.prevBtn.disabled = index <= 0;
      this.nextBtn.disabled = index >= r.total - 1;
      const ex = r.examples[0];
      if (!ex) return;
      // Bytes of an image go as UINT8; anything else (a table's values) as FP32.
      const integer = ex.shape.length === 3 && ex.data.every((v) => Number.isInteger(v) && v >= 0 && v <= 255);
      this.show(ex.shape, ex.data, r.feature_names, r.categorical_names, ex.categorical);
      const truth = this.regression ? fmt.metric(ex.target) : ex.class_name;
      setText(this.truth, `True ${this.regression ? (this.meta.parameters.class_names || [])[0] || 'value' : 'label'}: ${truth}`);
      this.truth.dataset.label = String(this.regression ? ex.target : ex.label);
      this.input = { data: ex.data, datatype: integer ? 'UINT8' : 'FP32', source: `example ${index}`, categorical: ex.categorical };
      this.canvas.setAttribute('aria-label', `Test example ${index}, a ${truth}`);
      this.showError(null);
      await this.infer();
    } catch (e) {
      if (seq === this.seq) this.showError(e);
    }
  }

  // Draws an image example on the canvas (its values stretched to 0..255 unless they are
  // bytes), or a table row as a table: its numbers, then its categorical values (a CSV's
  // columns by name; a missing value as an em dash).
  show(shape, data, names = [], categoricalNames = [], categorical = []) {
    this.canvas.hidden = shape.length !== 3;
    this.table.hidden = shape.length === 3;
    if (shape.length !== 3) {
      const cells = [
        ...data.map((v, i) => ({ name: (names || [])[i] ?? `x${i}`, text: v === null ? '—' : fmt.metric(v), num: true })),
        ...(categorical || []).map((v, i) => ({ name: categoricalNames[i], text: v ?? '—', num: false })),
      ];
      this.table.replaceChildren(h('table', { class: 'table-compact' },
        h('thead', {}, h('tr', {}, cells.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : null }, c.name)))),
        h('tbody', {}, h('tr', {}, cells.map((c) => h('td', { class: c.num ? 'num' : null }, c.text))))));
      return;
    }
    const [H, W, C] = shape;
    let lo = 0, hi = 255;
    if (!data.every((v) => Number.isInteger(v) && v >= 0 && v <= 255)) {
      lo = Infinity;
      hi = -Infinity;
      for (const v of data) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
    }
    const scale = hi > lo ? 255 / (hi - lo) : 0;
    this.canvas.width = W;
    this.canvas.height = H;
    const ctx = this.canvas.getContext('2d');
    const img = ctx.createImageData(W, H);
    for (let p = 0; p < H * W; p++) {
      const v = (c) => Math.round((data[p * C + Math.min(c, C - 1)] - lo) * scale);
      const rgb = C >= 3 ? [v(0), v(1), v(2)] : [v(0), v(0), v(0)];
      img.data.set([...rgb, C === 4 ? v(3) : C === 2 ? v(1) : 255], p * 4);
    }
    ctx.putImageData(img, 0, 0);
    // Pixels stay square and sharp at any size (the CSS sets image-rendering).
    this.canvas.style.aspectRatio = `${W} / ${H}`;
  }

  // An image file, decoded and resized to the model's input, its channels converted.
  async tryFile(file) {
    if (!this.meta || !this.image) return;
    const [H, W, C] = this.meta.inputs[0].shape.slice(1);
    const seq = ++this.seq;
    let data;
    try {
      const bitmap = await createImageBitmap(file);
      const canvas = document.createElement('canvas');
      canvas.width = W;
      canvas.height = H;
      const ctx = canvas.getContext('2d', { willReadFrequently: true });
      ctx.fillStyle = '#000'; // transparency over black, the background of MNIST-like images
      ctx.fillRect(0, 0, W, H);
      ctx.drawImage(bitmap, 0, 0, W, H);
      bitmap.close();
      data = toChannels(ctx.getImageData(0, 0, W, H).data, C);
    } catch {
      if (seq === this.seq) this.showError(new Error(`${file.name}: not an image this browser can decode`));
      return;
    }
    if (seq !== this.seq) return;
    this.showError(null);
    this.show([H, W, C], data);
    setText(this.truth, `From ${file.name} (no label)`);
    delete this.truth.dataset.label;
    this.canvas.setAttribute('aria-label', `The image ${file.name}, as the model sees it`);
    this.input = { data, datatype: 'UINT8', source: file.name };
    this.fileInput.value = '';
    await this.infer();
  }

  async infer() {
    const input = this.input;
    const shape = this.meta.inputs[0].shape.slice(1);
    const seq = ++this.seq;
    const step = this.step();
    this.prediction.classList.add('pending');
    try {
      const res = await request(`/v2/models/${enc(this.id)}${step ? `/versions/${enc(step)}` : ''}/infer`, {
        method: 'POST',
        signal: this.signal,
        body: {
          inputs: [
            { name: 'input', shape: [1, ...shape], datatype: input.datatype, data: input.data },
            // A CSV's categorical values, as strings (the model codes them).
            ...(input.categorical ? [{ name: 'categorical', shape: [1, input.categorical.length], datatype: 'BYTES', data: input.categorical }] : []),
          ],
          // A classifier's predicted class is the server's "label": the arg-max, or a two-class
          // model's decision threshold (docs/models.md#serving).
          outputs: this.regression ? [{ name: 'prediction' }] : [{ name: 'probabilities' }, { name: 'label' }],
        },
      });
      const r = await res.json();
      if (seq !== this.seq) return;
      const names = (r.parameters && r.parameters.class_names) || this.meta.parameters.class_names || [];
      if (this.regression) {
        const value = r.outputs.find((o) => o.name === 'prediction').data[0];
        this.prediction.replaceChildren(`Predicted ${names[0] || 'value'}: `, h('strong', { class: 'model-class' }, fmt.metric(value)),
          h('span', { class: 'muted' }, ` · step ${fmt.int(Number(r.model_version))}`));
        this.prediction.dataset.predicted = String(value);
        this.prediction.dataset.source = input.source;
        this.bars.replaceChildren();
        this.showError(null);
        this.prediction.classList.remove('pending');
        return;
      }
      const probs = r.outputs.find((o) => o.name === 'probabilities').data;
      const best = Number(r.outputs.find((o) => o.name === 'label').data[0]);
      const name = (c) => names[c] ?? String(c);
      const threshold = this.meta.parameters.decision_threshold;
      // A two-class model: the probability shown is the positive class's (class 1), and the
      // threshold it is compared with when it is not the default.
      const said = probs.length === 2
        ? ` P(${name(1)}) ${fmt.percent(probs[1])}${threshold != null && threshold !== 0.5 ? ` (threshold ${fmt.percent(threshold)})` : ''}`
        : ` ${fmt.percent(probs[best])}`;
      this.prediction.replaceChildren('Predicted: ', h('strong', { class: 'model-class' }, name(best)),
        h('span', { class: 'muted' }, `${said} · step ${fmt.int(Number(r.model_version))}`));
      this.prediction.dataset.predicted = String(best);
      this.prediction.dataset.source = input.source;
      this.bars.replaceChildren(...probs.map((p, c) => {
        const bar = h('span', { class: 'model-bar-fill' });
        bar.style.width = `${(p * 100).toFixed(2)}%`;
        return h('li', { class: c === best ? 'best' : null, dataset: { class: String(c) } },
          h('span', { class: 'model-bar-name' }, name(c)),
          h('span', { class: 'model-bar', 'aria-hidden': 'true' }, bar),
          h('span', { class: 'model-bar-value num' }, fmt.percent(p)));
      }));
      this.showError(null);
    } catch (e) {
      if (seq === this.seq) this.showError(e);
    }
    if (seq === this.seq) this.prediction.classList.remove('pending');
  }

  destroy() {
    if (this.blobUrl) URL.revokeObjectURL(this.blobUrl);
  }
}
