"""The best model, not the last, and cross-validation, end to end against a daemon this test
starts (docs/models.md#which-checkpoint, docs/experiments.md#cross-validation).

1. A softmax job on Fashion-MNIST with a learning rate so high that its validation loss jumps
   about, evaluated every 5 steps, max_to_keep 1: its answer names its best checkpoint, which is
   not its last step and is still on disk; the export route, `trainingd export` of its directory
   and the model server take that step by default (the route's headers, the file's metadata, the
   model's metadata and an inference's model_version say so), and `latest` still takes the last
   one.
2. A 3-fold cross-validation of a softmax over HTTP: three trials, one per fold, and the
   experiment's answer has each fold's metric (its trial's), their mean and sample standard
   deviation.

usage: best_model_test.py TRAININGD
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import onnx

from trainingd_e2e import Daemon, expect

TRAININGD = sys.argv[1]


def noisy_job():
    return {"name": "noisy", "model": "softmax", "max_steps": 60, "batch_size": 20, "seed": 3,
            "dataset": {"name": "fashion-mnist", "validation_size": 300,
                        "max_train_examples": 1000, "max_test_examples": 200},
            "optimizer": {"type": "sgd", "learning_rate": 2.0},
            "hooks": {"checkpoint": {"every_steps": 10, "max_to_keep": 1},
                      "evaluation": {"every_steps": 5, "split": "validation"},
                      "logging": {"enabled": False}}}


def best_model(d, data_dir, tmp):
    status, job = d.call("POST", "/api/v1/jobs", noisy_job())
    expect(status == 201, (status, job))
    job_id = job["id"]
    done = d.wait_state(job_id, {"completed", "failed"})
    expect(done["state"] == "completed", done)
    best = done["best_checkpoint"]
    expect(best is not None and best["metric"] == "validation/loss" and best["mode"] == "min",
           done)
    step = best["step"]
    expect(step != 60, "the test needs a job whose best evaluation is not its last: %r" % best)
    # max_to_keep 1 tracks the last one only; the best stays on disk beside it.
    status, ckpts = d.call("GET", "/api/v1/jobs/%s/checkpoints" % job_id)
    expect(status == 200 and [c["global_step"] for c in ckpts["checkpoints"]] == [60], ckpts)
    job_dir = os.path.join(data_dir, "jobs", job_id)
    expect(os.path.exists(os.path.join(job_dir, "model.ckpt-%d" % step)), os.listdir(job_dir))

    # The export route: the best by default, latest on request; the headers and the file say so.
    status, body, r = d.request("GET", "/api/v1/jobs/%s/model?format=onnx" % job_id)
    expect(status == 200, (status, body))
    expect(r.getheader("X-Trainingd-Checkpoint-Step") == str(step) and
           r.getheader("X-Trainingd-Checkpoint") == "best", r.getheaders())
    expect(("%s-step%d.onnx" % (job_id, step)) in r.getheader("Content-Disposition"),
           r.getheaders())
    status, body, r = d.request("GET", "/api/v1/jobs/%s/model?checkpoint=latest" % job_id)
    expect(status == 200 and r.getheader("X-Trainingd-Checkpoint-Step") == "60", r.getheaders())
    status, err = d.call("GET", "/api/v1/jobs/%s/model?checkpoint=first" % job_id)
    expect(status == 400 and err["error"]["field"] == "checkpoint", (status, err))

    # `trainingd export` of the job's directory takes the same.
    out = os.path.join(tmp, "best.onnx")
    p = subprocess.run([TRAININGD, "export", job_dir, "-o", out], capture_output=True, text=True)
    expect(p.returncode == 0 and "at global step %d, its best checkpoint" % step in p.stdout,
           (p.returncode, p.stdout, p.stderr))
    meta = {m.key: m.value for m in onnx.load(out).metadata_props}
    expect(meta["step"] == str(step) and meta["checkpoint"] == "best", meta)
    p = subprocess.run([TRAININGD, "export", job_dir, "--checkpoint", "latest", "-o", out],
                       capture_output=True, text=True)
    expect(p.returncode == 0 and "at global step 60, its latest checkpoint" in p.stdout,
           (p.returncode, p.stdout, p.stderr))
    p = subprocess.run([TRAININGD, "export", job_dir, "--checkpoint", "worst", "-o", out],
                       capture_output=True, text=True)
    expect(p.returncode == 2 and "--checkpoint" in p.stderr, (p.returncode, p.stderr))

    # The model server: the best by default, its versions list it, latest on request.
    status, m = d.call("GET", "/v2/models/%s" % job_id)
    expect(status == 200 and m["parameters"]["version"] == str(step) and
           m["parameters"]["checkpoint"] == "best" and
           m["parameters"]["best_version"] == str(step) and str(step) in m["versions"], m)
    row = {"name": "input", "shape": [1, 28, 28, 1], "datatype": "UINT8", "data": [0] * 784}
    status, r = d.call("POST", "/v2/models/%s/infer" % job_id, {"inputs": [row]})
    expect(status == 200 and r["model_version"] == str(step), (status, r))
    status, r = d.call("POST", "/v2/models/%s/versions/latest/infer" % job_id, {"inputs": [row]})
    expect(status == 200 and r["model_version"] == "60", (status, r))
    print("best model: step %d of 60 (validation/loss %.4f) exported and served" %
          (step, best["value"]))


def cross_validation(d):
    spec = {"name": "cv",
            "base_job": {"name": "t", "model": "softmax", "max_steps": 30, "batch_size": 50,
                         "seed": 1,
                         "dataset": {"name": "fashion-mnist", "max_train_examples": 900,
                                     "max_test_examples": 200, "split_seed": 5},
                         "optimizer": {"type": "adam", "learning_rate": 0.003},
                         "hooks": {"checkpoint": {"every_steps": 1000},
                                   "evaluation": {"every_steps": 1000, "split": "validation"},
                                   "logging": {"enabled": False}}},
            "searcher": {"name": "cross_validation", "folds": 3, "metric": "validation/accuracy",
                         "mode": "max", "max_concurrent_trials": 2}}
    status, e = d.call("POST", "/api/v1/experiments", spec)
    expect(status == 201 and e["searcher"] == "cross_validation" and e["max_trials"] == 3,
           (status, e))
    status, bad = d.call("POST", "/api/v1/experiments", dict(spec, space={
        "optimizer.learning_rate": {"type": "log", "min": 0.001, "max": 0.1}}))
    expect(status == 400 and bad["error"]["field"] == "space", (status, bad))
    deadline = time.time() + 300
    while time.time() < deadline:
        status, e = d.call("GET", "/api/v1/experiments/%s" % e["id"])
        if e["state"] not in ("running", "stopping"):
            break
        time.sleep(0.2)
    expect(e["state"] == "completed", e)
    status, page = d.call("GET", "/api/v1/experiments/%s/trials" % e["id"])
    trials = sorted(page["trials"], key=lambda t: t["index"])
    expect([t["hyperparameters"] for t in trials] ==
           [{"dataset.fold": i} for i in range(3)], trials)
    cv = e["cross_validation"]
    metrics = [t["metric"] for t in trials]
    expect(cv["folds"] == 3 and cv["folds_done"] == 3 and cv["fold_metrics"] == metrics, (cv, metrics))
    expect(abs(cv["mean"] - statistics.mean(metrics)) < 1e-12 and
           abs(cv["std"] - statistics.stdev(metrics)) < 1e-12, (cv, metrics))
    print("cross-validation: %s mean %.4f std %.4f" % (metrics, cv["mean"], cv["std"]))


def main():
    tmp = tempfile.mkdtemp(prefix="trainingd-best-model-")
    try:
        data_dir = os.path.join(tmp, "var")
        d = Daemon(TRAININGD, data_dir, config={"threads_per_job": 1})
        try:
            best_model(d, data_dir, tmp)
            cross_validation(d)
        finally:
            code, log = d.stop()
        expect(code == 0, log)
        print("best_model_test: OK")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
