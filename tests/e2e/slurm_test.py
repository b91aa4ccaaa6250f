#!/usr/bin/python3
"""Jobs under `trainingd serve` with the Slurm executor, over real HTTP, against a real single-node
Slurm cluster (tests/support/slurm_cluster.sh; docs/slurm-notes.md for what Slurm does).

- a daemon whose Slurm does not answer refuses to start, with a message naming slurm: once with a
  SLURM_CONF that does not exist, once with the cluster stopped;
- a job on a drained node is `queued` while Slurm says PENDING (with its reason), then `running`
  on the node, sent as `trainingd-<id>` (squeue --json), its scalars live on the event stream
  while it runs; completed, with its batch script and Slurm output in <job_root>/<id>/;
- a job that the daemon first sees running after several checkpoints (the daemon frozen with
  SIGSTOP meanwhile): its attempt starts from step 0, as the run itself reports it;
- a stop over HTTP: stopped after a final checkpoint at its last step; a resume is a new sbatch
  submission (a new Slurm job id) that continues from that checkpoint and completes; the attempts
  start from 0 and from the stop's step;
- `scancel` of the Slurm job by hand: stopped;
- `kill -9` of the daemon while the Slurm job runs: the Slurm job keeps running, the restarted
  daemon reattaches to it (the same Slurm job id, one submission in all) and the job completes
  with every loss summary of the run, in order;
- SIGTERM of the daemon leaves its Slurm job running and the next daemon follows it; a stop
  followed at once by `kill -9` of the daemon: the next one follows the job to `stopped`, and a
  resume is a new submission;
- `distributed.workers` 2: one Slurm job of 2 tasks (mpirun inside the allocation), completed;
- a job on an uploaded npz: the upload kept in <job_root>/datasets/, the batch script passing that
  directory to the node (`--datasets-dir`), the dataset not deletable while the job is queued or
  running; completed above chance, its spec recording the upload's sha256;
- the spec's `resources`: 2 CPUs and a 3 s limit make a Slurm job of 2 CPUs and 3 minutes; the run
  stops itself at 3 s after a final checkpoint, and the job is `stopped` with that reason;
- the node set DOWN under a running job: Slurm requeues it, it runs again and completes at
  max_steps, its loss series strictly increasing without a gap; each attempt names the
  checkpoint its run restored;
- preemption by checkpoint (a daemon of its own with max_jobs 1): a priority-5 job preempts the
  running one, which stops after a final checkpoint, shows `preempted`, and resumes from that
  checkpoint as a new Slurm job once the urgent job has completed.

All on one cluster, started once with a short credential lifetime and a 1 s backfill period so a
requeued job runs again after ~9 s instead of ~141 s. Needs root and slurm-wlm + munge: exits 77
(skipped) otherwise.

    slurm_test.py TRAININGD [SCENARIO...]     (default: all of them, in this order:
    queued late-poll stop-resume scancel kill9 shutdown workers dataset resources node-down
    preempt refused)
"""
import hashlib
import json
import os
import re
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
FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support",
                       "slurm_cluster.sh")
PERIOD = 10  # the specs' summary period: a loss every 10 steps, at 1, 11, 21, ...
NODE = "localhost"


# ---------------------------------------------------------------------------
# The cluster
# ---------------------------------------------------------------------------

def start_cluster(fixture_dir):
    """Starts the fixture in `fixture_dir`; returns its SLURM_CONF. Exits 77 when it skips."""
    # A repeated key in slurm.conf: the later line wins (docs/slurm-notes.md).
    extra = ("AuthInfo=socket=%s/munge.socket,cred_expire=5\n"
             "SchedulerParameters=bf_interval=1" % fixture_dir)
    r = subprocess.run([FIXTURE, "start", fixture_dir], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=300,
                       env=dict(os.environ, SLURM_FIXTURE_EXTRA_CONF=extra))
    if r.returncode == 77:
        print("skipped: %s" % r.stderr.strip(), flush=True)
        sys.exit(77)
    expect(r.returncode == 0, "the Slurm fixture did not start (%d):\n%s" %
           (r.returncode, r.stderr))
    m = re.search(r"^export SLURM_CONF=(\S+)$", r.stdout, re.M)
    expect(m, "no SLURM_CONF from the fixture: %r" % r.stdout)
    return m.group(1)


def stop_cluster(fixture_dir):
    r = subprocess.run([FIXTURE, "stop", fixture_dir], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    if r.returncode != 0:
        print("the fixture's stop failed (%d):\n%s" % (r.returncode, r.stdout), flush=True)
    return r.returncode


def slurm(conf, *args, check=True):
    """Runs a Slurm command against the cluster of `conf`; returns its stdout."""
    r = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, SLURM_CONF=conf), timeout=60)
    expect(not check or r.returncode == 0, "%s: exit %d: %s" % (" ".join(args), r.returncode,
                                                                r.stderr))
    return r.stdout


def squeue(conf):
    """Every job the controller knows (squeue --json ignores filters, and exits 0 with `errors`
    when the controller does not answer)."""
    body = json.loads(slurm(conf, "squeue", "--json"))
    expect(not body.get("errors"), "squeue --json: %s" % body.get("errors"))
    return body["jobs"]


def slurm_job(conf, slurm_id):
    for j in squeue(conf):
        if j["job_id"] == slurm_id:
            return j
    return None


def submissions(conf, job_id):
    """The Slurm jobs sent for our job `job_id`, by their name."""
    return [j for j in squeue(conf) if j["name"] == "trainingd-" + job_id]


def node_state(conf):
    return slurm(conf, "sinfo", "-h", "-N", "-n", NODE, "-o", "%T", check=False).strip()


def wait_node_idle(conf, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if node_state(conf) == "idle":
            return
        time.sleep(0.2)
    raise AssertionError("node %s not idle after %d s: %s" % (NODE, timeout, node_state(conf)))


# ---------------------------------------------------------------------------
# Jobs
# ---------------------------------------------------------------------------

def spec(name, max_steps, **overrides):
    """The MLP at batch 500 (a few hundred steps per second here), a checkpoint every 300 steps,
    a loss every PERIOD steps."""
    s = small_spec(name, max_steps, checkpoint_every=300, batch_size=500, **overrides)
    s["hooks"]["summary"] = {"every_steps": PERIOD}
    return s


def submit(d, s):
    status, body = d.call("POST", "/api/v1/jobs", s)
    expect(status == 201, (status, body))
    return body["id"]


def wait_slurm(d, job_id, timeout=60):
    """The job once it has a Slurm job id."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = d.job(job_id)
        if job.get("slurm") and job["slurm"].get("job_id"):
            return job
        expect(job["state"] in ("queued", "running"), "job ended before sbatch: %s" % job)
        time.sleep(0.1)
    raise AssertionError("job %s has no Slurm job id after %d s: %s" % (job_id, timeout, job))


def wait_step(d, job_id, step, timeout=180):
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = d.job(job_id)
        if job["global_step"] >= step:
            expect(job["state"] == "running", "at step %d but %s" % (step, job["state"]))
            return job
        expect(job["state"] in ("queued", "running"), "job ended early: %s" % job)
        time.sleep(0.1)
    raise AssertionError("job %s did not reach step %d in %d s: %s" %
                         (job_id, step, timeout, d.job(job_id)))


def ended(d, job_id, timeout=240):
    return d.wait_state(job_id, {"completed", "failed", "stopped"}, timeout=timeout)


def attempts(job):
    return (job.get("distributed") or {}).get("attempts") or []


def every_summary(max_steps):
    """The loss steps of one uninterrupted run from step 0: 1, 1 + PERIOD, ..."""
    return list(range(1, max_steps + 1, PERIOD))


def without_gaps(steps, max_steps):
    """True if the steps start at 1, end within the last period and are never more than a period
    apart: every summary is there, whatever checkpoint a rerun started from."""
    return (steps and steps[0] == 1 and steps[-1] > max_steps - PERIOD and
            all(b - a <= PERIOD for a, b in zip(steps, steps[1:])))


def config(job_root):
    return {"executor": "slurm",
            "slurm": {"job_root": job_root, "poll_secs": 0.5, "partition": "", "account": "",
                      "sbatch_options": [], "trainingd_path": "", "max_jobs": 64,
                      "time_limit_minutes": 0}}


def serve_args(data_dir, cfg):
    """`trainingd serve` as Daemon() starts it, with `cfg` written next to the data directory."""
    path = data_dir.rstrip("/") + ".json"
    with open(path, "w") as f:
        json.dump(cfg, f)
    return [TRAININGD, "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir,
            "--config", path]


def start_refused(data_dir, cfg, slurm_conf):
    """Starts a daemon that should refuse to start; returns (Popen, start time)."""
    return subprocess.Popen(serve_args(data_dir, cfg), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, SLURM_CONF=slurm_conf)), time.time()


def check_refused(proc, started, timeout, what):
    """The daemon of start_refused() exits non-zero within `timeout` s of its start, never
    listening, with a `trainingd serve: slurm: ...` line on stderr (or `trainingd: slurm: ...`)."""
    try:
        out, err = proc.communicate(timeout=max(1, started + timeout - time.time()))
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError("%s: the daemon still runs %d s after its start:\n%s%s" %
                             (what, timeout, out, err))
    took = time.time() - started
    expect(proc.returncode != 0, "%s: exit code 0:\n%s%s" % (what, out, err))
    expect("listening on" not in out, "%s: the daemon listened: %r" % (what, out))
    lines = [l for l in err.splitlines() if re.match(r"trainingd( serve)?: slurm: ", l)]
    expect(lines, "%s: no 'trainingd serve: slurm: ...' line on stderr:\n%s" % (what, err))
    print("%s: refused to start in %.1f s (exit %d): %s" % (what, took, proc.returncode,
                                                            lines[0]), flush=True)


# ---------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------

def queued_running_completed(d, conf, job_root):
    """Drained node: queued/PENDING; resumed node: running, live scalars; completed."""
    slurm(conf, "scontrol", "update", "nodename=" + NODE, "state=drain", "reason=held-by-test")
    try:
        # About 3.5 s of running here: the first scalars come in its first second, and squeue's
        # RUNNING within a poll (0.5 s) after that.
        max_steps = 1500
        j = submit(d, spec("basic", max_steps))
        job = wait_slurm(d, j)
        deadline = time.time() + 30
        while job["slurm"]["state"] != "PENDING" or job["slurm"]["reason"] in (None, "", "None"):
            expect(time.time() < deadline, "no PENDING with a reason: %s" % job)
            time.sleep(0.1)
            job = d.job(j)
        expect(job["state"] == "queued" and job["executor"] == "slurm", job)
        sid = job["slurm"]["job_id"]
        expect(isinstance(sid, int) and sid > 0, job["slurm"])
        sj = slurm_job(conf, sid)
        expect(sj and sj["name"] == "trainingd-" + j and sj["job_state"] == "PENDING",
               "squeue --json for %d: %s" % (sid, sj))
        print("drained node: queued, Slurm job %d PENDING (%s), named %s" %
              (sid, job["slurm"]["reason"], sj["name"]), flush=True)
    finally:
        slurm(conf, "scontrol", "update", "nodename=" + NODE, "state=resume")

    # The job's stream, from before it runs: every scalar on it is live.
    evs = d.events("/api/v1/jobs/%s/events" % j, timeout=120,
                   until=lambda e: e.get("event") == "scalar" and e["data"]["step"] > 1)
    received = time.time()
    job = d.job(j)
    scalars = [e for e in evs if e.get("event") == "scalar"]
    expect(scalars, "no scalar event: %r" % evs[-5:])
    last = scalars[-1]["data"]
    expect(set(last) >= {"tag", "step", "value", "wall_time"}, last)
    expect(job["state"] == "running" and job["global_step"] < max_steps,
           "a scalar while the job runs: %s at %d" % (job["state"], job["global_step"]))
    # The run's session makes the job running; squeue's word may come a poll later.
    deadline = time.time() + 10
    while job["slurm"]["state"] != "RUNNING" and time.time() < deadline:
        time.sleep(0.1)
        job = d.job(j)
    expect(job["slurm"]["state"] == "RUNNING" and job["slurm"]["nodes"] == NODE and
           job["slurm"]["job_id"] == sid, job["slurm"])
    delay = received - last["wall_time"]
    expect(delay < 10, "scalar of step %d arrived %.1f s after it was written" %
           (last["step"], delay))
    states = [e["data"]["state"] for e in evs if e.get("event") == "state"]
    print("running on %s; a scalar (%s at step %d) on the event stream %.2f s after the trainer "
          "wrote it; state events %s" % (job["slurm"]["nodes"], last["tag"], last["step"], delay,
                                         states), flush=True)

    job = ended(d, j)
    expect(job["state"] == "completed" and job["global_step"] == max_steps, job)
    expect(job["slurm"]["job_id"] == sid and job["slurm"]["restarts"] == 0, job["slurm"])
    expect("test/accuracy" in job["latest_scalars"], job["latest_scalars"])
    expect(monotonic_series(d, j, "loss") == every_summary(max_steps), "every loss summary")
    files = os.listdir(os.path.join(job_root, j))
    expect("slurm.sh" in files and "slurm-%d.out" % sid in files and
           "model.ckpt-%d" % max_steps in files, "the job's files: %s" % sorted(files))
    expect(len(submissions(conf, j)) == 1, "one submission")
    print("completed at %d; %s in %s" % (max_steps, ", ".join(sorted(
        f for f in files if f.startswith("slurm"))), os.path.join(job_root, j)), flush=True)


def late_first_poll(d, conf, job_root):
    """A fast job that the daemon first sees running after several checkpoints: held PENDING on a
    drained node, the daemon frozen (SIGSTOP), the node resumed; the daemon wakes once the run
    has written its checkpoint at 900. Its one attempt still starts from step 0, as the run
    reports it."""
    max_steps = 1800  # 900 steps (about 2 s) after the checkpoint the daemon waits for
    slurm(conf, "scontrol", "update", "nodename=" + NODE, "state=drain", "reason=held-by-test")
    try:
        j = submit(d, spec("late-poll", max_steps))
        wait_slurm(d, j)
        os.kill(d.proc.pid, signal.SIGSTOP)
    finally:
        slurm(conf, "scontrol", "update", "nodename=" + NODE, "state=resume")
    try:
        deadline = time.time() + 60
        ckpt = os.path.join(job_root, j, "model.ckpt-900")
        while not os.path.exists(ckpt):
            expect(time.time() < deadline, "no checkpoint at 900 while the daemon was frozen")
            time.sleep(0.05)
    finally:
        os.kill(d.proc.pid, signal.SIGCONT)
    job = ended(d, j)
    expect(job["state"] == "completed" and job["global_step"] == max_steps, job)
    att = attempts(job)
    expect(len(att) == 1 and att[0]["from_step"] == 0,
           "a new job's one attempt starts at step 0: %s" % att)
    print("first poll after the checkpoint at 900: attempt 1 from_step %d" % att[0]["from_step"],
          flush=True)


def stop_and_resume(d, conf, job_root):
    j = submit(d, spec("stop-resume", 100000))
    sid = wait_slurm(d, j)["slurm"]["job_id"]
    wait_step(d, j, 600)
    status, body = d.call("POST", "/api/v1/jobs/%s/stop" % j, {})
    expect(status == 202, (status, body))
    job = d.job(j)
    expect(job["state"] in ("stopping", "stopped"), "after the stop: %s" % job["state"])
    job = ended(d, j, timeout=120)
    expect(job["state"] == "stopped", job)
    stopped_at = job["global_step"]
    status, ck = d.call("GET", "/api/v1/jobs/%s/checkpoints" % j)
    expect(status == 200 and ck["checkpoints"] and
           ck["checkpoints"][-1]["global_step"] == stopped_at,
           "a final checkpoint at the stop's step %d: %s" % (stopped_at, ck))
    expect(os.path.exists(os.path.join(job_root, j, "model.ckpt-%d" % stopped_at)), stopped_at)
    sj = slurm_job(conf, sid)
    expect(sj and sj["job_state"] not in ("PENDING", "RUNNING"), "Slurm job after the stop: %s"
           % (sj and sj["job_state"]))
    print("stop over HTTP: stopped at step %d with a final checkpoint (Slurm job %d %s, "
          "reason %r)" % (stopped_at, sid, sj["job_state"], job["reason"]), flush=True)

    max_steps = stopped_at + 600
    status, body = d.call("POST", "/api/v1/jobs/%s/resume" % j, {"max_steps": max_steps})
    expect(status == 202, (status, body))
    job = ended(d, j)
    expect(job["state"] == "completed" and job["global_step"] == max_steps, job)
    sid2 = job["slurm"]["job_id"]
    expect(sid2 != sid, "the resume's Slurm job id %d, the stopped one %d" % (sid2, sid))
    expect(sorted(s["job_id"] for s in submissions(conf, j)) == [sid, sid2], "two submissions")
    steps = monotonic_series(d, j, "loss")
    # The resumed run's first summary is at its first step: it restored the stop's checkpoint.
    expect(stopped_at + 1 in steps and steps[-1] > max_steps - PERIOD, (stopped_at, steps[-5:]))
    att = attempts(job)
    expect([a["from_step"] for a in att] == [0, stopped_at],
           "attempts from step 0, then from the stop's checkpoint %d: %s" % (stopped_at, att))
    print("resumed as Slurm job %d from step %d; completed at %d" % (sid2, stopped_at, max_steps),
          flush=True)


def preempt(conf, work):
    """Preemption by checkpoint on Slurm (operations.md#preemption), on a daemon of its own that
    keeps one job in Slurm at once (max_jobs 1): a priority-5 job preempts the running one, which
    stops after a final checkpoint (its Slurm job ends), waits as preempted, and is submitted
    again (a new Slurm job) that resumes from that checkpoint once the urgent job completed."""
    job_root = os.path.join(work, "slurm-jobs-preempt")
    os.makedirs(job_root)
    cfg = config(job_root)
    cfg["slurm"]["max_jobs"] = 1
    cfg["preemption"] = {"enabled": True, "min_run_secs": 1}
    d = Daemon(TRAININGD, os.path.join(work, "data-preempt"), config=cfg,
               env={"SLURM_CONF": conf})
    try:
        low = submit(d, spec("low", 100000))
        sid = wait_slurm(d, low)["slurm"]["job_id"]
        wait_step(d, low, 600)
        time.sleep(1)
        high = submit(d, spec("high", 300, priority=5))
        job = d.wait_state(low, {"preempted", "completed", "failed", "stopped"}, timeout=120)
        expect(job["state"] == "preempted" and job["preempted_by"] == high, job)
        preempted_at = job["global_step"]
        expect(os.path.exists(os.path.join(job_root, low, "model.ckpt-%d" % preempted_at)),
               "a final checkpoint at the preemption's step %d" % preempted_at)
        sj = slurm_job(conf, sid)
        expect(sj and sj["job_state"] not in ("PENDING", "RUNNING"), "the victim's Slurm job "
               "after the preemption: %s" % (sj and sj["job_state"]))
        job = ended(d, high)
        expect(job["state"] == "completed", job)
        # The victim goes on as a new Slurm job from its checkpoint.
        deadline = time.time() + 120
        while time.time() < deadline:
            job = d.job(low)
            if job["state"] == "running" and job["global_step"] > preempted_at:
                break
            time.sleep(0.2)
        expect(job["state"] == "running" and job["slurm"]["job_id"] != sid, job)
        att = attempts(job)
        expect([a["from_step"] for a in att][-1:] == [preempted_at],
               "the resumed attempt starts from the preemption's checkpoint %d: %s" %
               (preempted_at, att))
        status, _ = d.call("POST", "/api/v1/jobs/%s/stop" % low, {})
        expect(status == 202, status)
        expect(ended(d, low, timeout=120)["state"] == "stopped", d.job(low))
        print("preempted on Slurm at step %d (Slurm job %d %s), resumed as Slurm job %d" %
              (preempted_at, sid, sj["job_state"], job["slurm"]["job_id"]), flush=True)
    finally:
        code, log = d.stop()
        expect(code == 0, "clean exit on SIGTERM: %d\n%s" % (code, log[-3000:]))


def scancel_by_hand(d, conf):
    j = submit(d, spec("scancel", 100000))
    sid = wait_slurm(d, j)["slurm"]["job_id"]
    wait_step(d, j, 100)
    slurm(conf, "scancel", str(sid))
    job = ended(d, j, timeout=120)
    expect(job["state"] == "stopped", "after scancel %d: %s" % (sid, job))
    print("scancel %d by hand: stopped at step %d (reason %r)" %
          (sid, job["global_step"], job["reason"]), flush=True)


def kill9_daemon(daemons, conf, data, cfg):
    """kill -9 of daemons[-1]; appends the restarted daemon."""
    d = daemons[-1]
    max_steps = 3000  # about 7 s here: still running when the next daemon is up, 2 s after the kill
    j = submit(d, spec("daemon-crash", max_steps))
    sid = wait_slurm(d, j)["slurm"]["job_id"]
    wait_step(d, j, 600)
    d.kill()
    sj = slurm_job(conf, sid)
    expect(sj and sj["job_state"] == "RUNNING", "Slurm job %d after kill -9 of the daemon: %s" %
           (sid, sj and sj["job_state"]))
    time.sleep(1)  # steps the daemon does not see happen
    print("kill -9 of the daemon: Slurm job %d still RUNNING" % sid, flush=True)
    d = Daemon(TRAININGD, data, config=cfg, env={"SLURM_CONF": conf})
    daemons.append(d)
    job = d.job(j)
    still = slurm_job(conf, sid)["job_state"]
    expect(job["slurm"] and job["slurm"]["job_id"] == sid, "reattached: %s" % job)
    job = ended(d, j)
    expect(job["state"] == "completed" and job["global_step"] == max_steps, job)
    expect(job["slurm"]["job_id"] == sid, job["slurm"])
    subs = submissions(conf, j)
    expect(len(subs) == 1, "one submission: %s" % [(s["job_id"], s["job_state"]) for s in subs])
    steps = monotonic_series(d, j, "loss")
    expect(steps == every_summary(max_steps),
           "every loss summary of the run: %d of %d, first missing %r" %
           (len(steps), len(every_summary(max_steps)),
            next((s for s in every_summary(max_steps) if s not in set(steps)), None)))
    print("restarted daemon reattached to Slurm job %d (%s at the restart); completed at %d "
          "with all %d loss summaries" % (sid, still, max_steps, len(steps)), flush=True)


def shutdown_then_stop(daemons, conf, data, cfg):
    """SIGTERM of daemons[-1] leaves its Slurm job running, and the next daemon follows it again;
    then a stop and, at once, kill -9 of that daemon: the one after it follows the stopping job
    to its end (stopped), and a resume is a new submission that completes. Appends the
    restarted daemons."""
    d = daemons[-1]
    j = submit(d, spec("shutdown", 100000))
    sid = wait_slurm(d, j)["slurm"]["job_id"]
    wait_step(d, j, 300)
    code, _ = d.stop()
    expect(code == 0, "clean exit on SIGTERM: %d" % code)
    sj = slurm_job(conf, sid)
    expect(sj and sj["job_state"] == "RUNNING", "Slurm job %d after the daemon's SIGTERM: %s" %
           (sid, sj and sj["job_state"]))
    d = Daemon(TRAININGD, data, config=cfg, env={"SLURM_CONF": conf})
    daemons.append(d)
    before = d.job(j)["global_step"]
    wait_step(d, j, before + 300)
    print("SIGTERM of the daemon: Slurm job %d ran on; the next daemon follows it (step %d)" %
          (sid, d.job(j)["global_step"]), flush=True)

    status, body = d.call("POST", "/api/v1/jobs/%s/stop" % j, {})
    expect(status == 202, (status, body))
    d.kill()
    d = Daemon(TRAININGD, data, config=cfg, env={"SLURM_CONF": conf})
    daemons.append(d)
    job = ended(d, j, timeout=120)
    expect(job["state"] == "stopped", "stopped, then kill -9 of the daemon: %s" % job)
    stopped_at = job["global_step"]
    status, body = d.call("POST", "/api/v1/jobs/%s/resume" % j, {"max_steps": stopped_at + 300})
    expect(status == 202, (status, body))
    job = ended(d, j)
    expect(job["state"] == "completed" and job["global_step"] == stopped_at + 300, job)
    expect(job["slurm"]["job_id"] != sid, "the resume is a new submission: %s" % job["slurm"])
    expect(len(submissions(conf, j)) == 2, "two submissions in all")
    monotonic_series(d, j, "loss")
    print("stop, then kill -9 of the daemon: stopped at %d; resumed as Slurm job %d to %d" %
          (stopped_at, job["slurm"]["job_id"], stopped_at + 300), flush=True)


def two_workers(d, conf):
    max_steps = 1000
    s = spec("two-workers", max_steps)
    s["distributed"] = {"workers": 2}
    j = submit(d, s)
    sid = wait_slurm(d, j)["slurm"]["job_id"]
    sj = slurm_job(conf, sid)
    expect(sj and sj["tasks"] == 2, "tasks of Slurm job %d: %s" % (sid, sj and sj["tasks"]))
    job = ended(d, j)
    expect(job["state"] == "completed" and job["global_step"] == max_steps, job)
    monotonic_series(d, j, "loss")
    print("2 workers: Slurm job %d of %d tasks, completed at %d" % (sid, sj["tasks"], max_steps),
          flush=True)


def uploaded_dataset(d, job_root):
    """A job on an uploaded npz: the daemon keeps uploads on the shared job root and its batch
    script names that directory, where the node's `trainingd run` reads the file."""
    started = time.time()
    body = colour_npz()
    status, ds = d.call("POST", "/api/v1/datasets?name=colours&format=npz", body,
                        headers={"Content-Type": "application/octet-stream"})
    expect(status == 201 and ds["sha256"] == hashlib.sha256(body).hexdigest(), (status, ds))
    datasets_dir = os.path.join(job_root, "datasets")
    expect(os.listdir(os.path.join(datasets_dir, "colours")),
           "the upload is not under %s: %s" % (datasets_dir, os.listdir(job_root)))
    max_steps = 300
    s = spec("on-upload", max_steps, dataset="colours")
    s["batch_size"] = 50
    j = submit(d, s)
    # Queued or running (sbatch, then the node starts trainingd): the dataset is pinned.
    status, err = d.call("DELETE", "/api/v1/datasets/colours")
    expect(status == 409 and j in err["error"]["message"], (status, err))
    sid = wait_slurm(d, j)["slurm"]["job_id"]
    job = ended(d, j, timeout=120)
    accuracy = expect_trained_on_upload(job, ds, max_steps)
    with open(os.path.join(job_root, j, "slurm.sh")) as f:
        script = f.read()
    expect(" --datasets-dir '%s' " % datasets_dir in script, "the batch script:\n" + script)
    status, _ = d.call("DELETE", "/api/v1/datasets/colours")
    expect(status == 204, status)
    print("uploaded npz in %s (sha256 %s...): DELETE 409 while the job ran; Slurm job %d "
          "completed at %d, test accuracy %.3f; deleted after (%.1f s)" %
          (datasets_dir, ds["sha256"][:12], sid, max_steps, accuracy, time.time() - started),
          flush=True)


def own_resources(d, conf):
    """The spec's resources: its CPUs and its time limit (plus 2 minutes) in the Slurm job; the
    run stops itself at its limit, after a final checkpoint, and the job is `stopped` with the
    limit as its reason, not Slurm's TIMEOUT or a cancel."""
    cpus = min(2, os.cpu_count())  # what the fixture's node has
    s = spec("timed", 10 ** 7)
    s["resources"] = {"cpus_per_worker": cpus, "time_limit_secs": 3}
    j = submit(d, s)
    sid = wait_slurm(d, j)["slurm"]["job_id"]
    sj = slurm_job(conf, sid)
    expect(sj and sj["cpus"] == cpus and sj["time_limit"] == 3,
           "Slurm job %d: cpus %s, time_limit %s" % (sid, sj and sj["cpus"],
                                                     sj and sj["time_limit"]))
    job = ended(d, j, timeout=120)
    reason = "time limit of 3 s reached (resources.time_limit_secs) at global step %d" % (
        job["global_step"])
    expect(job["state"] == "stopped" and job["reason"] == reason, "out of time: %s" % job)
    status, ckpts = d.call("GET", "/api/v1/jobs/%s/checkpoints" % j)
    expect(status == 200 and ckpts["checkpoints"][-1]["global_step"] == job["global_step"],
           "the final checkpoint: %s" % ckpts)
    print("resources: Slurm job %d with %d CPUs and a 3-minute limit; stopped by its own 3 s "
          "limit at step %d, after a final checkpoint" % (sid, cpus, job["global_step"]),
          flush=True)


def node_down(d, conf):
    max_steps = 2000  # the node goes down at step 1000, about 2 s before the end
    j = submit(d, spec("node-down", max_steps))
    sid = wait_slurm(d, j)["slurm"]["job_id"]
    wait_step(d, j, 1000)
    downed = time.time()
    slurm(conf, "scontrol", "update", "nodename=" + NODE, "state=down", "reason=test")
    job = ended(d, j, timeout=240)
    took = time.time() - downed
    expect(job["state"] == "completed" and job["global_step"] == max_steps,
           "after the node went down: %s" % job)
    n = len(attempts(job))
    expect(n >= 2 or job["slurm"]["restarts"] >= 1,
           "no rerun seen: %d attempts, slurm %s" % (n, job["slurm"]))
    steps = monotonic_series(d, j, "loss")
    expect(without_gaps(steps, max_steps), "loss steps with a gap: %s" %
           [(a, b) for a, b in zip(steps, steps[1:]) if b - a > PERIOD][:10])
    # Each attempt names the checkpoint it restored: a run's first summary is at its first step.
    att = attempts(job)
    expect(att and att[0]["from_step"] == 0, "the first attempt starts at 0: %s" % att)
    for a in att[1:]:
        expect(a["from_step"] + 1 in steps,
               "attempt %d from_step %d is not the checkpoint it restored (loss steps %s)" %
               (a["attempt"], a["from_step"], [x for x in steps if x > a["from_step"]][:3]))
    print("node DOWN at step >= 1000: Slurm job %d requeued (restarts %d, attempts ending %s), "
          "completed at %d %.1f s later; loss series strictly increasing, no gap" %
          (sid, job["slurm"]["restarts"], [a.get("end") for a in attempts(job)], max_steps, took),
          flush=True)


SCENARIOS = ["queued", "late-poll", "stop-resume", "scancel", "kill9", "shutdown", "workers",
             "dataset", "resources", "node-down", "preempt", "refused"]


def main():
    only = set(sys.argv[2:]) or set(SCENARIOS)
    expect(only <= set(SCENARIOS), "scenarios: %s" % " ".join(SCENARIOS))
    work = tempfile.mkdtemp(prefix="trainingd-slurm-")
    # Short: Slurm puts Unix sockets under it (the fixture refuses more than 64 characters).
    fixture_dir = os.path.realpath(tempfile.mkdtemp(prefix="slx", dir="/tmp"))
    job_root = os.path.join(work, "slurm-jobs")
    os.makedirs(job_root)
    cfg = config(job_root)
    data = os.path.join(work, "data")
    daemons = []
    missing = None
    if "refused" in only:
        # No cluster behind a SLURM_CONF that does not exist (squeue itself would retry reading
        # it for 60 s; the daemon looks for the file first). Meanwhile the rest runs.
        missing, missing_started = start_refused(os.path.join(work, "missing"), cfg,
                                                 os.path.join(work, "no-such-dir", "slurm.conf"))
    try:
        conf = start_cluster(fixture_dir)
        print("Slurm cluster up: SLURM_CONF=%s" % conf, flush=True)
        daemons.append(Daemon(TRAININGD, data, config=cfg, env={"SLURM_CONF": conf}))

        for name, run in [("queued", lambda: queued_running_completed(daemons[-1], conf, job_root)),
                          ("late-poll", lambda: late_first_poll(daemons[-1], conf, job_root)),
                          ("stop-resume", lambda: stop_and_resume(daemons[-1], conf, job_root)),
                          ("scancel", lambda: scancel_by_hand(daemons[-1], conf)),
                          ("kill9", lambda: kill9_daemon(daemons, conf, data, cfg)),
                          ("shutdown", lambda: shutdown_then_stop(daemons, conf, data, cfg)),
                          ("workers", lambda: two_workers(daemons[-1], conf)),
                          ("dataset", lambda: uploaded_dataset(daemons[-1], job_root)),
                          ("resources", lambda: own_resources(daemons[-1], conf)),
                          ("node-down", lambda: node_down(daemons[-1], conf)),
                          ("preempt", lambda: preempt(conf, work))]:
            if name in only:
                t0 = time.time()
                wait_node_idle(conf)  # the previous job's allocation released
                run()
                print("%s: %.1f s" % (name, time.time() - t0), flush=True)

        code, log = daemons[-1].stop()
        expect(code == 0, "clean exit on SIGTERM: %d\n%s" % (code, log[-3000:]))
        if "refused" in only:
            check_refused(missing, missing_started, 90, "SLURM_CONF does not exist")
            expect(stop_cluster(fixture_dir) == 0, "the fixture stopped")
            p, started = start_refused(os.path.join(work, "stopped"), cfg, conf)
            check_refused(p, started, 30, "the cluster stopped")
        print("ok", flush=True)
    finally:
        for d in daemons:
            if d.proc.poll() is None:
                d.kill()
        if missing is not None and missing.poll() is None:
            missing.kill()
            missing.wait()
        stop_cluster(fixture_dir)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(fixture_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
