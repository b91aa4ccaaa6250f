#!/usr/bin/python3
"""Inference benchmark (docs/benchmarks.md#serving), run by hand:

    /usr/bin/python3 bench/infer_bench.py --build build [--model cnn] [--rounds 3] [--seconds 5]

Starts a daemon on loopback, trains the tutorial model (--model: softmax, mlp or cnn; a few steps
on Fashion-MNIST: the weights do not change the cost), downloads its ONNX file, and then, in
--rounds rounds, each measurement once per round (so the machine's drift lands on all of them):

  onnxruntime  the ONNX file in onnxruntime-node in-process (bench/onnx_bench.mjs), batch 1 and
               batch 64, 2 intra-op threads, one call at a time;
  engine       TrainedModel::Predict on the same checkpoint (bench/predict_bench), batch 1 and
               64, 2 compute threads;
  /infer       POST /v2/models/{id}/infer over HTTP with wrk: batch-1 requests (one real test
               image, UINT8) from 1, 16 and 64 connections; requests/s, p50 and p99 latency, and
               the mean batch the server formed (trainingd_serving_* counters).

Prints each round's numbers and then the medians with [min-max] over the rounds. Needs wrk
(`make bench-deps`), node and web/node_modules (tools/install-deps.sh).
"""
import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
from trainingd_e2e import Daemon, expect  # noqa: E402


def run_json(args, env=None):
    p = subprocess.run(args, capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, **(env or {})))
    expect(p.returncode == 0, "%s: %s" % (args[0], p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def metrics(d):
    text = d.call("GET", "/metrics")[1]
    get = lambda name: float(re.search(r"^%s (\S+)$" % name, text, re.M).group(1))  # noqa: E731
    return get("trainingd_serving_batches_total"), get("trainingd_serving_requests_total")


def wrk(d, job, body_file, connections, seconds):
    script = body_file + ".lua"
    with open(script, "w") as f:
        f.write('wrk.method = "POST"\n'
                'wrk.headers["Content-Type"] = "application/json"\n'
                'local f = io.open("%s", "rb"); wrk.body = f:read("*a"); f:close()\n' % body_file)
    b0, r0 = metrics(d)
    p = subprocess.run(["wrk", "-t", str(min(2, connections)), "-c", str(connections),
                        "-d", "%ds" % seconds, "--latency", "-s", script,
                        "http://127.0.0.1:%d/v2/models/%s/infer" % (d.port, job)],
                       capture_output=True, text=True, timeout=seconds + 60)
    expect(p.returncode == 0, p.stderr)
    out = p.stdout
    expect("Non-2xx" not in out, out)
    b1, r1 = metrics(d)

    def ms(label):
        m = re.search(r"^\s+%s\s+([\d.]+)(us|ms|s)\s*$" % label, out, re.M)
        return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    return {"rps": rps, "p50_ms": ms("50%"), "p99_ms": ms("99%"),
            "mean_batch": (r1 - r0) / max(1.0, b1 - b0)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", default="cnn", choices=["softmax", "mlp", "cnn"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--max-delay-ms", type=int, default=0)
    args = ap.parse_args()
    trainingd = os.path.join(args.build, "daemon", "trainingd")
    predict = os.path.join(args.build, "bench", "predict_bench")
    tmp = tempfile.mkdtemp(prefix="trainingd-infer-bench-")
    data_dir = os.path.join(tmp, "var")
    d = Daemon(trainingd, data_dir, config={"serving": {
        "max_batch": 64, "max_delay_ms": args.max_delay_ms, "max_queue": 4096}})
    try:
        with open(os.path.join(HERE, "..", "examples", args.model + ".json")) as f:
            spec = dict(json.load(f), name="bench-" + args.model, max_steps=20)
        status, job = d.call("POST", "/api/v1/jobs", spec)
        expect(status == 201, job)
        job = job["id"]
        expect(d.wait_state(job, {"completed", "failed"})["state"] == "completed", job)
        ckpt = os.path.join(data_dir, "jobs", job)
        onnx_path = os.path.join(tmp, "model.onnx")
        subprocess.run(["curl", "-sf", "-o", onnx_path,
                        "http://127.0.0.1:%d/api/v1/jobs/%s/model" % (d.port, job)], check=True)
        images = gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz").read()
        body_file = os.path.join(tmp, "body.json")
        with open(body_file, "w") as f:
            json.dump({"inputs": [{"name": "input", "shape": [1, 28, 28, 1], "datatype": "UINT8",
                                   "data": list(images[16:16 + 784])}]}, f)
        cpu = re.search(r"model name\s*:\s*(.*)", open("/proc/cpuinfo").read()).group(1)
        print("model %s, job %s, CPU %s, %d cores, serving.max_delay_ms %d" %
              (args.model, job, cpu, os.cpu_count(), args.max_delay_ms))
        results = {}
        for r in range(args.rounds):
            row = {}
            for b in (1, 64):
                row["onnxruntime b%d" % b] = run_json(
                    ["node", os.path.join(HERE, "onnx_bench.mjs"), onnx_path, str(b),
                     str(args.seconds), "2"])
                row["engine b%d" % b] = run_json([predict, ckpt, str(b), str(args.seconds), "2"])
            for c in (1, 16, 64):
                row["/infer c%d" % c] = wrk(d, job, body_file, c, args.seconds)
            for k, v in row.items():
                results.setdefault(k, []).append(v)
            print("round %d: %s" % (r + 1, "; ".join(
                "%s %.0f/s" % (k, v.get("examples_per_sec", v.get("rps"))) for k, v in row.items())))
            sys.stdout.flush()

        def summary(key, field):
            vals = [x[field] for x in results[key]]
            return "%.4g [%.4g-%.4g]" % (statistics.median(vals), min(vals), max(vals))
        print("\n| what | examples/s (median [min-max]) | p50 ms | p99 ms | mean batch |")
        print("|---|---:|---:|---:|---:|")
        for k in results:
            rate = "examples_per_sec" if "examples_per_sec" in results[k][0] else "rps"
            batch = summary(k, "mean_batch") if "mean_batch" in results[k][0] else ""
            print("| %s | %s | %s | %s | %s |" % (k, summary(k, rate), summary(k, "p50_ms"),
                                                  summary(k, "p99_ms"), batch))
        med = lambda k, f: statistics.median(x[f] for x in results[k])  # noqa: E731
        print("\nengine / onnxruntime at batch 1: %.2fx; at batch 64: %.2fx" %
              (med("engine b1", "examples_per_sec") / med("onnxruntime b1", "examples_per_sec"),
               med("engine b64", "examples_per_sec") / med("onnxruntime b64", "examples_per_sec")))
        print("/infer at 64 clients / onnxruntime in-process: %.2fx (batch 1), %.2fx (batch 64)" %
              (med("/infer c64", "rps") / med("onnxruntime b1", "examples_per_sec"),
               med("/infer c64", "rps") / med("onnxruntime b64", "examples_per_sec")))
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
