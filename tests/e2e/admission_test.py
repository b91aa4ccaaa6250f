#!/usr/bin/python3
"""Hostile but valid job specs and a job that kills the daemon, over real HTTP against
`trainingd serve` (issue 11: admission and crash containment; docs/operations.md).

  admission_test.py TRAININGD

- A table of hostile specs (huge convolutions and dense layers, thousands of layers, checkpoints
  and the profiler every step, names with control characters, slashes and bytes that are not
  UTF-8, learning rates that produce NaN, batches and datasets that do not fit, shapes that do
  not fit through the layers, ...): each is refused at submit with a 400 naming the field, or
  accepted and ends cleanly (completed, or failed with a reason) within the per-job caps on what
  it leaves on disk. The daemon answers /healthz throughout and keeps every job's record.
- A job that aborts the process (TRAININGD_TEST_ABORT_JOB, a test-only hook): the daemon dies
  with it; each restart queues it again (crash count 1, 2) and runs it alone, so a job queued
  beside it is not taken down with it; after max_crash_restarts (2) the next start marks it
  failed with a reason saying it crashed the daemon, and serves. The innocent job completes.
"""
import os
import signal
import sys
import tempfile
import time

from trainingd_e2e import Daemon, expect, small_spec

TRAININGD = sys.argv[1]

# Caps small enough to be reached by the short jobs below (docs/operations.md#per-job-caps).
CONFIG = {"max_checkpoints_per_job": 10, "max_profiler_traces_per_job": 3,
          "max_log_bytes_per_job": 16384}


def base(**overrides):
    spec = small_spec("hostile", 30)
    spec["dataset"]["max_train_examples"] = 5000
    spec.update(overrides)
    return spec


def layers(*ls):
    return {"layers": list(ls)}


def conv(filters, kernel, **kw):
    return dict(type="conv2d", filters=filters, kernel=kernel, **kw)


def dense(units, **kw):
    return dict(type="dense", units=units, **kw)


FLAT = {"type": "flatten"}
RELU = {"type": "relu"}


def hooks(**h):
    return {"checkpoint": {"every_steps": 500}, "summary": {"every_steps": 50}, **h}


def refused(field):
    return ("refused", field)


def ends(state, text=""):
    return ("ends", state, text)


# (what, body: a spec dict or raw bytes, expected outcome)
CASES = [
    # Memory: the spec of issue 11 that took the daemon down with std::bad_alloc, and its kin.
    ("the issue's 65536-filter convolutions",
     base(model=layers(conv(65536, 1, padding="same"), conv(65536, 64, padding="same"), FLAT,
                       dense(10))), refused("model.layers[1]")),
    ("a 65536-filter 64x64 convolution at batch 50",
     base(model=layers(conv(65536, 64, padding="same"), FLAT, dense(10))),
     refused("model.layers[0]")),
    ("a 4096-filter convolution at batch 5000",
     base(batch_size=5000, model=layers(conv(4096, 3, padding="same"), FLAT, dense(10))),
     refused("batch_size")),
    ("a dense layer of 2^20 units", base(model=layers(FLAT, dense(1 << 20), dense(10))),
     refused("model.layers[1]")),
    ("a 2^20 x 2^20 dense kernel",
     base(model=layers(FLAT, dense(1 << 20), dense(1 << 20), dense(10))),
     refused("model.layers[2]")),
    ("998 dense layers of 1000 units",
     base(model=layers(*([FLAT] + [dense(1000)] * 998 + [dense(10)]))), refused("model.layers")),
    ("2001 layers", base(model=layers(*([FLAT] + [RELU] * 1999 + [dense(10)]))),
     refused("model.layers")),
    ("1000 layers, most of them relu",
     base(model=layers(*([FLAT] + [RELU] * 998 + [dense(10)]))), ends("completed")),
    # Disk: checkpoints, the profiler and the log every step.
    ("checkpoints every step, max_to_keep 1000000",
     base(hooks=hooks(checkpoint={"every_steps": 1, "max_to_keep": 1000000})),
     refused("hooks.checkpoint.max_to_keep")),
    ("checkpoints every step, max_to_keep at the cap",
     base(hooks=hooks(checkpoint={"every_steps": 1, "max_to_keep": 10})), ends("completed")),
    ("hourly-preserved checkpoints every step",
     base(hooks=hooks(checkpoint={"every_steps": 1, "max_to_keep": 2,
                                  "keep_checkpoint_every_n_hours": 1e-9})),
     ends("completed")),
    ("the profiler every step", base(hooks=hooks(profiler={"every_steps": 1})),
     ends("completed")),
    ("logging every step", base(max_steps=400, hooks=hooks(logging={"every_n_iter": 1})),
     ends("completed")),
    ("summaries every step for 2^62 steps",
     base(max_steps=1 << 62, hooks=hooks(summary={"every_steps": 1})), refused("hooks.summary")),
    ("2^40 epochs", base(max_steps=0, num_epochs=1 << 40), refused("hooks.summary")),
    ("evaluation every step", base(hooks=hooks(evaluation={"every_steps": 1})),
     ends("completed")),
    # Names.
    ("a name with a control character", base(name="a\u0001b"), refused("name")),
    ("a name with a newline", base(name="job\nINFO: fake log line"), refused("name")),
    ("a name with slashes", base(name="../../etc/passwd"), refused("name")),
    ("a name of 10000 characters", base(name="x" * 10000), refused("name")),
    ("a name that is not UTF-8",
     b'{"name": "bad\xff\xfe", "model": "mlp", "max_steps": 10}', refused("name")),
    ("a dataset name that is a path", base(dataset="../../../etc"), refused("dataset.name")),
    ("a dataset name that is not UTF-8",
     b'{"name": "x", "model": "mlp", "max_steps": 10, "dataset": "\xc0\xaf"}',
     refused("dataset")),
    # Numbers that train into NaN, or are extreme but legal.
    ("SGD at learning rate 1e30",
     base(optimizer={"type": "sgd", "learning_rate": 1e30}), ends("failed", "NaN")),
    ("Adam at learning rate 3e38",
     base(optimizer={"type": "adam", "learning_rate": 3e38}), ends("failed", "NaN")),
    ("momentum 1e30", base(optimizer={"type": "momentum", "learning_rate": 1.0,
                                      "momentum": 1e30}), ends("failed", "NaN")),
    ("a learning rate that decays by 1e30 per step",
     base(optimizer={"type": "sgd", "learning_rate": {
         "type": "exponential_decay", "learning_rate": 1.0, "decay_steps": 1,
         "decay_rate": 1e30}}), ends("failed", "NaN")),
    ("a learning rate beyond float range",
     base(optimizer={"type": "sgd", "learning_rate": 1e39}), refused("optimizer.learning_rate")),
    ("a number beyond double range",
     b'{"name": "x", "model": "mlp", "max_steps": 1e999}', refused("max_steps")),
    ("the largest seed", base(seed=(1 << 64) - 1), ends("completed")),
    ("a seed of 2^64", base(seed=1 << 64), refused("seed")),
    ("dropout of 0.9999999",
     base(model=layers(FLAT, dense(32), {"type": "dropout", "rate": 0.9999999}, dense(10))),
     ends("completed")),
    # Data and shapes the daemon checks at submit.
    ("a batch larger than the training split", base(batch_size=100000), refused("batch_size")),
    ("an unknown dataset", base(dataset="no-such-dataset"), refused("dataset.name")),
    ("a validation split of the whole file",
     base(dataset={"name": "fashion-mnist", "validation_size": 60000}),
     refused("dataset.validation_size")),
    ("dense before flatten", base(model=layers(dense(10), FLAT, dense(10))),
     refused("model.layers[0]")),
    ("conv2d after dense", base(model=layers(FLAT, dense(100), conv(8, 3), FLAT, dense(10))),
     refused("model.layers[2]")),
    ("a kernel larger than the image", base(model=layers(conv(8, 64), FLAT, dense(10))),
     refused("model.layers[0]")),
    ("pooling larger than the image",
     base(model=layers({"type": "max_pool2d", "pool": 64}, FLAT, dense(10))),
     refused("model.layers[0]")),
    ("a last layer of 5 units", base(model=layers(FLAT, dense(5))), refused("model.layers[1].units")),
    ("stride 64 over a 28x28 image", base(model=layers(conv(8, 3, stride=64), FLAT, dense(10))),
     ends("completed")),
    # Documents built to hurt a parser.
    ("100000 nested arrays", b'{"name": "x", "model": ' + b"[" * 100000 + b"]" * 100000 + b"}",
     refused("model")),
    ("a million keys", ("{" + ",".join('"k%d": 1' % i for i in range(1000000)) + "}").encode(),
     None),  # over the body limit: 413
]


def check_case(d, what, body, outcome, submitted):
    status, payload = d.call("POST", "/api/v1/jobs", body)
    if outcome is None:
        expect(status == 413 and payload["error"]["code"] == "payload_too_large",
               "%s: %d %r" % (what, status, payload))
        return
    if outcome[0] == "refused":
        expect(status == 400, "%s: refused with 400, got %d %r" % (what, status, payload))
        err = payload["error"]
        expect(err.get("field") == outcome[1] and err["message"].startswith(outcome[1] + ":"),
               "%s: the error names %s: %r" % (what, outcome[1], err))
    else:
        expect(status == 201, "%s: accepted, got %d %r" % (what, status, payload))
        submitted.append((what, payload["id"], outcome))


def check_end(d, data_dir, what, job_id, outcome):
    job = d.wait_state(job_id, {"completed", "failed", "stopped"}, timeout=600)
    _, state, text = outcome
    expect(job["state"] == state, "%s: ends %s: %r" % (what, state, job))
    if text:
        expect(text in (job["error"] or "") + (job["reason"] or ""),
               "%s: the reason says %s: %r" % (what, text, job))
    files = os.listdir(os.path.join(data_dir, "jobs", job_id))
    ckpts = {f.split(".")[1] for f in files if f.startswith("model.ckpt-")}
    traces = [f for f in files if f.startswith("timeline-")]
    logs = sum(os.path.getsize(os.path.join(data_dir, "jobs", job_id, f))
               for f in files if f.startswith("log"))
    expect(len(ckpts) <= CONFIG["max_checkpoints_per_job"], "%s: checkpoints %r" % (what, ckpts))
    expect(len(traces) <= CONFIG["max_profiler_traces_per_job"], "%s: %r" % (what, traces))
    # log.txt and one rotated file, each at most the cap (plus the line that crossed it).
    expect(logs <= 2 * CONFIG["max_log_bytes_per_job"] + 4096, "%s: log bytes %d" % (what, logs))
    return files


def hostile_specs(tmp):
    data = os.path.join(tmp, "hostile")
    d = Daemon(TRAININGD, data, config=CONFIG)
    try:
        submitted = []
        for what, body, outcome in CASES:
            check_case(d, what, body, outcome, submitted)
            expect(d.call("GET", "/healthz")[0] == 200, "serving after: " + what)
        refused_count = len(CASES) - len(submitted)
        for what, job_id, outcome in submitted:
            files = check_end(d, data, what, job_id, outcome)
            if what == "the profiler every step":
                expect(len([f for f in files if f.startswith("timeline-")]) ==
                       CONFIG["max_profiler_traces_per_job"], "traces capped, not absent")
            if what == "logging every step":
                expect(any(f.startswith("log-") for f in files), "the log rotated: %r" % files)
        status, page = d.call("GET", "/api/v1/jobs?limit=1000")
        expect(status == 200 and len(page["jobs"]) == len(submitted),
               "every accepted job is listed, no refused one: %d" % len(page["jobs"]))
        print("%d hostile specs: %d refused at submit naming the field, %d ran and ended "
              "cleanly: ok" % (len(CASES), refused_count, len(submitted)))
    finally:
        d.stop()


def crash_containment(tmp):
    data = os.path.join(tmp, "crash")
    env = {"TRAININGD_TEST_ABORT_JOB": "killer@5"}
    d = Daemon(TRAININGD, data, env=env)
    killer = d.call("POST", "/api/v1/jobs", small_spec("killer", 200, 2))[1]["id"]
    innocent = d.call("POST", "/api/v1/jobs", small_spec("innocent", 200))[1]["id"]
    crashes = 0
    while True:
        # Until the daemon dies of the killer, or the killer is given up and the daemon serves.
        deadline = time.time() + 120
        while d.proc.poll() is None and time.time() < deadline:
            try:
                if d.job(killer)["state"] == "failed":
                    break
            except (OSError, AssertionError):
                pass  # the daemon is dying
            time.sleep(0.2)
        if d.proc.poll() is None:
            break
        expect(d.proc.returncode == -signal.SIGABRT,
               "the daemon died of the job's abort: %r" % d.proc.returncode)
        crashes += 1
        expect(crashes <= 3, "the killer is restarted at most max_crash_restarts times")
        d.stop()
        d = Daemon(TRAININGD, data, env=env)
    try:
        expect(crashes == 3, "three crashes before the killer is given up: %d" % crashes)
        job = d.wait_state(killer, {"failed"}, timeout=5)
        expect("crashed the daemon" in job["reason"] and "max_crash_restarts 2" in job["reason"],
               "the reason says it crashed the daemon: %r" % job)
        other = d.wait_state(innocent, {"completed", "failed"})
        expect(other["state"] == "completed" and other["global_step"] == 200, other)
        expect(d.call("GET", "/healthz")[0] == 200, "serving")
        # Resuming is the user's explicit new try: its crash count starts again.
        status, job = d.call("POST", "/api/v1/jobs/%s/resume" % killer, {})
        expect(status == 202 and job["state"] == "queued", (status, job))
        d.proc.wait(timeout=120)
        expect(d.proc.returncode == -signal.SIGABRT, "it kills the daemon again when resumed")
        print("a job that aborts the daemon: requeued twice, then failed (%s); the job queued "
              "beside it completed; resume gives it a new try: ok" % job["name"])
    finally:
        d.stop()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        hostile_specs(tmp)
        crash_containment(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
