#!/usr/bin/env node
// The job page's model panel in a real browser (Debian's Chromium via playwright-core, as
// dashboard_test.mjs), against `trainingd serve` on a free port with an API token.
//
//   node tests/web/model_panel_test.mjs TRAININGD [SCREENSHOT_DIR]
//
// A short softmax job on Fashion-MNIST (checkpoints every 100 steps) through the daemon; on its
// page the model panel: "Download ONNX" saves the file the daemon names (an ONNX protobuf:
// ir_version 7 first), also of an older checkpoint picked in the step picker; test example 0's
// predicted class is what /v2/models/<id>/infer answers for that example fetched independently
// from /api/v1/datasets/fashion-mnist/examples; Next shows example 1 with its true label; a PNG
// made in the page and dropped on the panel is sent as a 28x28 grey UINT8 tensor and gets a
// prediction with every class's probability; a softmax job on an uploaded CSV shows its test
// examples as rows and predicts them as /infer does. Then no horizontal overflow at 380 px. It fails on
// console errors, page errors, CSP violations, 5xx answers and requests to other hosts, as
// dashboard_test.mjs does.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CHROMIUM, Daemon, check, expecting, log, newContext, runTest, watchedPage,
} from './browser_support.mjs';

const TRAININGD = process.argv[2];
const SHOTS = path.resolve(process.argv[3] || 'model-screenshots');
const TOKEN = 'model-panel-test-token-0123456789abcdef';
if (!TRAININGD || !fs.existsSync(TRAININGD)) throw new Error(`usage: model_panel_test.mjs TRAININGD [DIR]; no ${TRAININGD}`);
if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (tools/install-deps.sh build)`);
fs.mkdirSync(SHOTS, { recursive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trainingd-model-panel-'));

let daemon;
let context;
let imageJob; // the Fashion-MNIST job's id

// A request to the daemon from the test itself (not the page), with the token.
async function call(method, p, body) {
  const headers = { Authorization: `Bearer ${TOKEN}` };
  if (body) headers['Content-Type'] = 'application/json';
  const r = await fetch(`${daemon.url}${p}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
  return { status: r.status, body: await r.json() };
}

const argmax = (a) => a.reduce((best, v, i) => (v > a[best] ? i : best), 0);

// Clicks Download ONNX; returns the saved file's name and bytes and the daemon's file name.
async function download(page) {
  const answered = page.waitForResponse((r) => r.url().includes('/model?format=onnx'));
  const saved = page.waitForEvent('download');
  await page.locator('.model-panel [data-action="download-onnx"]').click();
  const disposition = (await answered).headers()['content-disposition'] || '';
  const d = await saved;
  const bytes = fs.readFileSync(await d.path());
  return { name: d.suggestedFilename(), bytes, disposition };
}

async function main() {
  log(`trainingd ${TRAININGD}, data in ${tmp}`);
  daemon = await Daemon.start(TRAININGD, path.join(tmp, 'data'), {
    config: { threads_per_job: 1 }, env: { TRAININGD_TOKEN: TOKEN },
  });
  const spec = {
    name: 'softmax-panel',
    dataset: { name: 'fashion-mnist', validation_size: 1000, max_train_examples: 5000 },
    model: 'softmax',
    optimizer: { type: 'adam', learning_rate: 0.01 },
    batch_size: 50,
    max_steps: 300,
    seed: 7,
    hooks: { checkpoint: { every_steps: 100 } },
  };
  const submitted = await daemon.api('POST', '/jobs', spec, TOKEN);
  check(submitted.status === 201, `the job is submitted: ${JSON.stringify(submitted.body)}`);
  const id = submitted.body.id;
  imageJob = id;
  for (let i = 0; ; i++) {
    const j = await daemon.api('GET', `/jobs/${id}`, undefined, TOKEN);
    if (j.body.state === 'completed') break;
    check(!['failed', 'stopped'].includes(j.body.state) && i < 1200, `the job completes: ${JSON.stringify(j.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const checkpoints = (await call('GET', `/api/v1/jobs/${id}/checkpoints`)).body.checkpoints.map((c) => c.global_step);
  log(`job ${id} completed; checkpoints at ${checkpoints}`);

  context = await newContext(path.join(tmp, 'profile'));
  const page = await watchedPage(context);
  const inferBodies = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && /\/v2\/models\/[^/]+(\/versions\/\d+)?\/infer$/.test(r.url())) inferBodies.push({ url: r.url(), body: r.postDataJSON() });
  });

  // 1. The page asks for the token; the panel appears with the model's metadata and example 0.
  await expecting([/status of 401/], async () => {
    await page.goto(`${daemon.url}/#/jobs/${id}`);
    await page.locator('#token-input').fill(TOKEN);
    await page.locator('dialog.dialog button[value="ok"]').click();
    await page.locator('.model-panel[data-ready="true"]').waitFor({ timeout: 20000 });
  });
  const panel = page.locator('.model-panel');
  await panel.locator('.model-prediction[data-source="example 0"]').waitFor({ timeout: 20000 });
  const summary = (await panel.locator('.card-head .muted').textContent()).trim();
  check(summary.includes('fashion-mnist') && summary.includes('28×28×1') && summary.includes('10 classes'), `the summary: ${summary}`);
  const options = await panel.locator('select[name="step"] option').evaluateAll((os) => os.map((o) => o.value));
  check(options[0] === '' && checkpoints.every((s) => options.includes(String(s))), `the step picker lists latest and ${checkpoints}: ${options}`);

  // 2. Download ONNX: the daemon's file name, an ONNX ModelProto (field 1, ir_version, = 7).
  const latest = await download(page);
  const last = checkpoints[checkpoints.length - 1];
  check(latest.name === `${id}-step${last}.onnx` && latest.disposition.includes(`filename="${latest.name}"`),
    `the file name is the daemon's: ${latest.name} (${latest.disposition})`);
  check(latest.bytes.length > 1000 && latest.bytes[0] === 0x08 && latest.bytes[1] === 0x07,
    `the download is an ONNX file: ${latest.bytes.length} bytes starting ${latest.bytes.subarray(0, 4).toString('hex')}`);
  const link = panel.locator('.model-download-note a');
  check((await link.getAttribute('download')) === latest.name, 'the saved file stays as a link');
  const older = checkpoints[0];
  await panel.locator('select[name="step"]').selectOption(String(older));
  const first = await download(page);
  check(first.name === `${id}-step${older}.onnx` && first.bytes[0] === 0x08, `step ${older}'s file: ${first.name}`);
  log(`Download ONNX: ${latest.name} (${latest.bytes.length} bytes), ${first.name}`);
  await panel.locator('select[name="step"]').selectOption('');

  // 3. Test example 0: the page's prediction is the model server's for the same example.
  const ex = (await call('GET', '/api/v1/datasets/fashion-mnist/examples?split=test&offset=0&limit=1')).body.examples[0];
  check(ex.index === 0 && ex.shape.join() === '28,28,1' && ex.data.length === 784, `example 0: ${JSON.stringify(ex.shape)}`);
  const infer = await call('POST', `/v2/models/${id}/infer`, {
    inputs: [{ name: 'input', shape: [1, 28, 28, 1], datatype: 'UINT8', data: ex.data }],
  });
  check(infer.status === 200, `infer answers: ${JSON.stringify(infer.body)}`);
  const probs = infer.body.outputs.find((o) => o.name === 'probabilities').data;
  const expected = argmax(probs);
  const names = infer.body.parameters.class_names;
  await panel.locator('.model-prediction[data-source="example 0"]:not(.pending)').waitFor({ timeout: 20000 });
  const shown = Number(await panel.locator('.model-prediction').getAttribute('data-predicted'));
  const shownName = (await panel.locator('.model-class').textContent()).trim();
  check(shown === expected && shownName === names[expected], `example 0: the page predicts ${shown} ${shownName}, /infer ${expected} ${names[expected]}`);
  check((await panel.locator('.model-truth').textContent()).includes(ex.class_name), 'the true label is shown');
  check(await panel.locator('.model-bars li').count() === 10, 'a bar per class');
  const barPercent = (await panel.locator(`.model-bars li[data-class="${expected}"] .model-bar-value`).textContent()).trim();
  check(barPercent === `${(probs[expected] * 100).toFixed(1)}%`, `the bar's value ${barPercent} is the probability ${probs[expected]}`);
  const sent = inferBodies.find((b) => b.body.inputs[0].data.length === 784);
  check(sent && sent.body.inputs[0].datatype === 'UINT8' && sent.body.inputs[0].data.every((v, i) => v === ex.data[i]),
    'the page sent example 0 as it is');
  await panel.screenshot({ path: path.join(SHOTS, 'model-panel.png') });
  log(`example 0 (${ex.class_name}): predicted ${names[expected]} (${barPercent}), as /infer`);

  // 4. Next: example 1, with its true label; Prev is enabled again.
  await panel.locator('button[aria-label="Next example"]').click();
  await panel.locator('.model-prediction[data-source="example 1"]:not(.pending)').waitFor({ timeout: 20000 });
  const ex1 = (await call('GET', '/api/v1/datasets/fashion-mnist/examples?offset=1&limit=1')).body.examples[0];
  check((await panel.locator('.model-truth').getAttribute('data-label')) === String(ex1.label), 'example 1 shows its label');
  check(await panel.locator('.model-index').inputValue() === '1', 'the index follows');
  check(!(await panel.locator('button[aria-label="Previous example"]').isDisabled()), 'Prev is enabled');

  // 5. A PNG made in the page (a white square on black, 64x48) dropped on the panel.
  const png = await page.evaluate(async () => {
    const c = document.createElement('canvas');
    c.width = 64;
    c.height = 48;
    const x = c.getContext('2d');
    x.fillStyle = '#000';
    x.fillRect(0, 0, 64, 48);
    x.fillStyle = '#fff';
    x.fillRect(16, 8, 32, 32);
    const blob = await new Promise((r) => c.toBlob(r, 'image/png'));
    const bytes = new Uint8Array(await blob.arrayBuffer());
    const dt = new DataTransfer();
    dt.items.add(new File([blob], 'square.png', { type: 'image/png' }));
    document.querySelector('.model-drop').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    return [...bytes.subarray(0, 8)];
  });
  check(png.join() === '137,80,78,71,13,10,26,10', `the dropped file is a PNG: ${png}`);
  await panel.locator('.model-prediction[data-source="square.png"]:not(.pending)').waitFor({ timeout: 20000 });
  const dropped = inferBodies[inferBodies.length - 1].body.inputs[0];
  check(dropped.datatype === 'UINT8' && dropped.shape.join() === '1,28,28,1' && dropped.data.length === 784,
    `the image is sent as [1, 28, 28, 1] UINT8: ${dropped.datatype} ${dropped.shape}`);
  check(dropped.data[14 * 28 + 14] === 255 && dropped.data[0] === 0, `white in the middle, black in the corner: ${dropped.data[14 * 28 + 14]}, ${dropped.data[0]}`);
  const droppedName = (await panel.locator('.model-class').textContent()).trim();
  check(names.includes(droppedName) && await panel.locator('.model-bars li').count() === 10, `the image gets a prediction: ${droppedName}`);
  check((await panel.locator('.model-truth').textContent()).includes('square.png'), 'the file is named');
  await panel.screenshot({ path: path.join(SHOTS, 'model-panel-image.png') });
  log(`square.png: predicted ${droppedName}`);

  // 6. A file that is no image, chosen with the file input (the keyboard's way): the panel's
  // error names it.
  await panel.locator('#model-file-' + id).setInputFiles({ name: 'notes.png', mimeType: 'image/png', buffer: Buffer.from('not a png') });
  await panel.locator('.model-error:not([hidden])').waitFor({ timeout: 10000 });
  check((await panel.locator('.model-error').textContent()).includes('notes.png'), 'a file that is no image is named in the error');
  await page.screenshot({ path: path.join(SHOTS, 'model-job-page.png'), fullPage: true });
  await table(page);
  await regression(page);
}

// A table: a CSV upload (standardized) with a categorical column and blanks, and a softmax job on
// it. Its test example is shown as a row with the columns' names, its numbers sent as FP32 in
// the file's own units and its categorical value as a string, and predicted as /infer predicts
// it; no drop zone.
async function table(page) {
  const labels = ['cat', 'dog', 'bird'];
  const habitats = ['house', 'garden', 'sky', ''];
  const rows = ['f1,f2,habitat,label'];
  for (let i = 0; i < 60; i++) rows.push(`${(i % 3) * 2 + (i * 0.37 % 1).toFixed(2) * 1},${(i * 1.9 % 7).toFixed(2)},${habitats[i % 7 === 5 ? 3 : i % 3]},${labels[i % 3]}`);
  const up = await fetch(`${daemon.url}/api/v1/datasets?name=animals&format=csv&normalize=standard`, {
    method: 'POST', headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/octet-stream' }, body: `${rows.join('\n')}\n`,
  });
  check(up.status === 201, `the CSV is uploaded: ${up.status} ${await up.text()}`);
  const job = await daemon.api('POST', '/jobs', {
    name: 'softmax-table', dataset: 'animals', model: 'softmax', batch_size: 10, max_steps: 60, seed: 3,
    optimizer: { type: 'adam', learning_rate: 0.05 }, hooks: { checkpoint: { every_steps: 60 } },
  }, TOKEN);
  check(job.status === 201, `the table job is submitted: ${JSON.stringify(job.body)}`);
  const id = job.body.id;
  for (let i = 0; (await daemon.api('GET', `/jobs/${id}`, undefined, TOKEN)).body.state !== 'completed'; i++) {
    check(i < 600, 'the table job completes');
    await new Promise((r) => setTimeout(r, 100));
  }
  await page.goto(`${daemon.url}/#/jobs/${id}`);
  const panel = page.locator(`.job-page[data-job-id="${id}"] .model-panel`);
  await panel.locator('.model-prediction[data-source="example 0"]:not(.pending)').waitFor({ timeout: 20000 });
  await panel.locator('.model-index').fill('2');
  await panel.locator('.model-index').press('Enter');
  await panel.locator('.model-prediction[data-source="example 2"]:not(.pending)').waitFor({ timeout: 20000 });
  const ex = (await call('GET', '/api/v1/datasets/animals/examples?offset=2&limit=1')).body.examples[0];
  check(ex.categorical && ex.categorical.length === 1, `the example has its categorical value: ${JSON.stringify(ex)}`);
  const infer = await call('POST', `/v2/models/${id}/infer`, {
    inputs: [{ name: 'input', shape: [1, 2], datatype: 'FP32', data: ex.data },
      { name: 'categorical', shape: [1, 1], datatype: 'BYTES', data: ex.categorical }],
  });
  const probs = infer.body.outputs.find((o) => o.name === 'probabilities').data;
  const names = infer.body.parameters.class_names;
  check(names.join() === 'bird,cat,dog', `the class names are the CSV's: ${names}`);
  const shownName = (await panel.locator('.model-class').textContent()).trim();
  check(shownName === names[argmax(probs)], `the table's example 2: the page predicts ${shownName}, /infer ${names[argmax(probs)]}`);
  check((await panel.locator('.model-truth').textContent()).includes(ex.class_name), 'its true label is shown');
  check(await panel.locator('.model-row').isVisible() && await panel.locator('.model-canvas').isHidden(), 'a row, not a canvas');
  check(await panel.locator('.model-row td').count() === 3, 'the row has its two numbers and its category');
  const headers = await panel.locator('.model-row th').allTextContents();
  check(headers.join() === 'f1,f2,habitat', `the row's columns are named: ${headers}`);
  check((await panel.locator('.model-row td').nth(2).textContent()) === (ex.categorical[0] ?? '—'), 'the category is shown as in the file');
  check(await panel.locator('.model-drop').isHidden(), 'a table takes no image file');
  check(await panel.locator('.model-bars li').count() === 3, 'three bars');
  await panel.screenshot({ path: path.join(SHOTS, 'model-panel-table.png') });
  log(`table example 2 (${ex.class_name}, ${ex.data}, ${ex.categorical}): predicted ${shownName}, as /infer`);
}

// A regression job (docs/job-spec.md#task) on a table whose label is a number: the panel shows
// the true target and the model's prediction in the target's units, as /infer's "prediction"
// gives it, and no probability bars.
async function regression(page) {
  const rows = ['size,kind,price'];
  const kinds = ['flat', 'house', ''];
  for (let i = 0; i < 60; i++) rows.push(`${20 + (i * 7) % 90},${kinds[i % 3]},${1000 + ((i * 7) % 90) * 12.5 + (i % 3) * 300}`);
  const up = await fetch(`${daemon.url}/api/v1/datasets?name=homes&format=csv&normalize=standard&label_column=price`, {
    method: 'POST', headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/octet-stream' }, body: `${rows.join('\n')}\n`,
  });
  check(up.status === 201, `the regression CSV is uploaded: ${up.status}`);
  const job = await daemon.api('POST', '/jobs', {
    name: 'prices', dataset: 'homes', task: 'regression', model: 'softmax', batch_size: 10, max_steps: 60, seed: 3,
    optimizer: { type: 'adam', learning_rate: 0.05 }, hooks: { checkpoint: { every_steps: 60 } },
  }, TOKEN);
  check(job.status === 201, `the regression job is submitted: ${JSON.stringify(job.body)}`);
  const id = job.body.id;
  for (let i = 0; (await daemon.api('GET', `/jobs/${id}`, undefined, TOKEN)).body.state !== 'completed'; i++) {
    check(i < 600, 'the regression job completes');
    await new Promise((r) => setTimeout(r, 100));
  }
  await page.goto(`${daemon.url}/#/jobs/${id}`);
  const panel = page.locator(`.job-page[data-job-id="${id}"] .model-panel`);
  await panel.locator('.model-prediction[data-source="example 0"]:not(.pending)').waitFor({ timeout: 20000 });
  const ex = (await call('GET', '/api/v1/datasets/homes/examples?offset=0&limit=1')).body.examples[0];
  const infer = await call('POST', `/v2/models/${id}/infer`, {
    inputs: [{ name: 'input', shape: [1, 1], datatype: 'FP32', data: ex.data },
      { name: 'categorical', shape: [1, 1], datatype: 'BYTES', data: ex.categorical }],
  });
  const predicted = infer.body.outputs.find((o) => o.name === 'prediction').data[0];
  const shown = await panel.locator('.model-prediction').getAttribute('data-predicted');
  check(Number(shown) === predicted, `the page predicts ${shown}, /infer ${predicted}`);
  check((await panel.locator('.model-prediction').textContent()).startsWith('Predicted price:'), 'the prediction names the target');
  check((await panel.locator('.model-truth').textContent()).startsWith('True price:') &&
        Number(await panel.locator('.model-truth').getAttribute('data-label')) === ex.target, `the true target is shown: ${ex.target}`);
  check(await panel.locator('.model-bars li').count() === 0, 'no probability bars');
  check((await panel.locator('.model-summary').textContent()).includes('predicts price'), 'the summary says what it predicts');
  await panel.screenshot({ path: path.join(SHOTS, 'model-panel-regression.png') });
  log(`regression example 0 (price ${ex.target}): predicted ${predicted}, as /infer`);
}

// The job page with its panel at a phone's width.
async function phone() {
  const page = context.pages()[0];
  await page.setViewportSize({ width: 380, height: 800 });
  await page.goto(`${daemon.url}/#/jobs/${imageJob}`);
  await page.reload();
  await page.locator('.model-panel[data-ready="true"]').waitFor({ timeout: 20000 });
  await page.locator('.model-prediction[data-source="example 0"]').waitFor({ timeout: 20000 });
  const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(over <= 0, `the job page fits 380 px (${over} px too wide)`);
  await page.locator('.model-panel').screenshot({ path: path.join(SHOTS, 'model-phone.png') });
  log('380 px: no horizontal overflow');
}

await runTest(async () => {
  await main();
  await phone();
}, { resources: () => ({ daemon, context }), tmp, shots: SHOTS });
