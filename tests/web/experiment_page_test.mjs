#!/usr/bin/env node
// The experiments list and the experiment page in a real browser (Debian's Chromium via
// playwright-core, as dashboard_test.mjs), against `trainingd serve` on a free port.
//
//   node tests/web/experiment_page_test.mjs TRAININGD [SCREENSHOT_DIR] [WEB_DIR]
//
// WEB_DIR: the dashboard's files when not the build's (to try edits of web/ without building;
// it needs vendor/ as the build makes it).
//
// 1. A real ASHA search of 8 CNN trials in two brackets (the spec of tests/e2e/experiments_test.py
//    with brackets), started
//    through the API while the list is open: its row appears from the event stream; on its page
//    Stop, then Resume, change the state as the daemon does, without a reload; it completes, live;
//    the ladder, the table, the best and the charts agree with the API; a trial's link opens its
//    job page, whose experiment link leads back.
// 2. The daemon stopped, a completed ASHA experiment of 1,000 trials written into its store
//    (experiment_fixture.py: jobs, trials, rung results, 250 series), the daemon started again:
//    the time from navigation to the table and every chart drawn, of a sort click and of a page
//    change, measured in the page with performance.now(), printed and bounded (render < 3 s,
//    sort and page < 500 ms: generous on a shared 2-core machine); the sorted page is the API's;
//    the ladder's counts and promotions; the parallel-coordinates plot's lines and log axis.
// 3. 380 px: neither page scrolls sideways. Delete from the list: Cancel keeps the real search,
//    Delete removes it and its trials' jobs.
// 4. A 3-fold cross-validation's page: each fold's metric linked to its job, the mean and the
//    sample standard deviation, as the API answers them.
// It fails on console errors, page errors, CSP violations, 5xx answers and requests to other
// hosts, as dashboard_test.mjs does.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CHROMIUM, Daemon, check, log, newContext, runTest, waitAttr, watchedPage,
} from './browser_support.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const TRAININGD = process.argv[2];
const SHOTS = path.resolve(process.argv[3] || 'experiment-screenshots');
const WEB_DIR = process.argv[4] ? path.resolve(process.argv[4]) : '';
if (!TRAININGD || !fs.existsSync(TRAININGD)) throw new Error(`usage: experiment_page_test.mjs TRAININGD [DIR] [WEB_DIR]; no ${TRAININGD}`);
if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (tools/install-deps.sh build)`);
fs.mkdirSync(SHOTS, { recursive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trainingd-experiment-page-'));
const dataDir = path.join(tmp, 'data');
const config = { threads_per_job: 1, ...(WEB_DIR ? { web_dir: WEB_DIR } : {}) };
const BIG = 'generated-1000';
const LIMITS = { render: 3000, sort: 500, page: 500 };

let daemon;
let context;

// The search of tests/e2e/experiments_test.py (ASHA over trials of 10, 20 and 40 steps), with an
// evaluation every 5 steps so the curves have points to draw; but of the tutorial CNN, not
// softmax: softmax's whole search takes about a second on a fast machine, less than the page takes
// to show it running, and Stop needs a search still running. On 1,000 examples, 100 to validate
// and 100 to test, and batches of 16 to 32, the CNN's takes about 20 s on Zen 3 (the evaluations
// of 500 examples every 5 steps and batches up to 128 took twice that).
function searchSpec() {
  return {
    name: 'cnn-asha',
    base_job: {
      name: 't', model: 'cnn', batch_size: 50, max_steps: 40, seed: 1,
      dataset: { name: 'fashion-mnist', validation_size: 100, max_train_examples: 1000, max_test_examples: 100 },
      optimizer: { type: 'adam', learning_rate: 0.001 },
      hooks: {
        checkpoint: { every_steps: 1000 }, summary: { every_steps: 10 },
        evaluation: { every_steps: 5, split: 'validation' }, final_eval: { split: 'test' }, logging: { enabled: false },
      },
    },
    space: {
      'optimizer.learning_rate': { type: 'log', min: 0.0001, max: 0.1 },
      batch_size: { type: 'int', min: 16, max: 32 },
      'optimizer.type': { type: 'categorical', values: ['adam', 'sgd'] },
    },
    searcher: {
      name: 'asha', metric: 'validation/accuracy', mode: 'max', max_trials: 8, max_concurrent_trials: 1,
      min_steps: 10, max_steps: 40, reduction_factor: 2, brackets: 2, seed: 3,
    },
  };
}

async function get(p) {
  const r = await daemon.api('GET', p);
  check(r.status === 200, `GET ${p}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const pct = (v) => `${(v * 100).toFixed(1)}%`;

// In the page: runs `act` (JS statements), then waits, a frame at a time, until `ready` (a JS
// expression) holds; answers the milliseconds between, by the page's performance.now(). Sent as
// an expression for the DevTools protocol to evaluate: the page's CSP allows no eval of its own.
function timed(page, act, ready, timeout = 30000) {
  return page.evaluate(`(async () => {
    const t0 = performance.now();
    ${act};
    for (;;) {
      if (${ready}) return performance.now() - t0;
      if (performance.now() - t0 > ${timeout}) throw new Error('not ready after ${timeout} ms');
      await new Promise((r) => requestAnimationFrame(r));
    }
  })()`);
}

async function realSearch(page) {
  await page.goto(`${daemon.url}/#/experiments`);
  await page.locator('.experiments-page .empty', { hasText: 'No experiments yet' }).waitFor();
  const submitted = await daemon.api('POST', '/experiments', searchSpec());
  check(submitted.status === 201, `the search is submitted: ${JSON.stringify(submitted.body)}`);
  const id = submitted.body.id;
  // From the list's event stream, without a reload.
  await page.locator(`.experiments-table tr[data-id="${id}"]`).waitFor({ timeout: 10000 });
  log(`experiment ${id} appeared in the list`);
  await page.evaluate(() => { window.__sameDocument = true; });
  await page.locator(`.experiments-table tr[data-id="${id}"] a.job-link`).click();
  await waitAttr(page, '.experiment-page', 'data-state', (s) => s === 'running', 'running');
  // Stop once a trial has a result, so the ladder has something to stop on.
  for (let i = 0; ; i++) {
    const e = await get(`/experiments/${id}`);
    if (e.plan.rungs[0].trials >= 2) break;
    check(e.state === 'running' && i < 600, `two results at rung 0: ${JSON.stringify(e)}`);
    await page.waitForTimeout(100);
  }
  await page.locator('.experiment-page .actions [data-action="stop"]').click();
  await waitAttr(page, '.experiment-page', 'data-state', (s) => s === 'stopped', 'stopped', 60000);
  check((await get(`/experiments/${id}`)).state === 'stopped', 'the daemon says stopped');
  check(await page.locator('.experiment-page .actions [data-action="resume"]').isEnabled(), 'Resume offered');
  check(await page.locator('.experiment-page .actions [data-action="delete"]').isEnabled(), 'Delete offered when stopped');
  log('Stop: the page went to stopped');
  await page.locator('.experiment-page .actions [data-action="resume"]').click();
  await waitAttr(page, '.experiment-page', 'data-state', (s) => s === 'running' || s === 'completed', 'running again', 30000);
  // The search may end between two reads of the page: read the state and the button in one go,
  // and hold Delete back exactly while it runs.
  const after = await page.evaluate(() => ({
    state: document.querySelector('.experiment-page').dataset.state,
    deleteDisabled: document.querySelector('.experiment-page .actions [data-action="delete"]').disabled,
  }));
  check(after.deleteDisabled === (after.state === 'running'), `Delete only when not running: ${JSON.stringify(after)}`);
  log(`Resume: ${after.state} again`);
  await waitAttr(page, '.experiment-page', 'data-state', (s) => s === 'completed', 'completed', 240000);
  check(await page.evaluate(() => window.__sameDocument === true), 'no reload on the way');
  const e = await get(`/experiments/${id}`);
  check(e.state === 'completed' && e.trials_started === 8, `completed with 8 trials: ${JSON.stringify(e)}`);
  // The page follows the end without a reload: every count as the daemon has it.
  await waitAttr(page, '.experiment-page', 'data-trials', (n) => n === '8', 'the 8 trials drawn', 10000);
  await waitAttr(page, '.trials-table', 'data-total', (n) => n === '8', 'the table holds 8 trials', 10000);
  // Two brackets: 3 rungs from 10 steps, 2 from 20; a ladder each.
  check(e.plan.rungs.map((r) => `${r.bracket}.${r.index}:${r.steps}`).join(' ') === '0.0:10 0.1:20 0.2:40 1.0:20 1.1:40', `the brackets' rungs: ${JSON.stringify(e.plan.rungs)}`);
  for (const r of e.plan.rungs) {
    const sel = `.rung[data-bracket="${r.bracket}"][data-rung="${r.index}"]`;
    const name = `bracket ${r.bracket} rung ${r.index}`;
    await waitAttr(page, sel, 'data-trials', (n) => n === String(r.trials), `${name}'s ${r.trials} results`, 10000);
    const promoted = await page.locator(`${sel} .rung-promoted`).count();
    check(promoted === r.promoted, `${name}: ${promoted} marked promoted, the API says ${r.promoted}`);
    const chips = await page.locator(`${sel} .rung-trial`).count();
    check(chips === r.trials, `${name}: ${chips} trials shown of ${r.trials}`);
    const head = (await page.locator(`${sel} .rung-head strong`).textContent()).trim();
    check(head === `Bracket ${r.bracket}, rung ${r.index}`, `${name} is headed ${head}`);
  }
  const best = (await page.locator('[data-stat="best"] .stat-value').textContent()).trim();
  check(best === pct(e.best.metric), `best ${best} is the API's ${e.best.metric}`);
  await waitAttr(page, '[data-chart="best"]', 'data-best', (v) => Number(v) === e.best.metric, 'the best-so-far curve ends at the best', 10000);
  const withMetric = (await get(`/experiments/${id}/trials?limit=1000`)).trials.filter((t) => t.metric !== null).length;
  await waitAttr(page, '.parcoords', 'data-lines', (n) => n === String(withMetric), `${withMetric} lines`, 10000);
  await waitAttr(page, '[data-chart="top"]', 'data-points', (n) => Number(n) > 5, 'top trials\' curves', 10000);
  check(await page.locator('[data-chart="top"]').getAttribute('data-series') === '5', 'five curves');
  log(`completed live: ladder ${e.plan.rungs.map((r) => `${r.trials}/${r.promoted}`).join(' ')}, best ${best}`);
  await page.screenshot({ path: path.join(SHOTS, 'experiment-real.png'), fullPage: true });

  // A trial's job page, and back.
  const first = page.locator('.trials-table tbody tr').first();
  const trial = await first.getAttribute('data-trial');
  await first.locator('a').click();
  await page.locator(`.job-experiment a[data-experiment="${id}"]`).waitFor();
  const line = await page.locator('.job-experiment').textContent();
  check(line.startsWith(`Trial ${trial} of experiment ${id}`) && line.includes('optimizer.learning_rate'), `the job page names its trial: ${line}`);
  await page.locator('.job-experiment a').click();
  await waitAttr(page, '.experiment-page', 'data-state', (s) => s === 'completed', 'back on the experiment');
  log(`trial ${trial}: job page and back`);
  return id;
}

async function bigExperiment(page, small) {
  await page.goto('about:blank'); // no page polling a daemon that is gone
  await daemon.stop();
  const gen = spawnSync('/usr/bin/python3', [path.join(here, 'experiment_fixture.py'), path.join(dataDir, 'trainingd.db'), small, BIG, '1000'], { encoding: 'utf8' });
  check(gen.status === 0, `experiment_fixture.py: ${gen.stderr}`);
  const made = JSON.parse(gen.stdout);
  log(`wrote ${made.trials} trials (rungs ${made.rung_trials.join(', ')}, ${made.series} series)`);
  daemon = await Daemon.start(TRAININGD, dataDir, { config });
  const e = await get(`/experiments/${BIG}`);
  check(e.trials_started === 1000 && e.state === 'completed', `the daemon reloaded it: ${JSON.stringify(e.plan)}`);

  const results = e.plan.rungs.reduce((n, r) => n + r.trials, 0); // the best-so-far chart's dots
  // From the app's list (loaded), to the page: table, ladder, best so far, the top curves with
  // their points and the parallel coordinates, all drawn.
  await page.goto(`${daemon.url}/#/experiments`);
  await page.locator(`.experiments-table tr[data-id="${BIG}"]`).waitFor();
  await page.evaluate(() => {
    window.__longest = 0;
    new PerformanceObserver((l) => { for (const x of l.getEntries()) window.__longest = Math.max(window.__longest, x.duration); })
      .observe({ type: 'longtask', buffered: false });
  });
  const render = await timed(page, `location.hash = '#/experiments/${BIG}'`, `(() => {
    const q = (s) => document.querySelector(s);
    const t = q('.trials-table');
    return t && t.dataset.rows === '50' && q('.parcoords')?.dataset.lines === '1000' && q('.rung[data-rung="3"]')
      && Number(q('[data-chart="best"]')?.dataset.points) === ${results} && q('[data-chart="top"]')?.dataset.seriesPoints?.split(',').filter((n) => Number(n) > 0).length === 5;
  })()`);
  const longest = await page.evaluate(() => window.__longest);
  check(Number(await page.locator('[data-chart="best"]').getAttribute('data-best')) === e.best.metric, 'the best-so-far line ends at the best');
  log(`1,000 trials: table and charts drawn ${render.toFixed(0)} ms after navigation (longest task ${longest.toFixed(0)} ms; parallel coordinates ${await page.locator('.parcoords').getAttribute('data-draw-ms')} ms)`);
  check(render < LIMITS.render, `render ${render.toFixed(0)} ms < ${LIMITS.render}`);
  // docs/images/dashboard-experiment.png is this one: the top of the page, sorted by the metric.
  await page.setViewportSize({ width: 1280, height: 1800 });
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(SHOTS, 'experiment-1000-top.png') });
  await page.setViewportSize({ width: 1280, height: 900 });
  check((await page.locator('.parcoords').getAttribute('data-axes')) === 'batch_size:linear,optimizer.learning_rate:log,optimizer.type:categorical,validation/accuracy:linear', 'the axes, log for the log range');

  // The ladder: every rung's counts; rung 0 shows 24 trials until "more" is opened.
  for (const r of e.plan.rungs) {
    check(await page.locator(`.rung[data-rung="${r.index}"]`).getAttribute('data-promoted') === String(r.promoted), `rung ${r.index} promoted ${r.promoted}`);
  }
  check(await page.locator('.rung[data-rung="0"] .rung-trial').count() === 24, 'rung 0 starts with 24 trials');
  const more = await timed(page, `document.querySelector('.rung[data-rung="0"] .rung-more summary').click()`,
    `document.querySelectorAll('.rung[data-rung="0"] .rung-trial').length === 1000`);
  const promoted0 = await page.locator('.rung[data-rung="0"] .rung-promoted').count();
  check(promoted0 === e.plan.rungs[0].promoted, `rung 0 marks ${promoted0} promoted, the API ${e.plan.rungs[0].promoted}`);
  log(`rung 0's 976 more opened in ${more.toFixed(0)} ms (${promoted0} marked promoted)`);

  // Sorts and pages: the daemon sorts; each answer's page as the API gives it.
  const version = async () => Number(await page.locator('.trials-table').getAttribute('data-version'));
  const rowsOf = () => page.locator('.trials-table tbody tr').evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.trial)));
  const apiRows = async (q) => (await get(`/experiments/${BIG}/trials?${q}`)).trials.map((t) => t.index);
  const times = {};
  for (const [label, key, order] of [['batch_size', 'batch_size', 'asc'], ['batch_size again', 'batch_size', 'desc'], ['learning rate', 'optimizer.learning_rate', 'asc'], ['index', 'index', 'asc']]) {
    const v = await version();
    const ms = await timed(page, `document.querySelector('.trials-table [data-sort="${key}"]').click()`,
      `Number(document.querySelector('.trials-table').dataset.version) > ${v}`);
    times[`sort by ${label}`] = ms;
    const d = await page.locator('.trials-table').evaluate((t) => ({ ...t.dataset }));
    check(d.sort === key && d.order === order, `sorted by ${key} ${order}: ${JSON.stringify(d)}`);
    const shown = await rowsOf();
    const want = await apiRows(`sort=${encodeURIComponent(key)}&order=${order}&limit=50`);
    check(JSON.stringify(shown) === JSON.stringify(want), `the page sorted by ${key} ${order} is the API's: ${shown.slice(0, 5)} vs ${want.slice(0, 5)}`);
    check(LIMITS.sort > ms, `sort by ${label}: ${ms.toFixed(0)} ms < ${LIMITS.sort}`);
  }
  const header = await page.locator('.trials-table th[aria-sort]').evaluateAll((ths) => ths.map((th) => [th.textContent, th.getAttribute('aria-sort')]));
  check(header.length === 1 && header[0][1] === 'ascending', `one column says how it sorts: ${JSON.stringify(header)}`);
  for (const [label, button, offset] of [['next page', 'next', 50], ['next page again', 'next', 100], ['previous page', 'prev', 50]]) {
    const v = await version();
    const ms = await timed(page, `document.querySelector('.trials-card [data-page="${button}"]').click()`,
      `Number(document.querySelector('.trials-table').dataset.version) > ${v}`);
    times[label] = ms;
    const shown = await rowsOf();
    check(shown[0] === offset && shown.length === 50, `${label}: trials from ${offset}: ${shown[0]}`);
    check(LIMITS.page > ms, `${label}: ${ms.toFixed(0)} ms < ${LIMITS.page}`);
  }
  const range = await page.locator('.pager-range').textContent();
  check(range === '51–100 of 1,000', `the pager says ${range}`);
  log(`1,000 trials, in the page (performance.now()): ${Object.entries(times).map(([k, v]) => `${k} ${v.toFixed(0)} ms`).join(', ')}`);
  await page.locator('.trials-table [data-sort="metric"]').click();
  await waitAttr(page, '.trials-table', 'data-sort', (s) => s === 'metric', 'sorted by metric');
  await page.locator('.rung[data-rung="0"] .rung-more summary').click();
  await page.screenshot({ path: path.join(SHOTS, 'experiment-1000.png'), fullPage: true });
  return { render, longest, more, ...times };
}

async function phoneAndDelete(page, small) {
  await page.setViewportSize({ width: 380, height: 800 });
  for (const hash of ['#/experiments', `#/experiments/${BIG}`]) {
    await page.goto(`${daemon.url}/${hash}`);
    await page.reload();
    await page.locator(hash.includes(BIG) ? '.trials-table[data-version]' : '.experiments-table tbody tr').first().waitFor();
    await page.waitForTimeout(300);
    const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(over <= 0, `${hash} fits 380 px (${over} px too wide)`);
  }
  await page.screenshot({ path: path.join(SHOTS, 'experiment-phone.png') });
  log('380 px: no horizontal overflow');
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto(`${daemon.url}/#/experiments`);
  const row = page.locator(`.experiments-table tr[data-id="${small}"]`);
  const jobs = (await get(`/experiments/${small}/trials?limit=1000`)).trials.map((t) => t.job_id);
  await row.locator('[data-action="delete"]').click();
  await page.locator('dialog button[value="cancel"]').click();
  check((await daemon.api('GET', `/experiments/${small}`)).status === 200, 'Cancel keeps it');
  await row.locator('[data-action="delete"]').click();
  await page.locator('dialog button[value="ok"]').click();
  await row.waitFor({ state: 'detached' });
  check((await daemon.api('GET', `/experiments/${small}`)).status === 404, 'Delete removes it');
  check((await daemon.api('GET', `/jobs/${jobs[0]}`)).status === 404, 'and its trials\' jobs');
  check(await page.locator('.experiments-page').getAttribute('data-experiments') === '1', 'the generated one stays');
  log('Delete from the list: Cancel keeps, Delete removes the experiment and its jobs');
}

// 4. A 3-fold cross-validation: its page shows each fold's metric (linked to its trial's job), and
// their mean and sample standard deviation, as the API answers them.
async function crossValidation(page) {
  const spec = {
    name: 'softmax-cv',
    base_job: {
      name: 'cv', model: 'softmax', max_steps: 20, batch_size: 50, seed: 1,
      dataset: { name: 'fashion-mnist', max_train_examples: 600, max_test_examples: 100, split_seed: 2 },
      hooks: { checkpoint: { every_steps: 1000 }, evaluation: { every_steps: 1000, split: 'validation' }, logging: { enabled: false } },
    },
    searcher: { name: 'cross_validation', folds: 3, metric: 'validation/accuracy', mode: 'max', max_concurrent_trials: 1 },
  };
  const submitted = await daemon.api('POST', '/experiments', spec);
  check(submitted.status === 201, `the cross-validation is submitted: ${JSON.stringify(submitted.body)}`);
  const id = submitted.body.id;
  await page.goto(`${daemon.url}/#/experiments/${id}`);
  await waitAttr(page, '.experiment-page', 'data-state', (s) => s === 'completed', 'the cross-validation completed', 120000);
  await waitAttr(page, '.cv-card', 'data-folds-done', (n) => n === '3', 'three folds shown', 10000);
  const e = await get(`/experiments/${id}`);
  const cv = e.cross_validation;
  check(cv && cv.folds_done === 3 && cv.std !== null, `the API's result: ${JSON.stringify(cv)}`);
  check(Number(await page.locator('.cv-card').getAttribute('data-mean')) === cv.mean, 'the page\'s mean is the API\'s');
  check(Number(await page.locator('.cv-card').getAttribute('data-std')) === cv.std, 'the page\'s std is the API\'s');
  const jobs = (await get(`/experiments/${id}/trials?limit=10`)).trials.sort((a, b) => a.index - b.index).map((t) => t.job_id);
  await waitAttr(page, '.cv-table tr[data-fold="2"] a', 'href', (h) => h === `#/jobs/${jobs[2]}`, 'fold 2 links to its trial\'s job', 10000);
  check(await page.locator('.cv-table tbody tr').count() === 3, 'a row per fold');
  await page.screenshot({ path: path.join(SHOTS, 'experiment-cross-validation.png'), fullPage: true });
  log(`cross-validation page: folds ${JSON.stringify(cv.fold_metrics)}, mean ${cv.mean}, std ${cv.std}`);
}

await runTest(async () => {
  log(`trainingd ${TRAININGD}, data in ${tmp}`);
  daemon = await Daemon.start(TRAININGD, dataDir, { config });
  context = await newContext(path.join(tmp, 'profile'));
  const page = await watchedPage(context);
  const small = await realSearch(page);
  const t = await bigExperiment(page, small);
  await phoneAndDelete(page, small);
  await crossValidation(page);
  console.log(`RESULT ${JSON.stringify(Object.fromEntries(Object.entries(t).map(([k, v]) => [k, Math.round(v)])))}`);
}, { resources: () => ({ daemon, context }), tmp, shots: SHOTS });
