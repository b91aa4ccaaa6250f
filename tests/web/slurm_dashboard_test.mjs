#!/usr/bin/env node
// The job page's Slurm line in a real browser: Debian's Chromium driven by playwright-core (from
// web/node_modules; it never downloads a browser), against `trainingd serve` with
// `"executor": "slurm"` on a private single-node Slurm cluster (tests/support/slurm_cluster.sh).
//
//   node tests/web/slurm_dashboard_test.mjs TRAININGD [SCREENSHOT_DIR]
//
// With the node drained, a job submitted over the API waits in Slurm: its page says
// "Slurm job N: PENDING (reason)" under the title and its badge says queued. With the node
// resumed it runs: "Slurm job N: RUNNING on localhost", state running, and the Attempts card
// lists attempt 1. Stop from the page: stopped, and the Slurm line shows Slurm's final state.
// It fails on any console error, page error, Content-Security-Policy violation and any request to
// a host other than 127.0.0.1. Needs root, slurm-wlm and munge: exits 77 (skipped) otherwise.
// Screenshots go to SCREENSHOT_DIR (default: ./slurm-dashboard-screenshots).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CHROMIUM, Daemon, check, log, mlpSpec, newContext, reportProblems, waitAttr, waitState, watchedPage,
} from './browser_support.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.resolve(here, '../support/slurm_cluster.sh');

const TRAININGD = process.argv[2] && path.resolve(process.argv[2]);
const SHOTS = path.resolve(process.argv[3] || 'slurm-dashboard-screenshots');
const NODE = 'localhost';
if (!TRAININGD || !fs.existsSync(TRAININGD)) throw new Error(`usage: slurm_dashboard_test.mjs TRAININGD [DIR]; no ${TRAININGD}`);
if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium (tools/install-deps.sh build)`);

// --- the cluster ------------------------------------------------------------------------------
// The fixture's socket paths must stay short: a directory of its own directly under /tmp.
const clusterDir = fs.mkdtempSync('/tmp/slw');
let slurmConf = null;

function fixture(cmd) {
  return spawnSync(FIXTURE, [cmd, clusterDir], { encoding: 'utf8', timeout: 300000 });
}

function startCluster() {
  const r = fixture('start');
  if (r.status === 77) return { skip: (r.stderr || '').trim() };
  if (r.status !== 0) throw new Error(`the Slurm fixture did not start (${r.status ?? r.signal}):\n${r.stderr}`);
  const m = /^export SLURM_CONF=(\S+)$/m.exec(r.stdout);
  if (!m) throw new Error(`no SLURM_CONF from the fixture: ${JSON.stringify(r.stdout)}`);
  return { conf: m[1] };
}

function scontrol(...args) {
  const r = spawnSync('scontrol', args, { encoding: 'utf8', timeout: 60000, env: { ...process.env, SLURM_CONF: slurmConf } });
  if (r.status !== 0) throw new Error(`scontrol ${args.join(' ')}: exit ${r.status ?? r.signal}: ${r.stderr}`);
  return r.stdout;
}

// 20,000 steps run well beyond the test's stop; a summary every 100 steps.
function spec(name, maxSteps) {
  return mlpSpec(name, maxSteps, {
    checkpoint: { every_steps: 2000 },
    summary: { every_steps: 100 },
    step_counter: { every_steps: 100 },
    logging: { every_n_iter: 500 },
    evaluation: { every_steps: 5000 },
  });
}

// --- the browser ----------------------------------------------------------------------------
// The Slurm line's text once it is visible and pred(text) holds.
async function waitSlurmLine(page, pred, what, timeout = 30000) {
  const line = page.locator('.job-page p.job-slurm');
  const deadline = Date.now() + timeout;
  let last = null;
  while (Date.now() < deadline) {
    last = (await line.isVisible().catch(() => false)) ? (await line.textContent()).trim() : null;
    if (last !== null && pred(last)) return last;
    await page.waitForTimeout(100);
  }
  throw new Error(`timed out waiting for the Slurm line: ${what} (last: ${JSON.stringify(last)})`);
}

const badge = (page) => page.locator('.job-page .title-row .badge').first().getAttribute('data-state');

// --- the steps ---------------------------------------------------------------------------
let tmp;
let daemon;
let context;
let clusterUp = false; // started, or its start failed for a reason other than a skip
let jobId = null;

async function main() {
  clusterUp = true;
  const cluster = startCluster();
  if (cluster.skip) {
    clusterUp = false;
    return cluster;
  }
  slurmConf = cluster.conf;
  log(`Slurm cluster up: SLURM_CONF=${slurmConf}`);
  fs.mkdirSync(SHOTS, { recursive: true });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trainingd-slurm-web-'));

  // 1. The node drained: whatever is submitted stays PENDING in Slurm.
  scontrol('update', `nodename=${NODE}`, 'state=drain', 'reason=webtest');
  daemon = await Daemon.start(TRAININGD, path.join(tmp, 'data'), {
    config: { threads_per_job: 1, executor: 'slurm', slurm: { job_root: path.join(tmp, 'jobs'), poll_secs: 0.3 } },
    env: { SLURM_CONF: slurmConf },
  });
  log(`trainingd on ${daemon.url}, data in ${tmp}`);
  const made = await daemon.api('POST', '/jobs', spec('web-slurm', 20000));
  check(made.status === 201, `submit: ${made.status} ${JSON.stringify(made.body)}`);
  const id = made.body.id;
  jobId = id;
  log(`submitted ${id}`);

  context = await newContext(path.join(tmp, 'profile'));
  const page = await watchedPage(context);
  await page.goto(`${daemon.url}/#/jobs/${id}`);
  await page.locator('.job-page .title-row h1').filter({ hasText: 'web-slurm' }).waitFor({ timeout: 15000 });

  // 2. PENDING (with Slurm's reason) while the job is queued.
  const pending = await waitSlurmLine(page, (t) => /^Slurm job \d+: PENDING \(/.test(t), 'PENDING (reason)');
  const slurmId = Number(/^Slurm job (\d+):/.exec(pending)[1]);
  check(await page.locator('.job-page').getAttribute('data-state') === 'queued', 'the page says queued while PENDING');
  check(await badge(page) === 'queued', `the badge says queued while PENDING: ${await badge(page)}`);
  const apiJob = (await daemon.api('GET', `/jobs/${id}`)).body;
  check(apiJob.executor === 'slurm' && apiJob.slurm && apiJob.slurm.job_id === slurmId,
    `the line names the job's Slurm job id ${slurmId}: ${JSON.stringify(apiJob.slurm)}`);
  log(`queued: "${pending}"`);
  await page.screenshot({ path: path.join(SHOTS, 'slurm-pending.png'), fullPage: true });

  // 3. The node back: RUNNING on localhost, state running, attempt 1.
  scontrol('update', `nodename=${NODE}`, 'state=resume');
  const resumedAt = Date.now();
  await waitState(page, ['running'], 60000);
  const running = await waitSlurmLine(page, (t) => t === `Slurm job ${slurmId}: RUNNING on ${NODE}`, `RUNNING on ${NODE}`);
  check(await badge(page) === 'running', `the badge says running: ${await badge(page)}`);
  log(`running ${((Date.now() - resumedAt) / 1000).toFixed(1)} s after the node's resume: "${running}"`);
  const attempts = page.locator('section.workers');
  await attempts.locator('h2', { hasText: 'Attempts' }).waitFor({ timeout: 15000 });
  const attempt1 = attempts.locator('tr[data-attempt="1"]');
  await attempt1.waitFor({ timeout: 15000 });
  check(await attempts.locator('tbody tr').count() === 1, 'one attempt');
  log(`attempts card: "${(await attempt1.textContent()).trim()}"`);
  // Some progress on the page before the screenshot and the stop.
  await waitAttr(page, '.job-page', 'data-global-step', (v) => Number(v) >= 200, 'the first steps', 60000);
  await page.waitForTimeout(500);
  await page.screenshot({ path: path.join(SHOTS, 'slurm-running.png'), fullPage: true });

  // 4. Stop from the page: stopped, and Slurm's final state on the line.
  await page.locator('.actions button[data-action="stop"]').click();
  await waitState(page, ['stopping', 'stopped'], 10000);
  await waitState(page, ['stopped'], 60000);
  const stoppedAt = Number(await page.locator('.job-page').getAttribute('data-global-step'));
  check(stoppedAt > 0 && stoppedAt < 20000, `stopped mid-way (step ${stoppedAt})`);
  const final = await waitSlurmLine(page,
    (t) => t.startsWith(`Slurm job ${slurmId}: `) && !/: (PENDING|RUNNING)\b/.test(t), 'a final Slurm state');
  await attempts.locator('tr[data-attempt="1"]').filter({ hasNotText: 'running' }).waitFor({ timeout: 15000 });
  log(`stopped at step ${stoppedAt}: "${final}"; attempt 1: "${(await attempt1.textContent()).trim()}"`);
  await page.screenshot({ path: path.join(SHOTS, 'slurm-stopped.png'), fullPage: true });
  await context.close();
  context = null;
  return {};
}

let failed = false;
let skip = null;
try {
  skip = (await main()).skip ?? null;
} catch (e) {
  failed = true;
  console.error(`FAIL: ${e.stack || e}`);
  if (daemon && jobId) {
    const j = await daemon.api('GET', `/jobs/${jobId}`).catch((err) => ({ body: String(err) }));
    console.error(`the job on the daemon: ${JSON.stringify(j.body && j.body.state)}, slurm ${JSON.stringify(j.body && j.body.slurm)}`);
  }
  if (daemon) console.error(`daemon stderr:\n${daemon.stderr.split('\n').slice(-30).join('\n')}`);
} finally {
  if (context) await context.close().catch(() => {});
  if (daemon) await daemon.stop().catch(() => {});
  // (Idempotent, and it also cleans up after a failed start.)
  const r = clusterUp ? fixture('stop') : { status: 0 };
  if (r.status !== 0) {
    failed = true;
    console.error(`FAIL: the Slurm fixture's stop failed (${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  }
}
if (skip !== null) {
  fs.rmSync(clusterDir, { recursive: true, force: true });
  console.log(`skipped: ${skip}`);
  process.exit(77);
}
if (reportProblems()) failed = true;
// The cluster's directory goes either way, after the tails of its logs when the test failed; the
// daemon's data stays for a post-mortem when the test failed.
if (failed) {
  const logs = path.join(clusterDir, 'log');
  for (const f of fs.existsSync(logs) ? fs.readdirSync(logs) : []) {
    const text = fs.readFileSync(path.join(logs, f), 'utf8').trimEnd().split('\n').slice(-15).join('\n');
    if (text) console.error(`----- tail of ${f} -----\n${text}`);
  }
}
fs.rmSync(clusterDir, { recursive: true, force: true });
if (tmp && !failed) fs.rmSync(tmp, { recursive: true, force: true });
log(failed ? `FAILED${tmp ? `; data in ${tmp}` : ''}` : `PASSED; screenshots in ${SHOTS}`);
process.exit(failed ? 1 : 0);
