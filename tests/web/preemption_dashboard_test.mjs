#!/usr/bin/env node
// A preempted job in the dashboard (docs/operations.md#preemption): Debian's Chromium driven by
// playwright-core against `trainingd serve` with one slot. A low-priority job runs; a
// priority-5 job is submitted through the API and preempts it. The job list shows the low job's
// state badge "preempted" and who preempted it; its page shows the state, the reason naming the
// preempting job, a "preempted by" field linking to that job and a Stop button that works (a preempted job leaves the queue); then it goes
// on to "stopped".
//
//   node tests/web/preemption_dashboard_test.mjs TRAININGD [SCREENSHOT_DIR]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CHROMIUM, Daemon, check, log, mlpSpec, newContext, runTest, waitState, watchedPage,
} from './browser_support.mjs';

const TRAININGD = process.argv[2];
const SHOTS = path.resolve(process.argv[3] || 'preemption-screenshots');
if (!TRAININGD || !fs.existsSync(TRAININGD)) throw new Error(`usage: preemption_dashboard_test.mjs TRAININGD [DIR]; no ${TRAININGD}`);
if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (tools/install-deps.sh build)`);
fs.mkdirSync(SHOTS, { recursive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trainingd-web-preempt-'));

let daemon;
let context;

const hooks = { checkpoint: { every_steps: 500 }, summary: { every_steps: 20 }, logging: { every_n_iter: 100 } };

async function jobState(id) {
  return (await daemon.api('GET', `/jobs/${id}`)).body;
}

async function until(fn, what, timeout = 60000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function main() {
  daemon = await Daemon.start(TRAININGD, path.join(tmp, 'data'), {
    config: { threads_per_job: 1, max_concurrent_jobs: 1, preemption: { enabled: true, min_run_secs: 1 } },
  });
  context = await newContext(path.join(tmp, 'profile'));
  const page = await watchedPage(context);

  // The high job is long too, so the low one stays preempted while the page is looked at.
  const low = (await daemon.api('POST', '/jobs', mlpSpec('web-low', 200000, hooks))).body;
  await until(async () => (await jobState(low.id)).global_step >= 100, 'the low job trains');
  await new Promise((r) => setTimeout(r, 1200));  // past min_run_secs
  const high = (await daemon.api('POST', '/jobs', { ...mlpSpec('web-high', 200000, hooks), priority: 5 })).body;
  const preempted = await until(async () => {
    const j = await jobState(low.id);
    return j.state === 'preempted' ? j : null;
  }, 'the low job preempted');
  check(preempted.preempted_by === high.id, `preempted_by ${preempted.preempted_by}`);
  log(`low job ${low.id} preempted by ${high.id} at step ${preempted.global_step}`);

  await page.goto(`${daemon.url}/#/jobs`);
  const row = page.locator(`tr[data-id="${low.id}"][data-state="preempted"]`);
  await row.waitFor({ timeout: 15000 });
  check(await row.locator('.badge[data-state="preempted"]').count() === 1, 'a "preempted" badge in the list');
  const why = await row.locator('.sub.reason').textContent();
  check(why.includes(high.id), `the list names the preempting job: "${why}"`);
  await page.locator(`tr[data-id="${high.id}"][data-state="running"]`).waitFor({ timeout: 15000 });
  await page.screenshot({ path: path.join(SHOTS, 'preempted-list.png') });

  await page.goto(`${daemon.url}/#/jobs/${low.id}`);
  await waitState(page, ['preempted'], 15000);
  const reason = await page.locator('.job-reason').first().textContent();
  check(reason.includes(`preempted by job ${high.id}`), `the page says who preempted it: "${reason}"`);
  // Without a token a loopback browser is the admin: the header says so, and offers no sign-out.
  check((await page.locator('#who').textContent()) === 'adminadminSwitch user', `the header: "${await page.locator('#who').textContent()}"`);
  // And as a field of its own: a link to the preempting job's page.
  const by = page.locator('.job-preempted a[data-field="preempted_by"]');
  check(await by.textContent() === high.id, `the preempted-by field names ${high.id}`);
  check(await by.getAttribute('href') === `#/jobs/${high.id}`, 'the preempted-by field links to its page');
  await page.screenshot({ path: path.join(SHOTS, 'preempted-job.png') });
  // A preempted job can be stopped: it leaves the queue.
  const stop = page.locator('button[data-action="stop"]');
  check(await stop.isEnabled(), 'Stop is enabled on a preempted job');
  await stop.click();
  await waitState(page, ['stopped'], 15000);
  log('the preempted job stopped from its page');
  await daemon.api('POST', `/jobs/${high.id}/stop`, {});
}

await runTest(main, { resources: () => ({ daemon, context }), tmp, shots: SHOTS });
