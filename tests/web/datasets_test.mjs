#!/usr/bin/env node
// The datasets page and the submit form's dataset picker in a real browser (Debian's Chromium via
// playwright-core, as dashboard_test.mjs), against `trainingd serve` on a free port with an API
// token.
//
//   node tests/web/datasets_test.mjs TRAININGD [SCREENSHOT_DIR]
//
// The list shows the data root's fashion-mnist (read-only: no delete); uploads the daemon refuses
// (a broken CSV, test_fraction 2, a name that exists) show its message and field and leave the
// list as it was; the first of them is sent without the token, so the upload's 401 asks for it
// and sends the file again with `Authorization`. The submit form lists the datasets and offers
// every preset for fashion-mnist. Then a valid CSV (3 classes of strings): its bytes sent show on
// the progress bar, it appears in the list with its class names, the submit form offers softmax
// and mlp but not cnn for it, a delete while a job uses it shows the daemon's 409, and a delete
// after the job stopped removes it. It fails on console errors the step does not
// expect, page errors, CSP violations and requests to other hosts, as dashboard_test.mjs does.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CHROMIUM, Daemon, check, expecting, log, newContext, runTest, watchedPage,
} from './browser_support.mjs';

const TRAININGD = process.argv[2];
const SHOTS = path.resolve(process.argv[3] || 'datasets-screenshots');
const TOKEN = 'datasets-test-token-0123456789abcdef';
if (!TRAININGD || !fs.existsSync(TRAININGD)) throw new Error(`usage: datasets_test.mjs TRAININGD [DIR]; no ${TRAININGD}`);
if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (tools/install-deps.sh build)`);
fs.mkdirSync(SHOTS, { recursive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trainingd-datasets-'));

// 60 rows of two features, an id the form leaves out and a string label (classes bird, cat, dog
// in sorted order); f1 is blank in every seventh row (9 of them) and "NA" in row 5.
function validCsv() {
  const labels = ['cat', 'dog', 'bird'];
  const rows = ['f1,f2,id,label'];
  for (let i = 0; i < 60; i++) {
    const f1 = i % 7 === 0 ? '' : i === 5 ? 'NA' : (i * 0.37 % 5).toFixed(3);
    rows.push(`${f1},${(-i * 1.9 % 7).toFixed(3)},row-${i},${labels[i % 3]}`);
  }
  return `${rows.join('\n')}\n`;
}
// A row without its label: what the daemon refuses, naming the line.
const BROKEN_CSV = 'f1,f2,label\n1.5,2,cat\n3,4,NA\n';

const text = async (page, sel) => (await page.locator(sel).first().textContent()).trim();

let daemon;
let context;

// Chooses `file` in the upload form; returns the name and format the page guessed.
async function chooseFile(page, name, content) {
  await page.locator('#upload-file').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(content) });
  return [await page.locator('#upload-name').inputValue(), await page.locator('#upload-format').inputValue()];
}

// Clicks Upload; resolves to the daemon's answer {status, body} once the page shows it.
async function upload(page) {
  const answered = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().includes('/api/v1/datasets?') && r.status() !== 401);
  await page.locator('#upload-submit').click();
  const r = await answered;
  const body = await r.json();
  await page.locator('#upload-submit:not([disabled])').waitFor({ timeout: 10000 });
  return { status: r.status(), body, request: r.request() };
}

// The upload was refused: the page shows the daemon's message as it is, with the field it names.
async function checkRefused(page, answer, status, field) {
  check(answer.status === status, `HTTP ${status} (got ${answer.status}: ${JSON.stringify(answer.body)})`);
  const e = answer.body.error;
  check(!field || e.field === field, `the error names ${field}: ${JSON.stringify(e)}`);
  const shown = await text(page, '#upload-error');
  check(shown.includes(e.message), `the page shows the daemon's message "${e.message}": "${shown}"`);
  check(await page.locator('#upload-error').getAttribute('data-field') === (e.field || ''), 'the shown error keeps its field');
  check(await page.locator('#upload-progress').isHidden(), 'no progress bar left after a refusal');
  return e;
}

async function datasetNames(page) {
  return page.locator('.datasets-table tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.name));
}

async function main() {
  log(`trainingd ${TRAININGD}, data in ${tmp}`);
  daemon = await Daemon.start(TRAININGD, path.join(tmp, 'data'), {
    config: { threads_per_job: 1 }, env: { TRAININGD_TOKEN: TOKEN },
  });
  context = await newContext(path.join(tmp, 'profile'));
  const page = await watchedPage(context);
  const uploads = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && r.url().includes('/api/v1/datasets?')) uploads.push(r.headers());
  });

  // 1. The list: fashion-mnist from the data root, read-only. (The token first: the page asks.)
  await expecting([/status of 401/], async () => {
    await page.goto(`${daemon.url}/#/datasets`);
    await page.locator('#token-input').fill(TOKEN);
    await page.locator('dialog.dialog button[value="ok"]').click();
    await page.locator('tr[data-name="fashion-mnist"]').waitFor({ timeout: 10000 });
  });
  check(await page.locator('nav a[data-nav="datasets"]').getAttribute('aria-current') === 'page', 'the nav marks Datasets');
  const fm = page.locator('tr[data-name="fashion-mnist"]');
  const cells = (await fm.locator('td').allTextContents()).map((t) => t.trim());
  check(cells[1] === 'idx', `format idx: ${cells}`);
  check(cells[2].startsWith('28×28×1') && cells[2].includes('images'), `example 28×28×1 images: ${cells[2]}`);
  check(cells[3] === '10', `10 classes, no names (the IDX files have none): ${cells[3]}`);
  check(cells[4] === '55,000 / 5,000 / 10,000', `splits: ${cells[4]}`);
  check(cells[0].includes('read-only'), `marked read-only: ${cells[0]}`);
  check(await fm.locator('button[data-action="delete"]').count() === 0, 'no delete for a read-only IDX directory');
  log(`list: fashion-mnist ${cells.slice(1, 5).join(' | ')}, read-only, no delete`);

  // 2. Refused uploads. The first goes without the token (forgotten meanwhile): its 401 asks for
  // it and the file is sent again, with Authorization.
  const [guessedName, guessedFormat] = await chooseFile(page, 'broken.csv', BROKEN_CSV);
  check(guessedName === 'broken' && guessedFormat === 'csv', `name and format from the file name: ${guessedName} ${guessedFormat}`);
  check(await page.locator('.csv-options').isVisible(), 'the CSV options show for csv');
  await page.locator('#upload-format').selectOption('npz');
  check(await page.locator('.csv-options').isHidden(), 'and hide for npz');
  await page.locator('#upload-format').selectOption('csv');
  await page.evaluate(() => sessionStorage.removeItem('trainingd.token'));
  await expecting([/status of 400/, /status of 401/], async () => {
    const answered = upload(page);
    await page.locator('#token-input').fill(TOKEN);
    await page.locator('dialog.dialog button[value="ok"]').click();
    const broken = await answered;
    const e = await checkRefused(page, broken, 400);
    check(broken.request.headers().authorization === `Bearer ${TOKEN}`, 'the upload sends the token');
    check(broken.request.headers()['content-type'] === 'application/octet-stream', 'as application/octet-stream');
    log(`broken CSV (after the token prompt): 400 "${e.message}"`);

    await page.locator('#upload-test-fraction').fill('2');
    const fraction = await upload(page);
    await checkRefused(page, fraction, 400, 'test_fraction');
    check(await page.locator('#upload-test-fraction').getAttribute('aria-invalid') === 'true', 'the test fraction input is marked');
    log(`test_fraction 2: 400 "${fraction.body.error.message}"`);
    await page.locator('#upload-test-fraction').fill('0.2');
  });
  await expecting([/status of 409/], async () => {
    await page.locator('#upload-name').fill('fashion-mnist');
    const taken = await upload(page);
    await checkRefused(page, taken, 409);
    log(`name fashion-mnist: 409 "${taken.body.error.message}"`);
  });
  check(JSON.stringify(await datasetNames(page)) === '["fashion-mnist"]', 'the list is unchanged');
  const listed = await daemon.api('GET', '/datasets', null, TOKEN);
  check(listed.body.datasets.length === 1, `the daemon kept nothing: ${JSON.stringify(listed.body)}`);
  check(uploads.length === 4 && !uploads[0].authorization && uploads.slice(1).every((hd) => hd.authorization === `Bearer ${TOKEN}`),
    `four uploads sent, the first without the token: ${JSON.stringify(uploads.map((hd) => hd.authorization || null))}`);
  await page.screenshot({ path: path.join(SHOTS, 'datasets-error.png'), fullPage: true });

  // 3. The submit form lists the datasets; fashion-mnist takes every preset.
  await page.goto(`${daemon.url}/#/submit?preset=cnn`);
  await page.locator('.submit-page[data-datasets="1"]').waitFor({ timeout: 10000 });
  check(await page.locator('#dataset-select').inputValue() === 'fashion-mnist', 'fashion-mnist picked');
  check(await page.locator('.preset:disabled').count() === 0, 'every preset fits fashion-mnist');
  const cnnSpec = JSON.parse(await page.locator('#spec-editor').inputValue());
  check(cnnSpec.name === 'cnn-fashion-mnist' && cnnSpec.dataset.validation_size === 5000, `the cnn preset as before: ${JSON.stringify(cnnSpec.dataset)}`);
  // The ResNet preset: the image models' recipe, its crop fitted to the 28 x 28 images.
  await page.locator('.preset[data-preset="resnet20"]').click();
  const resnetSpec = JSON.parse(await page.locator('#spec-editor').inputValue());
  check(resnetSpec.model === 'resnet20' && resnetSpec.dataset.normalize === 'per_channel' &&
    resnetSpec.augmentation.random_crop.padding === 4 && resnetSpec.augmentation.horizontal_flip === true &&
    resnetSpec.optimizer.type === 'adamw', `the resnet20 preset: ${JSON.stringify(resnetSpec)}`);
  // The daemon takes it as the form wrote it (stopped at once: only the admission is tested).
  const accepted = await daemon.api('POST', '/jobs', resnetSpec, TOKEN);
  check(accepted.status === 201, `the resnet20 preset's spec is accepted: ${accepted.status} ${JSON.stringify(accepted.body)}`);
  if (accepted.status === 201) {
    await daemon.api('POST', `/jobs/${accepted.body.id}/stop`, {}, TOKEN);
    for (let i = 0; i < 300; i++) {
      const s = (await daemon.api('GET', `/jobs/${accepted.body.id}`, null, TOKEN)).body.state;
      if (!['queued', 'running', 'stopping'].includes(s)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await page.screenshot({ path: path.join(SHOTS, 'datasets-submit.png') });
  log('submit: the picker lists fashion-mnist; softmax, mlp, cnn and resnet20 offered');

  // 4. A valid CSV: progress, the list with its class names, the picker, delete (409 while a job
  // uses it, then gone).
  const csv = validCsv();
  await page.goto(`${daemon.url}/#/datasets`);
  await page.locator('tr[data-name="fashion-mnist"]').waitFor({ timeout: 10000 });
  await chooseFile(page, 'pets.csv', csv);
  await page.locator('#upload-test-fraction').fill('0.25');
  await page.locator('#upload-normalize').selectOption('standard');
  await page.locator('#upload-ignore').fill('id');
  // The column options of docs/data.md: a bad one is refused naming its field, next to its input.
  await expecting([/status of 400/], async () => {
    await page.locator('#upload-hash-buckets').fill('f2:8');
    const hashed = await upload(page);
    await checkRefused(page, hashed, 400, 'hash_buckets');
    check(await page.locator('#upload-hash-buckets').getAttribute('aria-invalid') === 'true', 'the hash buckets input is marked');
    log(`hash_buckets=f2:8 (a number column): 400 "${hashed.body.error.message}"`);
    await page.locator('#upload-hash-buckets').fill('');
  });
  await page.locator('#upload-missing-indicator').fill('f1');
  // Every value the progress bar took, as it took them.
  await page.evaluate(() => {
    window.__sent = [];
    const box = document.getElementById('upload-progress');
    new MutationObserver(() => window.__sent.push(Number(box.dataset.sent))).observe(box, { attributes: true, attributeFilter: ['data-sent'] });
  });
  const answer = await upload(page);
  const sent = await page.evaluate(() => window.__sent);
  check(sent.length >= 2 && sent[0] === 0 && sent[sent.length - 1] === csv.length, `progress from 0 to ${csv.length} bytes: ${sent}`);
  check(answer.status === 201, `the valid CSV is kept: ${answer.status} ${JSON.stringify(answer.body)}`);
  await page.locator('#upload-progress[data-state="done"]').waitFor({ timeout: 5000 });
  const row = page.locator('tr[data-name="pets"]');
  await row.waitFor({ timeout: 10000 });
  const petCells = (await row.locator('td').allTextContents()).map((t) => t.trim());
  check(petCells[1] === 'csv' && petCells[2].startsWith('3 features'), `csv, 3 features (f1, f2 and f1's "was missing"): ${petCells}`);
  check(petCells[3].startsWith('3') && petCells[3].includes('bird, cat, dog'), `3 classes with their names: ${petCells[3]}`);
  const splits = petCells[4].split(' / ').map((n) => Number(n.replace(/,/g, '')));
  check(splits.reduce((a, b) => a + b, 0) === 60 && splits[2] === 15, `60 rows, a quarter of them test: ${petCells[4]}`);
  check(await row.locator('.sha').getAttribute('data-sha256') === answer.body.sha256, 'the full digest on the short one');
  check(answer.body.preprocessing.kind === 'standard', 'normalize=standard sent');
  const sentColumns = answer.body.upload.columns;
  check(Object.keys(sentColumns).length === 2 && JSON.stringify(sentColumns.ignore) === '["id"]' &&
    JSON.stringify(sentColumns.missing_indicator) === '["f1"]', `ignore=id and missing_indicator=f1 sent: ${JSON.stringify(answer.body.upload)}`);
  // Its columns, as `trainingd datasets get` shows them: f1's ten missing cells, id left out.
  await row.locator('button[data-action="columns"]').click();
  const columns = page.locator('table.columns-table[data-dataset="pets"] tbody tr');
  await columns.first().waitFor({ timeout: 5000 });
  const colCells = async (name) => (await page.locator(`table.columns-table tr[data-column="${name}"] td`).allTextContents()).map((t) => t.trim());
  check(await columns.count() === 4, `one row per column: ${await columns.count()}`);
  const f1 = await colCells('f1');
  check(f1[1] === 'number' && f1[2] === '10', `f1: a number column with 10 missing: ${f1}`);
  check(f1.some((t) => t.includes('missing indicator')), `f1's note names its "was missing" feature: ${f1}`);
  const idCells = await colCells('id');
  check(idCells[1] === 'ignored *', `id: left out by the form: ${idCells}`);
  check((await colCells('label'))[1] === 'label', 'the label column');
  await page.screenshot({ path: path.join(SHOTS, 'datasets-columns.png'), fullPage: true });
  await row.locator('button[data-action="columns"]').click();
  check(await page.locator('table.columns-table').count() === 0, 'the columns fold away');
  check(JSON.stringify(await datasetNames(page)) === '["fashion-mnist","pets"]', 'both in the list');
  await page.screenshot({ path: path.join(SHOTS, 'datasets.png'), fullPage: true });
  log(`valid CSV: 201, in the list: ${petCells.slice(1, 5).join(' | ')}`);

  // The picker: from the row's Train… link, and switching an unedited cnn preset to a table.
  await row.locator('a', { hasText: 'Train' }).click();
  await page.locator('.submit-page[data-datasets="2"]').waitFor({ timeout: 10000 });
  check(await page.locator('#dataset-select').inputValue() === 'pets', 'the row\'s link picks pets');
  let spec = JSON.parse(await page.locator('#spec-editor').inputValue());
  check(spec.model === 'mlp' && spec.name === 'mlp-pets' && JSON.stringify(spec.dataset) === '{"name":"pets"}',
    `mlp on pets, validation_size left to the daemon: ${JSON.stringify(spec)}`);
  check(await page.locator('.preset[data-preset="cnn"]').isDisabled(), 'no cnn for a table');
  check(await page.locator('.preset[data-preset="resnet20"]').isDisabled(), 'no resnet20 for a table');
  check(!(await page.locator('.preset[data-preset="softmax"]').isDisabled()) && !(await page.locator('.preset[data-preset="mlp"]').isDisabled()), 'softmax and mlp for a table');
  check((await text(page, '#dataset-hint')).includes('cnn needs images'), 'the hint says why not cnn');
  check(spec.batch_size === splits[0], `the batch fits the ${splits[0]} training examples: ${spec.batch_size}`);
  // Submitted as the form wrote it (but long), it runs on pets.
  spec.max_steps = 10000000;
  await page.locator('#spec-editor').fill(JSON.stringify(spec, null, 2));
  let jobId;
  const refused = await expecting([/status of 400/], async () => {
    await page.locator('#submit-job').click();
    for (let i = 0; i < 100; i++) {
      if (/#\/jobs\/[A-Za-z0-9_-]+$/.test(page.url())) return '';
      // Not a locator: once the job page replaced the form, it would wait its whole timeout
      // (30 s) for an error line that no longer exists.
      const error = await page.evaluate(() => document.getElementById('spec-error')?.textContent || '');
      if (error) return error;
      await page.waitForTimeout(100);
    }
    throw new Error('the form neither opened a job page nor showed an error');
  });
  // The preset's last layer fits the table's 3 classes: the form's own spec is accepted.
  check(!refused, `the form's mlp on pets is accepted: ${refused}`);
  jobId = decodeURIComponent(new URL(page.url()).hash.split('/').pop());
  await page.goto(`${daemon.url}/#/submit?preset=cnn`);
  await page.locator('.submit-page[data-datasets="2"]').waitFor({ timeout: 10000 });
  await page.locator('#dataset-select').selectOption('pets');
  spec = JSON.parse(await page.locator('#spec-editor').inputValue());
  check(spec.model === 'mlp' && spec.dataset.name === 'pets', `an unedited cnn preset becomes mlp on pets: ${spec.model}`);
  await page.locator('#dataset-select').selectOption('fashion-mnist');
  check(!(await page.locator('.preset[data-preset="cnn"]').isDisabled()), 'cnn again for images');
  log('submit: pets offers softmax and mlp, not cnn');

  // Delete: refused (409) while a job uses it, then after the job stopped, removed.
  await page.goto(`${daemon.url}/#/datasets`);
  await expecting([/status of 409/], async () => {
    await page.locator('tr[data-name="pets"] button[data-action="delete"]').click();
    await page.locator('dialog.dialog button[value="ok"]').click();
    await page.locator('#datasets-error[data-status="409"]').waitFor({ timeout: 10000 });
  });
  log(`delete while mlp-pets runs: "${await text(page, '#datasets-error')}"`);
  check(await page.locator('tr[data-name="pets"]').count() === 1, 'still listed');
  await daemon.api('POST', `/jobs/${jobId}/stop`, {}, TOKEN);
  for (let i = 0; i < 100; i++) {
    const s = (await daemon.api('GET', `/jobs/${jobId}`, null, TOKEN)).body.state;
    if (!['queued', 'running', 'stopping'].includes(s)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await page.locator('tr[data-name="pets"] button[data-action="delete"]').click();
  await page.locator('dialog.dialog button[value="cancel"]').click();
  check(await page.locator('tr[data-name="pets"]').count() === 1, 'cancel keeps it');
  await page.locator('tr[data-name="pets"] button[data-action="delete"]').click();
  await page.locator('dialog.dialog button[value="ok"]').click();
  await page.locator('tr[data-name="pets"]').waitFor({ state: 'detached', timeout: 10000 });
  check((await daemon.api('GET', '/datasets/pets', null, TOKEN)).status === 404, 'deleted on the daemon');
  log('delete: 409 while a job used it; after it stopped, cancel keeps it, delete removes it');

  // 5. A CSV with its own test file: no split asked for, both files sent (multipart), the test
  // split is the test file's rows.
  await chooseFile(page, 'split.csv', csv);
  await page.locator('#upload-test-file').setInputFiles({ name: 'split-test.csv', mimeType: 'text/csv', buffer: Buffer.from(csv.split('\n')[0] + '\n1,2,a,cat\n3,4,b,dog\n,6,c,bird\n7,8,d,cat\n') });
  check(await page.locator('#upload-test-fraction').isDisabled() && await page.locator('#upload-split-seed').isDisabled(),
    'a test file disables the split options');
  const withTest = await upload(page);
  check(withTest.status === 201, `the CSV and its test file are kept: ${withTest.status} ${JSON.stringify(withTest.body)}`);
  check(withTest.body.splits.test === 4 && withTest.body.upload.test_file === true && withTest.body.files.test.bytes > 0,
    `the test split is the test file's 4 rows: ${JSON.stringify(withTest.body.splits)} ${JSON.stringify(withTest.body.files)}`);
  await page.locator('tr[data-name="split"]').waitFor({ timeout: 10000 });
  check(!(await page.locator('#upload-test-fraction').isDisabled()), 'the form is reset after the upload');
  log(`CSV with a test file: 201, splits ${JSON.stringify(withTest.body.splits)}`);
}

// The datasets page at a phone's width, whatever the steps above reached.
async function phone() {
  const page = context.pages()[0];
  await page.setViewportSize({ width: 380, height: 800 });
  for (const hash of ['#/datasets', '#/submit']) {
    await page.goto(`${daemon.url}/${hash}`);
    await page.waitForTimeout(400);
    const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(over <= 0, `${hash} fits 380 px (${over} px too wide)`);
  }
  await page.goto(`${daemon.url}/#/datasets`);
  await page.locator('tr[data-name="fashion-mnist"]').waitFor({ timeout: 10000 });
  await page.screenshot({ path: path.join(SHOTS, 'datasets-phone.png'), fullPage: true });
  log('380 px: no horizontal overflow');
}

await runTest(async () => {
  await main();
  await phone();
}, { resources: () => ({ daemon, context }), tmp, shots: SHOTS });
