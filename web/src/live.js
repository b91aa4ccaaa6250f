// Server-sent events (docs/http-api.md#server-sent-events) that outlive the daemon restarting.
//
// The browser's EventSource reconnects by itself after a dropped connection and sends
// Last-Event-ID, so nothing is missed. It gives up for good when the daemon answers with an
// error instead of a stream (401, 503 while shutting down, ...): then we reopen it ourselves with
// backoff, passing the last id we saw as ?last_event_id=. A drop that lasts reports the daemon
// 'down' (the banner); every reopening after an error calls onReconnect so the page refetches
// what a restarted daemon may not replay.
import { api, connectivity, streamUrl } from './api.js';

const DOWN_AFTER_MS = 1500;

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
    this.es = null;
    this.reopenTimer = 0;
    this.downTimer = 0;
    this.open();
  }

  open() {
    if (this.closed) return;
    const es = new EventSource(streamUrl(this.path, this.lastId));
    this.es = es;
    es.onopen = () => {
      clearTimeout(this.downTimer);
      this.downTimer = 0;
      this.failures = 0;
      connectivity.report('up');
      if (this.hadError) {
        this.hadError = false;
        if (this.onReconnect) this.onReconnect();
      }
    };
    for (const [kind, fn] of Object.entries(this.handlers)) {
      es.addEventListener(kind, (e) => {
        if (e.lastEventId) this.lastId = e.lastEventId;
        let data;
        try {
          data = JSON.parse(e.data);
        } catch {
          return;
        }
        fn(data, e.lastEventId);
      });
    }
    es.onerror = () => {
      if (this.closed) return;
      this.hadError = true;
      if (!this.downTimer) {
        this.downTimer = setTimeout(() => {
          this.downTimer = 0;
          if (!this.closed && this.es && this.es.readyState !== EventSource.OPEN) connectivity.report('down');
        }, DOWN_AFTER_MS);
      }
      if (es.readyState === EventSource.CLOSED) {
        es.close();
        this.reopenLater();
      }
    };
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
    if (this.es) this.es.close();
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
