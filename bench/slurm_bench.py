#!/usr/bin/python3
"""The Slurm executor's delays against the local executor's, side by side (A B A B ...): two
daemons, one with each executor, the Slurm one on a single-node cluster started here
(tests/support/slurm_cluster.sh: needs root and slurm-wlm + munge; exits 77 without them).

    /usr/bin/python3 bench/slurm_bench.py [TRAININGD] [--pairs 3] [--steps 3000] [--poll-secs 0.5]

TRAININGD defaults to build/daemon/trainingd (what `make build` builds). Each run submits the
MLP at batch 500 (a loss, accuracy and learning rate every 10 steps) and measures:

(a) submit -> running: from just before the POST to the arrival of the job's last `running`
    state on /api/v1/events (a stream opened before the POST);
(b) step -> event: for each scalar event on the job's own stream (opened right after the POST),
    its arrival minus its `wall_time` (stamped by the trainer when it wrote the summary); the
    run's median. Scalars stamped before the stream was open (a replay) are left out.

Prints every run, then per executor the median and spread (min-max) over the runs of (a) and of
(b)'s per-run medians, and the CPU.
"""
import argparse
import http.client
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from trainingd_e2e import Daemon, read_events, small_spec  # noqa: E402

FIXTURE = os.path.join(ROOT, "tests", "support", "slurm_cluster.sh")


class Stream(threading.Thread):
    """An event stream read on its own thread: `events` holds (arrival time, event) pairs."""

    def __init__(self, port, path):
        super().__init__(daemon=True)
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
        self.conn.connect()
        self.sock = self.conn.sock
        self.conn.request("GET", path, headers={"Accept": "text/event-stream"})
        self.response = self.conn.getresponse()
        if self.response.status != 200:
            raise RuntimeError("event stream %s: %d" % (path, self.response.status))
        self.opened = time.time()
        self.events = []
        self.changed = threading.Condition()
        self.start()

    def run(self):
        try:
            for e in read_events(self.response):
                if e is not None:
                    with self.changed:
                        self.events.append((time.time(), e))
                        self.changed.notify_all()
        except (OSError, ValueError):
            pass  # closed

    def wait(self, pred, timeout):
        """The first (arrival, event) that pred(event) accepts, waiting up to `timeout` s."""
        deadline = time.time() + timeout
        with self.changed:
            seen = 0
            while True:
                for t, e in self.events[seen:]:
                    if pred(e):
                        return t, e
                seen = len(self.events)
                left = deadline - time.time()
                if left <= 0:
                    raise RuntimeError("no such event within %d s" % timeout)
                self.changed.wait(left)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()
        self.join(timeout=10)


def cpu_model():
    with open("/proc/cpuinfo") as f:
        m = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.M)
    return "%s, %d CPUs" % (m.group(1) if m else "unknown CPU", os.cpu_count())


def start_cluster(directory):
    r = subprocess.run([FIXTURE, "start", directory], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=300)
    if r.returncode == 77:
        print("skipped: %s" % r.stderr.strip(), file=sys.stderr)
        sys.exit(77)
    if r.returncode != 0:
        raise RuntimeError("the Slurm fixture did not start:\n" + r.stderr)
    return re.search(r"^export SLURM_CONF=(\S+)$", r.stdout, re.M).group(1)


def one_run(d, jobs, spec):
    """Submits `spec` to daemon `d` (whose /api/v1/events is `jobs`); returns (submit -> running
    in s, the scalar delays in s, the states the job went through)."""
    t0 = time.time()
    status, body = d.call("POST", "/api/v1/jobs", spec)
    if status != 201:
        raise RuntimeError("submit: %d %s" % (status, body))
    jid = body["id"]
    stream = Stream(d.port, "/api/v1/jobs/%s/events" % jid)
    try:
        _, end = jobs.wait(lambda e: e.get("event") == "job" and e["data"].get("id") == jid and
                           e["data"]["state"] in ("completed", "failed", "stopped"), 600)
        if end["data"]["state"] != "completed":
            raise RuntimeError("job %s %s: %s" % (jid, end["data"]["state"],
                                                  end["data"].get("reason")))
        # The job's own stream ends with the same state; every scalar comes before it.
        stream.wait(lambda e: e.get("event") == "state" and e["data"]["state"] == "completed", 60)
    finally:
        stream.close()
    with jobs.changed:
        mine = [(t, e["data"]["state"]) for t, e in jobs.events
                if e.get("event") == "job" and e["data"].get("id") == jid]
    running = [t for t, s in mine if s == "running"]
    if not running:
        raise RuntimeError("job %s: no running state on /api/v1/events: %s" % (jid, mine))
    delays = [t - e["data"]["wall_time"] for t, e in stream.events
              if e.get("event") == "scalar" and e["data"]["wall_time"] >= stream.opened]
    if not delays:
        raise RuntimeError("job %s: no live scalar event" % jid)
    return running[-1] - t0, delays, [s for _, s in mine]


def spread(values, fmt):
    return ("%s [%s-%s]" % (fmt, fmt, fmt)) % (statistics.median(values), min(values),
                                               max(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trainingd", nargs="?", default=os.path.join(ROOT, "build", "daemon",
                                                                 "trainingd"))
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--poll-secs", type=float, default=0.5, help="the Slurm executor's poll_secs")
    args = ap.parse_args()
    trainingd = os.path.abspath(args.trainingd)
    work = tempfile.mkdtemp(prefix="trainingd-slurm-bench-")
    fixture_dir = os.path.realpath(tempfile.mkdtemp(prefix="slb", dir="/tmp"))
    daemons, streams = [], []
    results = {"local": [], "slurm": []}
    failed = {"local": 0, "slurm": 0}
    try:
        conf = start_cluster(fixture_dir)
        job_root = os.path.join(work, "slurm-jobs")
        os.makedirs(job_root)
        local = Daemon(trainingd, os.path.join(work, "local"))
        daemons.append(local)
        slurm = Daemon(trainingd, os.path.join(work, "slurm"), env={"SLURM_CONF": conf},
                       config={"executor": "slurm",
                               "slurm": {"job_root": job_root, "poll_secs": args.poll_secs}})
        daemons.append(slurm)
        executors = [("local", local), ("slurm", slurm)]
        job_streams = {}
        for name, d in executors:
            job_streams[name] = Stream(d.port, "/api/v1/events")
            streams.append(job_streams[name])
        print("CPU: %s; %d steps per run; slurm poll_secs %g" %
              (cpu_model(), args.steps, args.poll_secs), flush=True)
        print("%-5s %-6s %16s %26s  %s" % ("pair", "exec", "submit->running",
                                          "step->event median (n)", "states"), flush=True)
        for pair in range(args.pairs):
            for name, d in executors:
                spec = small_spec("bench-%s-%d" % (name, pair + 1), args.steps,
                                  checkpoint_every=1000, batch_size=500)
                spec["hooks"]["summary"] = {"every_steps": 10}
                try:
                    to_running, delays, states = one_run(d, job_streams[name], spec)
                except RuntimeError as e:
                    failed[name] += 1
                    print("%-5d %-6s failed: %s" % (pair + 1, name, e), flush=True)
                    continue
                results[name].append((to_running, statistics.median(delays)))
                print("%-5d %-6s %13.1f ms %16.1f ms (%5d)  %s" %
                      (pair + 1, name, to_running * 1e3, statistics.median(delays) * 1e3,
                       len(delays), " ".join(states)), flush=True)
    finally:
        for s in streams:
            s.close()
        for d in daemons:
            if d.proc.poll() is None:
                d.stop()
        subprocess.run([FIXTURE, "stop", fixture_dir], stdout=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(fixture_dir, ignore_errors=True)
    print()
    print("CPU: %s" % cpu_model())
    if not any(results.values()):
        sys.exit(1)
    print("%-6s %5s  %-38s %s" % ("exec", "runs", "submit->running, ms: median [min-max]",
                                  "step->event, ms: median of the runs' medians [min-max]"))
    for name, runs in results.items():
        if failed[name]:
            print("%-6s %5d  failed" % (name, failed[name]))
        if runs:
            print("%-6s %5d  %-38s %s" % (name, len(runs),
                                          spread([r[0] * 1e3 for r in runs], "%.1f"),
                                          spread([r[1] * 1e3 for r in runs], "%.1f")))


if __name__ == "__main__":
    main()
