#!/usr/bin/env python3
"""Hyperparameter search against the default spec, at equal total steps (issue 25's benchmark,
docs/benchmarks.md#hyperparameter-search).

Three arms, each over several seeds, one trial at a time on a daemon of its own:
  default  the base job alone, for the whole budget
  random   random search: trials of --max-steps steps, as many as the budget holds
  asha     ASHA: rungs from --min-steps to --max-steps, eta --eta, as many trials as the budget
           holds
  asha-brackets  the same in --brackets brackets (Determined's adaptive ASHA; not in the
           default --arms)
Every job of every arm evaluates the test split every --eval-every steps (its evaluation hook,
with at_end false), as an oracle that nothing decides on, and the validation split at the end of
each run segment (final_eval): the searchers' metric, validation/accuracy, is read there. Rungs
that are multiples of --eval-every have the test split evaluated at their last step; the others
have none (an evaluation there would be the oracle's cost, paid by ASHA's short rungs only).

The space (--space): lr-dropout searches the learning rate (log, --lr-min to --lr-max) and the
CNN's dropout rate; schedule also searches the batch size (50, 100 or 200) and an exponential
decay of the learning rate (every --decay-steps steps, decay_rate 0.1 to 1), with the base job's
rate as a schedule that does not decay.

Reported per arm and seed: the wall time until any trial's checkpoint has at least --target test
accuracy; the test accuracy of the validation-best model at the end; the steps used; the peak
checkpoint disk. Then the best configuration ASHA found is trained from scratch as a plain job on
a daemon of its own, stopped once it reaches --target, and the wall time to it is printed, the
test evaluations every --eval-every steps included; then trained again to the step where it
reached --target with the one evaluation there (training is deterministic, so the accuracy there
is the same, which is checked), which times the training alone. --retrain FILE does only that,
for the ASHA arms' best configurations in a FILE an earlier run wrote with --out (to time them
again on another build; pass the options that run had). --until-target stops each search once a
trial reaches --target: with one trial at a time the searcher decides the same up to there, and
the time to it is all that run measures.
--curves FILE trains each configuration in FILE once from scratch and prints its test curve and
where it first reaches --target: what a configuration costs to get there, whatever found it
(bench/curves_cnn.json: seed 2's best at three batch sizes, and with half the dense layer).

    bench/experiments_bench.py build/daemon/trainingd     # the CNN, 3 seeds (docs/benchmarks.md)
    bench/experiments_bench.py build/daemon/trainingd --model softmax --target 0.8 \\
        --budget 600 --min-steps 25 --max-steps 200 --eval-every 25 --seeds 1   # a smoke run
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
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


class Daemon:
    def __init__(self, trainingd, data_dir, threads):
        config = os.path.join(os.path.dirname(data_dir), "bench.json")
        with open(config, "w") as f:
            json.dump({"max_concurrent_jobs": 1, "threads_per_job": threads}, f)
        self.proc = subprocess.Popen(
            [trainingd, "serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir,
             "--config", config], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        m = re.search(r"127\.0\.0\.1:(\d+)", self.proc.stdout.readline())
        if not m:
            raise SystemExit("the daemon did not start")
        self.base = "http://127.0.0.1:%s" % m.group(1)

    def call(self, method, path, body=None):
        data = json.dumps(body if body is not None else {}).encode() if method == "POST" else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                raw = r.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raise SystemExit("%s %s: %d %s" % (method, path, e.code, e.read().decode()))

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=120)


def base_job(args):
    if args.model == "cnn":
        with open(os.path.join(HERE, "..", "examples", "cnn.json")) as f:
            job = json.load(f)
    else:
        job = {"name": args.model, "model": args.model, "batch_size": 50, "seed": 42,
               "dataset": {"name": "fashion-mnist", "validation_size": 5000},
               "optimizer": {"type": "adam", "learning_rate": 1e-3}}
    if args.space == "schedule":
        # The same job with its learning rate as a schedule that searches can decay: at
        # decay_rate 1 it is the constant rate it was.
        job["optimizer"]["learning_rate"] = {
            "type": "exponential_decay", "learning_rate": job["optimizer"]["learning_rate"],
            "decay_steps": args.decay_steps, "decay_rate": 1.0}
    if args.precision:
        job["precision"] = args.precision
    # The oracle (the test split) only every --eval-every steps, not again at the end of each
    # run segment: at_end would add an evaluation of 10,000 examples to every ASHA trial that
    # stops at a rung between them, a cost of the oracle and not of the search.
    job["hooks"] = {"checkpoint": {"every_steps": 1000, "max_to_keep": 1},
                    "summary": {"every_steps": 100}, "logging": {"every_n_iter": 1000},
                    "evaluation": {"every_steps": args.eval_every, "split": "test",
                                   "at_end": False},
                    "final_eval": {"split": "validation"}}
    return job


def space(args):
    lr = {"type": "log", "min": args.lr_min, "max": args.lr_max}
    if args.space == "lr-dropout":
        s = {"optimizer.learning_rate": lr}
    else:
        s = {"optimizer.learning_rate.learning_rate": lr,
             "optimizer.learning_rate.decay_rate": {"type": "double", "min": 0.1, "max": 1.0},
             "batch_size": {"type": "categorical", "values": [50, 100, 200]}}
    if args.model == "cnn":
        s["model.layers[6].rate"] = {"type": "double", "min": 0.0, "max": 0.6}
    return s


def test_points(d, job_id):
    """(wall_time, step, test accuracy) of each of the job's test evaluations."""
    body = d.call("GET", "/api/v1/jobs/%s/scalars?tag=test/accuracy&max_points=100000" % job_id)
    return [(p["wall_time"], p["step"], p["value"]) for p in body["points"]]


def first_reaching(points, target, t0):
    """(seconds since t0, step) of the first point at or above target, or (None, None)."""
    hits = [(w - t0, s) for (w, s, v) in points if v >= target]
    return min(hits) if hits else (None, None)


def wait_job(d, job_id, files=None):
    """The job once it has ended, and the most bytes `files` held while it ran."""
    peak = 0
    while True:
        job = d.call("GET", "/api/v1/jobs/" + job_id)
        if files:
            peak = max(peak, dir_bytes(files))
        if job["state"] in ("completed", "failed", "stopped"):
            return job, peak
        time.sleep(0.5)


def dir_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


def run_default(d, args, seed, data_dir):
    """The base job alone for the whole budget."""
    job = dict(base_job(args), seed=seed, max_steps=args.budget, name="default-%d" % seed)
    t0 = time.time()
    info = d.call("POST", "/api/v1/jobs", job)
    end, peak = wait_job(d, info["id"], os.path.join(data_dir, "jobs", info["id"]))
    points = test_points(d, info["id"])
    return {"to_target_s": first_reaching(points, args.target, t0)[0],
            "final_test": points[-1][2] if points else None, "steps": end["global_step"],
            "peak_disk_bytes": peak, "wall_s": time.time() - t0}


def run_search(d, args, seed, searcher):
    brackets = searcher == "asha-brackets"
    if brackets:
        searcher = "asha"
    spec = {"name": "%s-%d" % (searcher, seed),
            "base_job": dict(base_job(args), max_steps=args.max_steps), "space": space(args),
            "searcher": {"name": searcher, "metric": "validation/accuracy", "mode": "max",
                         "max_concurrent_trials": 1, "max_steps": args.max_steps, "seed": seed,
                         "max_trials": 100000},
            "budget": {"max_steps": args.budget}, "keep_best": 1}
    if searcher == "asha":
        spec["searcher"].update({"min_steps": args.min_steps, "reduction_factor": args.eta})
    if brackets:
        spec["searcher"]["brackets"] = args.brackets
    t0 = time.time()
    exp = d.call("POST", "/api/v1/experiments", spec)
    stopped_at_target = False
    asked = {}
    while True:
        e = d.call("GET", "/api/v1/experiments/" + exp["id"])
        if e["state"] in ("completed", "failed", "stopped"):
            break
        if args.until_target and reached(d, exp["id"], args.target, asked):
            d.call("POST", "/api/v1/experiments/%s/stop" % exp["id"])
            stopped_at_target = True
        time.sleep(1)
    trials = d.call("GET", "/api/v1/experiments/%s/trials?limit=1000" % exp["id"])["trials"]
    reach = [(first_reaching(test_points(d, t["job_id"]), args.target, t0), t["index"])
             for t in trials]
    reach = [(r[0], r[1], i) for (r, i) in reach if r[0] is not None]
    best = e["best"]
    best_test = None
    if best:
        pts = test_points(d, best["job_id"])
        at = [v for (_, s, v) in pts if s == best["step"]]
        best_test = at[-1] if at else None
    first = min(reach) if reach else None
    return {"to_target_s": first and first[0], "target_trial": first and first[2],
            "target_step": first and first[1], "stopped_at_target": stopped_at_target,
            "final_test": best_test, "steps": e["steps_used"],
            "peak_disk_bytes": e["peak_disk_bytes"], "wall_s": time.time() - t0,
            "trials": e["trials_started"], "best": best and best["hyperparameters"],
            "best_validation": best and best["metric"],
            # Each trial's results at its rungs, with the seconds since the search's start when
            # each was recorded: how the searcher ranked the trials, and when.
            "trial_results": [{"index": t["index"], "metrics": t["rung_metrics"],
                               "at_s": [round(w - t0, 1) for w in t.get("rung_recorded_at", [])]}
                              for t in trials]}


def reached(d, experiment_id, target, done):
    """Whether a trial has a test evaluation at or above target. Only the trials that trained
    since the last look are asked again (`done` holds each trial's step when last asked)."""
    trials = d.call("GET", "/api/v1/experiments/%s/trials?limit=1000" % experiment_id)["trials"]
    for t in trials:
        step = t.get("global_step") or 0
        if step == 0 or (done.get(t["index"]) == step and t["state"] != "running"):
            continue
        done[t["index"]] = step
        if any(v >= target for (_, _, v) in test_points(d, t["job_id"])):
            return True
    return False


def configured(args, hyperparameters, name):
    """The base job with a trial's hyperparameters set at their paths."""
    job = base_job(args)
    job["name"] = name
    job["max_steps"] = args.max_steps
    for path, value in hyperparameters.items():
        node, keys = job, re.findall(r"[^.\[\]]+", path)
        for k in keys[:-1]:
            node = node[int(k)] if isinstance(node, list) else node.setdefault(k, {})
        node[keys[-1]] = value
    return job


def train_until(d, job, target):
    """Runs the job, stopped once a test evaluation reaches target (the rest of its steps would
    not change the answer): (seconds from its start to that evaluation, its step, its accuracy,
    the last test accuracy)."""
    info = d.call("POST", "/api/v1/jobs", job)
    while True:
        end = d.call("GET", "/api/v1/jobs/" + info["id"])
        if end["state"] in ("completed", "failed", "stopped"):
            break
        pts = test_points(d, info["id"])
        if any(v >= target for (_, _, v) in pts):
            d.call("POST", "/api/v1/jobs/%s/stop" % info["id"])
            end, _ = wait_job(d, info["id"])
            break
        time.sleep(1)
    pts = test_points(d, info["id"])
    seconds, step = first_reaching(pts, target, end["started_at"])
    at = [v for (_, s, v) in pts if s == step]
    return seconds, step, at[0] if at else None, pts[-1][2] if pts else None


def on_a_new_daemon(args, run):
    """run(d) on a daemon of its own, with nothing loaded before it."""
    root = tempfile.mkdtemp(prefix="experiments-bench-")
    try:
        data_dir = os.path.join(root, "var")
        os.makedirs(data_dir)
        d = Daemon(args.trainingd, data_dir, args.threads)
        try:
            return run(d)
        finally:
            d.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def from_scratch(args, hyperparameters):
    """The best configuration trained as a plain job on a daemon of its own (nothing loaded
    before it), as the trials were: the test split evaluated every --eval-every steps, the wall
    time until it reaches --target, evaluations included. Then, if it did, trained again to
    that step with the one evaluation there: training is deterministic, so it reaches the same
    accuracy at the same step, and the time is the training's and one evaluation's."""
    job = configured(args, hyperparameters, "best-from-scratch")
    seconds, step, value, final = on_a_new_daemon(args, lambda d: train_until(d, job, args.target))
    r = {"to_target_s": seconds, "step": step, "test_at_step": value, "final_test": final}
    if step is not None:
        again_job = configured(args, hyperparameters, "best-to-its-step")
        again_job["max_steps"] = step
        again_job["hooks"]["evaluation"]["every_steps"] = step
        seconds, at, again, _ = on_a_new_daemon(
            args, lambda d: train_until(d, again_job, args.target))
        r.update({"one_evaluation_s": seconds, "one_evaluation_test": again})
        if at != step or again != value:
            r["one_evaluation_s"] = None  # not the same accuracy: say so, do not time it
    return r


def curves(args):
    """--curves: what each configuration needs to reach --target, whatever searched for it.
    Each is trained once, from scratch on a daemon of its own, for --max-steps steps with the test
    split every --eval-every steps (a configuration may set max_steps and
    hooks.evaluation.every_steps itself, to compare batch sizes at equal examples). Prints, per
    configuration, the first test evaluation at --target (seconds from the job's start,
    evaluations included; step; examples) and the whole test curve in thousands of examples."""
    with open(args.curves) as f:
        configurations = json.load(f)
    for hp in configurations:
        job = configured(args, hp, "curve")

        def run(d):
            info = d.call("POST", "/api/v1/jobs", job)
            end, _ = wait_job(d, info["id"])
            return end, test_points(d, info["id"])

        end, points = on_a_new_daemon(args, run)
        batch = job["batch_size"]
        seconds, step = first_reaching(points, args.target, end["started_at"])
        print(json.dumps({
            "configuration": hp, "state": end["state"],
            "first_at_target": None if step is None else {
                "seconds": round(seconds, 1), "step": step, "examples": step * batch},
            "run_s": round(end["finished_at"] - end["started_at"], 1),
            "test_curve": [[s * batch // 1000, v] for (_, s, v) in points]}), flush=True)


def retrain(args):
    with open(args.retrain) as f:
        earlier = json.load(f)
    for arm, rs in earlier.items():
        for r in rs:
            if not arm.startswith("asha") or not r.get("best"):
                continue
            again = from_scratch(args, r["best"])
            print("%s seed %d best %s: from scratch %s (before: %s)" % (
                arm, r["seed"], json.dumps(r["best"]), json.dumps(again),
                json.dumps(r.get("from_scratch"))), flush=True)


def summary(values):
    v = [x for x in values if x is not None]
    if not v:
        return "-"
    return "%.4g (%.4g-%.4g, n=%d)" % (statistics.median(v), min(v), max(v), len(v))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("trainingd")
    p.add_argument("--model", default="cnn", choices=["cnn", "mlp", "softmax"])
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--arms", default="default,random,asha")
    p.add_argument("--budget", type=int, default=20000, help="total steps per arm")
    p.add_argument("--min-steps", type=int, default=500)
    p.add_argument("--max-steps", type=int, default=8000)
    p.add_argument("--eta", type=int, default=4)
    p.add_argument("--brackets", type=int, default=3, help="the asha-brackets arm's brackets")
    p.add_argument("--eval-every", type=int, default=500,
                   help="steps between the test split's evaluations, in every job")
    p.add_argument("--target", type=float, default=0.916)
    p.add_argument("--lr-min", type=float, default=5e-5)
    p.add_argument("--lr-max", type=float, default=5e-3)
    p.add_argument("--space", default="lr-dropout", choices=["lr-dropout", "schedule"],
                   help="lr-dropout: the learning rate (log) and, for the CNN, the dropout rate; "
                   "schedule: also the batch size (50, 100, 200) and an exponential decay of the "
                   "learning rate every --decay-steps steps (decay_rate 0.1 to 1)")
    p.add_argument("--decay-steps", type=int, default=500)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--precision", choices=["float32", "mixed_bfloat16"],
                   help="every job's precision (default: the job spec's, float32)")
    p.add_argument("--out", help="write every result as JSON here")
    p.add_argument("--until-target", action="store_true",
                   help="stop each search once a trial reaches --target (its time is all this "
                   "measures; with one trial at a time the searcher decides the same either way) "
                   "and train no best configuration from scratch")
    p.add_argument("--retrain", metavar="FILE",
                   help="only train the ASHA arms' best configurations in FILE (an earlier --out) "
                   "from scratch, one daemon each")
    p.add_argument("--curves", metavar="FILE",
                   help="only train each configuration in FILE (a JSON list of {path: value}, "
                   "the space's paths or any other) from scratch, one daemon each, and print its "
                   "test curve and when it reaches --target")
    args = p.parse_args()
    if args.retrain:
        return retrain(args)
    if args.curves:
        return curves(args)
    root = tempfile.mkdtemp(prefix="experiments-bench-")
    results = {}
    try:
        for seed in [int(s) for s in args.seeds.split(",")]:
            for arm in args.arms.split(","):
                data_dir = os.path.join(root, "%s-%d" % (arm, seed), "var")
                os.makedirs(data_dir)
                d = Daemon(args.trainingd, data_dir, args.threads)
                try:
                    r = run_default(d, args, seed, data_dir) if arm == "default" else \
                        run_search(d, args, seed, arm)
                finally:
                    d.stop()
                if arm.startswith("asha") and r.get("best") and not args.until_target:
                    r["from_scratch"] = from_scratch(args, r["best"])
                shutil.rmtree(os.path.dirname(data_dir), ignore_errors=True)
                results.setdefault(arm, []).append(dict(r, seed=seed))
                print(json.dumps(dict(r, arm=arm, seed=seed)), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\n| arm | time to %.3f test accuracy (s) | final test accuracy of the validation-best "
          "| steps | peak checkpoint disk (MB) |" % args.target)
    print("|---|---:|---:|---:|---:|")
    for arm, rs in results.items():
        print("| %s | %s | %s | %s | %s |" % (
            arm, summary([r["to_target_s"] for r in rs]), summary([r["final_test"] for r in rs]),
            summary([r["steps"] for r in rs]),
            summary([r["peak_disk_bytes"] / 1e6 for r in rs])))
    for arm in ("asha", "asha-brackets"):
        for r in results.get(arm, []):
            if "from_scratch" in r:
                print("%s seed %d best %s: from scratch %s" % (
                    arm, r["seed"], json.dumps(r["best"]), json.dumps(r["from_scratch"])))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
