#!/usr/bin/env node
// The dashboard in a real browser: Debian's Chromium driven by playwright-core (from
// web/node_modules; it never downloads a browser), against `trainingd serve` on a free port.
//
//   node tests/web/dashboard_test.mjs TRAININGD [SCREENSHOT_DIR]
//
// It submits a job through the form (after a spec the server rejects, whose error must appear by
// the field it names), watches the chart gain points live, stops the job from the page, resumes
// it, sees it complete; submits a second job and compares the two; deletes one after a
// confirmation; restarts the daemon under a running job's page (banner, reconnect, the job
// finishes); checks the layout at 380 px; and runs with an API token (prompt, sessionStorage,
// Authorization header, on the event stream too: never in a URL). It fails on any console error the
// step does not expect (the browser logs expected 4xx answers as errors), any page error, any
// Content-Security-Policy violation (the daemon serves the page with a strict policy, which the
// test checks is there), and any request to a host other than 127.0.0.1. Screenshots go to
// SCREENSHOT_DIR (default: ./dashboard-screenshots).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CHROMIUM, Daemon, check, cspViolations, expecting, log, mlpSpec, newContext, runTest, waitAttr,
  waitState, watchedPage,
} from './browser_support.mjs';

const TRAININGD = process.argv[2];
const SHOTS = path.resolve(process.argv[3] || 'dashboard-screenshots');
const TOKEN = 'web-test-token-0123456789abcdef';
if (!TRAININGD || !fs.existsSync(TRAININGD)) throw new Error(`usage: dashboard_test.mjs TRAININGD [DIR]; no ${TRAININGD}`);
if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (tools/install-deps.sh build)`);
fs.mkdirSync(SHOTS, { recursive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trainingd-web-'));

// The daemon on tmp/data. One compute thread per job: two OpenMP threads on a 2-core machine
// shared with a browser (and other tests) crawl, and the test needs jobs that finish in seconds.
const startDaemon = (options = {}) =>
  Daemon.start(TRAININGD, path.join(tmp, 'data'), { config: { threads_per_job: 1 }, ...options });

// Small jobs: a few thousand steps, a summary every 20.
function spec(name, maxSteps, extra = {}) {
  const hooks = {
    checkpoint: { every_steps: 500 },
    summary: { every_steps: 20 },
    step_counter: { every_steps: 20 },
    logging: { every_n_iter: 100 },
    evaluation: { every_steps: 250 },
  };
  return { ...mlpSpec(name, maxSteps, hooks), ...extra };
}

// --- the browser ----------------------------------------------------------------------------
async function until(fn, what, timeout = 10000) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out: ${what}`);
}

const attr = (page, sel, name) => page.locator(sel).first().getAttribute(name);
const num = async (page, sel, name) => Number(await attr(page, sel, name));

const jobState = (page) => attr(page, '.job-page', 'data-state');

async function fillSpec(page, text) {
  await page.locator('#spec-editor').fill(text);
}

// --- the steps ---------------------------------------------------------------------------
async function submitWithValidationError(page) {
  // Server-side errors are 400s, which the browser logs as console errors: expected here.
  await expecting([/status of 400/], async () => {
    for (const [mutate, field] of [
      [(s) => { s.batch_size = -5; }, 'batch_size'],
      [(s) => { s.hooks.summary.every_step = 10; }, 'hooks.summary.every_step'],
      [(s) => { s.model = 'vgg'; }, 'model'],
    ]) {
      const s = spec('web-invalid', 100);
      mutate(s);
      const text = JSON.stringify(s, null, 2);
      await fillSpec(page, text);
      await page.locator('#submit-job').click();
      const bubble = page.locator('.field-error');
      await bubble.waitFor({ state: 'visible', timeout: 10000 });
      check(await bubble.getAttribute('data-field') === field, `error names ${field}: ${await bubble.getAttribute('data-field')}`);
      // "Next to the field": the marked line is the line that holds the field's key.
      const key = field.split('.').pop();
      const lines = text.split('\n');
      const expected = lines.findIndex((l, i) => l.includes(`"${key}"`) &&
        (field !== 'hooks.summary.every_step' || lines.slice(0, i).some((x) => x.includes('"summary"')))) + 1;
      check(Number(await bubble.getAttribute('data-line')) === expected,
        `${field} error on line ${expected}, got ${await bubble.getAttribute('data-line')}`);
      const box = await bubble.boundingBox();
      const editor = await page.locator('.editor').boundingBox();
      check(box && box.y > editor.y && box.y < editor.y + editor.height, 'the error is shown inside the editor');
      check(await page.locator('#spec-editor').getAttribute('aria-invalid') === 'true', 'editor marked invalid');
      check((await page.locator('#spec-error').textContent()).includes(field), 'message below names the field');
      log(`  ${field}: "${(await bubble.textContent()).trim()}" on line ${expected}`);
    }
  });
  await page.screenshot({ path: path.join(SHOTS, 'dashboard-submit-error.png') });
}

async function submitThroughForm(page, s) {
  await page.goto(`${daemon.url}/#/submit`);
  await page.locator('.preset[data-preset="mlp"]').click();
  check((await page.locator('#spec-editor').inputValue()).includes('"mlp-fashion-mnist"'), 'the mlp preset fills the editor');
  await fillSpec(page, JSON.stringify(s, null, 2));
  await page.locator('#submit-job').click();
  await page.waitForURL(/#\/jobs\/[A-Za-z0-9_-]+$/, { timeout: 15000 });
  const id = decodeURIComponent(new URL(page.url()).hash.split('/').pop());
  await page.locator('.job-page .title-row h1').filter({ hasText: s.name }).waitFor({ timeout: 10000 });
  return id;
}

let daemon;
let context;

async function main() {
  log(`trainingd ${TRAININGD}, data in ${tmp}`);
  daemon = await startDaemon();
  context = await newContext(path.join(tmp, 'profile'));
  const page = await watchedPage(context);
  const scalarRequests = [];
  page.on('request', (r) => { if (r.url().includes('/scalars?')) scalarRequests.push(r.url()); });

  // 1. The empty list, then the submit form with a spec the server rejects. The page comes with
  // its Content-Security-Policy (own files only, no inline script, no framing).
  const home = await page.goto(`${daemon.url}/`);
  const csp = home.headers()['content-security-policy'] || '';
  for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"]) {
    check(csp.split(';').map((d) => d.trim()).includes(directive), `CSP has ${directive}: "${csp}"`);
  }
  check(!/unsafe-inline|unsafe-eval/.test(csp), `CSP allows no inline script or style: "${csp}"`);
  check(home.headers()['x-frame-options'] === 'DENY', 'X-Frame-Options: DENY');
  check(home.headers()['referrer-policy'] === 'no-referrer', 'Referrer-Policy: no-referrer');
  // The violation report works: an inline script added now is blocked and reported.
  await expecting([/Content Security Policy/], async () => {
    await page.evaluate(() => {
      const script = document.createElement('script');
      script.textContent = 'window.__inlineRan = true;';
      document.head.append(script);
    });
    await until(() => cspViolations.length > 0, 'an inline script is reported as a CSP violation', 5000);
  });
  check(await page.evaluate(() => window.__inlineRan === undefined), 'the inline script did not run');
  check(cspViolations.length === 1 && cspViolations[0].includes('script-src'), `one script-src violation: ${cspViolations}`);
  cspViolations.length = 0;
  log(`CSP: ${csp}`);
  await page.waitForURL(/#\/jobs$/);
  await page.getByText('No jobs yet.').waitFor({ timeout: 10000 });
  await page.locator('nav a[data-nav="submit"]').click();
  await page.locator('#spec-editor').waitFor();
  log('submit: server-side validation errors by their fields');
  await submitWithValidationError(page);

  // 2. A job through the form; its chart gains points from the event stream.
  const first = await submitThroughForm(page, spec('web-first', 6000));
  log(`submitted web-first: ${first}`);
  await waitState(page, ['running'], 60000);
  const loss = '[data-chart="loss"]';
  await waitAttr(page, loss, 'data-points', (v) => Number(v) >= 3, 'first points', 60000);
  const requestsBefore = scalarRequests.length;
  const n1 = await num(page, loss, 'data-points');
  await waitAttr(page, loss, 'data-points', (v) => Number(v) >= n1 + 5, 'live points', 30000);
  const n2 = await num(page, loss, 'data-points');
  // (A series that appears meanwhile, validation/loss, is fetched once; the loss series is not.)
  const refetched = scalarRequests.slice(requestsBefore).filter((u) => /[?&]tag=loss&/.test(u));
  check(refetched.length === 0, `the loss points came live, not from refetching: ${refetched}`);
  check(await jobState(page) === 'running', 'still running while the points came');
  log(`live: loss chart ${n1} -> ${n2} points without refetching the series`);

  // 3. Stop from the page: stopping, then stopped (final checkpoint). Resume: completed.
  await page.locator('.actions button[data-action="stop"]').click();
  await waitState(page, ['stopping', 'stopped'], 10000);
  await waitState(page, ['stopped'], 60000);
  const stoppedAt = await num(page, '.job-page', 'data-global-step');
  check(stoppedAt > 0 && stoppedAt < 6000, `stopped mid-way (step ${stoppedAt})`);
  log(`stopped at step ${stoppedAt}`);
  await page.locator('.actions button[data-action="resume"]').click();
  await waitState(page, ['queued', 'running', 'completed'], 10000);
  await waitState(page, ['completed'], 120000);
  check(await num(page, '.job-page', 'data-global-step') === 6000, 'completed at max_steps');
  await waitAttr(page, '[data-chart="accuracy"]', 'data-series', (v) => Number(v) >= 3, 'training, validation and test accuracy', 10000);
  await page.locator('.checkpoints-table, .table-compact').first().waitFor({ timeout: 10000 });
  log('resumed and completed');
  await page.waitForTimeout(600);
  await page.screenshot({ path: path.join(SHOTS, 'dashboard-job.png'), fullPage: true });

  // 4. Zoom: a drag on the loss chart refetches that step range at full resolution.
  const over = page.locator(`${loss} .u-over`);
  const ob = await over.boundingBox();
  const zoomRequests = scalarRequests.length;
  await page.mouse.move(ob.x + ob.width * 0.3, ob.y + ob.height / 2);
  await page.mouse.down();
  await page.mouse.move(ob.x + ob.width * 0.45, ob.y + ob.height / 2, { steps: 5 });
  await page.mouse.up();
  await until(() => scalarRequests.slice(zoomRequests).some((u) => /from_step=\d+&to_step=\d+/.test(u)),
    'the zoom refetches a step range', 5000);
  await page.locator(`${loss} button:has-text("Reset zoom")`).click();
  log('zoom refetched a step range');

  // 5. A second job (through the form), then compare the two.
  const second = await submitThroughForm(page, spec('web-second', 1500, { optimizer: { type: 'sgd', learning_rate: 0.1 } }));
  await waitState(page, ['completed'], 120000);
  log(`web-second ${second} completed`);
  await page.goto(`${daemon.url}/#/jobs`);
  await page.locator(`tr[data-id="${first}"][data-state="completed"]`).waitFor({ timeout: 10000 });
  await page.locator(`tr[data-id="${second}"][data-state="completed"]`).waitFor({ timeout: 10000 });
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(SHOTS, 'dashboard-jobs.png'), fullPage: true });
  const [wide, room] = await page.evaluate(() => {
    const wrap = document.querySelector('.table-wrap');
    return [wrap.scrollWidth, wrap.clientWidth];
  });
  check(wide <= room, `the job list fits 1,280 px (${wide} > ${room})`);
  await page.locator('.chip[data-filter="running"]').click();
  await page.getByText('No running jobs.').waitFor();
  await page.locator('.chip[data-filter="all"]').click();

  await page.locator('nav a[data-nav="compare"]').click();
  await page.locator(`.picks input[value="${first}"]`).check();
  await page.locator(`.picks input[value="${second}"]`).check();
  await waitAttr(page, '[data-chart="compare"]', 'data-series-points',
    (v) => v.split(',').length === 2 && v.split(',').every((n) => Number(n) > 0), 'two series with points', 15000);
  check(await page.locator('#compare-tag').inputValue() === 'validation/accuracy', 'compares validation accuracy by default');
  check(new URL(page.url()).hash.includes(`jobs=${first},${second}`), 'the selection is in the URL');
  await page.screenshot({ path: path.join(SHOTS, 'dashboard-compare.png'), fullPage: true });
  log('compare: two series of validation/accuracy');

  // 6. Delete needs a confirmation: Cancel keeps the job, Delete removes it.
  await page.goto(`${daemon.url}/#/jobs`);
  const row = page.locator(`tr[data-id="${second}"]`);
  await row.locator('button[data-action="delete"]').click();
  await page.locator('dialog.dialog button[value="cancel"]').click();
  await page.waitForTimeout(300);
  check(await row.count() === 1, 'cancel keeps the job');
  await row.locator('button[data-action="delete"]').click();
  await page.locator('dialog.dialog button[value="ok"]').click();
  await row.waitFor({ state: 'detached', timeout: 10000 });
  check((await daemon.api('GET', `/jobs/${second}`)).status === 404, 'deleted on the daemon');
  log('delete: cancel keeps it, confirm deletes it');

  // 7. A phone's width: no horizontal scrolling on the list or the job page. (Opening web-first's
  // page again replays its event history, over 1,000 events by now, in one go.)
  await page.setViewportSize({ width: 380, height: 800 });
  for (const hash of ['#/jobs', `#/jobs/${first}`, '#/submit', '#/compare']) {
    await page.goto(`${daemon.url}/${hash}`);
    await page.waitForTimeout(700);
    const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(over <= 0, `${hash} fits 380 px (${over} px too wide)`);
  }
  await page.goto(`${daemon.url}/#/jobs`);
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(SHOTS, 'dashboard-phone.png'), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
  log('380 px: no horizontal overflow');

  // 8. The daemon restarts under a running job's page: banner, reconnect, the job finishes.
  const third = (await daemon.api('POST', '/jobs', spec('web-restart', 5000))).body.id;
  await page.goto(`${daemon.url}/#/jobs/${third}`);
  await waitAttr(page, '.job-page', 'data-global-step', (v) => Number(v) >= 600, 'past the first checkpoint', 60000);
  await expecting([/ERR_CONNECTION_REFUSED|ERR_EMPTY_RESPONSE|ERR_CONNECTION_RESET|ERR_CONNECTION_CLOSED|ERR_INCOMPLETE_CHUNKED_ENCODING|status of 503/], async () => {
    const port = daemon.port;
    await daemon.stop();
    await page.locator('#banner').waitFor({ state: 'visible', timeout: 15000 });
    log(`daemon stopped: banner "${(await page.locator('#banner').textContent()).trim()}"`);
    const before = await num(page, '[data-chart="loss"]', 'data-points');
    daemon = await startDaemon({ port });
    await page.locator('#banner').waitFor({ state: 'hidden', timeout: 30000 });
    log('daemon back: banner gone');
    await waitState(page, ['completed'], 120000);
    await waitAttr(page, '[data-chart="loss"]', 'data-points', (v) => Number(v) > before, 'points after the restart', 10000);
  });
  check(await num(page, '.job-page', 'data-global-step') === 5000, 'the restarted job completed');
  log('job completed after the restart');

  // 8b. A data-parallel job (2 MPI ranks): its page shows every rank's step times while it runs,
  // and its attempt.
  const dp = await daemon.api('POST', '/jobs', spec('web-ranks', 200000, { distributed: { workers: 2 } }));
  check(dp.status === 201, `submit a 2-rank job: ${dp.status} ${JSON.stringify(dp.body)}`);
  await page.goto(`${daemon.url}/#/jobs/${dp.body.id}`);
  await page.locator('section.workers h2', { hasText: 'Workers: 2 ranks' }).waitFor({ timeout: 30000 });
  await until(async () => (await page.locator('section.workers tbody tr').count()) >= 3,
    'two rank rows and an attempt row', 30000);
  const rankRows = await page.locator('section.workers table').first().locator('tbody tr').allTextContents();
  check(rankRows.length === 2 && rankRows[0].startsWith('0 (chief)'), `rank rows: ${rankRows}`);
  await page.screenshot({ path: path.join(SHOTS, 'dashboard-ranks.png'), fullPage: true });
  await page.locator('.actions button[data-action="stop"]').click();
  await waitState(page, ['stopped'], 60000);
  await page.locator('section.workers tr[data-attempt="1"]', { hasText: 'stopped' }).waitFor({ timeout: 10000 });
  log('2 ranks: per-rank times while running; attempt 1 ended stopped');
  await page.close();
  await context.close();
  await daemon.stop();

  // 9. With an API token: the page asks for it, keeps it in sessionStorage, sends it.
  daemon = await startDaemon({ env: { TRAININGD_TOKEN: TOKEN } });
  context = await newContext(path.join(tmp, 'profile-token'));
  const tp = await watchedPage(context);
  const streams = [];
  tp.on('response', async (r) => {
    if (!r.url().includes('/api/v1/events')) return;
    streams.push({ url: r.url(), status: r.status(), auth: await r.request().headerValue('authorization') });
  });
  await expecting([/status of 401/], async () => {
    await tp.goto(`${daemon.url}/`);
    await tp.locator('#token-input').fill('wrong-token-wrong-token');
    await tp.locator('dialog.dialog button[value="ok"]').click();
    await tp.getByText('That token was not accepted.').waitFor({ timeout: 10000 });
    await tp.locator('#token-input').fill(TOKEN);
    await tp.locator('dialog.dialog button[value="ok"]').click();
    await tp.locator(`tr[data-id="${first}"]`).waitFor({ timeout: 15000 });
  });
  check(await tp.evaluate(() => sessionStorage.getItem('trainingd.token')) === TOKEN, 'token kept in sessionStorage');
  // The header says who the token is (GET /api/v1/whoami), with Sign out since the tab holds one.
  await tp.locator('#who .who-name', { hasText: 'admin' }).waitFor({ timeout: 10000 });
  check(await tp.locator('#who .who-role').textContent() === 'admin', 'the header shows the admin role');
  check(await tp.locator('#who button[data-action="sign-out"]').count() === 1, 'Sign out is offered');
  // The list's event stream authenticates with the Authorization header (the token is in no URL)
  // and brings a job created elsewhere.
  const made = await daemon.api('POST', '/jobs', spec('web-token', 200), TOKEN);
  check(made.status === 201, `submit with the token: ${made.status}`);
  await tp.locator(`tr[data-id="${made.body.id}"]`).waitFor({ timeout: 15000 });
  check(streams.some((s) => s.status === 200 && s.auth === `Bearer ${TOKEN}`), `event stream opened with the header: ${JSON.stringify(streams)}`);
  check(streams.every((s) => !s.url.includes('access_token')), `no token in a stream's URL: ${JSON.stringify(streams)}`);
  // One action with the token: stop or delete the new job from the list.
  await tp.locator(`tr[data-id="${made.body.id}"][data-state="completed"]`).waitFor({ timeout: 60000 });
  await tp.locator(`tr[data-id="${made.body.id}"] button[data-action="delete"]`).click();
  await tp.locator('dialog.dialog button[value="ok"]').click();
  await tp.locator(`tr[data-id="${made.body.id}"]`).waitFor({ state: 'detached', timeout: 10000 });
  log('token: prompt, wrong token refused, right one kept; live list; delete with the token');
  await context.close();
  context = null;

  // 10. A team (docs/operations.md#team-use): a viewer's and another user's buttons on the
  // admin's jobs are disabled (Stop on a running one too), and the daemon refuses anyway. The
  // header names the signed-in user and role; Switch user signs in with another token, Sign out
  // forgets it.
  const running = (await daemon.api('POST', '/jobs', spec('web-team-running', 200000), TOKEN)).body.id;
  await until(async () => (await daemon.api('GET', `/jobs/${running}`, undefined, TOKEN)).body.state === 'running',
    'the admin\'s long job runs', 30000);
  const tokens = {};
  for (const [name, role] of [['vera', 'viewer'], ['alice', 'user']]) {
    const made = await daemon.api('POST', '/users', { name, role }, TOKEN);
    check(made.status === 201, `user ${name}: ${made.status}`);
    const tok = await daemon.api('POST', `/users/${name}/tokens`, {}, TOKEN);
    check(tok.status === 201, `token for ${name}: ${tok.status}`);
    tokens[name] = tok.body.token;
    context = await newContext(path.join(tmp, `profile-${name}`));
    await context.addInitScript((t) => { if (!sessionStorage.getItem('trainingd.started')) { sessionStorage.setItem('trainingd.started', '1'); sessionStorage.setItem('trainingd.token', t); } }, tok.body.token);
    const up = await watchedPage(context);
    await up.goto(`${daemon.url}/`);
    await up.locator(`tr[data-id="${first}"]`).waitFor({ timeout: 15000 });
    check(await up.locator('#who .who-name').textContent() === name, `${name}: the header names the user`);
    check(await up.locator('#who .who-role').textContent() === role, `${name}: the header shows the role ${role}`);
    const del = up.locator(`tr[data-id="${first}"] button[data-action="delete"]`);
    check(await del.isDisabled(), `${name} (${role}): the admin's job's delete is disabled`);
    check((await del.getAttribute('title') || '').length > 0, `${name}: the disabled button says why`);
    const stopRow = up.locator(`tr[data-id="${running}"] button[data-action="stop"]`);
    await stopRow.waitFor({ timeout: 15000 });
    check(await stopRow.isDisabled(), `${name} (${role}): Stop of the admin's running job is disabled in the list`);
    await up.goto(`${daemon.url}/#/jobs/${first}`);
    await up.locator('.actions button[data-action="delete"]').waitFor({ timeout: 15000 });
    check(await up.locator('.actions button[data-action="delete"]').isDisabled(), `${name}: delete disabled on the job page`);
    check((await up.locator('main').textContent()).includes('by admin'), `${name}: the job page names its owner`);
    await up.goto(`${daemon.url}/#/jobs/${running}`);
    await waitState(up, ['running'], 15000);
    check(await up.locator('.actions button[data-action="stop"]').isDisabled(), `${name}: Stop disabled on the running job's page`);
    const refused = await daemon.api('DELETE', `/jobs/${first}`, undefined, tok.body.token);
    check(refused.status === 403, `${name}'s delete through the API: ${refused.status}`);
    const refusedStop = await daemon.api('POST', `/jobs/${running}/stop`, {}, tok.body.token);
    check(refusedStop.status === 403, `${name}'s stop through the API: ${refusedStop.status}`);
    if (name === 'alice') {
      // Switch user: vera's token in the dialog; the page starts again as vera.
      await up.locator('#who button[data-action="switch-user"]').click();
      await up.locator('dialog.dialog h2', { hasText: 'Sign in as another user' }).waitFor({ timeout: 5000 });
      await up.locator('#token-input').fill(tokens.vera);
      await up.locator('dialog.dialog button[value="ok"]').click();
      await up.locator('#who .who-name', { hasText: 'vera' }).waitFor({ timeout: 15000 });
      check(await up.locator('#who .who-role').textContent() === 'viewer', 'switched: the header shows vera, a viewer');
      check(await up.evaluate(() => sessionStorage.getItem('trainingd.token')) === tokens.vera, 'switched: the tab holds vera\'s token');
      // Sign out: the token is forgotten, and this daemon (which requires one) asks for one again.
      await expecting([/status of 401/], async () => {
        await up.locator('#who button[data-action="sign-out"]').click();
        await up.locator('dialog.dialog h2', { hasText: 'API token needed' }).waitFor({ timeout: 15000 });
      });
      check(await up.evaluate(() => sessionStorage.getItem('trainingd.token')) === null, 'signed out: no token in the tab');
      check(await up.locator('#who').isHidden(), 'signed out: nobody in the header');
      await up.screenshot({ path: path.join(SHOTS, 'dashboard-signed-out.png') });
    }
    await context.close();
    context = null;
  }
  await daemon.api('POST', `/jobs/${running}/stop`, {}, TOKEN);
  log('team: header names user and role; a viewer\'s and another user\'s Stop and Delete disabled on the admin\'s jobs; the API refuses with 403; switch user; sign out');
}

await runTest(async () => {
  await main();
}, { resources: () => ({ daemon, context }), tmp, shots: SHOTS });
