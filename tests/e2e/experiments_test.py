"""Experiments over real HTTP (docs/experiments.md): an ASHA search of small softmax jobs runs to
its end in seconds; its trials are jobs of /api/v1/jobs; the same search again, with a kill -9
of the daemon in the middle and a restart, decides exactly the same with no trial lost or
started twice; stop, resume and delete; bad specs are refused naming the field.

    experiments_test.py TRAININGD
"""
import os
import signal
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainingd_e2e import SANITIZED, Daemon, expect, small_search  # noqa: E402

TRAININGD = sys.argv[1]
# The searches' trials: fewer under TSan (a trial's job is several times slower there), where
# the point is the threads of the HTTP server, the supervisor and the jobs, not how many.
TRIALS = 4 if SANITIZED else 8


def search(name="search", max_trials=8, **searcher):
    return small_search(name, max_trials, **searcher)


def get(d, path):
    status, body = d.call("GET", path)
    expect(status == 200, (path, status, body))
    return body


def wait_experiment(d, exp_id, states, timeout=240):
    deadline = time.time() + timeout
    e = None
    while time.time() < deadline:
        e = get(d, "/api/v1/experiments/" + exp_id)
        if e["state"] in states:
            return e
        time.sleep(0.1)
    raise AssertionError("experiment %s not in %s: %r" % (exp_id, states, e))


def trials(d, exp_id, query="sort=index"):
    return get(d, "/api/v1/experiments/%s/trials?limit=1000&%s" % (exp_id, query))["trials"]


def outcome(d, exp_id):
    """What the search decided: each trial's hyperparameters, seed, end and results."""
    return [(t["index"], t["hyperparameters"], t["seed"], t["state"], t["rung_metrics"])
            for t in trials(d, exp_id)]


def decisions(data_dir, exp_id, kind):
    db = sqlite3.connect(os.path.join(data_dir, "trainingd.db"))
    try:
        return db.execute("SELECT trial_index FROM experiment_decisions "
                          "WHERE experiment_id = ? AND kind = ?", (exp_id, kind)).fetchall()
    finally:
        db.close()


def submit(d, spec):
    status, body, r = d.request("POST", "/api/v1/experiments", spec)
    expect(status == 201, (status, body))
    expect(r.getheader("Location") == "/api/v1/experiments/" + body["id"], r.getheaders())
    return body


def main():
    root = tempfile.mkdtemp(prefix="trainingd-experiments-")
    data = os.path.join(root, "var")
    d = Daemon(TRAININGD, data)
    try:
        # --- a search to its end ---
        status, plan = d.call("POST", "/api/v1/experiments/preview", search())
        expect(status == 200, (status, plan))
        expect([r["steps"] for r in plan["rungs"]] == [10, 20, 40], plan)
        expect(plan["trials"] == 8 and len(plan["first_trials"]) == 5, plan)
        t0 = time.time()
        exp = submit(d, search(max_trials=TRIALS))
        done = wait_experiment(d, exp["id"], {"completed"})
        took = time.time() - t0
        expect(done["trials_started"] == TRIALS and done["best"] is not None, done)
        expect(done["plan"]["rungs"][0]["trials"] == TRIALS, done["plan"])
        first = outcome(d, exp["id"])
        all_results = sum(r["trials"] for r in done["plan"]["rungs"])
        # Trials are jobs, marked as the experiment's.
        listed = trials(d, exp["id"], "sort=metric&order=desc")
        expect(listed[0]["index"] == done["best"]["trial"], (listed[0], done["best"]))
        for t in listed:
            job = d.job(t["job_id"])
            expect(job["experiment"]["id"] == exp["id"] and job["experiment"]["trial"] == t["index"],
                   job.get("experiment"))
            expect(job["global_step"] == t["target_steps"], (job, t))
            # Each result with when it was recorded: in order, within the trial's life.
            at = t["rung_recorded_at"]
            expect(len(at) == len(t["rung_metrics"]) and at == sorted(at), t)
            expect(t["created_at"] <= at[0] and at[-1] <= done["finished_at"], (t, done))
        status, body = d.call("GET", "/api/v1/experiments/%s/trials?sort=loss" % exp["id"])
        expect(status == 400 and body["error"]["field"] == "sort" and
               "(optimizer.learning_rate)" in body["error"]["message"], (status, body))
        kept = [t for t in listed if t["checkpoints_kept"]]
        expect(len(kept) == 1 and kept[0]["index"] == done["best"]["trial"], kept)
        # The trials' jobs are the experiment's: not deleted on their own.
        status, body = d.call("DELETE", "/api/v1/jobs/" + listed[0]["job_id"])
        expect(status == 409 and exp["id"] in body["error"]["message"], (status, body))
        print("a search of %d trials: %.1f s" % (TRIALS, took))

        # --- the event stream tells of experiments ---
        seen = d.events("/api/v1/events", last_event_id=0,
                        until=lambda e: e.get("event") == "experiment", timeout=30)
        expect(any(e.get("event") == "experiment" and e["data"]["id"] == exp["id"] for e in seen),
               [e.get("event") for e in seen][-10:])

        # --- bad specs: 400 naming the field ---
        for mutate, field in [
            (lambda s: s["space"].update({"optimizer.lr": {"type": "log", "min": 1e-4,
                                                            "max": 1e-2}}), "space"),
            (lambda s: s["searcher"].update({"max_trials": 0}), "searcher.max_trials"),
            (lambda s: s["searcher"].update({"metric": "test/accuracy",
                                             "name": "random"}), None),
            (lambda s: s["base_job"].update({"batch_size": -1}), "base_job.batch_size"),
        ]:
            spec = search()
            mutate(spec)
            status, body = d.call("POST", "/api/v1/experiments", spec)
            if field is None:  # test/accuracy is recorded at the end: accepted
                expect(status == 201, (status, body))
                d.call("POST", "/api/v1/experiments/%s/stop" % body["id"], {})
                continue
            expect(status == 400 and body["error"].get("field", "").startswith(field),
                   (field, status, body))

        # --- the same search, killed with -9 midway and restarted, decides the same ---
        again = submit(d, search(max_trials=TRIALS))
        deadline = time.time() + 120
        while time.time() < deadline:
            e = get(d, "/api/v1/experiments/" + again["id"])
            if e["plan"]["rungs"][0]["trials"] >= TRIALS // 2:
                break
            time.sleep(0.02)
        d.kill()
        # The kill landed mid-search: the store the next daemon starts from has it running, with
        # rung results still to come (else this part would test nothing).
        db = sqlite3.connect(os.path.join(data, "trainingd.db"))
        try:
            (state,) = db.execute("SELECT state FROM experiments WHERE id = ?",
                                  (again["id"],)).fetchone()
            (results,) = db.execute("SELECT COUNT(*) FROM rung_results WHERE experiment_id = ?",
                                    (again["id"],)).fetchone()
        finally:
            db.close()
        expect(state == "running" and results < all_results,
               "killed mid-search: state %s, %d rung results of %d" % (state, results, all_results))
        d = Daemon(TRAININGD, data)
        wait_experiment(d, again["id"], {"completed"})
        expect(outcome(d, again["id"]) == first,
               "after kill -9:\n%r\nstraight:\n%r" % (outcome(d, again["id"]), first))
        # The results recorded before the kill keep their times (rung_results rows).
        for t in trials(d, again["id"]):
            expect(len(t["rung_recorded_at"]) == len(t["rung_metrics"]), t)
        starts = decisions(data, again["id"], "start")
        expect(sorted(i for (i,) in starts) == list(range(TRIALS)), starts)

        # --- stop, resume, delete ---
        third_trials = TRIALS - 2
        third = submit(d, search(max_trials=third_trials))
        status, body = d.call("POST", "/api/v1/experiments/%s/stop" % third["id"], {})
        expect(status == 202, (status, body))
        stopped = wait_experiment(d, third["id"], {"stopped"})
        status, body = d.call("POST", "/api/v1/experiments/%s/resume" % third["id"], {})
        expect(status == 202, (status, body))
        resumed = wait_experiment(d, third["id"], {"completed"})
        expect(resumed["trials_started"] == third_trials >= stopped["trials_started"],
               (stopped, resumed))
        expect(sorted(i for (i,) in decisions(data, third["id"], "start")) ==
               list(range(third_trials)),
               "each trial started once")
        status, body = d.call("DELETE", "/api/v1/experiments/" + third["id"])
        expect(status == 204, (status, body))
        status, _ = d.call("GET", "/api/v1/experiments/" + third["id"])
        expect(status == 404, status)
        code, log = d.stop()
        expect(code == 0, (code, log[-2000:]))
    finally:
        if d.proc.poll() is None:
            d.proc.send_signal(signal.SIGKILL)
    print("ok")


if __name__ == "__main__":
    main()
