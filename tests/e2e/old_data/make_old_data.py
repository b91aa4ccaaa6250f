#!/usr/bin/python3
"""Makes one of the data directories in tests/e2e/old_data/: what a released trainingd leaves
behind, for tests/e2e/old_data_test.py to open with the current one.

    make_old_data.py TRAININGD OUT.tar.gz

TRAININGD is the `trainingd` of the release, built from its commit in a scratch worktree outside
this repository, only that target (the exact commands are in tests/e2e/old_data/README.md). The
script runs it as `trainingd serve` on an empty data directory and:

1. uploads a small CSV table ("table": 24 features, 3 classes, 300 rows; 20% test);
2. runs job "done" (a 24-64-3 MLP, batch 128, 300 steps) to completion;
3. runs job "stopped" and stops it (POST .../stop) once it has written a checkpoint: it ends
   stopped with a final checkpoint;
4. runs job "interrupted", queues job "queued" behind it, and kills the daemon with SIGKILL once
   "interrupted" has written a checkpoint: "interrupted" is left running and "queued" queued, as
   a crash or a power cut leaves them;
5. checks that each job is where it should be (a fast machine can finish a job before the stop or
   the kill lands: then it says so and exits 1, and running it again usually does it), and packs
   the data directory as it is (database, WAL, jobs/, datasets/) into OUT.tar.gz, with a
   manifest.json of what the test checks: every job's state, step, checkpoints and series.

It uses this repository's tests/e2e/trainingd_e2e.py, whose HTTP calls are those of every
release since datasets could be uploaded.
"""
import json
import os
import signal
import sqlite3
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from trainingd_e2e import Daemon, expect  # noqa: E402

# Long enough for the stop and the kill to land mid-run on a fast machine, short enough for the
# test to resume both in a few seconds.
LONG_STEPS = 4000
CHECKPOINT_EVERY = 200


def table_csv():
    """300 rows of 24 features whose class (0-2) decides which third of the features is raised;
    deterministic."""
    rows = ["f%d" % i for i in range(24)] + ["label"]
    lines = [",".join(rows)]
    for r in range(300):
        label = r % 3
        feats = []
        for i in range(24):
            base = ((r * 37 + i * 11) % 101) / 101.0
            feats.append("%.2f" % (base + (1.0 if i // 8 == label else 0.0)))
        lines.append(",".join(feats) + ",c%d" % label)
    return ("\n".join(lines) + "\n").encode()


def spec(name, max_steps):
    """At batch 128 neither dense layer takes the narrow-layer path that 0228dad changed (a
    layer of at most 16 units whose inputs and outputs over the batch are within 16 times its
    weights), so every release since db1df17 computes the same bits for it."""
    return {"name": name, "max_steps": max_steps, "batch_size": 128, "seed": 7,
            "model": {"layers": [{"type": "flatten"},
                                 {"type": "dense", "units": 64, "activation": "relu"},
                                 {"type": "dense", "units": 3}]},
            "dataset": {"name": "table", "validation_size": 40},
            "optimizer": {"type": "adam", "learning_rate": 0.001},
            "hooks": {"checkpoint": {"every_steps": CHECKPOINT_EVERY, "max_to_keep": 2},
                      "summary": {"every_steps": 20}, "logging": {"every_n_iter": 100},
                      "evaluation": {"every_steps": 500}, "final_eval": {"split": "test"}}}


def submit(d, name, max_steps):
    status, job = d.call("POST", "/api/v1/jobs", spec(name, max_steps))
    expect(status == 201, (status, job))
    return job["id"]


def wait_checkpoint(d, job_id, timeout=120):
    """Until the job has a checkpoint after the one of step 0 that every run writes first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        status, cps = d.call("GET", "/api/v1/jobs/%s/checkpoints" % job_id)
        if status == 200 and any(c["global_step"] > 0 for c in cps["checkpoints"]):
            return
        time.sleep(0.005)
    raise AssertionError("no checkpoint of %s after %ds" % (job_id, timeout))


def manifest(data_dir):
    """What the data directory holds, read from its database (WAL included) and jobs/."""
    con = sqlite3.connect("file:%s?mode=ro" % os.path.join(data_dir, "trainingd.db"), uri=True)
    jobs = {}
    for jid, name, state, step, max_steps in con.execute(
            "SELECT id, name, state, global_step, max_steps FROM jobs"):
        series = {}
        for tag, s, v in con.execute(
                "SELECT s.tag, p.step, p.value FROM scalars p JOIN series s ON s.id = p.series_id "
                "WHERE s.job_id = ? ORDER BY s.tag, p.step", (jid,)):
            series.setdefault(tag, []).append([s, v])
        job_dir = os.path.join(data_dir, "jobs", jid)
        files = os.listdir(job_dir) if os.path.isdir(job_dir) else []  # a queued job has none
        ckpts = sorted(int(f.split("-")[1]) for f in files
                       if f.startswith("model.ckpt-") and f.split("-")[1].isdigit())
        jobs[name] = {"id": jid, "state": state, "global_step": step, "max_steps": max_steps,
                      "checkpoints": ckpts, "series": series}
    version = con.execute("PRAGMA user_version").fetchone()[0]
    con.close()
    return {"schema_version": version, "jobs": jobs}


def main():
    trainingd, out = sys.argv[1], os.path.abspath(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        d = Daemon(trainingd, data, "--data-root", os.path.join(tmp, "no-datasets"))
        try:
            status, ds = d.call("POST", "/api/v1/datasets?name=table&format=csv&label_column=label"
                                "&test_fraction=0.2", table_csv(),
                                headers={"Content-Type": "application/octet-stream"})
            expect(status == 201, (status, ds))
            done = submit(d, "done", 300)
            expect(d.wait_state(done, {"completed", "failed"})["state"] == "completed", done)

            stopped = submit(d, "stopped", LONG_STEPS)
            wait_checkpoint(d, stopped)
            status, body = d.call("POST", "/api/v1/jobs/%s/stop" % stopped, {})
            expect(status == 202, (status, body))
            job = d.wait_state(stopped, {"stopped", "completed", "failed"})
            expect(job["state"] == "stopped",
                   "job 'stopped' ended %s before the stop landed: run again" % job["state"])

            interrupted = submit(d, "interrupted", LONG_STEPS)
            submit(d, "queued", 300)
            wait_checkpoint(d, interrupted)
        except BaseException:
            d.kill()
            raise
        d.kill()
        m = manifest(data)
        states = {name: j["state"] for name, j in m["jobs"].items()}
        expect(states == {"done": "completed", "stopped": "stopped", "interrupted": "running",
                          "queued": "queued"}, "not as planned, run again: %r" % states)
        for name in ("stopped", "interrupted"):
            j = m["jobs"][name]
            expect(j["checkpoints"] and j["global_step"] < j["max_steps"], (name, j["global_step"]))
        with open(os.path.join(tmp, "manifest.json"), "w") as f:
            json.dump(m, f)
        with tarfile.open(out, "w:gz") as tar:
            tar.add(data, arcname="data")
            tar.add(os.path.join(tmp, "manifest.json"), arcname="manifest.json")
    print("%s: %d bytes, schema version %d, jobs %s" % (out, os.path.getsize(out),
                                                       m["schema_version"], states))


if __name__ == "__main__":
    main()
