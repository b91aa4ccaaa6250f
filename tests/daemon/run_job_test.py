#!/usr/bin/python3
"""End-to-end tests of `trainingd run` and `trainingd validate` on real Fashion-MNIST.

  run_job_test.py TRAININGD EXAMPLES_DIR

- A short softmax job runs to completion: its checkpoints, `checkpoint` state file and event
  file are checked, the event file through the independent reader (tests/tools/read_tfevents.py:
  every CRC, every tag at the steps the hooks must write them).
- An MLP job is stopped with SIGINT: it exits 130 after a final checkpoint; the same command
  resumes from that checkpoint and completes.
- A softmax job with resources.time_limit_secs 2 stops after a final checkpoint and exits 124;
  the same command goes on from there, with 2 seconds of its own.
- `validate` accepts every example and names the bad field of a broken spec.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import read_tfevents  # noqa: E402

TRAININGD, EXAMPLES = sys.argv[1], sys.argv[2]
DATA_ROOT = "/usr/share/datasets"


def run(args, **kw):
    return subprocess.run([TRAININGD] + args, capture_output=True, text=True, timeout=300, **kw)


def expect(cond, what, output=""):
    if not cond:
        raise AssertionError(what + ("\n--- output:\n" + output if output else ""))


def write_spec(tmp, name, spec):
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


def completed_job(tmp):
    spec = {
        "name": "softmax-short",
        "dataset": {"name": "fashion-mnist", "validation_size": 1000, "max_train_examples": 6000,
                    "max_test_examples": 2000},
        "model": "softmax",
        "optimizer": {"type": "adam", "learning_rate": 0.001},
        "batch_size": 100,
        "max_steps": 300,
        "seed": 7,
        "hooks": {
            "checkpoint": {"every_steps": 100, "max_to_keep": 3},
            "summary": {"every_steps": 50},
            "step_counter": {"every_steps": 100},
            "logging": {"every_n_iter": 100},
            "evaluation": {"every_steps": 100},
            "final_eval": {"split": "test"},
        },
    }
    path = write_spec(tmp, "softmax", spec)
    ckpt = os.path.join(tmp, "softmax-ckpt")
    r = run(["run", path, "--checkpoint-dir", ckpt, "--data-root", DATA_ROOT])
    out = r.stdout + r.stderr
    expect(r.returncode == 0, "softmax job exit %d" % r.returncode, out)
    expect("completed at global step 300: reached max_steps 300" in out, "completion line", out)
    expect("global_step = 101, loss = " in out, "TF-format logging line", out)
    files = sorted(os.listdir(ckpt))
    # max_to_keep 3 of 0, 100, 200, 300.
    for step in (100, 200, 300):
        expect("model.ckpt-%d" % step in files, "model.ckpt-%d kept" % step, str(files))
    expect("model.ckpt-0" not in files, "model.ckpt-0 deleted by retention", str(files))
    with open(os.path.join(ckpt, "checkpoint")) as f:
        state = f.read()
    expect('model_checkpoint_path: "model.ckpt-300"' in state, "state file", state)

    events_files = [f for f in files if "tfevents" in f]
    expect(len(events_files) == 1, "one event file", str(files))
    events = [read_tfevents.to_dict(e)
              for e in read_tfevents.read_events(os.path.join(ckpt, events_files[0]))]
    expect(events[0].get("file_version") == "brain.Event:2", "version record")
    steps = {}
    for e in events:
        for tag, value in e.get("scalars", {}).items():
            steps.setdefault(tag, []).append(e["step"])
            expect(value == value, "%s at %d is not NaN" % (tag, e["step"]))
    expect(steps["loss"] == [1, 51, 101, 151, 201, 251], "loss steps %r" % steps.get("loss"))
    expect(steps["accuracy"] == steps["loss"] and steps["learning_rate"] == steps["loss"],
           "accuracy/learning_rate with loss")
    expect(steps["validation/loss"] == [100, 200, 300], "validation steps %r" %
           steps.get("validation/loss"))
    expect(steps["validation/accuracy"] == [100, 200, 300], "validation/accuracy")
    expect(steps["test/accuracy"] == [300] and steps["test/loss"] == [300], "final eval")
    expect(steps["global_step/sec"] == [101, 201], "global_step/sec %r" %
           steps.get("global_step/sec"))
    logs = [e for e in events if "session_log" in e]
    expect(logs[0]["session_log"]["status"] == 3 and logs[0]["step"] == 0, "checkpoint log at 0")
    start = [e for e in logs if e["session_log"]["status"] == 1]
    expect(len(start) == 1 and start[0]["step"] == 1, "START at the first step")
    test_acc = [e["scalars"]["test/accuracy"] for e in events
                if "test/accuracy" in e.get("scalars", {})][0]
    expect(0.7 < test_acc < 1.0, "test accuracy %.3f" % test_acc)
    print("completed job: %d events read back, every CRC checked" % len(events))


def stop_and_resume(tmp):
    with open(os.path.join(EXAMPLES, "mlp.json")) as f:
        spec = json.load(f)
    spec["max_steps"] = 500
    spec["dataset"]["max_train_examples"] = 15000  # quicker in the sanitizer build
    path = write_spec(tmp, "mlp", spec)
    ckpt = os.path.join(tmp, "mlp-ckpt")
    p = subprocess.Popen([TRAININGD, "run", path, "--checkpoint-dir", ckpt], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    # Stop once training is under way (the logging hook has printed step 101).
    lines = []
    for line in p.stdout:
        lines.append(line)
        if "global_step = 101," in line:
            p.send_signal(signal.SIGINT)
            break
    rest, _ = p.communicate(timeout=300)
    out = "".join(lines) + rest
    expect(p.returncode == 130, "SIGINT exit %d" % p.returncode, out)
    expect("stopped at global step" in out and "Run the same command again to resume" in out,
           "stop line", out)
    with open(os.path.join(ckpt, "checkpoint")) as f:
        state = f.read()
    stopped_at = int(state.split('model_checkpoint_path: "model.ckpt-')[1].split('"')[0])
    expect(0 < stopped_at < 500, "final checkpoint at the stop (%d)" % stopped_at, out)
    r = run(["run", path, "--checkpoint-dir", ckpt])
    out2 = r.stdout + r.stderr
    expect(r.returncode == 0, "resume exit %d" % r.returncode, out2)
    expect("Restoring parameters from %s/model.ckpt-%d" % (ckpt, stopped_at) in out2,
           "resumed from the stop", out2)
    expect("global_step = %d, " % (stopped_at + 1) in out2, "first resumed step logged", out2)
    expect("completed at global step 500" in out2, "resumed job completes", out2)
    print("stop at %d and resume: ok" % stopped_at)


def time_limit(tmp):
    with open(os.path.join(EXAMPLES, "softmax.json")) as f:
        spec = json.load(f)
    spec["max_steps"] = 10 ** 9
    spec["resources"] = {"time_limit_secs": 2}
    # A part of the data: what is tested is the limit, not the load (60 MB of floats otherwise,
    # twice, which in the sanitizer builds was most of this test's CPU time).
    spec["dataset"].update({"max_train_examples": 6000, "max_test_examples": 1000})
    path = write_spec(tmp, "timed", spec)
    ckpt = os.path.join(tmp, "timed-ckpt")
    steps = []
    for attempt in (1, 2):
        r = run(["run", path, "--checkpoint-dir", ckpt])
        out = r.stdout + r.stderr
        expect(r.returncode == 124, "time limit exit %d" % r.returncode, out)
        m = re.search(r"stopped at global step (\d+): time limit of 2 s reached "
                      r"\(resources.time_limit_secs\)", out)
        expect(m is not None, "time limit line", out)
        if steps:  # the time counts from the start, data loading included: progress may be 0
            expect("Restoring parameters from %s/model.ckpt-%d" % (ckpt, steps[-1]) in out,
                   "the second run goes on from the first's final checkpoint", out)
        steps.append(int(m.group(1)))
        expect(os.path.exists(os.path.join(ckpt, "model.ckpt-%d" % steps[-1])), "final checkpoint",
               out)
    expect(steps[1] >= steps[0], "no step lost (%s)" % steps, "")
    print("time limit: stopped at %d, then at %d" % tuple(steps))


def validate(tmp):
    for name in sorted(n for n in os.listdir(EXAMPLES) if n.endswith(".json")):  # job specs
        r = run(["validate", os.path.join(EXAMPLES, name)])
        expect(r.returncode == 0 and ": OK: job" in r.stdout, "validate " + name,
               r.stdout + r.stderr)
    bad = write_spec(tmp, "bad", {"name": "bad", "model": {"layers": [
        {"type": "dense", "units": 10}, {"type": "dense", "unit": 3}]}, "max_steps": 10})
    r = run(["validate", bad])
    expect(r.returncode == 2 and "model.layers[1].unit" in r.stderr, "bad field named", r.stderr)
    r = run(["run", bad])
    expect(r.returncode == 2 and "model.layers[1].unit" in r.stderr, "run refuses it", r.stderr)
    r = run(["run", os.path.join(tmp, "missing.json")])
    expect(r.returncode == 2 and "cannot read the job spec" in r.stderr, "missing file", r.stderr)
    nodata = write_spec(tmp, "nodata", {"name": "nodata", "model": "softmax", "max_steps": 10,
                                        "dataset": "no-such-dataset"})
    r = run(["run", nodata, "--checkpoint-dir", os.path.join(tmp, "nodata")])
    expect(r.returncode == 1 and "no-such-dataset" in r.stderr, "missing dataset", r.stderr)
    traversal = write_spec(tmp, "trav", {"name": "trav", "model": "softmax", "max_steps": 10,
                                         "dataset": "../etc"})
    r = run(["validate", traversal])
    expect(r.returncode == 2 and "dataset.name" in r.stderr, "path traversal refused", r.stderr)
    print("validate: ok")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        completed_job(tmp)
        stop_and_resume(tmp)
        time_limit(tmp)
        validate(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
