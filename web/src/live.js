// Server-sent events (docs/http-api.md#server-sent-events) that outlive the daemon restarting.
//
// Read with fetch and a stream reader rather than the browser's EventSource, which cannot send
// an Authorization header and so would need the token in its URL: the token stays in the header
// (api.js streamRequest). The stream is parsed as EventSource parses it (event, data, id lines;
// a blank line ends an event). When it ends, drops, or the daemon answers with an error instead
// of a stream (401, 503 while shutting down, ...), we reopen it with backoff, sending the last id
// we saw as Last-Event-ID, so nothing is missed. A drop that lasts reports the daemon 'down' (the
// banner); every reopening after an error calls onReconnect so the page refetches what a
// restarted daemon may not replay.
import { api, connectivity, streamRequest } from './api.js';

const DOWN_AFTER_MS = 1500;

// Calls onEvent({type, data, id}) for each complete event in the text given to push(); keeps the
// partial line and event between calls. `id` is the last id seen (it persists across events).
export function sseParser(onEvent) {
  let buffer = '';
  let type = '';
  let data = [];
  let lastId = '';
  function line(l) {
    if (l === '') {
      if (data.length) onEvent({ type: type || 'message', data: data.join('\n'), id: lastId });
      type = '';
      data = [];
      return;
    }
    if (l.startsWith(':')) return;
    const colon = l.indexOf(':');
    const field = colon < 0 ? l : l.slice(0, colon);
    let value = colon < 0 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') type = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' && !value.includes('\0')) lastId = value;
  }
  return {
    push(text) {
      buffer += text;
      const lines = buffer.split(/\r\n|\r|\n/);
      buffer = lines.pop();
      for (const l of lines) line(l);
    },
  };
}

export class EventStream {
  // path: '/events' or '/jobs/<id>/events'; handlers: {event kind: fn(data, id)}.
  constructor(path, handlers, { onReconnect } = {}) {
    this.path = path;
    this.handlers = handlers;
    this.onReconnect = onReconnect;
    this.lastId = '';
    this.failures = 0;
    this.hadError = false;
    this.closed = false;
    this.live = false;
    this.abort = null;
    this.reopenTimer = 0;
    this.downTimer = 0;
    this.open();
  }

  open() {
    if (this.closed) return;
    const abort = new AbortController();
    this.abort = abort;
    const { url, headers } = streamRequest(this.path, this.lastId);
    (async () => {
      const r = await fetch(url, { headers, signal: abort.signal, cache: 'no-store' });
      if (!r.ok || !r.body) {
        r.body?.cancel();
        return;
      }
      this.opened();
      const parser = sseParser((e) => this.dispatch(e));
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        parser.push(value);
      }
    })().catch(() => {}).finally(() => {
      this.live = false;
      if (!this.closed && this.abort === abort) this.failed();
    });
  }

  opened() {
    this.live = true;
    clearTimeout(this.downTimer);
    this.downTimer = 0;
    this.failures = 0;
    connectivity.report('up');
    if (this.hadError) {
      this.hadError = false;
      if (this.onReconnect) this.onReconnect();
    }
  }

  dispatch(e) {
    if (this.closed) return;
    if (e.id) this.lastId = e.id;
    const fn = this.handlers[e.type];
    if (!fn) return;
    let data;
    try {
      data = JSON.parse(e.data);
    } catch {
      return;
    }
    fn(data, e.id);
  }

  // The stream ended, dropped or was refused: report 'down' if it lasts, reopen later.
  failed() {
    this.hadError = true;
    if (!this.downTimer) {
      this.downTimer = setTimeout(() => {
        this.downTimer = 0;
        if (!this.closed && !this.live) connectivity.report('down');
      }, DOWN_AFTER_MS);
    }
    this.reopenLater();
  }

  reopenLater() {
    clearTimeout(this.reopenTimer);
    const delay = Math.min(15000, 500 * 2 ** this.failures++);
    this.reopenTimer = setTimeout(async () => {
      if (this.closed) return;
      // Why did it close? A 401 asks for the token (api() does); an unreachable or failing
      // daemon is retried later; anything else (the job was deleted: 404) stops here.
      try {
        await api(this.path.startsWith('/jobs/') ? this.path.replace(/\/events$/, '') : '/jobs?limit=1');
      } catch (e) {
        if (e.status === 0 || e.status === 401 || e.status >= 500) {
          this.reopenLater();
          return;
        }
        if (e.status === 404) return;
      }
      this.open();
    }, delay);
  }

  close() {
    this.closed = true;
    clearTimeout(this.reopenTimer);
    clearTimeout(this.downTimer);
    if (this.abort) this.abort.abort();
  }
}

// A page's refetch of its list as the events ask for it: now() fetches once at a time, and a call
// meanwhile fetches again after it (the list may have changed since the one in flight was
// answered); soon(ms) turns a burst of events into one fetch; cancel() drops a pending soon().
export function coalescedRefresh(fetchOnce) {
  let inflight = null;
  let again = false;
  let timer = 0;
  function now() {
    if (inflight) {
      again = true;
      return inflight;
    }
    inflight = (async () => {
      try {
        await fetchOnce();
      } finally {
        inflight = null;
        if (again) {
          again = false;
          now();
        }
      }
    })();
    return inflight;
  }
  return {
    now,
    soon(ms) {
      if (timer) return;
      timer = setTimeout(() => {
        timer = 0;
        now();
      }, ms);
    },
    cancel() {
      clearTimeout(timer);
      timer = 0;
    },
  };
}
