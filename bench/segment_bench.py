#!/usr/bin/env python3
"""What a run segment costs beyond its steps (docs/benchmarks.md#a-run-segments-fixed-cost).

A job that is resumed (a stop and resume, a daemon restart, an ASHA promotion) runs a new
segment: the daemon builds the session, restores the latest checkpoint, saves it again (as
TensorFlow's CheckpointSaverHook does on every session creation), trains, saves a final
checkpoint and evaluates. This trains one job of the tutorial CNN (batch 200, mixed precision
unless --precision says otherwise) on a daemon of its own, then resumes it --segments times for
--steps steps each, back to back (the dataset stays cached), and prints for each segment its wall
time from the resume request to the job's end, the time to its first step's summary and the time
after its last step's, then their medians and ranges.

    bench/segment_bench.py build/daemon/trainingd --segments 4 --steps 10
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("trainingd")
    p.add_argument("--segments", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch", type=int, default=200)
    p.add_argument("--precision", default="mixed_bfloat16", choices=["float32", "mixed_bfloat16"])
    args = p.parse_args()

    root = tempfile.mkdtemp(prefix="segment-bench-")
    with open(os.path.join(root, "config.json"), "w") as f:
        json.dump({"max_concurrent_jobs": 1, "threads_per_job": 2}, f)
    daemon = subprocess.Popen(
        [args.trainingd, "serve", "--listen", "127.0.0.1:0", "--data-dir",
         os.path.join(root, "var"), "--config", os.path.join(root, "config.json")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        m = re.search(r"127\.0\.0\.1:(\d+)", daemon.stdout.readline())
        if not m:
            raise SystemExit("the daemon did not start")
        base = "http://127.0.0.1:%s" % m.group(1)

        def call(method, path, body=None):
            data = json.dumps(body).encode() if body is not None else None
            req = urllib.request.Request(base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as r:
                raw = r.read()
                return json.loads(raw) if raw else None

        def wait(job_id):
            while True:
                job = call("GET", "/api/v1/jobs/" + job_id)
                if job["state"] in ("completed", "failed", "stopped"):
                    if job["state"] != "completed":
                        raise SystemExit("job %s: %s" % (job["state"], job.get("error")))
                    return job
                time.sleep(0.01)

        with open(os.path.join(HERE, "..", "examples", "cnn.json")) as f:
            job = json.load(f)
        job.update(max_steps=args.steps, batch_size=args.batch, precision=args.precision)
        # As the experiments benchmark's trials: a summary every step here, to time the steps.
        job["hooks"] = {"checkpoint": {"every_steps": 1000, "max_to_keep": 1},
                        "summary": {"every_steps": 1}, "logging": {"every_n_iter": 1000},
                        "final_eval": {"split": "validation"}}
        job_id = call("POST", "/api/v1/jobs", job)["id"]
        wait(job_id)
        rows = []
        for i in range(args.segments):
            before = (i + 1) * args.steps
            t0 = time.time()
            call("POST", "/api/v1/jobs/%s/resume" % job_id, {"max_steps": before + args.steps})
            wait(job_id)
            wall = time.time() - t0
            points = call("GET", "/api/v1/jobs/%s/scalars?tag=loss&max_points=100000" % job_id)
            at = {q["step"]: q["wall_time"] - t0 for q in points["points"] if q["step"] > before}
            rows.append((wall, at[before + 1], wall - at[before + args.steps]))
            print("segment %d: %.2f s, first step done at %.2f s, %.2f s after the last step"
                  % ((i + 1,) + rows[-1]), flush=True)
    finally:
        daemon.terminate()
        daemon.wait()
        shutil.rmtree(root, ignore_errors=True)
    for k, name in enumerate(["segment", "to the first step", "after the last step"]):
        v = sorted(r[k] for r in rows)
        print("%s: median %.2f s [%.2f-%.2f]" % (name, statistics.median(v), v[0], v[-1]))


if __name__ == "__main__":
    sys.exit(main())
