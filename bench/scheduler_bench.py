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
"""
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


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trainingd")
    ap.add_argument("--what", default="preemption,fair,weights")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--mpi", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for what in a.what.split(","):
            if what == "preemption":
                preemption(a.trainingd, tmp, a.rounds, a.mpi)
            elif what == "fair":
                fair(a.trainingd, tmp, a.jobs, None, a.steps)
            elif what == "weights":
                fair(a.trainingd, tmp, a.jobs, (3, 1), a.steps)
            else:
                ap.error("--what: unknown " + what)


if __name__ == "__main__":
    main()
