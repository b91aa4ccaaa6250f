#!/usr/bin/python3
"""Soak: `trainingd serve` under steady mixed load for a given time, sampling its RSS, open file
descriptors and threads (issue 11, item 7; numbers in docs/benchmarks.md#soak).

  /usr/bin/python3 bench/soak.py --build build --minutes 30 [--warmup-minutes 5]
      [--sse-clients 100] [--csv soak.csv]

The load, all at once for the whole run:
- two jobs training at all times (--max-concurrent-jobs 2), with a third queued: small MLP jobs
  recording scalars every 10 steps, logging and checkpointing; as jobs end, new ones are
  submitted, and every few seconds a random job is stopped, resumed or (once ended) deleted, so
  jobs come and go through every state;
- wrk (Debian's, `tools/install-deps.sh bench`) on the API: the job list, one job, its scalars,
  /healthz and /metrics in turn, over 8 keep-alive connections;
- --sse-clients event-stream clients (asyncio) that each follow the job list's stream or a
  random job's for 1-10 s, hang up and reconnect, half of them with Last-Event-ID.

Every 10 s it samples the daemon's VmRSS, its open descriptors (/proc/PID/fd) and threads
(/proc/PID/task). RSS swings by the memory of the jobs running at the moment of a sample, so the
verdict compares medians over windows of --window-minutes (5): the first window after the
warm-up against the last window of the run (growth must stay under 10%). Descriptors must be
flat: the last window's within the first window's range, give or take the files of two jobs.
Exit 0 if both hold, the daemon never answered 5xx and is still healthy at the end; 1 otherwise.
"""
import argparse
import asyncio
import csv
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_bench import call, start_daemon  # noqa: E402

ENDED = {"completed", "failed", "stopped"}

WRK_SCRIPT = """
paths = {"/api/v1/jobs", "/api/v1/jobs/%(job)s", "/api/v1/jobs/%(job)s/scalars?tag=loss",
         "/healthz", "/metrics", "/api/v1/jobs?state=completed&limit=5"}
i = 0
request = function()
  i = i %% #paths + 1
  return wrk.format("GET", paths[i])
end
"""


def soak_job(n):
    return {"name": "soak-%d" % n, "model": "mlp", "max_steps": 3000, "batch_size": 50,
            "seed": n,
            "dataset": {"name": "fashion-mnist", "validation_size": 1000,
                        "max_train_examples": 10000, "max_test_examples": 1000},
            "hooks": {"summary": {"every_steps": 10}, "logging": {"every_n_iter": 100},
                      "checkpoint": {"every_steps": 500, "max_to_keep": 2},
                      "evaluation": {"every_steps": 1000}}}


def sample(pid):
    with open("/proc/%d/status" % pid) as f:
        rss_kb = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
    return {"rss_mib": rss_kb / 1024, "fds": len(os.listdir("/proc/%d/fd" % pid)),
            "threads": len(os.listdir("/proc/%d/task" % pid))}


class Churn:
    """Keeps two jobs training and one queued; stops, resumes and deletes jobs at random."""

    def __init__(self, port, stop_at):
        self.port, self.stop_at = port, stop_at
        self.counts = {"submitted": 0, "stopped": 0, "resumed": 0, "deleted": 0, "errors": 0}
        self.active = []  # ids of jobs not deleted
        self.keep = set()  # never deleted: wrk asks for it
        self.lock = threading.Lock()
        self.n = 0

    def ids(self):
        with self.lock:
            return list(self.active)

    def run(self):
        rng = random.Random(1)
        while time.time() < self.stop_at:
            try:
                self.step(rng)
            except (urllib.error.URLError, OSError, ValueError) as e:
                self.counts["errors"] += 1
                print("churn: %s" % e, file=sys.stderr)
            time.sleep(2)

    def step(self, rng):
        jobs = {j["id"]: j for j in call(self.port, "GET", "/api/v1/jobs?limit=1000")["jobs"]}
        live = [j for j in jobs.values() if j["state"] not in ENDED]
        while len(live) < 3:
            self.n += 1
            job = call(self.port, "POST", "/api/v1/jobs", soak_job(self.n))
            with self.lock:
                self.active.append(job["id"])
            live.append(job)
            self.counts["submitted"] += 1
        roll = rng.random()
        running = [j for j in jobs.values() if j["state"] == "running"]
        ended = [j for j in jobs.values() if j["state"] in ENDED]
        try:
            if roll < 0.15 and running:
                call(self.port, "POST", "/api/v1/jobs/%s/stop" % rng.choice(running)["id"], {})
                self.counts["stopped"] += 1
            elif roll < 0.25 and any(j["state"] == "stopped" for j in ended):
                stopped = [j for j in ended if j["state"] == "stopped"]
                call(self.port, "POST", "/api/v1/jobs/%s/resume" % rng.choice(stopped)["id"], {})
                self.counts["resumed"] += 1
        except urllib.error.HTTPError as e:
            if e.code != 409:  # the job moved on since the list was read
                raise
        # Keep the six newest ended jobs; delete the rest.
        ended.sort(key=lambda j: j["created_at"])
        for victim in [j["id"] for j in ended[:-6] if j["id"] not in self.keep]:
            try:
                call(self.port, "DELETE", "/api/v1/jobs/" + victim)
            except urllib.error.HTTPError as e:
                if e.code != 409:  # resumed meanwhile
                    raise
            with self.lock:
                if victim in self.active:
                    self.active.remove(victim)
            self.counts["deleted"] += 1


async def sse_client(port, churn, stop_at, stats, rng):
    last_ids = {}
    while time.time() < stop_at:
        ids = churn.ids()
        path = "/api/v1/events" if rng.random() < 0.3 or not ids else \
            "/api/v1/jobs/%s/events" % rng.choice(ids)
        headers = "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n" % (
            path, port)
        if path in last_ids and rng.random() < 0.5:
            headers += "Last-Event-ID: %d\r\n" % last_ids[path]
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write((headers + "\r\n").encode())
            await writer.drain()
            status = await asyncio.wait_for(reader.readline(), 10)
            if b" 200 " not in status:
                stats["bad_status"] += 1
                if status[9:10] == b"5":
                    stats["5xx"] += 1
            stats["connections"] += 1
            end = min(stop_at, time.time() + rng.uniform(1, 10))
            while time.time() < end:
                try:
                    line = await asyncio.wait_for(reader.readline(), end - time.time())
                except asyncio.TimeoutError:
                    break
                if not line:
                    break
                if line.startswith(b"id: "):
                    last_ids[path] = int(line[4:])
                    stats["events"] += 1
            writer.close()
        except (OSError, asyncio.TimeoutError, ValueError):
            stats["errors"] += 1
            await asyncio.sleep(0.5)


def run_sse(port, churn, clients, stop_at, stats):
    async def main():
        await asyncio.gather(*(sse_client(port, churn, stop_at, stats, random.Random(i))
                               for i in range(clients)))
    asyncio.run(main())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--warmup-minutes", type=float, default=5)
    ap.add_argument("--window-minutes", type=float, default=5)
    ap.add_argument("--sse-clients", type=int, default=100)
    ap.add_argument("--csv", default="")
    args = ap.parse_args()
    trainingd = os.path.join(args.build, "daemon", "trainingd")
    tmp = tempfile.mkdtemp(prefix="trainingd-soak-")
    proc, port = start_daemon(trainingd, os.path.join(tmp, "data"), "--max-concurrent-jobs", "2")
    start = time.time()
    stop_at = start + args.minutes * 60
    churn = Churn(port, stop_at)
    churn.step(random.Random(0))  # the first jobs, so wrk has one to ask for
    churn.keep.add(churn.ids()[0])
    script = os.path.join(tmp, "soak.lua")
    with open(script, "w") as f:
        f.write(WRK_SCRIPT % {"job": churn.ids()[0]})
    wrk = subprocess.Popen(["wrk", "-t1", "-c8", "-d%ds" % int(args.minutes * 60), "-s", script,
                            "http://127.0.0.1:%d" % port], stdout=subprocess.PIPE, text=True)
    sse_stats = {"connections": 0, "events": 0, "errors": 0, "bad_status": 0, "5xx": 0}
    threads = [threading.Thread(target=churn.run, daemon=True),
               threading.Thread(target=run_sse, daemon=True,
                                args=(port, churn, args.sse_clients, stop_at, sse_stats))]
    for t in threads:
        t.start()
    samples = []
    while time.time() < stop_at:
        s = sample(proc.pid)
        s["minute"] = (time.time() - start) / 60
        samples.append(s)
        print("%5.1f min  RSS %7.1f MiB  fds %4d  threads %3d  jobs %s  sse %s" % (
            s["minute"], s["rss_mib"], s["fds"], s["threads"], churn.counts, sse_stats),
            flush=True)
        time.sleep(min(10, max(0, stop_at - time.time())))
    wrk_out, _ = wrk.communicate(timeout=60)
    for t in threads:
        t.join(timeout=60)
    healthy = call(port, "GET", "/healthz")
    proc.terminate()
    proc.wait(timeout=120)

    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["minute", "rss_mib", "fds", "threads"])
            w.writeheader()
            w.writerows(samples)
    after = [s for s in samples if s["minute"] >= args.warmup_minutes]
    first = [s for s in after if s["minute"] < args.warmup_minutes + args.window_minutes]
    last = [s for s in after if s["minute"] >= args.minutes - args.window_minutes]

    def rss(window):
        return statistics.median(s["rss_mib"] for s in window)

    def span(window, key):
        return "%d-%d" % (min(s[key] for s in window), max(s[key] for s in window))

    growth = rss(last) / rss(first) - 1
    m = re.search(r"Requests/sec:\s+([\d.]+)", wrk_out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", wrk_out)
    print("wrk: %s requests/s, %s non-2xx; %s" % (
        m.group(1) if m else "?", non2xx.group(1) if non2xx else 0,
        " ".join(wrk_out.split("\n")[3:5]).strip()))
    print("jobs: %s; event streams: %s" % (churn.counts, sse_stats))
    print("RSS after warm-up (medians of %g-minute windows): first %.1f MiB, last %.1f MiB "
          "(%+.1f%%); lowest %.1f / %.1f MiB, highest %.1f / %.1f MiB" % (
              args.window_minutes, rss(first), rss(last), 100 * growth,
              min(s["rss_mib"] for s in first), min(s["rss_mib"] for s in last),
              max(s["rss_mib"] for s in first), max(s["rss_mib"] for s in last)))
    print("descriptors after warm-up: first window %s, last window %s; threads %s" % (
        span(first, "fds"), span(last, "fds"), span(after, "threads")))
    # Flat: the last window's descriptors within the range of the first, give or take the files
    # of two jobs (log, event file, a checkpoint being written).
    fds_flat = max(s["fds"] for s in last) <= max(s["fds"] for s in first) + 6
    ok = (growth < 0.10 and fds_flat and healthy.get("status") == "ok" and
          not (non2xx and int(non2xx.group(1))) and sse_stats["5xx"] == 0)
    print("verdict: %s (RSS growth %+.1f%% < 10%%: %s; descriptors flat: %s; healthy: %s)" % (
        "ok" if ok else "FAILED", 100 * growth, growth < 0.10, fds_flat, healthy))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
