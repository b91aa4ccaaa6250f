// Submit a job (#/submit?preset=mlp&dataset=<name>, #/submit?from=<job id>): pick a dataset (the
// daemon's list) and a preset that fits its examples, or start from an existing job's spec; edit
// the JSON, submit. A server-side validation error names a field (a JSON path);
// the editor marks that field's line and shows the message next to it. The draft survives
// navigating away (sessionStorage).
import { api, enc } from './api.js';
import { h, setText, toast } from './dom.js';
import { PRESETS, isImages, specFor, unfitReason } from './presets.js';
import { locateField, lineOf } from './jsonpath.js';
import { TaskPicker } from './task_pick.js';

const DRAFT_KEY = 'trainingd.draft';

export function mountSubmit(root, params) {
  const abort = new AbortController();
  const textarea = h('textarea', {
    id: 'spec-editor', name: 'spec', spellcheck: 'false', autocomplete: 'off', autocapitalize: 'off',
    wrap: 'off', 'aria-label': 'Job spec (JSON)', 'aria-describedby': 'spec-error',
  });
  const gutter = h('div', { class: 'gutter-lines' });
  const lineMark = h('div', { class: 'line-mark', hidden: true });
  // The message by the field (for the eye); #spec-error below repeats it for screen readers.
  const bubble = h('div', { class: 'field-error', hidden: true });
  // Behind the text: the line's highlight; above it: the message. Both scroll with the text.
  const under = h('div', { class: 'editor-layer', 'aria-hidden': 'true' }, lineMark);
  const over = h('div', { class: 'editor-layer', 'aria-hidden': 'true' }, bubble);
  const editor = h('div', { class: 'editor' }, h('div', { class: 'gutter', 'aria-hidden': 'true' }, gutter),
    h('div', { class: 'editor-main' }, under, textarea, over));
  const formError = h('p', { id: 'spec-error', class: 'form-error', role: 'alert' });
  const submitBtn = h('button', { type: 'submit', class: 'btn btn-primary', id: 'submit-job' }, 'Submit job');
  // The dataset picker: the daemon's datasets (GET /datasets). Picking one rewrites the spec's
  // dataset (and the preset's job name); the presets that do not fit its examples are disabled.
  let datasets = new Map(); // name -> Dataset, once listed
  let preset = 'mlp';
  let generated = ''; // the text a preset wrote, to tell whether the editor was edited since
  const datasetSelect = h('select', {
    id: 'dataset-select', name: 'dataset', class: 'input', 'aria-describedby': 'dataset-hint',
    onchange: () => pickDataset(datasetSelect.value),
  }, h('option', { value: 'fashion-mnist' }, 'fashion-mnist'));
  const datasetHint = h('p', { id: 'dataset-hint', class: 'muted hint dataset-hint' });
  // The task, a regression job's loss, a two-class classifier's threshold: they rewrite the spec.
  const taskPick = new TaskPicker(() => rewrite((spec) => spec));
  const presetButtons = Object.entries(PRESETS).map(([name, p]) => h('button', {
    type: 'button', class: 'preset', dataset: { preset: name }, 'aria-pressed': 'false',
    onclick: () => usePreset(name),
  }, h('strong', {}, name), h('span', {}, p.about)));
  const form = h('form', { class: 'submit-form', novalidate: true, onsubmit: (e) => { e.preventDefault(); submit(); } },
    editor,
    h('div', { class: 'form-foot' }, formError,
      h('span', { class: 'muted hint' }, 'Ctrl+Enter submits'),
      submitBtn));
  root.append(h('section', { class: 'page submit-page' },
    h('div', { class: 'page-head' }, h('h1', {}, 'New job')),
    h('p', { class: 'muted' }, 'Pick a dataset, start from a preset, edit the JSON spec, submit. Every field and its default: docs/job-spec.md.'),
    h('div', { class: 'dataset-pick' }, h('label', { for: 'dataset-select' }, 'Dataset'), datasetSelect,
      h('a', { href: '#/datasets' }, 'Upload or manage datasets')),
    datasetHint,
    taskPick.el,
    h('div', { class: 'presets', role: 'group', 'aria-label': 'Start from a preset' }, presetButtons),
    form));

  function setText2(text) {
    textarea.value = text;
    onEdit();
  }

  function usePreset(name) {
    preset = name;
    for (const b of presetButtons) b.setAttribute('aria-pressed', String(b.dataset.preset === name));
    generated = JSON.stringify(taskPick.apply(specFor(name, datasets.get(datasetSelect.value))), null, 2);
    setText2(generated);
    clearError();
  }

  // The spec in the editor, changed by `change` and then by the task controls; text that is not
  // JSON is left as it is. An unedited preset stays unedited.
  function rewrite(change) {
    let spec;
    try {
      spec = JSON.parse(textarea.value);
    } catch {
      return;
    }
    if (!spec || typeof spec !== 'object' || Array.isArray(spec)) return;
    const unedited = textarea.value === generated;
    const text = JSON.stringify(taskPick.apply(change(spec)), null, 2);
    if (unedited) generated = text;
    setText2(text);
    clearError();
  }

  // The picker, the presets' states and the hint for dataset `name` (the text is left alone).
  function showDataset(name) {
    if (name && ![...datasetSelect.options].some((o) => o.value === name)) {
      datasetSelect.append(h('option', { value: name }, `${name} (not on this daemon)`));
    }
    if (name) datasetSelect.value = name;
    const d = datasets.get(datasetSelect.value);
    taskPick.fit(d);
    const reasons = [];
    for (const b of presetButtons) {
      const why = unfitReason(b.dataset.preset, d);
      b.disabled = Boolean(why);
      b.title = why;
      if (why) reasons.push(why);
    }
    if (!d) {
      if (datasets.size) setText(datasetHint, `The daemon has no dataset ${datasetSelect.value}.`);
      return;
    }
    const shape = isImages(d) ? `${d.example_shape.join('×')} images` : `rows of ${d.example_shape[0]} features`;
    datasetHint.dataset.kind = isImages(d) ? 'images' : 'table';
    const labels = d.num_classes > 0
      ? `${d.num_classes} classes; the preset's last layer gets ${d.num_classes} outputs`
      : 'numeric labels (regression only); the preset\'s last layer gets 1 output';
    setText(datasetHint, `${d.name}: ${shape}, ${labels}.` + (reasons.length ? ` ${reasons.join(' ')}` : ''));
  }

  // Picks dataset `name`: an unedited preset is written again for it (mlp if the preset does not
  // fit); an edited spec gets the dataset's entry (and, if it still has the preset's name, the
  // new name); text that is not JSON is left as it is.
  function pickDataset(name) {
    const before = datasetSelect.dataset.current || '';
    showDataset(name);
    datasetSelect.dataset.current = name;
    const d = datasets.get(name);
    if (!textarea.value.trim() || textarea.value === generated) {
      usePreset(unfitReason(preset, d) ? 'mlp' : preset);
      return;
    }
    if (!d) return;
    rewrite((spec) => {
      const fresh = specFor(typeof spec.model === 'string' && PRESETS[spec.model] ? spec.model : 'mlp', d);
      if (typeof spec.model === 'string' && spec.name === `${spec.model}-${before}`) spec.name = fresh.name;
      spec.dataset = fresh.dataset;
      return spec;
    });
  }

  function onEdit() {
    const lines = textarea.value.split('\n').length;
    if (gutter.childElementCount !== lines) {
      gutter.replaceChildren(...Array.from({ length: lines }, (_, i) => h('div', {}, String(i + 1))));
    }
    sessionStorage.setItem(DRAFT_KEY, textarea.value);
    syncScroll();
  }

  function syncScroll() {
    const y = textarea.scrollTop;
    gutter.style.transform = `translateY(${-y}px)`;
    under.style.transform = `translate(${-textarea.scrollLeft}px, ${-y}px)`;
    over.style.transform = `translateY(${-y}px)`;
  }

  function clearError() {
    lineMark.hidden = true;
    bubble.hidden = true;
    setText(formError, '');
    textarea.removeAttribute('aria-invalid');
    editor.removeAttribute('data-error-line');
    for (const g of gutter.querySelectorAll('.bad')) g.classList.remove('bad');
  }

  // Marks `line` (1-based) and shows `message` next to it; selects the field's name.
  function showError(message, field, offset) {
    const text = textarea.value;
    const line = lineOf(text, offset);
    const lh = parseFloat(getComputedStyle(textarea).lineHeight) || 20;
    const pad = parseFloat(getComputedStyle(textarea).paddingTop) || 0;
    lineMark.style.top = `${pad + (line - 1) * lh}px`;
    lineMark.style.height = `${lh}px`;
    lineMark.hidden = false;
    bubble.replaceChildren(field ? h('code', {}, field) : '', field ? ' ' : '', message);
    // On the field's line, right after its text, when there is room; else just below it.
    const lineText = text.split('\n')[line - 1] || '';
    const ctx = document.createElement('canvas').getContext('2d');
    ctx.font = getComputedStyle(textarea).font;
    const padLeft = parseFloat(getComputedStyle(textarea).paddingLeft) || 0;
    const right = padLeft + ctx.measureText(lineText.replace(/\t/g, '  ')).width + 20 - textarea.scrollLeft;
    bubble.hidden = false;
    bubble.classList.remove('beside', 'below');
    const beside = right + bubble.offsetWidth <= textarea.clientWidth - 8;
    bubble.classList.add(beside ? 'beside' : 'below');
    bubble.style.left = beside ? `${right}px` : '';
    bubble.style.top = beside ? `${pad + (line - 1) * lh + lh / 2 - bubble.offsetHeight / 2}px` : `${pad + line * lh + 2}px`;
    bubble.dataset.field = field || '';
    bubble.dataset.line = String(line);
    editor.dataset.errorLine = String(line);
    const g = gutter.children[line - 1];
    if (g) g.classList.add('bad');
    textarea.setAttribute('aria-invalid', 'true');
    setText(formError, `Line ${line}${field ? ` (${field})` : ''}: ${message}`);
    // Bring the line into view and select the field's key, so typing replaces nothing by accident
    // but the eye lands on it.
    textarea.focus({ preventScroll: true });
    let end = offset;
    if (text[offset] === '"') end = text.indexOf('"', offset + 1) + 1;
    textarea.setSelectionRange(offset, Math.max(offset, end));
    const top = (line - 1) * lh;
    if (top < textarea.scrollTop || top > textarea.scrollTop + textarea.clientHeight - 3 * lh) {
      textarea.scrollTop = Math.max(0, top - 2 * lh);
    }
    syncScroll();
  }

  async function submit() {
    clearError();
    const text = textarea.value;
    try {
      JSON.parse(text);
    } catch (e) {
      // V8: "... in JSON at position 123 (line 5 column 3)".
      const m = /position (\d+)/.exec(e.message);
      showError(`Not valid JSON: ${e.message.replace(/^JSON\.parse: /, '')}`, '', m ? Number(m[1]) : 0);
      return;
    }
    submitBtn.disabled = true;
    setText(submitBtn, 'Submitting…');
    try {
      const job = await api('/jobs', { method: 'POST', body: text, signal: abort.signal });
      sessionStorage.removeItem(DRAFT_KEY);
      toast(`Submitted ${job.name}`);
      location.hash = `#/jobs/${enc(job.id)}`;
    } catch (e) {
      if (e.name === 'AbortError') return;
      if (e.field) {
        const where = locateField(text, e.field);
        // "batch_size: must be >= 1" -> the message without its field, shown by the field.
        const msg = e.message.startsWith(`${e.field}: `) ? e.message.slice(e.field.length + 2) : e.message;
        showError(where.depth ? msg : `${msg} (not in the spec)`, e.field, where.offset);
      } else {
        const m = /at byte (\d+)/.exec(e.message);
        if (m) showError(e.message, '', Number(m[1]));
        else setText(formError, e.status ? e.message : `Not submitted: ${e.message}`);
      }
    } finally {
      submitBtn.disabled = false;
      setText(submitBtn, 'Submit job');
    }
  }

  textarea.addEventListener('input', () => {
    onEdit();
    if (!bubble.hidden) clearError();
  });
  textarea.addEventListener('scroll', syncScroll);
  textarea.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      submit();
    }
  });

  // The dataset a spec names (a bare string is a name), or ''.
  function datasetOf(text) {
    try {
      const d = JSON.parse(text).dataset;
      return typeof d === 'string' ? d : (d && typeof d.name === 'string' ? d.name : 'fashion-mnist');
    } catch {
      return '';
    }
  }

  // The daemon's datasets (`listing`, a request under way) into the picker, once the starting
  // text is there; then ?dataset=<name> is picked (rewriting the preset's spec for it), else the
  // picker shows the dataset the text names.
  async function showDatasets(listing, wanted) {
    try {
      const r = await listing;
      datasets = new Map(r.datasets.map((d) => [d.name, d]));
      datasetSelect.replaceChildren(...r.datasets.map((d) => h('option', { value: d.name },
        `${d.name} (${isImages(d) ? d.example_shape.join('×') : `${d.example_shape[0]} features`}, ${d.num_classes > 0 ? `${d.num_classes} classes` : 'numeric labels'})`)));
    } catch (e) {
      if (e.name === 'AbortError') return;
      setText(datasetHint, `Could not list the datasets: ${e.message}`);
    }
    try {
      taskPick.read(JSON.parse(textarea.value));
    } catch {
      // not JSON: the controls keep their defaults
    }
    if (wanted) {
      pickDataset(wanted);
    } else {
      const name = datasetOf(textarea.value) || (datasets.has('fashion-mnist') ? 'fashion-mnist' : datasets.keys().next().value);
      showDataset(name);
      datasetSelect.dataset.current = name || '';
    }
    root.querySelector('.submit-page').dataset.datasets = String(datasets.size);
  }

  // The starting text: ?from=<id> (a copy of that job), ?preset=<name>, the draft, or mlp; for
  // ?dataset=<name>, a preset's spec for that dataset once the datasets are listed.
  async function start() {
    const from = params.get('from');
    const wanted = params.get('preset');
    if (from) {
      try {
        const job = await api(`/jobs/${enc(from)}`, { signal: abort.signal });
        const spec = { ...job.spec, name: `${job.spec.name}-copy`.slice(0, 100) };
        setText2(JSON.stringify(spec, null, 2));
        return true;
      } catch (e) {
        if (e.name === 'AbortError') return false;
        setText(formError, `Could not load job ${from}: ${e.message}`);
      }
    }
    if (wanted && PRESETS[wanted]) {
      usePreset(wanted);
    } else {
      const draft = sessionStorage.getItem(DRAFT_KEY);
      if (draft && !params.get('dataset')) setText2(draft);
      else usePreset('mlp');
    }
    return true;
  }
  const listing = api('/datasets', { signal: abort.signal });
  listing.catch(() => {}); // handled by showDatasets
  start().then((started) => {
    if (started) showDatasets(listing, !params.get('from') && params.get('dataset'));
  });

  return { unmount() { abort.abort(); } };
}
