#!/usr/bin/python3
"""Two builds of trainingd side by side: the same jobs, A B B A A B ..., on this machine.

    /usr/bin/python3 bench/compare_builds.py OLD_BUILD NEW_BUILD [--rounds 4] [--threads 1,2]
        [--only cnn,mlp,softmax,cnn-busy,softmax-busy] [--openblas-core auto|unset|NAME]

OLD_BUILD and NEW_BUILD are build directories (each with daemon/trainingd), e.g. a worktree of an
older commit built with `cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build
--target trainingd`. Every workload is a `trainingd run` of one of examples/ in the foreground,
timed from start to exit (data loading, evaluations and checkpoints included, as a user sees it):

    cnn           examples/cnn.json, 800 steps
    mlp           examples/mlp.json, 5,000 steps
    softmax       examples/softmax.json, 10,000 steps
    softmax-busy  the same, beside one busy process (`while :; do :; done`)
    cnn-busy      examples/cnn.json, 200 steps, beside one busy process

each at every --threads count. Within a round the two builds run back to back, in alternating
order from round to round, so a drift of the machine's speed falls on both. A build whose engine
runs on OpenBLAS gets the kernels OpenBLAS would pick if it knew this CPU (OPENBLAS_CORETYPE;
0.3.21 falls back to SSE3 ones on CPUs newer than its table). Prints each run, then per workload the medians [min-max] of the wall
times, new / old, and the per-round ratios.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
WORKLOADS = {
    "cnn": ("cnn.json", 800, False),
    "mlp": ("mlp.json", 5000, False),
    "softmax": ("softmax.json", 10000, False),
    "softmax-busy": ("softmax.json", 10000, True),
    "cnn-busy": ("cnn.json", 200, True),
}


def openblas_core():
    """The kernels OpenBLAS 0.3.21 would pick if it knew this CPU. On one newer than its table
    (this machine's Emerald Rapids) it falls back to its SSE3 'Prescott' kernels; builds whose
    engine ran on OpenBLAS (before a06005a), and PyTorch's dense layers, get these instead."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "Cooperlake" if "avx512_bf16" in flags else "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return "Sandybridge" if "avx" in flags else None


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def run_job(build, spec, threads, work, env):
    d = os.path.join(work, "run")
    shutil.rmtree(d, ignore_errors=True)
    t0 = time.monotonic()
    p = subprocess.run([os.path.join(build, "daemon", "trainingd"), "run", spec, "--threads",
                        str(threads), "--checkpoint-dir", d], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, env=env)
    seconds = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit("%s: exit %d\n%s" % (build, p.returncode, p.stderr[-2000:]))
    return seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--openblas-core", default="auto",
                    help="auto (the engine's choice), unset (each build's own), or a name")
    args = ap.parse_args()
    env = dict(os.environ)
    core = {"auto": openblas_core(), "unset": None}.get(args.openblas_core, args.openblas_core)
    if core:
        env["OPENBLAS_CORETYPE"] = core
    builds = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    names = [n for n in args.only.split(",") if n]
    for n in names:
        if n not in WORKLOADS:
            raise SystemExit("unknown workload %r (known: %s)" % (n, ", ".join(WORKLOADS)))
    threads = [int(t) for t in args.threads.split(",")]
    print("%s, %d cores; OpenBLAS kernels: %s" % (cpu_name(), os.cpu_count(),
                                                 core or "each build's own"), flush=True)
    work = tempfile.mkdtemp(prefix="trainingd-compare-builds-")
    times = {}  # (workload, threads) -> {"old": [...], "new": [...]}
    try:
        specs = {}
        for n in names:
            example, steps, _ = WORKLOADS[n]
            with open(os.path.join(ROOT, "examples", example)) as f:
                spec = json.load(f)
            spec["max_steps"] = steps
            specs[n] = os.path.join(work, n + ".json")
            with open(specs[n], "w") as f:
                json.dump(spec, f)
        for r in range(args.rounds):
            order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
            for n in names:
                busy = WORKLOADS[n][2]
                for t in threads:
                    hog = subprocess.Popen(["sh", "-c", "while :; do :; done"]) if busy else None
                    try:
                        for which in order:
                            s = run_job(builds[which], specs[n], t, work, env)
                            times.setdefault((n, t), {"old": [], "new": []})[which].append(s)
                            print("round %d  %-13s %d thread(s)  %-3s %7.2f s" %
                                  (r + 1, n, t, which, s), flush=True)
                    finally:
                        if hog:
                            hog.kill()
                            hog.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print("\n| workload | threads | old (s) | new (s) | new / old | per round |")
    print("|---|---:|---:|---:|---:|---|")
    for (n, t), v in times.items():
        mo, mn = statistics.median(v["old"]), statistics.median(v["new"])
        rounds = ", ".join("%.2f" % (b / a) for a, b in zip(v["old"], v["new"]))
        print("| %s | %d | %.2f [%.2f-%.2f] | %.2f [%.2f-%.2f] | %.3f | %s |" %
              (n, t, mo, min(v["old"]), max(v["old"]), mn, min(v["new"]), max(v["new"]),
               mn / mo, rounds))
    print("\nWall seconds, median [min-max] of %d rounds; new / old < 1 means the new build is "
          "faster." % args.rounds)


if __name__ == "__main__":
    sys.exit(main())
