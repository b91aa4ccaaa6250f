#!/usr/bin/python3
"""Examples to a test accuracy, and examples/s, of one job spec, measured apart.

On a shared machine a wall-clock "time to 0.916" is noise. Its two factors are not:

  curve  trains SPEC once per seed with `trainingd run` and the test split evaluated every
         --eval-every steps (the `evaluation` hook; no checkpoints, summaries or final_eval), and
         prints the first evaluated step whose test accuracy is >= --target, its examples
         (step x batch_size), the test accuracy at every evaluation and the training loss and
         accuracy logged at the same period. Training is deterministic, so
         this is a property of (spec, seed), whatever the load.
  rate   trains SPEC for --steps steps with nothing but the step counter (every --rate-every
         steps) and prints the median of its global_step/sec lines after the first, times the
         batch size: examples/s of the training step alone, as loaded as the machine is. It then
         trains --extra-steps more from scratch and prints extra examples / extra CPU-seconds
         (user + system of `trainingd run`, the data load and set-up cancel out):
         examples_per_cpu_s, which a busy machine's time slicing does not change much (cache and
         memory contention still do). Give several specs to measure them A B A B (--rounds), and
         include the tutorial CNN to convert by the ratio to its rate on an idle machine.

  time_to_target.py curve TRAININGD SPEC [--set PATH=JSON]... [--seeds 1,2,3] [--eval-every N]
                          [--target 0.916] [--stop-at-target] [--threads 2]
  time_to_target.py rate TRAININGD SPEC [SPEC...] [--set PATH=JSON]... [--steps 300]
                          [--extra-steps 100] [--rounds 2] [--threads 2]

--set applies to every spec: `--set batch_size=128`, `--set optimizer.learning_rate.learning_rate=0.004`,
`--set 'model.layers[5].units=512'`. Every run is started under `chrt --idle 0` (a background job
on a shared machine) in a temporary checkpoint directory that is deleted after it. One JSON line
per result on stdout; trainingd's log is on stderr only when a run fails.
"""
import argparse
import copy
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

EVAL = re.compile(r"Evaluation at global step (\d+): .*?test/accuracy = ([0-9.]+)")
TRAIN = re.compile(r"global_step = (\d+), loss = ([0-9.eE+-]+|nan), accuracy = ([0-9.]+)")
RATE = re.compile(r"global_step/sec: ([0-9.]+)")


def set_path(spec, path, value):
    """Sets spec[a][b][i]... for 'a.b[i]...' (the experiments' path syntax)."""
    keys = []
    for part in path.split("."):
        m = re.fullmatch(r"([^\[]+)((?:\[\d+\])*)", part)
        if not m:
            raise SystemExit(f"--set {path}: bad path")
        keys.append(m.group(1))
        keys += [int(i) for i in re.findall(r"\[(\d+)\]", m.group(2))]
    node = spec
    for k in keys[:-1]:
        if isinstance(k, str) and k not in node:
            node[k] = {}
        node = node[k]
    node[keys[-1]] = value


def load(path, sets):
    with open(path) as f:
        spec = json.load(f)
    for s in sets:
        key, _, value = s.partition("=")
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        set_path(spec, key, parsed)
    return spec


def run(trainingd, spec, threads, stop=None):
    """Runs `trainingd run`; stop(line) -> True ends it early (SIGTERM). Returns (lines, secs)."""
    tmp = tempfile.mkdtemp(prefix="ttt-")
    try:
        path = f"{tmp}/spec.json"
        with open(path, "w") as f:
            json.dump(spec, f)
        cmd = ["chrt", "--idle", "0", trainingd, "run", path, "--threads", str(threads),
               "--checkpoint-dir", f"{tmp}/ck"]
        start = time.monotonic()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        lines, stopped = [], False
        for line in p.stderr:
            lines.append(line)
            if stop and stop(line):
                p.terminate()  # trainingd stops at the next step, with a final checkpoint
                stopped = True
                break
        p.wait()
        secs = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        run.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if p.returncode != 0 and not stopped:
            sys.stderr.write("".join(lines))
            raise SystemExit(f"trainingd run failed ({p.returncode})")
        return lines, secs
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def quiet_hooks(spec):
    spec["hooks"] = {"checkpoint": False, "summary": False, "logging": False,
                     "nan_guard": {"fail": True}, "final_eval": False,
                     "step_counter": {"every_steps": 100}}


def curve(a):
    base = load(a.spec, a.set)
    for seed in [int(s) for s in a.seeds.split(",")]:
        spec = copy.deepcopy(base)
        spec["seed"] = seed
        quiet_hooks(spec)
        spec["hooks"]["evaluation"] = {"every_steps": a.eval_every, "split": "test",
                                       "at_end": True}
        spec["hooks"]["logging"] = {"every_n_iter": a.eval_every,
                                    "tensors": ["global_step", "loss", "accuracy"]}
        points, train = [], []

        def stop(line):
            t = TRAIN.search(line)
            if t:
                train.append((int(t.group(1)), float(t.group(2)), float(t.group(3))))
            m = EVAL.search(line)
            if m:
                points.append((int(m.group(1)), float(m.group(2))))
                return a.stop_at_target and points[-1][1] >= a.target
            return False

        _, secs = run(a.trainingd, spec, a.threads, stop)
        first = next((s for s, acc in points if acc >= a.target), None)
        batch = spec.get("batch_size", 32)
        print(json.dumps({
            "spec": a.spec, "set": a.set, "seed": seed, "batch_size": batch,
            "target": a.target, "first_step": first,
            "examples": first * batch if first else None,
            "accuracy_there": dict(points).get(first),
            "best": max((acc for _, acc in points), default=None),
            "last": points[-1] if points else None,
            "curve": points, "train": train, "wall_s": round(secs, 1)}), flush=True)


def rate(a):
    specs = [(p, load(p, a.set)) for p in a.spec]
    for r in range(a.rounds):
        for path, base in specs:
            spec = copy.deepcopy(base)
            quiet_hooks(spec)
            spec["hooks"]["step_counter"] = {"every_steps": a.rate_every}
            spec["max_steps"] = a.steps
            lines, secs = run(a.trainingd, spec, a.threads)
            cpu = run.cpu
            spec["max_steps"] = a.steps + a.extra_steps
            _, secs2 = run(a.trainingd, spec, a.threads)
            cpu2 = run.cpu
            rates = [float(m.group(1)) for m in map(RATE.search, lines) if m][1:]
            batch = spec.get("batch_size", 32)
            med = statistics.median(rates) if rates else float("nan")
            print(json.dumps({
                "spec": path, "set": a.set, "round": r, "batch_size": batch,
                "steps_per_sec": round(med, 2), "examples_per_sec": round(med * batch, 1),
                "samples": [round(x * batch, 1) for x in rates], "wall_s": round(secs, 1),
                "cpu_s": round(cpu, 2), "cpu_s_longer": round(cpu2, 2),
                "examples_per_cpu_s": round(a.extra_steps * batch / (cpu2 - cpu), 1)}),
                flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("mode", choices=["curve", "rate"])
    p.add_argument("trainingd")
    p.add_argument("spec", nargs="+")
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--target", type=float, default=0.916)
    p.add_argument("--stop-at-target", action="store_true")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--extra-steps", type=int, default=100)
    p.add_argument("--rate-every", type=int, default=25)
    p.add_argument("--rounds", type=int, default=2)
    a = p.parse_args()
    if a.mode == "curve":
        if len(a.spec) != 1:
            p.error("curve takes one spec")
        a.spec = a.spec[0]
        curve(a)
    else:
        rate(a)


if __name__ == "__main__":
    main()
