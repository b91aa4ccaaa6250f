#!/usr/bin/python3
"""End-to-end tests of `trainingd serve` over real HTTP on a port the OS chooses.

  daemon_test.py TRAININGD

- submit a job, follow its server-sent events, stop it (final checkpoint), resume it from that
  checkpoint's step, let it complete; every series is monotonic in step; Last-Event-ID resumes
  the event stream without loss or duplicates; delete it (409 while running, 204 after, then 404)
- two jobs train at the same time with --max-concurrent-jobs 2
- kill -9 of the daemon mid-training: on restart the job is re-queued, resumes from its latest
  checkpoint and completes with the same final step; every series stays monotonic
- a handful of bad requests over the wire get JSON 4xx answers and the daemon keeps serving
"""
import os
import re
import subprocess
import sys
import tempfile
import time

from trainingd_e2e import Daemon, expect, monotonic_series, small_spec

TRAININGD = sys.argv[1]


def stop_resume_delete(tmp):
    d = Daemon(TRAININGD, os.path.join(tmp, "a"))
    try:
        status, job = d.call("POST", "/api/v1/jobs", small_spec("stop-resume", 3000))
        expect(status == 201, (status, job))
        jid = job["id"]
        # Follow the job until a scalar at step >= 600 (past the checkpoint at 500).
        evs = d.events("/api/v1/jobs/%s/events" % jid,
                       until=lambda e: e.get("event") == "scalar" and e["data"]["step"] >= 600)
        ids = [e["id"] for e in evs]
        expect(ids == sorted(ids) and len(set(ids)) == len(ids), "event ids increasing")
        expect(any(e.get("event") == "state" and e["data"]["state"] == "running" for e in evs),
               "a running state event")
        # Last-Event-ID, while it runs: resume the stream after the 3rd event seen; the next id
        # is the 4th's.
        replay = d.events("/api/v1/jobs/%s/events" % jid, last_event_id=ids[2],
                          until=lambda e: e["id"] >= ids[5])
        expect([e["id"] for e in replay] == ids[3:6], "replay after Last-Event-ID: %r vs %r" %
               ([e["id"] for e in replay], ids[3:6]))
        status, body = d.call("DELETE", "/api/v1/jobs/" + jid)
        expect(status == 409 and "error" in body, ("delete while running", status, body))
        status, body = d.call("POST", "/api/v1/jobs/%s/stop" % jid, {})
        expect(status == 202, (status, body))
        job = d.wait_state(jid, {"stopped"})
        stopped_step = job["global_step"]
        status, ck = d.call("GET", "/api/v1/jobs/%s/checkpoints" % jid)
        expect(ck["checkpoints"][-1]["global_step"] == stopped_step,
               "final checkpoint at the stop: %r vs %d" % (ck, stopped_step))
        # A finished job keeps no replay history: a client reconnecting from the start gets only
        # how it ended, its final state event.
        final = d.events("/api/v1/jobs/%s/events" % jid, last_event_id=0,
                         until=lambda e: e.get("event") == "state", timeout=10)
        expect(len(final) == 1 and final[0]["data"]["state"] == "stopped" and
               final[0]["id"] > ids[-1], "only the final state replayed: %r" % final)
        status, body = d.call("POST", "/api/v1/jobs/%s/resume" % jid, {})
        expect(status == 202, (status, body))
        job = d.wait_state(jid, {"completed", "failed"})
        expect(job["state"] == "completed" and job["global_step"] == 3000, job)
        status, logs = d.call("GET", "/api/v1/jobs/%s/logs?limit=10000" % jid)
        expect(any("Restoring parameters from" in l["text"] and
                   "model.ckpt-%d" % stopped_step in l["text"] for l in logs["lines"]),
               "resumed from the stop's checkpoint")
        steps = monotonic_series(d, jid, "loss")
        # Summaries every 50 steps from the first run of each session: the last one is in the
        # final 50 steps.
        expect(2950 < steps[-1] <= 3000, "last loss summary near the end: %r" % steps[-5:])
        expect("test/accuracy" in job["latest_scalars"], job["latest_scalars"])
        status, _ = d.call("DELETE", "/api/v1/jobs/" + jid)
        expect(status == 204, status)
        status, body = d.call("GET", "/api/v1/jobs/" + jid)
        expect(status == 404 and body["error"]["code"], (status, body))
        expect(not os.path.exists(os.path.join(tmp, "a", "jobs", jid)), "job files removed")
        print("stop at %d, resume, complete, delete: ok" % stopped_step)
    finally:
        code, out = d.stop()
        expect(code == 0, "clean exit on SIGTERM: %d\n%s" % (code, out))


def two_concurrent(tmp):
    d = Daemon(TRAININGD, os.path.join(tmp, "b"), "--max-concurrent-jobs", "2")
    try:
        a = d.call("POST", "/api/v1/jobs", small_spec("first", 1000))[1]["id"]
        b = d.call("POST", "/api/v1/jobs", small_spec("second", 1000))[1]["id"]
        deadline, both = time.time() + 120, False
        while time.time() < deadline and not both:
            states = [d.call("GET", "/api/v1/jobs/" + j)[1]["state"] for j in (a, b)]
            both = states == ["running", "running"]
            time.sleep(0.05)
        expect(both, "both jobs running at once")
        for j in (a, b):
            job = d.wait_state(j, {"completed", "failed"})
            expect(job["state"] == "completed" and job["global_step"] == 1000, job)
        status, page = d.call("GET", "/api/v1/jobs?state=completed")
        expect(len(page["jobs"]) == 2, page)
        print("two concurrent jobs: ok")
    finally:
        d.stop()


def kill9_and_restart(tmp):
    data = os.path.join(tmp, "c")
    d = Daemon(TRAININGD, data)
    jid = d.call("POST", "/api/v1/jobs", small_spec("crash", 2500))[1]["id"]
    d.events("/api/v1/jobs/%s/events" % jid,
             until=lambda e: e.get("event") == "scalar" and e["data"]["step"] >= 1100)
    d.kill()
    d2 = Daemon(TRAININGD, data)
    try:
        job = d2.wait_state(jid, {"completed", "failed"})
        expect(job["state"] == "completed" and job["global_step"] == 2500, job)
        for tag in ("loss", "accuracy", "validation/loss"):
            monotonic_series(d2, jid, tag)
        status, logs = d2.call("GET", "/api/v1/jobs/%s/logs?limit=10000" % jid)
        restored = [l["text"] for l in logs["lines"] if "Restoring parameters from" in l["text"]]
        expect(restored and re.search(r"model\.ckpt-(1000|1500)$", restored[-1]),
               "resumed from the latest checkpoint: %r" % restored)
        print("kill -9 at step >= 1100, restart, %s, completed at 2500: ok" % restored[-1])
    finally:
        d2.stop()


def bad_requests(tmp):
    d = Daemon(TRAININGD, os.path.join(tmp, "d"))
    try:
        cases = [
            ("POST", "/api/v1/jobs", "{not json", {}, 400),
            ("POST", "/api/v1/jobs", {"name": "x", "model": "vgg", "max_steps": 1}, {}, 400),
            ("POST", "/api/v1/jobs", {"name": "x", "model": "cnn", "batch_size": -5}, {}, 400),
            ("POST", "/api/v1/jobs", {"name": "x", "model": "cnn", "max_steps": 1,
                                      "dataset": "../../etc"}, {}, 400),
            ("POST", "/api/v1/jobs", "x" * (2 << 20), {}, 413),
            ("POST", "/api/v1/jobs", "{}", {"Content-Type": "text/plain"}, 415),
            ("POST", "/api/v1/jobs/nope/stop", "", {"Content-Type": "text/plain"}, 415),
            ("GET", "/api/v1/jobs", None, {"Host": "evil.example"}, 421),
            ("GET", "/api/v1/jobs/nope", None, {}, 404),
            ("GET", "/api/v1/jobs/..%2f..%2fetc", None, {}, 400),
            ("PUT", "/api/v1/jobs", None, {}, 405),
            ("GET", "/../../etc/passwd", None, {}, 400),
            ("GET", "/api/v1/jobs?limit=-1", None, {}, 400),
        ]
        for method, path, body, headers, want in cases:
            status, payload = d.call(method, path, body, headers)
            expect(status == want, "%s %s: %d, wanted %d: %r" % (method, path, status, want,
                                                                   payload))
            if status != 405 or payload:
                expect(isinstance(payload, dict) and payload["error"]["message"],
                       "JSON error body for %s %s: %r" % (method, path, payload))
        status, body = d.call("POST", "/api/v1/jobs", {"name": "x", "model": "mlp",
                                                          "batch_size": "big", "max_steps": 1})
        expect(body["error"]["field"] == "batch_size", body)
        expect(d.call("GET", "/healthz")[0] == 200, "still serving")
        # A second daemon on the same data directory is refused (it would run the same jobs).
        second = subprocess.run([TRAININGD, "serve", "--listen", "127.0.0.1:0", "--data-dir",
                                 os.path.join(tmp, "d")], capture_output=True, text=True,
                                timeout=30)
        expect(second.returncode == 1 and "another trainingd (pid %d)" % d.proc.pid in
               second.stderr, "second daemon refused: %r" % second.stderr)
        print("bad requests over the wire, a second daemon on the same data: ok")
    finally:
        d.stop()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        bad_requests(tmp)
        stop_resume_delete(tmp)
        two_concurrent(tmp)
        kill9_and_restart(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
