#!/usr/bin/env node
// The job page's evaluation card (web/src/evaluation.js, docs/dashboard.md): Debian's Chromium
// driven by playwright-core against `trainingd serve`. A short MLP job with a periodic validation
// evaluation and a final test evaluation; its page shows the latest evaluation (the test
// split's), its metrics as the API has them, the confusion matrix as a heat map with the class
// names on both axes and every test example in its cells, and the per-class table; the split
// picker switches to the validation split, and offers the train split, which has none, disabled.
// The page never asks for an evaluation that does not exist (no 404 in its console, while the
// job runs either). Then a regression job submitted through the submit form's task selector:
// its card draws the predicted-against-actual scatter. Then the form's decision threshold on a
// two-class table: offered there only, submitted in the spec, refused out of range by the server
// naming the field in the form, and gone from the spec for a multi-class dataset.
//
//   node tests/web/evaluation_test.mjs TRAININGD [SCREENSHOT_DIR]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CHROMIUM, Daemon, check, expecting, log, mlpSpec, newContext, runTest, waitState, watchedPage,
} from './browser_support.mjs';

const TRAININGD = process.argv[2];
const SHOTS = path.resolve(process.argv[3] || 'evaluation-screenshots');
if (!TRAININGD || !fs.existsSync(TRAININGD)) throw new Error(`usage: evaluation_test.mjs TRAININGD [DIR]; no ${TRAININGD}`);
if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (tools/install-deps.sh build)`);
fs.mkdirSync(SHOTS, { recursive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trainingd-web-eval-'));

let daemon;
let context;

// format.js's metric(): 4 significant digits.
const metric = (v) => Number(v.toPrecision(4)).toString();

async function checkCard(page, e) {
  const card = page.locator('section.evaluation');
  await page.locator(`section.evaluation select[aria-label="Split"]`).evaluate((s, split) => {
    if (s.value !== split) throw new Error(`the picker shows ${s.value}, not ${split}`);
  }, e.split);
  const status = await card.locator('.card-head .muted').textContent();
  check(status.includes(`step ${e.step}`), `the card says the step: "${status}"`);
  for (const key of ['accuracy', 'f1_macro', 'auc', 'log_loss']) {
    const shown = await card.locator(`.stat[data-metric="${key}"] .stat-value`).textContent();
    check(shown === metric(e[key]), `${key}: the page shows ${shown}, the API has ${e[key]}`);
  }
  const names = e.classes.map((c) => c.name);
  const rows = await card.locator('table.confusion tbody th.true').allTextContents();
  const cols = await card.locator('table.confusion thead th.pred').allTextContents();
  check(JSON.stringify(rows) === JSON.stringify(names), `true classes on the rows: ${rows}`);
  check(JSON.stringify(cols) === JSON.stringify(names), `predicted classes on the columns: ${cols}`);
  const cells = await card.locator('table.confusion td.cell').evaluateAll((tds) => tds.map((td) => ({
    t: Number(td.dataset.true), p: Number(td.dataset.pred), text: td.textContent, bg: td.style.background, title: td.title,
  })));
  check(cells.length === names.length * names.length, `${cells.length} cells`);
  let total = 0;
  for (const c of cells) {
    const want = e.confusion_matrix[c.t][c.p];
    check(Number(c.text.replace(/\D/g, '')) === want, `cell (${c.t}, ${c.p}) shows ${c.text}, the API has ${want}`);
    total += want;
    // The diagonal blue, the rest red; the title names both classes.
    check(c.bg.includes(c.t === c.p ? '37, 99, 235' : '220, 38, 38'), `cell (${c.t}, ${c.p}) colour ${c.bg}`);
    check(c.title.startsWith(`true ${names[c.t]}, predicted ${names[c.p]}: ${want}`), c.title);
  }
  check(total === e.examples, `the matrix holds every example: ${total} of ${e.examples}`);
  const perClass = await card.locator('table.per-class tbody tr').count();
  check(perClass === names.length, `${perClass} rows of per-class values`);
}

async function main() {
  daemon = await Daemon.start(TRAININGD, path.join(tmp, 'data'), {
    config: { threads_per_job: 1, max_concurrent_jobs: 1 },
  });
  context = await newContext(path.join(tmp, 'profile'));
  const page = await watchedPage(context);

  const hooks = { checkpoint: { every_steps: 1000 }, summary: { every_steps: 20 }, evaluation: { every_steps: 100 } };
  const job = (await daemon.api('POST', '/jobs', mlpSpec('web-eval', 300, hooks))).body;
  await page.goto(`${daemon.url}/#/jobs/${job.id}`);
  await waitState(page, ['completed'], 120000);
  // The final evaluations arrive after the last scalars: the card reloads on them.
  const test = (await daemon.api('GET', `/jobs/${job.id}/evaluation?split=test`)).body;
  const validation = (await daemon.api('GET', `/jobs/${job.id}/evaluation?split=validation`)).body;
  check(test.step === 300 && validation.step === 300, `steps ${test.step}, ${validation.step}`);
  const latest = (await daemon.api('GET', `/jobs/${job.id}/evaluation`)).body;
  check(latest.split === 'test', `the latest evaluation is final_eval's: ${latest.split}`);

  await page.reload();
  await page.locator('section.evaluation:not([hidden]) table.confusion').waitFor({ timeout: 15000 });
  await checkCard(page, test);
  log(`test split: ${test.examples} examples in a ${test.classes.length} x ${test.classes.length} heat map, f1_macro ${test.f1_macro}`);
  await page.locator('section.evaluation').screenshot({ path: path.join(SHOTS, 'evaluation-test.png') });

  await page.selectOption('section.evaluation select[aria-label="Split"]', 'validation');
  await page.locator('section.evaluation .card-head .muted', { hasText: `${validation.examples.toLocaleString('en')} examples` }).waitFor({ timeout: 15000 });
  await checkCard(page, validation);
  log(`validation split: ${validation.examples} examples, accuracy ${validation.accuracy}`);

  // A split without an evaluation is offered disabled.
  const train = page.locator('section.evaluation select[aria-label="Split"] option[value="train"]');
  check(await train.isDisabled() && (await train.textContent()) === 'train (none)', 'the train split is disabled');
  check(!(await page.locator('section.evaluation option[value="test"]').isDisabled()), 'the test split is enabled');
  await page.screenshot({ path: path.join(SHOTS, 'evaluation-job-page.png'), fullPage: true });

  await regression(page);
  await decisionThreshold(page);
}

// A regression job submitted through the form (the task selector, a loss) on a CSV whose label
// is an integer below 256 (class ids too: the upload serves both tasks, and the form starts as
// a classifier), evaluated at the end on its training split of more than 1,000 rows: its card
// shows RMSE, MAE and R² as the API has them and a scatter of exactly 1,000 points (the bounded
// sample) with the line y = x drawn.
async function regression(page) {
  const rows = ['size,kind,price'];
  const kinds = ['flat', 'house', ''];
  for (let i = 0; i < 1500; i++) {
    const size = 20 + (i * 37) % 100;
    rows.push(`${size},${kinds[i % 3]},${size + (i % 3) * 60}`);
  }
  const up = await fetch(`${daemon.url}/api/v1/datasets?name=homes&format=csv&normalize=standard&label_column=price`, {
    method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: `${rows.join('\n')}\n`,
  });
  check(up.status === 201, `the regression CSV is uploaded: ${up.status} ${await up.text()}`);
  await page.goto(`${daemon.url}/#/submit?dataset=homes`);
  await page.locator('.submit-page[data-datasets]').waitFor({ timeout: 15000 });
  const task = page.locator('#task-select');
  const homes = (await daemon.api('GET', '/datasets/homes')).body;
  check(JSON.stringify(homes.tasks) === '["classification","regression"]', `the upload serves both tasks: ${JSON.stringify(homes.tasks)} (${homes.num_classes} classes)`);
  check(await task.inputValue() === 'classification', `a dataset of both tasks starts as a classifier: ${await task.inputValue()}`);
  check(await page.locator('#loss-select').isHidden(), 'no loss picker for a classifier');
  check(await page.locator('#threshold-input').isHidden(), 'no threshold for 240 classes');
  await page.selectOption('#task-select', 'regression');
  check(await page.locator('#loss-select').isVisible(), 'a regression job picks its loss');
  await page.selectOption('#loss-select', 'huber');
  const spec = JSON.parse(await page.locator('#spec-editor').inputValue());
  check(spec.task === 'regression' && spec.loss === 'huber' && !spec.hooks.logging.tensors.includes('accuracy'),
    `the spec says the task: ${JSON.stringify({ task: spec.task, loss: spec.loss, tensors: spec.hooks.logging.tensors })}`);
  // A short run, its final evaluation on the training split (more than 1,000 rows).
  spec.max_steps = 200;
  spec.batch_size = 50;
  spec.hooks = { ...spec.hooks, checkpoint: { every_steps: 1000 }, evaluation: { every_steps: 100, split: 'validation' }, final_eval: { split: 'train' } };
  await page.locator('#spec-editor').fill(JSON.stringify(spec, null, 2));
  await page.click('#submit-job');
  await page.waitForURL(/#\/jobs\/[^/]+$/, { timeout: 15000 });
  const id = decodeURIComponent(/#\/jobs\/([^/]+)$/.exec(page.url())[1]);
  const job = (await daemon.api('GET', `/jobs/${id}`)).body;
  check(job.spec.task === 'regression' && job.spec.loss === 'huber', `the job is a regression job: ${JSON.stringify(job.spec).slice(0, 200)}`);
  await waitState(page, ['completed'], 120000);
  const e = (await daemon.api('GET', `/jobs/${id}/evaluation?split=train`)).body;
  check(e.task === 'regression' && e.examples > 1000, `a regression evaluation of ${e.examples} examples`);
  check(e.scatter.actual.length === 1000 && e.scatter.predicted.length === 1000, `the scatter holds 1,000 points: ${e.scatter.actual.length}`);
  await page.reload();
  await page.selectOption('section.evaluation select[aria-label="Split"]', 'train');
  const canvas = page.locator('section.evaluation:not([hidden]) canvas.scatter');
  await canvas.waitFor({ timeout: 15000 });
  check(await canvas.getAttribute('data-points') === '1000', 'the page draws the 1,000 points');
  const card = page.locator('section.evaluation');
  for (const key of ['rmse', 'mae', 'r2']) {
    const shown = await card.locator(`.stat[data-metric="${key}"] .stat-value`).textContent();
    check(shown === metric(e[key]), `${key}: the page shows ${shown}, the API has ${e[key]}`);
  }
  check(await card.locator('table.confusion').count() === 0, 'no confusion matrix for a regression job');
  // Drawn: blue points, and the red dashed line y = x from the bottom left to the top right.
  const drawn = await canvas.evaluate((c) => {
    const ctx = c.getContext('2d');
    const { data } = ctx.getImageData(0, 0, c.width, c.height);
    let blue = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i + 2] > 150 && data[i] < 150) blue++;
    const [x0, y0, x1, y1] = c.dataset.diagonal.split(',').map(Number);
    const ratio = c.width / c.clientWidth;
    let red = 0;
    for (let k = 1; k < 40; k++) {
      const x = Math.round((x0 + (x1 - x0) * k / 40) * ratio), y = Math.round((y0 + (y1 - y0) * k / 40) * ratio);
      const [r, g, b] = ctx.getImageData(x, y, 1, 1).data;
      if (r > 150 && g < 150 && b < 150) red++;
    }
    return { blue, red, rising: x1 > x0 && y1 < y0 };
  });
  check(drawn.blue > 500 && drawn.red >= 10 && drawn.rising, `the scatter is drawn: ${JSON.stringify(drawn)}`);
  await card.screenshot({ path: path.join(SHOTS, 'evaluation-regression.png') });
  log(`regression: submitted through the form (task regression, loss huber); ${e.examples} train examples, scatter of ${e.scatter.actual.length}, rmse ${e.rmse}, r2 ${e.r2}`);
}

// The submit form's decision threshold (web/src/task_pick.js, docs/job-spec.md#decision-threshold)
// on a two-class CSV table: the field is shown and enabled there; 1.5 is submitted and refused by
// the server, whose 400 the form shows by the field, naming it; 0.3 is submitted and is in the
// job's spec. A multi-class dataset (homes, 240 classes) picked after it hides the field and takes
// the threshold out of the spec the form submits. The jobs are short and not waited for.
async function decisionThreshold(page) {
  const rows = ['x,y,churn'];
  for (let i = 0; i < 200; i++) rows.push(`${i % 17},${(i * 7) % 23},${(i % 17) + ((i * 7) % 23) > 19 ? 'yes' : 'no'}`);
  const up = await fetch(`${daemon.url}/api/v1/datasets?name=churn2&format=csv&label_column=churn`, {
    method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: `${rows.join('\n')}\n`,
  });
  check(up.status === 201, `the two-class CSV is uploaded: ${up.status} ${await up.text()}`);
  check((await daemon.api('GET', '/datasets/churn2')).body.num_classes === 2, 'churn2 has two classes');
  const editorSpec = async () => JSON.parse(await page.locator('#spec-editor').inputValue());
  const threshold = page.locator('#threshold-input');
  // The form on `dataset`, its spec edited to a short job; the controls keep the edit.
  const openForm = async (dataset) => {
    await page.goto(`${daemon.url}/#/submit?dataset=${dataset}`);
    await page.locator('.submit-page[data-datasets]').waitFor({ timeout: 15000 });
    const s = await editorSpec();
    s.max_steps = 20;
    await page.locator('#spec-editor').fill(JSON.stringify(s, null, 2));
  };
  const setThreshold = async (value) => {
    await threshold.fill(value);
    await threshold.dispatchEvent('change');
  };
  const submitted = async () => {
    await page.click('#submit-job');
    await page.waitForURL(/#\/jobs\/[^/]+$/, { timeout: 15000 });
    const id = decodeURIComponent(/#\/jobs\/([^/]+)$/.exec(page.url())[1]);
    return (await daemon.api('GET', `/jobs/${id}`)).body.spec;
  };

  await openForm('churn2');
  check(await threshold.isVisible() && await threshold.isEnabled(), 'a two-class dataset offers the threshold, enabled');
  check(!('decision_threshold' in await editorSpec()), 'no threshold in the spec until one is set');
  // Out of range: the server's 400, shown by the field and below the editor, naming it.
  await setThreshold('1.5');
  check((await editorSpec()).decision_threshold === 1.5, 'the form writes 1.5 into the spec');
  await expecting([/status of 400/], async () => {
    await page.click('#submit-job');
    const bubble = page.locator('.field-error');
    await bubble.waitFor({ state: 'visible', timeout: 10000 });
    check(await bubble.getAttribute('data-field') === 'decision_threshold', `the error names decision_threshold: ${await bubble.getAttribute('data-field')}`);
    const said = await page.locator('#spec-error').textContent();
    check(said.includes('decision_threshold') && said.includes('must be a number in (0, 1)') && said.includes('got 1.5'),
      `the form shows the server's message: "${said}"`);
    log(`threshold 1.5 refused: "${said}"`);
  });
  check(/#\/submit/.test(page.url()), `still on the form: ${page.url()}`);
  await page.locator('.submit-page').screenshot({ path: path.join(SHOTS, 'submit-threshold-error.png') });
  await setThreshold('0.3');
  check((await editorSpec()).decision_threshold === 0.3, 'the form writes 0.3 into the spec');
  const binary = await submitted();
  check(binary.decision_threshold === 0.3 && binary.max_steps === 20, `the job's spec has decision_threshold 0.3: ${JSON.stringify(binary).slice(0, 300)}`);

  // A multi-class dataset picked after the threshold was set: the field hidden, the spec without it.
  await openForm('churn2');
  await setThreshold('0.3');
  check((await editorSpec()).decision_threshold === 0.3, 'the threshold is in the spec again');
  await page.selectOption('#dataset-select', 'homes');
  check(await threshold.isHidden(), 'no threshold field for 240 classes');
  const shown = await editorSpec();
  check(!('decision_threshold' in shown) && JSON.stringify(shown.dataset).includes('homes'),
    `the spec for homes has no threshold: ${JSON.stringify(shown).slice(0, 300)}`);
  const multi = await submitted();
  check(!('decision_threshold' in multi) && JSON.stringify(multi.dataset).includes('homes'),
    `the multi-class job's spec has no decision_threshold: ${JSON.stringify(multi).slice(0, 300)}`);
  log('decision threshold: shown for churn2 (2 classes), 1.5 refused naming the field, 0.3 submitted; hidden and left out for homes');
}

await runTest(main, { resources: () => ({ daemon, context }), tmp, shots: SHOTS });
