#!/usr/bin/python3
"""Data-parallel jobs under `trainingd serve` over real HTTP: the MpiExecutor's supervision
(docs/distributed.md#supervision).

- a 2-rank job runs to completion, its scalars on the REST API and its log;
- an ASHA search whose trials are 2-rank jobs (a promotion resumes mpirun from the checkpoint);
- a 2-rank job on an uploaded npz (the ranks read it from the datasets directory the daemon
  passes them): completed above chance, its spec recording the upload's sha256, the dataset not
  deletable while the job is queued or running;
- `kill -9` of a non-chief rank, and separately of the chief, mid-training: the job completes at
  max_steps on attempt 2, and its loss series is strictly increasing in step;
- SIGSTOP of a rank: the stall watchdog kills the attempt and the job completes on attempt 2;
- max_restarts exhausted: failed, with a reason naming the attempts;
- a NaN loss (every rank's failure): failed once, with the chief's reason, not retried;
- a stop over HTTP: every rank stops after the same step, with a final checkpoint, and resumes;
- `kill -9` of the daemon during an MPI job: no rank survives, and the job resumes and completes
  after a restart.

    distributed_daemon_test.py TRAININGD
"""
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trainingd_e2e import (Daemon, colour_npz, expect, expect_trained_on_upload,  # noqa: E402
                          monotonic_series, small_spec)

TRAININGD = sys.argv[1]


def ranks_of(job_dir):
    """PIDs of the trainingd-mpi processes of the job in `job_dir` (their argv names it)."""
    out = subprocess.run(["pgrep", "-f", "trainingd-mpi run %s/spec.json" % job_dir],
                         stdout=subprocess.PIPE, text=True).stdout.split()
    return [int(p) for p in out]


def rank_pid(job_dir, rank):
    """The PID of rank `rank` (OMPI_COMM_WORLD_RANK in its environment)."""
    for pid in ranks_of(job_dir):
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if b"OMPI_COMM_WORLD_RANK=%d" % rank in env:
            return pid
    return None


def wait_step(d, job_id, step, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = d.job(job_id)
        if job["global_step"] >= step:
            return job
        expect(job["state"] in ("queued", "running"), "job ended early: %s" % job)
        time.sleep(0.2)
    raise AssertionError("job %s did not reach step %d" % (job_id, step))


def kill_and_time_next_step(d, job_id, pid):
    """Kills `pid` (a rank) and returns the seconds until the restarted job has trained a step:
    the new attempt appears in the job's JSON with the checkpoint it starts from, and then a loss
    is recorded for a step after that checkpoint and not after the step the job had reached (a
    new attempt redoes those steps)."""
    reached = d.job(job_id)["global_step"]
    killed_at = time.time()
    os.kill(pid, signal.SIGKILL)
    deadline = killed_at + 120
    from_step = None
    while time.time() < deadline:
        if from_step is None:
            attempts = d.job(job_id)["distributed"]["attempts"]
            if len(attempts) >= 2:
                from_step = attempts[-1]["from_step"]
        else:
            # (The job's global_step comes from its summaries, so the checkpoint the attempt
            # starts from may be past it.)
            status, body = d.call("GET", "/api/v1/jobs/%s/scalars?tag=loss&from_step=%d&to_step=%d"
                                  % (job_id, from_step + 1, max(reached, from_step + 1)))
            expect(status == 200, (status, body))
            if body["points"]:
                return time.time() - killed_at
        time.sleep(0.02)
    raise AssertionError("job %s did not train again within 120 s" % job_id)


def log_text(d, job_id):
    status, body = d.call("GET", "/api/v1/jobs/%s/logs?limit=10000" % job_id)
    expect(status == 200, (status, body))
    return "\n".join(l["text"] if isinstance(l, dict) else str(l) for l in body["lines"])


# Long enough that a kill, a SIGSTOP or a stop lands mid-run (the jobs reach step 300 or 500
# first, seen by a poll every 0.2 s, then go on at about 1,300 steps a second on two idle cores:
# at least 1.5 s for an action taken at once), short enough to finish fast (5000 took ~10 s more
# of the test's ~40 s).
MAX_STEPS = 2500


def spec(name, max_steps=MAX_STEPS, **distributed):
    s = small_spec(name, max_steps, checkpoint_every=200)
    s["hooks"]["summary"] = {"every_steps": 20}
    s["distributed"] = dict({"workers": 2, "max_restarts": 2, "stall_timeout_secs": 5},
                            **distributed)
    return s


def submit(d, s):
    status, body = d.call("POST", "/api/v1/jobs", s)
    expect(status == 201, (status, body))
    return body["id"]


def job_dir(data_dir, job_id):
    return os.path.join(data_dir, "jobs", job_id)


def uploaded_dataset(d, data):
    """A 2-rank job on an upload: the ranks load it themselves from the datasets directory
    (`--datasets-dir` on their command line)."""
    started = time.time()
    body = colour_npz()
    status, ds = d.call("POST", "/api/v1/datasets?name=colours&format=npz", body,
                        headers={"Content-Type": "application/octet-stream"})
    expect(status == 201 and ds["sha256"] == hashlib.sha256(body).hexdigest() and
           ds["example_shape"] == [8, 8, 3] and ds["num_classes"] == 3, (status, ds))
    s = spec("on-upload", max_steps=300)
    s["dataset"] = "colours"
    j = submit(d, s)
    # Queued or running (mpirun takes a second to start its ranks): the dataset is pinned.
    status, err = d.call("DELETE", "/api/v1/datasets/colours")
    expect(status == 409 and j in err["error"]["message"], (status, err))
    job = d.wait_state(j, {"completed", "failed", "stopped"}, timeout=120)
    accuracy = expect_trained_on_upload(job, ds, 300)
    text = log_text(d, j)
    expect("attempt 1 of 3: 2 ranks" in text, "attempt line missing:\n" + text[:2000])
    expect(not ranks_of(job_dir(data, j)), "ranks left after the job ended")
    # Nothing runs on it any more: it can go.
    status, _ = d.call("DELETE", "/api/v1/datasets/colours")
    expect(status == 204, status)
    print("uploaded npz (sha256 %s...): DELETE 409 while the job ran; 2 ranks, completed at 300, "
          "test accuracy %.3f; deleted after (%.1f s)" % (ds["sha256"][:12], accuracy,
                                                      time.time() - started), flush=True)


def experiment_on_ranks(d):
    """An ASHA search whose trials are 2-rank jobs: two trials of 100 steps, the better promoted
    to 200, resumed by mpirun from its checkpoint."""
    started = time.time()
    base = spec("trial", max_steps=200)
    base["hooks"]["evaluation"] = {"every_steps": 1000, "split": "validation"}
    status, e = d.call("POST", "/api/v1/experiments", {
        "name": "on-ranks", "base_job": base,
        "space": {"optimizer.learning_rate": {"type": "log", "min": 1e-4, "max": 1e-2}},
        "searcher": {"name": "asha", "metric": "validation/accuracy", "max_trials": 2,
                     "min_steps": 100, "max_steps": 200, "reduction_factor": 2, "seed": 1}})
    expect(status == 201, (status, e))
    deadline = time.time() + 180
    while time.time() < deadline and e["state"] not in ("completed", "failed", "stopped"):
        time.sleep(0.2)
        e = d.call("GET", "/api/v1/experiments/" + e["id"])[1]
    expect(e["state"] == "completed" and e["plan"]["rungs"][1]["trials"] == 1, e)
    _, page = d.call("GET", "/api/v1/experiments/%s/trials" % e["id"])
    for t in page["trials"]:
        job = d.job(t["job_id"])
        expect(job["distributed"]["workers"] == 2 and job["executor"] == "mpi", job)
        expect(job["global_step"] == t["target_steps"], (job, t))
        expect("attempt 1 of 3: 2 ranks" in log_text(d, t["job_id"]), "not on 2 ranks")
    print("an ASHA search of 2-rank trials: completed, one promoted to 200 (%.1f s)" %
          (time.time() - started), flush=True)


def main():
    work = tempfile.mkdtemp(prefix="trainingd-dd-")
    data = os.path.join(work, "data")
    d = Daemon(TRAININGD, data)
    try:
        # Refused at submit: hosts (the daemon's ranks run here), and ranks that together do not
        # fit the machine (each holds the dataset and the model).
        status, body = d.call("POST", "/api/v1/jobs", spec("hosts", hosts=["node1"]))
        expect(status == 400 and body["error"]["field"] == "distributed.hosts", (status, body))
        hosts_field = body["error"]["field"]
        huge = spec("too-many-ranks", workers=1000)
        huge["batch_size"] = 1000
        huge["distributed"]["reduction_blocks"] = 1000
        huge["dataset"] = {"name": "fashion-mnist"}
        status, body = d.call("POST", "/api/v1/jobs", huge)
        expect(status == 400 and "memory" in body["error"]["message"] and
               "1000 ranks" in body["error"]["message"], (status, body))
        print("refused: hosts (%s); 1000 ranks: %s" % (hosts_field, body["error"]["message"]),
              flush=True)

        # A plain 2-rank job.
        a = submit(d, spec("plain", max_steps=600))
        job = d.wait_state(a, {"completed", "failed"}, timeout=300)
        expect(job["state"] == "completed", "2 ranks: %s" % job)
        expect(job["global_step"] == 600, job)
        monotonic_series(d, a, "loss")
        text = log_text(d, a)
        expect("attempt 1 of 3: 2 ranks" in text, "attempt line missing:\n" + text[:2000])
        expect(not ranks_of(job_dir(data, a)), "ranks left after the job ended")
        print("2 ranks: completed at 600", flush=True)

        uploaded_dataset(d, data)
        experiment_on_ranks(d)

        # kill -9 of a worker, then of the chief.
        for rank in (1, 0):
            name = "kill-rank-%d" % rank
            j = submit(d, spec(name))
            job = wait_step(d, j, 500)
            # Every rank's latest step, while it runs.
            deadline = time.time() + 10
            while len(job["distributed"]["ranks"]) != 2 and time.time() < deadline:
                time.sleep(0.2)
                job = d.job(j)
            ranks = job["distributed"]["ranks"]
            expect([r["rank"] for r in ranks] == [0, 1] and
                   all(r["compute_ms"] > 0 and r["allreduce_ms"] >= 0 for r in ranks),
                   "per-rank times: %s" % job["distributed"])
            pid = rank_pid(job_dir(data, j), rank)
            expect(pid, "no rank %d found" % rank)
            recovery = kill_and_time_next_step(d, j, pid)
            job = d.wait_state(j, {"completed", "failed"}, timeout=600)
            expect(job["state"] == "completed" and job["global_step"] == MAX_STEPS,
                   "after kill -9 of rank %d: %s" % (rank, job))
            text = log_text(d, j)
            expect("attempt 2 of 3" in text, "no second attempt:\n" + text[-3000:])
            steps = monotonic_series(d, j, "loss")
            expect(steps[-1] > MAX_STEPS - 20, steps[-5:])  # a summary every 20 steps
            attempts = job["distributed"]["attempts"]
            expect(len(attempts) == 2 and attempts[0]["end"].startswith("mpirun") and
                   attempts[1]["end"] == "completed" and attempts[1]["from_step"] > 0 and
                   attempts[0]["ended_at"] <= attempts[1]["started_at"],
                   "attempts: %s" % attempts)
            expect(job["distributed"]["ranks"] == [], "ranks of an ended job: %s" % job)
            print("kill -9 of rank %d: training again %.2f s after the kill; completed at %d "
                  "on attempt 2, loss series strictly increasing" % (rank, recovery, MAX_STEPS),
                  flush=True)

        # SIGSTOP of a worker: the watchdog (5 s) restarts the job.
        j = submit(d, spec("sigstop"))
        wait_step(d, j, 500)
        pid = rank_pid(job_dir(data, j), 1)
        os.kill(pid, signal.SIGSTOP)
        job = d.wait_state(j, {"completed", "failed"}, timeout=600)
        expect(job["state"] == "completed", "after SIGSTOP: %s" % job)
        text = log_text(d, j)
        expect("no step for 5 s" in text and "attempt 2 of 3" in text, text[-3000:])
        try:
            os.kill(pid, signal.SIGKILL)  # if it survived, this test fails below
        except ProcessLookupError:
            pass
        print("SIGSTOP of rank 1: the watchdog restarted it; completed", flush=True)

        # max_restarts exhausted.
        j = submit(d, spec("no-restarts", max_restarts=0))
        wait_step(d, j, 300)
        os.kill(rank_pid(job_dir(data, j), 1), signal.SIGKILL)
        job = d.wait_state(j, {"completed", "failed"}, timeout=300)
        expect(job["state"] == "failed", job)
        expect("failed after 1 attempt (distributed.max_restarts 0)" in (job["reason"] or ""),
               job)
        expect("exited on signal 9" in job["reason"], job)
        print("max_restarts 0: failed: %s" % job["reason"], flush=True)

        # A failure every rank shares (a NaN loss) is reported by the chief and not retried.
        s = spec("nan")
        s["optimizer"] = {"type": "sgd", "learning_rate": 1e30}
        j = submit(d, s)
        job = d.wait_state(j, {"completed", "failed", "stopped"}, timeout=300)
        ends = [a["end"] for a in job["distributed"]["attempts"]]
        expect(job["state"] == "failed" and "NaN loss" in (job["reason"] or "") and
               ends == ["failed"], "NaN: %s, attempts %s" % (job["reason"], ends))
        print("a NaN loss: failed once (%s), not retried" % job["reason"], flush=True)

        # A stop over HTTP, then a resume.
        j = submit(d, spec("stop-resume"))
        wait_step(d, j, 300)
        status, body = d.call("POST", "/api/v1/jobs/%s/stop" % j, {})
        expect(status == 202, (status, body))
        job = d.wait_state(j, {"stopped", "failed", "completed"}, timeout=300)
        expect(job["state"] == "stopped" and job["reason"] == "stop requested", job)
        expect(job["distributed"]["attempts"][-1]["end"] == "stopped", job["distributed"])
        stopped_at = job["global_step"]
        ckpts = [f for f in os.listdir(job_dir(data, j)) if f.startswith("model.ckpt-")]
        expect("model.ckpt-%d" % stopped_at in ckpts, (stopped_at, ckpts))
        status, body = d.call("POST", "/api/v1/jobs/%s/resume" % j, {})
        expect(status == 202, (status, body))
        job = d.wait_state(j, {"completed", "failed"}, timeout=600)
        expect(job["state"] == "completed" and job["global_step"] == MAX_STEPS, job)
        monotonic_series(d, j, "loss")
        print("stop over HTTP at step %d with a final checkpoint; resumed to %d" %
              (stopped_at, MAX_STEPS), flush=True)

        # kill -9 of the daemon during an MPI job.
        j = submit(d, spec("daemon-crash"))
        wait_step(d, j, 500)
        jd = job_dir(data, j)
        expect(ranks_of(jd), "no ranks running")
        d.kill()
        deadline = time.time() + 10
        while ranks_of(jd) and time.time() < deadline:
            time.sleep(0.1)
        expect(not ranks_of(jd), "ranks survived the daemon: %s" % ranks_of(jd))
        print("kill -9 of the daemon: no rank survived", flush=True)
        d = Daemon(TRAININGD, data)
        job = d.wait_state(j, {"completed", "failed"}, timeout=600)
        expect(job["state"] == "completed" and job["global_step"] == MAX_STEPS, job)
        monotonic_series(d, j, "loss")
        ends = [a["end"] for a in job["distributed"]["attempts"]]
        expect(ends == ["the daemon died", "completed"], "attempts across the restart: %s" % ends)
        print("after the restart: completed at %d; attempts %s" % (MAX_STEPS, ends), flush=True)
        d.stop()
        expect(not subprocess.run(["pgrep", "-f", "trainingd-mpi run %s" % data],
                                  stdout=subprocess.PIPE).stdout, "ranks left at the end")
        print("ok", flush=True)
    finally:
        if d.proc.poll() is None:
            d.kill()
        subprocess.run(["pkill", "-9", "-f", "trainingd-mpi run %s" % data])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
