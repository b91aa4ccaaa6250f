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
import shutil
import statistics
import sys
import tempfile
import time

from experiments_bench import HERE, Daemon


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("trainingd")
    p.add_argument("--segments", type=int, default=4)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch", type=int, default=200)
    p.add_argument("--precision", default="mixed_bfloat16", choices=["float32", "mixed_bfloat16"])
    args = p.parse_args()

    root = tempfile.mkdtemp(prefix="segment-bench-")
    daemon = Daemon(args.trainingd, os.path.join(root, "var"), threads=2)
    call = daemon.call
    try:
        # Polled every 10 ms (experiments_bench's wait_job polls every 0.5 s): the segment's
        # wall time ends at the job's end.
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
        daemon.stop()
        shutil.rmtree(root, ignore_errors=True)
    for k, name in enumerate(["segment", "to the first step", "after the last step"]):
        v = sorted(r[k] for r in rows)
        print("%s: median %.2f s [%.2f-%.2f]" % (name, statistics.median(v), v[0], v[-1]))


if __name__ == "__main__":
    sys.exit(main())
