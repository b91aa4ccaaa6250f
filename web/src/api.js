// The daemon's REST API (docs/http-api.md): JSON in and out, the bearer token, errors as
// ApiError {status, code, message, field}, and whether the daemon is reachable at all.
import { h, dialog } from './dom.js';

const TOKEN_KEY = 'trainingd.token';
const BASE = '/api/v1';

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status; // 0: the daemon could not be reached
    this.code = code;
    this.field = field || '';
  }
}

// Reachability, for the banner: 'up' or 'down', with listeners. Fetches and event streams
// report here; the banner in app.js listens.
const listeners = new Set();
let reachable = 'up';
export const connectivity = {
  get state() { return reachable; },
  report(state) {
    if (state === reachable) return;
    reachable = state;
    for (const fn of listeners) fn(state);
  },
  listen(fn) { listeners.add(fn); return () => listeners.delete(fn); },
};

export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

// Who this tab's token is (GET /api/v1/whoami: {name, role}), for the buttons that user may use;
// the daemon decides anyway (403). null until loadPrincipal resolves, or when it failed.
let who = null;
export function principal() {
  return who;
}
export async function loadPrincipal() {
  try {
    who = await api('/whoami');
  } catch {
    who = null;
  }
  return who;
}

// Whether the principal may stop, resume or delete `item` (a job or an experiment, with its
// owner; docs/operations.md#team-use): an admin anything, a user its own, a viewer nothing. Not
// known yet: true, and the daemon's answer says.
export function mayChange(item) {
  if (!who) return true;
  if (who.role === 'admin') return true;
  if (who.role === 'viewer') return false;
  return !item.owner || item.owner === who.name;
}

// Why mayChange said no, for a disabled button's title.
export function whyNot(item) {
  if (!who) return '';
  if (who.role === 'viewer') return `${who.name} is a viewer: it reads, it changes nothing`;
  return `Only ${item.owner} or an admin may change it`;
}

// Asks for the token once, however many requests are waiting for it. `wrong`: the last one was
// refused; `switching`: the user asked to sign in as someone else (Cancel keeps the token held).
let pendingPrompt = null;
export function askToken(wrong, switching = false) {
  if (!pendingPrompt) {
    const input = h('input', {
      type: 'password', name: 'token', autocomplete: 'current-password', required: true,
      'aria-label': 'API token', placeholder: 'API token', class: 'input', id: 'token-input',
    });
    pendingPrompt = dialog({
      title: switching ? 'Sign in as another user' : 'API token needed',
      body: [
        h('p', {}, wrong ? 'That token was not accepted. ' : '',
          switching ? 'The API token of the user to sign in as. ' : 'This daemon requires its API token. ',
          'It is kept in this tab only (sessionStorage).'),
        // For password managers (and Chromium's form check): what the token is for.
        h('input', { type: 'text', name: 'username', autocomplete: 'username', value: 'trainingd', hidden: true, 'aria-hidden': 'true' }),
        input,
      ],
      buttons: [{ label: 'Cancel', value: 'cancel' }, { label: 'Use token', value: 'ok', kind: 'primary' }],
    }).then((v) => {
      pendingPrompt = null;
      if (v !== 'ok' || !input.value.trim()) return false;
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      who = null; // another token may be another user: ask again
      loadPrincipal();
      return true;
    });
  }
  return pendingPrompt;
}

// Sign out: the token is forgotten (this tab keeps none) and the page starts again, so nothing
// it showed or streams goes on with the old token. A daemon that requires a token asks for one.
export function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  who = null;
  location.reload();
}

// Switch user: asks for another token; once one is given, the page starts again as its user
// (the views offer what that user may do). Cancel keeps the current one. A wrong token is found
// by the first request after the reload, which asks again.
export async function switchUser() {
  if (await askToken(false, true)) location.reload();
}

// fetch + JSON on /api/v1. opts: {method, body (object or string), signal}. Resolves to the
// parsed body (null for 204); rejects with ApiError (request's). A 401 asks for the token and
// retries.
export async function api(path, opts = {}) {
  const res = await request(BASE + path, opts);
  if (res.status === 204) return null;
  try {
    return await res.json();
  } catch {
    return null;
  }
}

export const enc = encodeURIComponent;

// One request to the daemon, under both error bodies: the REST API's {"error": {code, message,
// field}} and the inference protocol's {"error": "<field>: ..."} (/v2/...), whose field is taken
// from the message's prefix. path is absolute ('/v2/models/x', '/api/v1/jobs/x/model'); opts:
// {method, body (an object, sent as JSON, or a string), signal}. Resolves to the Response
// (res.ok; api() reads its JSON, a download its bytes); rejects with ApiError. A 401 asks for the
// token and retries.
export async function request(path, opts = {}) {
  for (let attempt = 0; ; attempt++) {
    const headers = { Accept: 'application/json' };
    const t = token();
    if (t) headers.Authorization = `Bearer ${t}`;
    let body;
    if (opts.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    }
    let res;
    try {
      res = await fetch(path, { method: opts.method || 'GET', headers, body, signal: opts.signal, cache: 'no-store' });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      connectivity.report('down');
      throw new ApiError(0, 'unreachable', 'The daemon cannot be reached.');
    }
    connectivity.report('up');
    if (res.status === 401 && attempt < 5) {
      // A token entered meanwhile (for another request) is tried before asking again.
      if (token() !== t || (await askToken(Boolean(t)))) continue;
    }
    if (res.ok) return res;
    let data = null;
    try {
      data = await res.json();
    } catch {
      data = null;
    }
    const e = data && data.error;
    const message = typeof e === 'string' ? e : (e && e.message) || `HTTP ${res.status}`;
    const named = /^([A-Za-z_][\w.[\]]*): /.exec(message);
    const field = e && typeof e === 'object' ? e.field : named ? named[1] : '';
    throw new ApiError(res.status, (e && e.code) || `http_${res.status}`, message, field);
  }
}

// An upload: POST /datasets?<query> with the file as an application/octet-stream body, or with a
// CSV's testFile as a multipart/form-data body of parts train and test, through XMLHttpRequest
// (fetch reports no upload progress). onProgress(sent, total) follows the bytes sent; signal
// aborts. Resolves to the Dataset; rejects with ApiError like api(), and a 401 asks for the token
// and sends the files again.
export async function uploadDataset(file, query, { testFile, onProgress, signal } = {}) {
  let body = file;
  if (testFile) {
    body = new FormData();
    body.append('train', file);
    body.append('test', testFile);
  }
  for (let attempt = 0; ; attempt++) {
    const t = token();
    const { status, data } = await new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open('POST', `${BASE}/datasets?${query}`);
      xhr.setRequestHeader('Accept', 'application/json');
      // The file's own type (text/csv, ...) is not what the daemon takes. A FormData body sets
      // its own multipart type, with the boundary.
      if (!testFile) xhr.setRequestHeader('Content-Type', 'application/octet-stream');
      if (t) xhr.setRequestHeader('Authorization', `Bearer ${t}`);
      xhr.responseType = 'json';
      if (onProgress) xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size + (testFile ? testFile.size : 0));
      xhr.onload = () => resolve({ status: xhr.status, data: xhr.response });
      xhr.onerror = () => resolve({ status: 0, data: null });
      xhr.onabort = () => reject(new DOMException('The upload was cancelled.', 'AbortError'));
      if (signal) {
        if (signal.aborted) return reject(new DOMException('The upload was cancelled.', 'AbortError'));
        signal.addEventListener('abort', () => xhr.abort(), { once: true });
      }
      xhr.send(body);
    });
    if (status === 0) {
      // The daemon may also have answered early and closed before the body was all sent.
      connectivity.report((await fetch('/healthz', { cache: 'no-store' }).then((r) => r.ok, () => false)) ? 'up' : 'down');
      throw new ApiError(0, 'unreachable', connectivity.state === 'up'
        ? 'The connection closed before the daemon answered.' : 'The daemon cannot be reached.');
    }
    connectivity.report('up');
    if (status === 401 && attempt < 5) {
      if (token() !== t || (await askToken(Boolean(t)))) continue;
    }
    if (status >= 200 && status < 300) return data;
    const e = (data && data.error) || {};
    throw new ApiError(status, e.code || `http_${status}`, e.message || `HTTP ${status}`, e.field);
  }
}

// Every job (following next_cursor), newest first.
export async function listJobs(signal) {
  const jobs = [];
  let cursor = '';
  for (let page = 0; page < 20; page++) {
    const r = await api(`/jobs?limit=1000${cursor ? `&cursor=${enc(cursor)}` : ''}`, { signal });
    jobs.push(...r.jobs);
    if (!r.next_cursor) break;
    cursor = r.next_cursor;
  }
  return jobs;
}

export function scalars(id, tag, { from, to, maxPoints, signal } = {}) {
  let q = `tag=${enc(tag)}&max_points=${Math.max(1, Math.min(100000, Math.round(maxPoints || 1000)))}`;
  if (Number.isFinite(from)) q += `&from_step=${Math.max(0, Math.floor(from))}`;
  if (Number.isFinite(to)) q += `&to_step=${Math.max(0, Math.ceil(to))}`;
  return api(`/jobs/${enc(id)}/scalars?${q}`, { signal }).then((r) => r.points);
}

// Stop and resume are POSTs with a JSON body ({} when there is nothing to say): the daemon
// refuses any POST that is not application/json, so no cross-site form can reach them.
export function jobAction(id, action, body) {
  if (action === 'delete') return api(`/jobs/${enc(id)}`, { method: 'DELETE' });
  return api(`/jobs/${enc(id)}/${action}`, { method: 'POST', body: body || {} });
}

// An event stream's request: its URL and headers. The token goes in the Authorization header,
// as for every other call, never in the URL (where logs, histories and Referer would keep it):
// live.js reads the stream with fetch, not EventSource, which cannot send headers.
export function streamRequest(path, lastEventId) {
  const headers = { Accept: 'text/event-stream' };
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  if (lastEventId) headers['Last-Event-ID'] = String(lastEventId);
  return { url: BASE + path, headers };
}

// Every experiment (following next_cursor), newest first; summaries without their specs.
export async function listExperiments(signal) {
  const out = [];
  let cursor = '';
  for (let page = 0; page < 20; page++) {
    const r = await api(`/experiments?limit=1000${cursor ? `&cursor=${enc(cursor)}` : ''}`, { signal });
    out.push(...r.experiments);
    if (!r.next_cursor) break;
    cursor = r.next_cursor;
  }
  return out;
}

// Every trial of an experiment, by index (pages of 1,000, the most the daemon gives at once).
export async function allTrials(id, signal) {
  const out = [];
  for (let offset = 0; offset < 1e6; offset += 1000) {
    const r = await api(`/experiments/${enc(id)}/trials?sort=index&limit=1000&offset=${offset}`, { signal });
    out.push(...r.trials);
    if (out.length >= r.total || !r.trials.length) break;
  }
  return out;
}

export function experimentAction(id, action) {
  if (action === 'delete') return api(`/experiments/${enc(id)}`, { method: 'DELETE' });
  return api(`/experiments/${enc(id)}/${action}`, { method: 'POST', body: {} });
}
