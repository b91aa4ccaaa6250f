#!/usr/bin/python3
"""Ranks that yield their core while they wait (Open MPI's mpi_yield_when_idle), against ranks
that spin, side by side (A B A B), on this machine (docs/benchmarks.md#ranks-that-yield).

    /usr/bin/python3 bench/mpi_yield_bench.py --build build [--model cnn] [--steps 220] [--pairs 5]
                                              [--jobs 1|2]

--jobs 1: one job of `cores` ranks x 1 thread, each rank with a core of its own (what yielding
must not slow down). --jobs 2: two such jobs at once, twice as many ranks as cores (what
yielding is for: each mpirun knows only its own ranks). Each job is
`mpirun --mca mpi_yield_when_idle 0|1 -np N trainingd run SPEC --threads 1`; its speed comes from
its event file's wall times from step 20 on (distributed_bench.py). Prints every run, then the
medians and spreads of the jobs' summed examples/s.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from distributed_bench import examples_per_sec  # noqa: E402

MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader,tcp",
          "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--steps", type=int, default=220)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=1, choices=(1, 2))
    args = ap.parse_args()
    trainingd = os.path.abspath(os.path.join(args.build, "daemon", "trainingd"))
    ranks = os.cpu_count()
    batch = 50
    work = tempfile.mkdtemp(prefix="trainingd-yield-bench-")
    spec = os.path.join(work, "spec.json")
    with open(spec, "w") as f:
        json.dump({"name": "bench", "model": args.model, "batch_size": batch,
                   "max_steps": args.steps, "seed": 1,
                   "hooks": {"summary": {"every_steps": 1}, "checkpoint": False,
                             "logging": False, "step_counter": False}}, f)
    mpirun = MPIRUN + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    results = {"spin": [], "yield": []}
    try:
        for pair in range(args.pairs):
            for mode in ("spin", "yield"):
                procs, dirs = [], []
                for job in range(args.jobs):
                    d = os.path.join(work, "run%d" % job)
                    shutil.rmtree(d, ignore_errors=True)
                    dirs.append(d)
                    procs.append(subprocess.Popen(
                        mpirun + ["--mca", "mpi_yield_when_idle", "1" if mode == "yield" else "0",
                                  "-np", str(ranks), trainingd, "run", spec, "--threads", "1",
                                  "--checkpoint-dir", d],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
                for p in procs:
                    if p.wait() != 0:
                        raise SystemExit("a job exited %d" % p.returncode)
                eps = [examples_per_sec(d, 20, batch) for d in dirs]
                results[mode].append(sum(eps))
                print("pair %d  %-5s %s examples/s" % (pair + 1, mode,
                                                       " + ".join("%.1f" % e for e in eps)),
                      flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%s, %d job(s) of %d ranks x 1 thread on %d cores:" % (args.model, args.jobs, ranks,
                                                                 os.cpu_count()))
    for mode, v in results.items():
        print("  %-5s median %9.1f examples/s (min %.1f, max %.1f)" %
              (mode, statistics.median(v), min(v), max(v)))
    print("  yield / spin: %.3f" % (statistics.median(results["yield"]) /
                                    statistics.median(results["spin"])))


if __name__ == "__main__":
    main()
