#!/usr/bin/env python3
"""The scheduler of a daemon shared by a team (issue 52, docs/benchmarks.md#team-scheduling).

  bench/scheduler_bench.py build/daemon/trainingd [--what preemption,fair,weights] [--mpi]

preemption  one slot; a low-priority job trains (min_run_secs 1); a priority-5 job is submitted
            and the time from its submit to its first step (a loss summary at step 1) is
            measured, with the parts: submit to the victim's preempted state (its final
            checkpoint included) and from there to the first step. --rounds times; --mpi makes
            the victim a 2-rank data-parallel job.
fair        two slots; alice submits --jobs short jobs, bob as many one second later; each
            user's share of the slot-seconds while both have work queued (from the first
            submit of bob's to the first start of either user's last job), from the jobs'
            started_at and finished_at.
weights     the same with fair_share weights alice 3, bob 1.
auth        the authorization's cost per request: GET /api/v1/jobs?limit=1 on one keep-alive
            connection, --requests each, against a daemon without a token (nothing checked) and
            one where a user's token is looked up and the route's rule applied, A B A B
            --rounds times; the difference of the medians per request.
audit       the audit's write rate under a storm of refusals: 4 client threads POST stop with a
            wrong token (401, each an audit row) for 5 s; rows committed per second, and that
            every refusal has its row.
"""
import http.client
import threading
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from trainingd_e2e import Daemon, expect, small_spec  # noqa: E402

ADMIN = "bench-admin-token-0123456789abcdef"


def auth(token):
    return {"Authorization": "Bearer " + token}


def short_spec(name, steps):
    return {"name": name, "model": "softmax", "max_steps": steps, "batch_size": 50, "seed": 1,
            "dataset": {"name": "fashion-mnist", "validation_size": 500,
                        "max_train_examples": 3000, "max_test_examples": 500},
            "optimizer": {"type": "adam", "learning_rate": 0.001},
            "hooks": {"checkpoint": {"every_steps": 1000}, "summary": {"every_steps": 50},
                      "logging": {"enabled": False}, "evaluation": {"every_steps": 100000},
                      "final_eval": {"enabled": False}}}


def wait_state(d, jid, states, timeout=600, token=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        _, job = d.call("GET", "/api/v1/jobs/" + jid, headers=auth(token) if token else None)
        if job["state"] in states:
            return job, time.time()
        time.sleep(0.01)
    raise AssertionError("job %s not in %s" % (jid, states))


def preemption(trainingd, tmp, rounds, mpi):
    data = os.path.join(tmp, "p")
    d = Daemon(trainingd, data, config={"max_concurrent_jobs": 1,
                                        "preemption": {"enabled": True, "min_run_secs": 1}})
    totals, stops, starts = [], [], []
    try:
        for r in range(rounds):
            low = small_spec("low-%d" % r, 1000000, checkpoint_every=500)
            if mpi:
                low["distributed"] = {"workers": 2}
            _, lj = d.call("POST", "/api/v1/jobs", low)
            d.events("/api/v1/jobs/%s/events" % lj["id"],
                     until=lambda e: e.get("event") == "scalar" and e["data"]["step"] >= 200)
            time.sleep(1)
            high = small_spec("high-%d" % r, 20, checkpoint_every=1000, priority=5)
            high["hooks"]["summary"] = {"every_steps": 1}
            t0 = time.time()
            _, hj = d.call("POST", "/api/v1/jobs", high)
            _, t_pre = wait_state(d, lj["id"], {"preempted"})
            job, _ = wait_state(d, hj["id"], {"completed", "failed"})
            expect(job["state"] == "completed", job)
            _, body = d.call("GET", "/api/v1/jobs/%s/scalars?tag=loss&max_points=100" % hj["id"])
            first = min(body["points"], key=lambda p: p["step"])
            totals.append(first["wall_time"] - t0)
            stops.append(t_pre - t0)
            starts.append(first["wall_time"] - t_pre)
            # The victim resumes; stop it and delete both for the next round.
            wait_state(d, lj["id"], {"running"})
            d.call("POST", "/api/v1/jobs/%s/stop" % lj["id"], {})
            wait_state(d, lj["id"], {"stopped"})
        med = statistics.median
        print("preemption (%s): submit of the high job to its first step: median %.2f s "
              "(min %.2f, max %.2f) over %d; of which submit to the victim preempted %.2f s, "
              "then to the first step %.2f s" % ("mpi, 2 ranks" if mpi else "local", med(totals),
                                                 min(totals), max(totals), rounds, med(stops),
                                                 med(starts)))
    finally:
        d.stop()


def fair(trainingd, tmp, jobs, weights, steps):
    data = os.path.join(tmp, "f-%s" % ("w" if weights else "e"))
    config = {"max_concurrent_jobs": 2, "threads_per_job": 1}
    if weights:
        config["fair_share"] = {"weights": {"alice": weights[0], "bob": weights[1]}}
    d = Daemon(trainingd, data, config=config, env={"TRAININGD_TOKEN": ADMIN})
    try:
        tokens = {}
        for name in ("alice", "bob"):
            d.call("POST", "/api/v1/users", {"name": name, "role": "user"}, headers=auth(ADMIN))
            _, t = d.call("POST", "/api/v1/users/%s/tokens" % name, {}, headers=auth(ADMIN))
            tokens[name] = t["token"]
        ids = {"alice": [], "bob": []}
        for i in range(jobs):
            _, j = d.call("POST", "/api/v1/jobs", short_spec("a%d" % i, steps),
                          headers=auth(tokens["alice"]))
            ids["alice"].append(j["id"])
        time.sleep(1)
        bob_start = time.time()
        for i in range(jobs):
            _, j = d.call("POST", "/api/v1/jobs", short_spec("b%d" % i, steps),
                          headers=auth(tokens["bob"]))
            ids["bob"].append(j["id"])
        done = {}
        for user, js in ids.items():
            for jid in js:
                done[jid], _ = wait_state(d, jid, {"completed", "failed"}, token=ADMIN)
        # Both have work queued until either user's last job starts.
        end = min(max(done[j]["started_at"] for j in js) for js in ids.values())
        share = {}
        for user, js in ids.items():
            share[user] = sum(max(0.0, min(done[j]["finished_at"], end) -
                                  max(done[j]["started_at"], bob_start)) for j in js)
        total = sum(share.values())
        run_secs = statistics.median(done[j]["finished_at"] - done[j]["started_at"]
                                     for js in ids.values() for j in js)
        print("fair share%s: %d jobs each of %d steps (median run %.2f s), 2 slots, window "
              "%.1f s: alice %.1f%%, bob %.1f%% of %.1f slot-seconds" %
              (" (weights %g:%g)" % weights if weights else "", jobs, steps, run_secs,
               end - bob_start, 100 * share["alice"] / total, 100 * share["bob"] / total, total))
    finally:
        d.stop()


def keepalive_rate(port, path, headers, n):
    """Seconds per request of n GETs of path on one keep-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = dict(headers, Host="127.0.0.1:%d" % port)
    t0 = time.perf_counter()
    for _ in range(n):
        conn.request("GET", path, headers=h)
        r = conn.getresponse()
        r.read()
        expect(r.status == 200, r.status)
    dt = time.perf_counter() - t0
    conn.close()
    return dt / n


def auth(trainingd, tmp, rounds, n):
    open_d = Daemon(trainingd, os.path.join(tmp, "open"))
    team_d = Daemon(trainingd, os.path.join(tmp, "team"), env={"TRAININGD_TOKEN": ADMIN})
    try:
        team_d.call("POST", "/api/v1/users", {"name": "alice", "role": "user"},
                    headers={"Authorization": "Bearer " + ADMIN})
        _, t = team_d.call("POST", "/api/v1/users/alice/tokens", {},
                           headers={"Authorization": "Bearer " + ADMIN})
        user = {"Authorization": "Bearer " + t["token"]}
        path = "/api/v1/jobs?limit=1"
        keepalive_rate(open_d.port, path, {}, 200)  # warm up both
        keepalive_rate(team_d.port, path, user, 200)
        a, b = [], []
        for _ in range(rounds):
            a.append(keepalive_rate(open_d.port, path, {}, n))
            b.append(keepalive_rate(team_d.port, path, user, n))
        med = statistics.median
        print("authorization: GET %s, %d requests a round, %d rounds: no token %.1f us, a "
              "user's token %.1f us per request (medians); difference %.1f us [round by round "
              "%s]" % (path, n, rounds, 1e6 * med(a), 1e6 * med(b), 1e6 * (med(b) - med(a)),
                       ", ".join("%.1f" % (1e6 * (y - x)) for x, y in zip(a, b))))
    finally:
        open_d.stop()
        team_d.stop()


def audit(trainingd, tmp, secs=5.0, threads=4):
    d = Daemon(trainingd, os.path.join(tmp, "audit"), env={"TRAININGD_TOKEN": ADMIN})
    admin = {"Authorization": "Bearer " + ADMIN}
    try:
        _, before = d.call("GET", "/api/v1/audit?limit=1", headers=admin)
        first = before["entries"][0]["seq"] if before["entries"] else 0
        sent = [0] * threads
        stop_at = time.time() + secs

        def storm(i):
            conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
            h = {"Host": "127.0.0.1:%d" % d.port, "Authorization": "Bearer tdk_wrong",
                 "Content-Type": "application/json", "Content-Length": "2"}
            while time.time() < stop_at:
                conn.request("POST", "/api/v1/jobs/jnothere/stop", body=b"{}", headers=h)
                r = conn.getresponse()
                r.read()
                expect(r.status == 401, r.status)
                sent[i] += 1
            conn.close()
        t0 = time.time()
        ts = [threading.Thread(target=storm, args=(i,)) for i in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        # Every refusal's row committed (the writer may lag a moment behind the answers).
        deadline = time.time() + 30
        while True:
            _, after = d.call("GET", "/api/v1/audit?limit=1", headers=admin)
            rows = after["entries"][0]["seq"] - first  # reads (this GET) are not audited
            if rows >= sum(sent) or time.time() > deadline:
                break
            time.sleep(0.05)
        done = time.time()
        print("audit: %d refusals (401) from %d threads in %.1f s, %d rows committed %.2f s "
              "after the storm: %.0f rows/s" % (sum(sent), threads, secs, rows,
                                                done - t0 - secs, rows / (done - t0)))
    finally:
        d.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trainingd")
    ap.add_argument("--what", default="preemption,fair,weights")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--mpi", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for what in a.what.split(","):
            if what == "preemption":
                preemption(a.trainingd, tmp, a.rounds, a.mpi)
            elif what == "fair":
                fair(a.trainingd, tmp, a.jobs, None, a.steps)
            elif what == "auth":
                auth(a.trainingd, tmp, a.rounds * 2 + 1, a.requests)
            elif what == "audit":
                audit(a.trainingd, tmp)
            elif what == "weights":
                fair(a.trainingd, tmp, a.jobs, (3, 1), a.steps)
            else:
                ap.error("--what: unknown " + what)


if __name__ == "__main__":
    main()
