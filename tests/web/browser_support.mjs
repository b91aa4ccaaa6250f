// What the dashboard's browser tests (tests/web/*_test.mjs) share: the log, Debian's Chromium
// driven by playwright-core (from web/node_modules; it never downloads a browser), the watch on
// its pages, a wait on an attribute, the job spec, `trainingd serve` on 127.0.0.1 and the test's
// end.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.resolve(here, '../../web/package.json'));
const { chromium } = require('playwright-core');

export const CHROMIUM = '/usr/bin/chromium';
const t0 = Date.now();

export function log(...a) {
  console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s]`, ...a);
}

export function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

// --- the daemon ---------------------------------------------------------------------------
// `trainingd serve` on 127.0.0.1 (a free port unless `port` says one) with `config` as its serve
// config (written next to the data directory) and `env` added to the environment.
export class Daemon {
  static async start(trainingd, dataDir, { config, port = 0, env = {} }) {
    const d = new Daemon();
    const configPath = `${dataDir}.json`;
    fs.writeFileSync(configPath, JSON.stringify(config));
    d.proc = spawn(trainingd, ['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir, '--config', configPath],
      { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    d.stderr = '';
    d.proc.stderr.on('data', (b) => { d.stderr += b; });
    d.exited = new Promise((resolve) => d.proc.on('exit', (code, sig) => resolve({ code, sig })));
    const line = await new Promise((resolve, reject) => {
      const rl = readline.createInterface({ input: d.proc.stdout });
      rl.once('line', resolve);
      d.exited.then(() => reject(new Error(`trainingd exited: ${d.stderr}`)));
    });
    const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\//.exec(line);
    if (!m) throw new Error(`no listening line: ${line}`);
    d.port = Number(m[1]);
    d.url = `http://127.0.0.1:${d.port}`;
    return d;
  }

  async api(method, p, body, token) {
    const headers = { 'Content-Type': 'application/json' };
    if (token) headers.Authorization = `Bearer ${token}`;
    const r = await fetch(`${this.url}/api/v1${p}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
    return { status: r.status, body: r.status === 204 ? null : await r.json() };
  }

  async stop() {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 60000);
    await this.exited;
    clearTimeout(timer);
  }
}

// A small job on the real data: an MLP on 5,000 Fashion-MNIST examples (about 1,000 steps/s on
// one thread), `hooks` as the test wants them, and a final evaluation on the test split.
export function mlpSpec(name, maxSteps, hooks) {
  return {
    name,
    dataset: { name: 'fashion-mnist', validation_size: 1000, max_train_examples: 5000, max_test_examples: 1000 },
    model: 'mlp',
    optimizer: { type: 'adam', learning_rate: 0.001 },
    batch_size: 50,
    max_steps: maxSteps,
    seed: 7,
    hooks: { ...hooks, final_eval: { split: 'test' } },
  };
}

// --- the browser ----------------------------------------------------------------------------
const problems = []; // console errors, page errors, HTTP 5xx answers, foreign requests
export const cspViolations = []; // reported by the pages; problems unless a step provoked them
let allowed = []; // console errors the current step expects: [RegExp]

// A fresh browser on the profile directory `profile`, which reports every CSP violation in its
// pages and refuses (as a problem) every request to a host other than 127.0.0.1.
export async function newContext(profile) {
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    colorScheme: 'light',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  await context.exposeBinding('__trainingdCspViolation', (_source, v) => {
    cspViolations.push(`CSP violation: ${v.directive} blocked ${v.blocked} (${v.source}:${v.line})`);
  });
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__trainingdCspViolation({
        directive: e.effectiveDirective, blocked: e.blockedURI, source: e.sourceFile, line: e.lineNumber,
      });
    });
  });
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.hostname !== '127.0.0.1') {
      problems.push(`request left 127.0.0.1: ${route.request().url()}`);
      return route.abort();
    }
    return route.continue();
  });
  return context;
}

// The context's first page, watched: its console errors (but those expected), page errors and
// HTTP 5xx answers are problems.
export async function watchedPage(context) {
  const page = context.pages()[0] || (await context.newPage());
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const text = `${m.text()} (${m.location().url || ''})`;
    if (allowed.some((re) => re.test(text))) return;
    problems.push(`console error: ${text}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}\n${e.stack}`));
  page.on('response', (r) => {
    if (r.status() >= 500) problems.push(`HTTP ${r.status()} for ${r.url()}`);
  });
  return page;
}

// fn() with the console errors that match one of `patterns` expected.
export async function expecting(patterns, fn) {
  allowed = patterns;
  try {
    return await fn();
  } finally {
    allowed = [];
  }
}

// Prints the problems in the pages, CSP violations included; true if there were any.
export function reportProblems() {
  const all = [...problems, ...cspViolations];
  if (all.length) console.error(`FAIL: ${all.length} problem(s) in the page:\n  ${all.join('\n  ')}`);
  return all.length > 0;
}

// The attribute `name` of the first `sel` once pred(value) holds.
export async function waitAttr(page, sel, name, pred, what, timeout = 60000) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    // A short timeout: where `sel` matches nothing yet (or no longer), the next poll asks again
    // rather than the default 30 s wait for it.
    last = await page.locator(sel).first().getAttribute(name, { timeout: 100 }).catch(() => null);
    if (last !== null && pred(last)) return last;
    await page.waitForTimeout(100);
  }
  throw new Error(`timed out waiting for ${what} (${sel} ${name} = ${last})`);
}

export const waitState = (page, states, timeout) =>
  waitAttr(page, '.job-page', 'data-state', (s) => states.includes(s), `state ${states}`, timeout);

// --- the test's end -----------------------------------------------------------------------
// Runs a test's body and ends the process with its verdict. A failure prints its stack and the
// daemon's last stderr. The browser context and the daemon, which the body makes, are read through
// `resources()` ({daemon, context}) and closed either way. Problems the pages reported fail the
// test too. The temporary directory `tmp` is removed only after a pass, so a failure leaves its
// data to read.
export async function runTest(body, { resources, tmp, shots }) {
  let failed = false;
  try {
    await body();
  } catch (e) {
    failed = true;
    console.error(`FAIL: ${e.stack || e}`);
    const { daemon } = resources();
    if (daemon) console.error(`daemon stderr:\n${daemon.stderr.split('\n').slice(-30).join('\n')}`);
  } finally {
    const { daemon, context } = resources();
    if (context) await context.close().catch(() => {});
    if (daemon) await daemon.stop().catch(() => {});
  }
  if (reportProblems()) failed = true;
  if (!failed) fs.rmSync(tmp, { recursive: true, force: true });
  log(failed ? 'FAILED' : `PASSED; screenshots in ${shots}`);
  process.exit(failed ? 1 : 0);
}
