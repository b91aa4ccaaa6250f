#!/usr/bin/python3
"""The admission memory estimate against the peak RSS of real runs (issue 11, item 1).

  memory_estimate_test.py TRAININGD EXAMPLES_DIR

For each tutorial model (examples/softmax.json, mlp.json, cnn.json on Fashion-MNIST), a short
run that still touches everything the estimate counts -- the dataset load, training steps, a
checkpoint save, an evaluation over the validation split and the final test evaluation -- is timed
by `trainingd run`, and its peak resident set (getrusage's ru_maxrss of the child) is compared with
the estimate `trainingd validate` prints for the same spec. The estimate must be within 30% of
the measured peak. Prints one line per model (the numbers in docs/benchmarks.md come from here).
Release builds only: a sanitizer's shadow memory is not the job's.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

TRAININGD, EXAMPLES = sys.argv[1], sys.argv[2]
TOLERANCE = 0.30


def short_spec(model):
    with open(os.path.join(EXAMPLES, model + ".json")) as f:
        spec = json.load(f)
    spec["max_steps"] = 120
    hooks = spec["hooks"]
    hooks["checkpoint"]["every_steps"] = 50
    hooks["evaluation"]["every_steps"] = 100
    return spec


def estimate(spec_path):
    out = subprocess.run([TRAININGD, "validate", spec_path], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        raise AssertionError("validate failed: " + out.stdout + out.stderr)
    m = re.search(r"memory \(estimated peak\): .*?\((\d+) bytes\)", out.stdout)
    if not m:
        raise AssertionError("no memory estimate in: " + out.stdout)
    return int(m.group(1))


def peak_rss(spec_path, checkpoint_dir):
    proc = subprocess.Popen([TRAININGD, "run", spec_path, "--checkpoint-dir", checkpoint_dir],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if proc.returncode != 0 or "completed at global step 120" not in err:
        raise AssertionError("run failed (%d): %s" % (proc.returncode, err[-2000:]))
    return usage.ru_maxrss * 1024  # KiB on Linux


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in ("softmax", "mlp", "cnn"):
            path = os.path.join(tmp, model + ".json")
            with open(path, "w") as f:
                json.dump(short_spec(model), f)
            est = estimate(path)
            rss = peak_rss(path, os.path.join(tmp, model + "-ckpt"))
            off = (est - rss) / rss
            print("%-8s estimate %7.1f MiB  peak RSS %7.1f MiB  estimate %+.1f%%" %
                  (model, est / 2**20, rss / 2**20, 100 * off))
            if abs(off) > TOLERANCE:
                failures.append("%s: estimate %d bytes is %+.1f%% of the peak RSS %d" %
                                (model, est, 100 * off, rss))
    if failures:
        print("FAILED:\n" + "\n".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
