// The datasets (#/datasets): every dataset the daemon has (uploads, and the data root's IDX
// directories, read-only) with its shape, classes, splits, size and digest, and a CSV's columns
// (type, missing values, statistics, levels: what `trainingd datasets get` shows); an upload form (the
// file streamed as the request body, with the bytes sent shown as they go); delete after a
// confirmation. The daemon's errors are shown as it words them, with the field they name.
import { api, enc, uploadDataset } from './api.js';
import { h, setText, toast, confirmDialog } from './dom.js';
import { isImages } from './presets.js';
import * as fmt from './format.js';

const NAME_CHARS = /[^A-Za-z0-9._-]+/g;
const FORMAT_BY_EXTENSION = { npz: 'npz', csv: 'csv' };
const PREPROCESSING = { scale_255: '÷ 255', standard: 'standardized', none: 'as stored' };

// "28×28×1" and "images", or "4 features" and "table".
export function shapeText(d) {
  const s = d.example_shape || [];
  if (isImages(d)) return [s.join('×'), 'images'];
  return [s.length === 1 ? `${fmt.int(s[0])} features` : `[${s.join(', ')}]`, 'table'];
}

// The class names when the data has some (not just the ids 0..n-1 the daemon lists otherwise).
export function namedClasses(d) {
  const names = d.class_names || [];
  return names.some((n, i) => n !== String(i)) ? names : [];
}

// A name the daemon takes, from a file name: its stem with other characters as '-'.
function nameFromFile(fileName) {
  const stem = fileName.replace(/\.[^.]*$/, '') || fileName;
  return stem.replace(NAME_CHARS, '-').replace(/^[-.]+|[-.]+$/g, '').slice(0, 100);
}

export function mountDatasets(root) {
  const abort = new AbortController();
  let upload = null; // the upload in progress: its AbortController
  let datasets = [];
  const open = new Set(); // the datasets whose columns are shown

  const tbody = h('tbody');
  const table = h('table', { class: 'datasets-table', hidden: true },
    h('thead', {}, h('tr', {},
      ['Name', 'Format', 'Example', 'Classes', 'Train / val / test', 'Size', 'SHA-256', 'Created', '']
        .map((t) => h('th', { scope: 'col' }, t)))),
    tbody);
  const message = h('div', { class: 'empty' }, 'Loading datasets…');
  const notice = h('p', { id: 'datasets-error', class: 'form-error notice', role: 'alert', hidden: true });

  // The upload form.
  const fileInput = h('input', { type: 'file', id: 'upload-file', name: 'file', accept: '.npz,.csv', class: 'input', required: true, onchange: onFile });
  const nameInput = h('input', {
    type: 'text', id: 'upload-name', name: 'name', class: 'input', autocomplete: 'off', spellcheck: 'false',
    maxlength: 100, placeholder: 'from the file name', oninput: () => { nameInput.dataset.touched = 'true'; },
  });
  const formatSelect = h('select', { id: 'upload-format', name: 'format', class: 'input', onchange: showOptions },
    h('option', { value: 'npz' }, 'npz (NumPy)'), h('option', { value: 'csv' }, 'csv (table)'));
  const labelColumn = h('input', { type: 'text', id: 'upload-label-column', name: 'label_column', class: 'input', value: 'label', autocomplete: 'off', spellcheck: 'false' });
  const testFraction = h('input', { type: 'number', id: 'upload-test-fraction', name: 'test_fraction', class: 'input', value: '0.2', min: '0', max: '1', step: '0.05' });
  const splitSeed = h('input', { type: 'number', id: 'upload-split-seed', name: 'split_seed', class: 'input', value: '0', min: '0', step: '1' });
  // A CSV's own test file: sent as the multipart part "test", instead of a split.
  const testFile = h('input', { type: 'file', id: 'upload-test-file', name: 'test', accept: '.csv', class: 'input', onchange: showOptions });
  const normalize = h('select', { id: 'upload-normalize', name: 'normalize', class: 'input' },
    h('option', { value: 'none' }, 'none'), h('option', { value: 'standard' }, 'standard'));
  const normalizeHint = h('span', { class: 'muted hint' });
  // A CSV's columns (docs/data.md#columns): names separated by commas, as the query takes them.
  const text = (id, name, placeholder, value) => h('input', { type: 'text', id, name, class: 'input', autocomplete: 'off', spellcheck: 'false', placeholder, value: value || '' });
  const categorical = text('upload-categorical', 'categorical', 'typed from the data');
  const numberColumns = text('upload-number', 'number', 'typed from the data');
  const ignore = text('upload-ignore', 'ignore', 'none');
  const missingValues = text('upload-missing-values', 'missing_values', '', 'NA,NaN,?,null');
  const impute = h('select', { id: 'upload-impute', name: 'impute', class: 'input' },
    h('option', { value: 'mean' }, 'mean'), h('option', { value: 'median' }, 'median'));
  const missingIndicator = text('upload-missing-indicator', 'missing_indicator', 'none');
  const hashBuckets = text('upload-hash-buckets', 'hash_buckets', 'none');
  const field = (label, input, hint, narrow) => h('label', { class: narrow ? 'field field-narrow' : 'field', dataset: { field: input.name } },
    h('span', { class: 'field-label' }, label), input, hint || '');
  const csvOptions = h('div', { class: 'field-row csv-options' },
    field('Label column', labelColumn),
    field('Test file (optional)', testFile),
    field('Test fraction', testFraction),
    field('Split seed', splitSeed));
  const columnOptions = h('div', { class: 'field-row csv-columns' },
    field('Categorical columns', categorical),
    field('Number columns', numberColumns),
    field('Leave out', ignore),
    field('Missing values', missingValues, h('span', { class: 'muted hint' }, 'besides an empty cell')),
    field('Fill a missing number with', impute, '', true),
    field('"Was missing" features', missingIndicator, h('span', { class: 'muted hint' }, 'number columns, or *')),
    field('Hash into buckets', hashBuckets, h('span', { class: 'muted hint' }, 'column:N, past the level cap')));
  const bar = h('div', { class: 'progress-bar' });
  const progress = h('div', { class: 'progress', role: 'progressbar', 'aria-label': 'Bytes sent', 'aria-valuemin': 0 }, bar);
  const progressText = h('div', { class: 'progress-text', id: 'upload-progress-text' });
  const progressBox = h('div', { class: 'upload-progress', id: 'upload-progress', hidden: true }, progress, progressText);
  const uploadError = h('p', { id: 'upload-error', class: 'form-error', role: 'alert' });
  const submitBtn = h('button', { type: 'submit', class: 'btn btn-primary', id: 'upload-submit' }, 'Upload');
  const cancelBtn = h('button', { type: 'button', class: 'btn', id: 'upload-cancel', hidden: true, onclick: () => upload && upload.abort() }, 'Cancel');
  const inputs = {
    name: nameInput, format: formatSelect, label_column: labelColumn, test_fraction: testFraction, split_seed: splitSeed, normalize, train: fileInput, test: testFile,
    categorical, number: numberColumns, ignore, missing_values: missingValues, impute,
    missing_indicator: missingIndicator, hash_buckets: hashBuckets,
  };
  const form = h('form', { class: 'card upload-form', id: 'upload-form', novalidate: true, onsubmit: (e) => { e.preventDefault(); send(); } },
    h('div', { class: 'card-head' }, h('h2', {}, 'Upload a dataset'),
      h('span', { class: 'muted hint' }, 'NumPy .npz (x_train, y_train, x_test, y_test) or a CSV table; the formats: docs/data.md')),
    h('div', { class: 'field-row' },
      field('File', fileInput),
      field('Name', nameInput),
      field('Format', formatSelect)),
    csvOptions,
    columnOptions,
    h('div', { class: 'field-row' }, field('Normalize', normalize, normalizeHint, true)),
    progressBox,
    h('div', { class: 'form-foot' }, uploadError, cancelBtn, submitBtn));

  root.append(h('section', { class: 'page datasets-page' },
    h('div', { class: 'page-head' }, h('h1', {}, 'Datasets'), h('a', { class: 'btn', href: '#/submit' }, 'New job')),
    h('p', { class: 'muted' }, 'What jobs train on: uploads, and the data root\'s IDX directories (read-only). A job names one in its spec\'s dataset.'),
    notice,
    h('div', { class: 'table-wrap' }, table),
    message,
    form));
  showOptions();

  function onFile() {
    const file = fileInput.files[0];
    if (!file) return;
    const ext = (/\.([^.]+)$/.exec(file.name) || [])[1];
    if (ext && FORMAT_BY_EXTENSION[ext.toLowerCase()]) formatSelect.value = FORMAT_BY_EXTENSION[ext.toLowerCase()];
    if (!nameInput.dataset.touched || !nameInput.value) {
      nameInput.value = nameFromFile(file.name);
      delete nameInput.dataset.touched;
    }
    showOptions();
    clearError();
  }

  // The CSV options only for CSV; normalize for both (an npz table can be standardized too).
  function showOptions() {
    csvOptions.hidden = formatSelect.value !== 'csv';
    columnOptions.hidden = formatSelect.value !== 'csv';
    // With a test file there is no split to ask for.
    const split = !testFile.files.length;
    testFraction.disabled = !split;
    splitSeed.disabled = !split;
    setText(normalizeHint, formatSelect.value === 'csv'
      ? 'standard: each feature to (x − mean) / std of the train split'
      : 'standard: tables only (x of shape [N, F]), each feature to (x − mean) / std of the train split');
  }

  function clearError() {
    setText(uploadError, '');
    delete uploadError.dataset.field;
    delete uploadError.dataset.status;
    for (const el of Object.values(inputs).concat(fileInput)) el.removeAttribute('aria-invalid');
  }

  // The daemon's message as it wrote it; the field it names marked (and named first when the
  // message does not start with it).
  function showError(e) {
    const f = e.field || '';
    uploadError.replaceChildren(f && !e.message.startsWith(`${f}: `) ? h('code', {}, f) : '', f && !e.message.startsWith(`${f}: `) ? ' ' : '', e.message);
    uploadError.dataset.field = f;
    uploadError.dataset.status = String(e.status);
    const input = inputs[f] || (e.status === 400 || e.status === 413 ? fileInput : null);
    if (input) input.setAttribute('aria-invalid', 'true');
  }

  function query() {
    const q = new URLSearchParams({ name: nameInput.value.trim(), format: formatSelect.value });
    if (formatSelect.value === 'csv') {
      for (const [k, el] of [['label_column', labelColumn], ['test_fraction', testFraction], ['split_seed', splitSeed],
        ['categorical', categorical], ['number', numberColumns], ['ignore', ignore],
        ['missing_indicator', missingIndicator], ['hash_buckets', hashBuckets]]) {
        if (!el.disabled && el.value.trim() !== '') q.set(k, el.value.trim());
      }
      // Sent only when changed: an emptied field means "no markers besides an empty cell".
      if (missingValues.value.trim() !== 'NA,NaN,?,null') q.set('missing_values', missingValues.value.trim());
      if (impute.value !== 'mean') q.set('impute', impute.value);
    }
    if (normalize.value !== 'none') q.set('normalize', normalize.value);
    return q.toString();
  }

  function setProgress(sent, total) {
    const frac = total > 0 ? Math.min(1, sent / total) : 0;
    bar.style.width = `${(frac * 100).toFixed(1)}%`;
    progress.setAttribute('aria-valuemax', String(total));
    progress.setAttribute('aria-valuenow', String(sent));
    progressBox.dataset.sent = String(sent);
    setText(progressText, sent >= total
      ? `${fmt.bytes(total)} sent; the daemon is checking the file…`
      : `${fmt.bytes(sent)} of ${fmt.bytes(total)} sent (${Math.floor(frac * 100)}%)`);
  }

  async function send() {
    clearError();
    const file = fileInput.files[0];
    if (!file) {
      setText(uploadError, 'Choose a file to upload.');
      fileInput.setAttribute('aria-invalid', 'true');
      return;
    }
    if (!nameInput.value.trim()) nameInput.value = nameFromFile(file.name);
    const test = formatSelect.value === 'csv' ? testFile.files[0] : undefined;
    const total = file.size + (test ? test.size : 0);
    upload = new AbortController();
    submitBtn.disabled = true;
    cancelBtn.hidden = false;
    progressBox.hidden = false;
    progressBox.dataset.state = 'sending';
    setProgress(0, total);
    try {
      const d = await uploadDataset(file, query(), { testFile: test, onProgress: setProgress, signal: upload.signal });
      progressBox.dataset.state = 'done';
      setText(progressText, `${fmt.bytes(total)} sent and kept as ${d.name}.`);
      toast(`Uploaded ${d.name}`);
      form.reset();
      delete nameInput.dataset.touched;
      showOptions();
      await refresh();
    } catch (e) {
      progressBox.dataset.state = 'failed';
      if (e.name === 'AbortError') {
        if (!abort.signal.aborted) setText(progressText, 'Cancelled; the daemon keeps nothing of it.');
        return;
      }
      progressBox.hidden = true;
      showError(e);
    } finally {
      upload = null;
      submitBtn.disabled = false;
      cancelBtn.hidden = true;
    }
  }

  async function remove(d) {
    const ok = await confirmDialog(`Delete ${d.name}?`,
      `This deletes the dataset ${d.name} (${fmt.bytes(d.bytes)}) from the daemon. Jobs that trained on it keep their results. It cannot be undone.`);
    if (!ok) return;
    notice.hidden = true;
    try {
      await api(`/datasets/${enc(d.name)}`, { method: 'DELETE', signal: abort.signal });
      toast(`Deleted ${d.name}`);
    } catch (e) {
      if (e.name === 'AbortError') return;
      // 409 while a queued or running job uses it: the daemon says which.
      notice.replaceChildren(`Could not delete ${d.name}: `, e.message);
      notice.dataset.status = String(e.status);
      notice.hidden = false;
    }
    await refresh();
  }

  async function copy(d) {
    try {
      await navigator.clipboard.writeText(d.sha256);
      toast(`Copied the SHA-256 of ${d.name}`);
    } catch {
      toast(`SHA-256 of ${d.name}: ${d.sha256}`);
    }
  }

  // A CSV's columns, one row each, under its dataset's row (toggled by its Columns button).
  function columnsTable(d) {
    const num = (v) => (typeof v === 'number' ? fmt.metric(v) : fmt.DASH);
    return h('table', { class: 'columns-table', dataset: { dataset: d.name } },
      h('thead', {}, h('tr', {}, ['Column', 'Type', 'Missing', 'Mean', 'Std', 'Min', 'Max', 'Levels', 'Most frequent', 'Note']
        .map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, ...(d.columns || []).map((c) => h('tr', { dataset: { column: c.name, type: c.type } },
        h('td', {}, h('code', {}, c.name)),
        h('td', { title: c.typed_by_user ? 'set by an upload option' : 'typed from the data' }, c.type + (c.typed_by_user ? ' *' : '')),
        h('td', { class: 'num' }, c.type === 'label' || c.type === 'ignored' ? fmt.DASH : fmt.int(c.missing)),
        h('td', { class: 'num' }, num(c.mean)), h('td', { class: 'num' }, num(c.std)),
        h('td', { class: 'num' }, num(c.min)), h('td', { class: 'num' }, num(c.max)),
        h('td', { class: 'num' }, c.levels === undefined ? fmt.DASH : fmt.int(c.levels)),
        h('td', {}, (c.top_levels || []).slice(0, 3).map((l) => `${l.value} (${fmt.int(l.count)})`).join(', ') || fmt.DASH),
        h('td', {}, columnNote(c))))));
  }

  // What the Note cell says of a column, as `trainingd datasets get` does: why it is dropped or
  // that it is constant, and the options that shape it (docs/data.md#hashed-columns,
  // #missing-indicators).
  function columnNote(c) {
    const parts = [c.dropped ? `dropped: ${c.dropped}` : c.note];
    if (c.hash_buckets) parts.push(`hashed into ${fmt.int(c.hash_buckets)} buckets`);
    if (c.missing_indicator) parts.push('missing indicator');
    return parts.filter(Boolean).join('; ') || fmt.DASH;
  }

  function row(d) {
    const [shape, kind] = shapeText(d);
    const names = namedClasses(d);
    const s = d.splits || {};
    return h('tr', { dataset: { name: d.name, format: d.format, readOnly: String(d.read_only) } },
      h('td', { class: 'cell-name', 'data-label': 'Name' }, h('strong', { title: d.name }, d.name),
        d.read_only ? h('div', { class: 'sub' }, 'read-only (data root)') : ''),
      h('td', { 'data-label': 'Format' }, h('code', {}, d.format)),
      h('td', { 'data-label': 'Example', class: 'cell-shape' }, shape,
        h('div', { class: 'sub' }, `${kind}, ${d.element_type || '?'} ${PREPROCESSING[d.preprocessing && d.preprocessing.kind] || ''}`)),
      h('td', { 'data-label': 'Classes', class: 'cell-classes' }, fmt.int(d.num_classes),
        names.length ? h('div', { class: 'sub class-names', title: names.join(', ') }, names.join(', ')) : ''),
      h('td', { 'data-label': 'Train / val / test', class: 'num' }, [s.train, s.validation, s.test].map(fmt.int).join(' / ')),
      h('td', { 'data-label': 'Size', class: 'num', title: d.bytes > 0 ? `${fmt.int(d.bytes)} bytes` : undefined }, d.bytes > 0 ? fmt.bytes(d.bytes) : fmt.DASH),
      h('td', { 'data-label': 'SHA-256' }, d.sha256
        ? h('button', { type: 'button', class: 'sha mono', title: `${d.sha256} (click to copy)`, 'aria-label': `Copy the SHA-256 of ${d.name}`, dataset: { sha256: d.sha256 }, onclick: () => copy(d) }, `${d.sha256.slice(0, 12)}…`)
        : fmt.DASH),
      h('td', { 'data-label': 'Created', title: fmt.absolute(d.created_at) }, d.created_at ? fmt.relative(d.created_at) : fmt.DASH),
      h('td', { class: 'cell-actions' },
        d.columns ? h('button', {
          type: 'button', class: 'btn btn-small', dataset: { action: 'columns' }, 'aria-expanded': String(open.has(d.name)), 'aria-label': `The columns of ${d.name}`,
          onclick: () => { if (open.has(d.name)) open.delete(d.name); else open.add(d.name); render(); },
        }, 'Columns') : '',
        h('a', { class: 'btn btn-small', href: `#/submit?dataset=${enc(d.name)}`, 'aria-label': `Train a model on ${d.name}` }, 'Train…'),
        d.read_only ? '' : h('button', {
          type: 'button', class: 'btn btn-small btn-ghost-danger', dataset: { action: 'delete' }, 'aria-label': `Delete ${d.name}`,
          onclick: () => remove(d),
        }, 'Delete')));
  }

  function render() {
    tbody.replaceChildren(...datasets.flatMap((d) => (d.columns && open.has(d.name)
      ? [row(d), h('tr', { class: 'columns-row' }, h('td', { colspan: 9 }, h('div', { class: 'table-wrap' }, columnsTable(d))))]
      : [row(d)])));
    table.hidden = datasets.length === 0;
    message.hidden = datasets.length !== 0;
    if (!datasets.length) message.replaceChildren(h('p', {}, 'No datasets yet: upload one below.'));
    root.querySelector('.datasets-page').dataset.datasets = String(datasets.length);
  }

  async function refresh() {
    try {
      const r = await api('/datasets', { signal: abort.signal });
      datasets = r.datasets.slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      render();
    } catch (e) {
      if (e.name === 'AbortError') return;
      message.hidden = false;
      message.replaceChildren(h('p', { class: 'error' }, `Could not load the datasets: ${e.message}`),
        h('button', { type: 'button', class: 'btn', onclick: refresh }, 'Try again'));
    }
  }

  refresh();
  return {
    unmount() {
      abort.abort();
      if (upload) upload.abort();
    },
  };
}
