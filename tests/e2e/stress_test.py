#!/usr/bin/python3
"""Storms of stop, resume and delete on one running job, over real HTTP against `trainingd serve`.

  stress_test.py TRAININGD

16 client threads send POST stop, POST resume, DELETE, GET of the job and GET of the job list to
the same job, while a second job waits its turn and two readers follow the job's event stream
and the job list's. Checked:
- every answer is 200, 202, 204, 404 or 409 as the route documents (never a 500), and a 202
  names a state its call may return
- the job's state events follow the state machine, and the states each client thread saw, in
  its order, are a subsequence of them; scalar events grow within each run
- a stop, then SIGTERM while the job is stopping: the database says stopped, and so does the
  restarted daemon, with the final checkpoint at its global step and monotonic series
- the job list never holds a job twice, and the bystander completes whole
- with deletes in the storm: exactly one 204, every request sent after it is a 404, the list
  stream ends the job with "deleted", its directory and row are gone, and a restart agrees
"""
import http.client
import os
import random
import socket
import sqlite3
import sys
import tempfile
import threading
import time

from trainingd_e2e import Daemon, expect, monotonic_series, read_events

TRAININGD = sys.argv[1]
THREADS = 16
API = "/api/v1/jobs"

# The state machine (docs/http-api.md, job_manager.h): queued -> running -> completed | failed |
# stopped, stopping in between; a queued job stops at once; resume queues an ended job again;
# a daemon shutting down leaves a running job queued.
LEGAL = {
    "queued": {"running", "stopped"},
    "running": {"stopping", "completed", "failed", "stopped", "queued"},
    "stopping": {"stopped", "completed", "failed"},
    "completed": {"queued"},
    "failed": {"queued"},
    "stopped": {"queued"},
}
# What each call may answer (docs/http-api.md), and the states a success may return.
ANSWERS = {"stop": {202, 404, 409}, "resume": {202, 404, 409}, "delete": {204, 404, 409},
           "get": {200, 404}, "list": {200}}
RETURNED = {"stop": {"stopping", "stopped"}, "resume": {"queued"}}


def spec(name, max_steps):
    return {"name": name, "model": "softmax", "max_steps": max_steps, "batch_size": 50, "seed": 5,
            "dataset": {"name": "fashion-mnist", "validation_size": 500,
                        "max_train_examples": 3000, "max_test_examples": 500},
            "hooks": {"checkpoint": {"every_steps": 100}, "summary": {"every_steps": 10}}}


class EventReader(threading.Thread):
    """Follows one event stream into self.events until close(). A daemon drops a client that
    falls behind; then the reader comes back with Last-Event-ID, and a gap in the ids fails."""

    def __init__(self, port, path):
        super().__init__(daemon=True)
        self.port, self.path = port, path
        self.events, self.error, self.closed, self.sock = [], None, False, None
        self.ready = threading.Event()
        self.start()
        expect(self.ready.wait(30), "%s: no answer" % path)

    def run(self):
        last = None
        while not self.closed:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=None)
            headers = {"Accept": "text/event-stream"}
            if last is not None:
                headers["Last-Event-ID"] = str(last)
            try:
                conn.request("GET", self.path, headers=headers)
                self.sock = conn.sock  # the response takes it over from conn
                r = conn.getresponse()
                if r.status != 200:
                    self.error = "%s: %d" % (self.path, r.status)
                    return
                self.ready.set()  # subscribed: the daemon answers after it subscribes
                for e in read_events(r):
                    if e is None:
                        continue
                    if last is not None and e["id"] != last + 1:
                        self.error = "%s: id %d after %d" % (self.path, e["id"], last)
                        return
                    last = e["id"]
                    self.events.append(e)
            except OSError:
                if not self.closed:
                    time.sleep(0.05)
            finally:
                conn.close()

    def close(self):
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except (AttributeError, OSError):
            pass
        self.join(timeout=10)
        expect(not self.is_alive(), "%s: the reader did not stop" % self.path)
        expect(self.error is None, self.error)

    def states(self, job_id=None):
        return [e["data"]["state"] for e in list(self.events)
                if e.get("event") in ("state", "job") and
                (job_id is None or e["data"]["id"] == job_id)]


def storm(d, jid, bystander, deletes, done, limit):
    """THREADS threads call stop, resume, get, list and (with deletes) delete on jid at random,
    each call up to 2 ms after the previous one, until done() holds, a delete succeeds, or
    `limit` seconds pass. Returns each thread's calls: (what, start, end, status, state)."""
    calls = [[] for _ in range(THREADS)]
    stop = threading.Event()
    errors = []

    def client(t):
        try:
            calls_of(t)
        except Exception as e:  # noqa: BLE001 -- raised again by storm()
            errors.append(e)
            stop.set()

    def calls_of(t):
        rng = random.Random(1000 + t)
        while not stop.is_set():
            p = rng.randrange(100)
            what = ("stop" if p < 30 else "resume" if p < 60 else
                    "delete" if deletes and p < 70 else "list" if p < 75 else "get")
            start = time.monotonic()
            if what in ("stop", "resume"):
                status, body = d.call("POST", "%s/%s/%s" % (API, jid, what), {})
            elif what == "delete":
                status, body = d.call("DELETE", "%s/%s" % (API, jid))
            elif what == "get":
                status, body = d.call("GET", "%s/%s" % (API, jid))
            else:
                status, body = d.call("GET", API + "?limit=1000")
            state = None
            if status in (200, 202) and what != "list":
                state = body["state"]
            elif status == 200:
                ids = [j["id"] for j in body["jobs"]]
                expect(len(ids) == len(set(ids)), "a job listed twice: %r" % ids)
                expect(bystander in ids and (deletes or jid in ids), "a job not listed: %r" % ids)
                state = next((j["state"] for j in body["jobs"] if j["id"] == jid), None)
            calls[t].append((what, start, time.monotonic(), status, state))
            if what == "delete" and status == 204:
                stop.set()
            time.sleep(rng.uniform(0, 0.002))

    threads = [threading.Thread(target=client, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + limit
    while not stop.is_set() and not done() and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return calls


def check_answers(calls):
    for thread in calls:
        for what, _, _, status, state in thread:
            expect(status in ANSWERS[what], "%s answered %d" % (what, status))
            if status == 202:
                expect(state in RETURNED[what], "%s answered 202 with %s" % (what, state))


def check_history(history, calls):
    """Legal transitions, and each thread's states a subsequence of the stream's."""
    expect(history, "no state events")
    for a, b in zip(history, history[1:]):
        expect(b in LEGAL[a], "illegal transition %s -> %s in %r" % (a, b, history[-20:]))
    for t, thread in enumerate(calls):
        at = 0
        for what, _, _, _, state in thread:
            if state is None:
                continue
            while at < len(history) and history[at] != state:
                at += 1
            expect(at < len(history), "thread %d saw %s out of the stream's order" % (t, state))


def check_scalar_events(events):
    """Within each run (between "running" events), a tag's steps only grow."""
    last = {}
    for e in events:
        if e.get("event") == "state" and e["data"]["state"] == "running":
            last = {}
        if e.get("event") == "scalar":
            tag, step = e["data"]["tag"], e["data"]["step"]
            expect(step > last.get(tag, -1), "%s at step %d after %d" % (tag, step,
                                                                          last.get(tag, -1)))
            last[tag] = step


def check_series(d, jid, global_step):
    """Steps strictly increasing (monotonic_series), wall times too: no point left from a redone
    run."""
    monotonic_series(d, jid, "loss")
    status, body = d.call("GET", "%s/%s/scalars?tag=loss&max_points=100000" % (API, jid))
    points = body["points"]
    expect(points and points[-1]["step"] <= global_step, "loss beyond the global step")
    walls = [p["wall_time"] for p in points]
    expect(walls == sorted(walls), "loss wall times not monotonic in step")


def db_row(data, jid):
    with sqlite3.connect("file:%s?mode=ro" % os.path.join(data, "trainingd.db"), uri=True) as db:
        return db.execute("SELECT state, global_step FROM jobs WHERE id = ?", (jid,)).fetchone()


def job_ids(d):
    status, body = d.call("GET", API + "?limit=1000")
    ids = [j["id"] for j in body["jobs"]]
    expect(len(ids) == len(set(ids)), "a job listed twice: %r" % ids)
    return set(ids)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        d = Daemon(TRAININGD, data)
        status, job = d.call("POST", API, spec("target", 1000000))
        expect(status == 201, (status, job))
        jid = job["id"]
        events = EventReader(d.port, "%s/%s/events" % (API, jid))
        listing = EventReader(d.port, "/api/v1/events")
        d.wait_state(jid, {"running"})
        status, job = d.call("POST", API, spec("bystander", 200))
        expect(status == 201, (status, job))
        bystander = job["id"]

        # Stop, resume, get and list, until the job was stopped while running five times.
        calls = storm(d, jid, bystander, False,
                      lambda: events.states().count("stopping") >= 5, 30)
        stops = events.states().count("stopping")
        expect(stops >= 3, "only %d stops of the running job" % stops)
        check_answers(calls)
        check_history(events.states(), calls)
        check_history(listing.states(jid), [])
        check_scalar_events(list(events.events))
        expect("failed" not in events.states(), "the job failed")
        job = d.wait_state(bystander, {"completed", "failed"})
        expect(job["state"] == "completed" and job["global_step"] == 200, job)
        expect(job_ids(d) == {jid, bystander}, "jobs lost or added")

        # A stop, and SIGTERM while the job is stopping: the stop holds.
        if d.wait_state(jid, {"running", "stopped"})["state"] == "stopped":
            expect(d.call("POST", "%s/%s/resume" % (API, jid), {})[0] == 202, "resume")
            d.wait_state(jid, {"running"})
        step = d.wait_state(jid, {"running"})["global_step"]
        while d.call("GET", "%s/%s" % (API, jid))[1]["global_step"] <= step:
            time.sleep(0.02)  # training: the stop finds a session to stop
        status, job = d.call("POST", "%s/%s/stop" % (API, jid), {})
        expect(status == 202 and job["state"] == "stopping", (status, job))
        events.close()
        listing.close()
        code, out = d.stop()
        expect(code == 0, "clean exit on SIGTERM: %d\n%s" % (code, out))
        state, global_step = db_row(data, jid)
        expect(state == "stopped", "the database says %s" % state)

        d = Daemon(TRAININGD, data)
        try:
            job = d.call("GET", "%s/%s" % (API, jid))[1]
            expect(job["state"] == "stopped" and job["global_step"] == global_step,
                   "restarted: %r vs %s at %d" % (job, state, global_step))
            status, ck = d.call("GET", "%s/%s/checkpoints" % (API, jid))
            expect(ck["checkpoints"][-1]["global_step"] == global_step, "final checkpoint")
            check_series(d, jid, global_step)
            expect(len(monotonic_series(d, bystander, "loss")) == 20, "bystander's series")
            expect(job_ids(d) == {jid, bystander}, "jobs lost or added across the restart")

            # Running again, and deletes in the storm: one 204, then 404s only.
            events = EventReader(d.port, "%s/%s/events" % (API, jid))
            listing = EventReader(d.port, "/api/v1/events")
            expect(d.call("POST", "%s/%s/resume" % (API, jid), {})[0] == 202, "resume")
            d.wait_state(jid, {"running"})
            # Until a delete succeeds: one finds the job between a stop's end and the next
            # resume. Under TSan beside the other tests that took over 30 s once (a stop and a
            # resume each run a step, a checkpoint and a restore there), so up to 120.
            calls = storm(d, jid, bystander, True, lambda: False, 120)
            check_answers(calls)
            check_history(events.states(), calls)
            deletes = [c for thread in calls for c in thread if c[0] == "delete" and c[3] == 204]
            expect(len(deletes) == 1, "%d deletes succeeded" % len(deletes))
            after = [c for thread in calls for c in thread if c[1] > deletes[0][2]]
            expect(all(c[3] == 404 or c[0] == "list" for c in after),
                   "answers after the delete: %r" % sorted({(c[0], c[3]) for c in after}))
            time.sleep(1)  # time for anything left of the job to show itself
            events.close()
            listing.close()
            expect(listing.states(jid)[-1:] == ["deleted"], listing.states(jid)[-5:])
            expect(d.call("GET", "%s/%s" % (API, jid))[0] == 404, "gone")
            expect(not os.path.exists(os.path.join(data, "jobs", jid)), "its directory is gone")
            expect(job_ids(d) == {bystander}, "only the bystander is left")
        finally:
            code, out = d.stop()
        expect(code == 0, "clean exit on SIGTERM: %d\n%s" % (code, out))
        expect(db_row(data, jid) is None, "its row is gone")

        d = Daemon(TRAININGD, data)
        try:
            expect(job_ids(d) == {bystander}, "only the bystander after a restart")
            expect(d.call("GET", "%s/%s" % (API, bystander))[1]["state"] == "completed",
                   "the bystander is completed")
        finally:
            d.stop()
        print("%d stops of the running job in the storm, stop + SIGTERM, restart, delete: ok" %
              stops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
