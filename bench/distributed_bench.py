#!/usr/bin/python3
"""Data-parallel throughput: the tutorial CNN trained by N ranks x T threads against one process
with all the threads, side by side (A B A B ...), on this machine (docs/benchmarks.md).

    /usr/bin/python3 bench/distributed_bench.py --build build [--steps 220] [--pairs 3]

Each run trains `--steps` steps at batch 50 with a summary every step; its speed is taken from
the event file's wall times between step 20 and the last step (the start-up, data loading and
the first steps' allocations excluded), as examples per second. Prints every run, then the
medians and spreads and the efficiency: (examples/s of the ranks) / (examples/s of one process).
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "tools"))
from read_tfevents import read_events  # noqa: E402


def examples_per_sec(directory, first, batch):
    times = {}
    for path in glob.glob(os.path.join(directory, "events.out.tfevents.*")):
        for e in read_events(path):
            if e.HasField("summary") and any(v.tag == "loss" for v in e.summary.value):
                times[e.step] = e.wall_time
    last = max(times)
    return (last - first) * batch / (times[last] - times[first])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=220)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--model", default="cnn")
    args = ap.parse_args()
    trainingd = os.path.join(args.build, "daemon", "trainingd")
    cores = os.cpu_count()
    work = tempfile.mkdtemp(prefix="trainingd-dp-bench-")
    spec = os.path.join(work, "spec.json")
    batch = 50
    with open(spec, "w") as f:
        json.dump({"name": "bench", "model": args.model, "batch_size": batch,
                   "max_steps": args.steps, "seed": 1,
                   "hooks": {"summary": {"every_steps": 1}, "checkpoint": False,
                             "logging": False, "step_counter": False}}, f)
    configs = [("1 process x %d threads" % cores, ["--workers", "1", "--threads", str(cores)]),
               ("%d ranks x 1 thread" % cores, ["--workers", str(cores), "--threads", "1"])]
    results = {name: [] for name, _ in configs}
    try:
        for pair in range(args.pairs):
            for name, flags in configs:
                d = os.path.join(work, "run")
                shutil.rmtree(d, ignore_errors=True)
                subprocess.run([trainingd, "run", spec, "--checkpoint-dir", d] + flags,
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                eps = examples_per_sec(d, 20, batch)
                results[name].append(eps)
                print("pair %d  %-24s %8.1f examples/s" % (pair + 1, name, eps), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, v in results.items():
        print("%-24s median %8.1f examples/s (min %.1f, max %.1f)" %
              (name, statistics.median(v), min(v), max(v)))
    base, ranks = (statistics.median(results[n]) for n, _ in configs)
    ratios = [r / b for b, r in zip(*(results[n] for n, _ in configs))]
    print("efficiency (ranks / one process): median of medians %.3f; per pair %s" %
          (ranks / base, ", ".join("%.3f" % x for x in ratios)))


if __name__ == "__main__":
    main()
