"""The model server end to end (docs/models.md#serving), against a daemon this test starts.

1. Equivalence: the three tutorial presets on Fashion-MNIST, a colour CNN on an uploaded npz and
   an MLP on an uploaded CSV (standardized) trained as daemon jobs. Each job's model is
   downloaded as ONNX (GET /api/v1/jobs/{id}/model) and its whole test split sent through
   POST /v2/models/{id}/infer (in requests of 100 examples, 8 at a time, so they are batched),
   in the dataset's raw units. /infer must equal the engine's own TrainedModel::Predict
   (onnx_predict) and agree with onnxruntime on the downloaded file (onnx_equivalence.mjs):
   argmax >= 99.9%, largest probability difference <= 1e-4, the same accuracy. The export,
   checked as onnx_export_test.py checks its own (these five models are its table, trained once
   for both tests): `trainingd export` of the job's directory writes the downloaded bytes, which
   pass onnx's checker with the graph's conventions and metadata; onnxruntime agrees with the
   engine (argmax >= 99.9%, probabilities within 1e-4, the same accuracy, the job's final
   test/accuracy).
2. The protocols: metadata, readiness, versions, TF Serving's :predict.
3. Bad requests: malformed JSON, NaN, a wrong shape, datatype or length, a huge declared shape,
   a body over the limit, an unknown job, a job without a checkpoint: each a clear 4xx naming
   the field.
4. Pressure, on the same jobs after a restart with a small budget and queue: two models that do
   not fit the budget together, hammered at once (every answer still right; evictions counted;
   the cache within its budget); an overload answered 503 with Retry-After; a job deleted while
   its model is served (404 after, never a 500); the daemon up throughout.

usage: serving_test.py TRAININGD ONNX_PREDICT NODE
"""
import concurrent.futures
import http.client
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time

import numpy as np

import onnx_export_test as ox
from trainingd_e2e import Daemon, expect

TRAININGD, ONNX_PREDICT, NODE = ox.TRAININGD, ox.ONNX_PREDICT, ox.NODE = sys.argv[1:4]
HERE = os.path.dirname(os.path.abspath(__file__))
CHUNK = 100  # examples per /infer request


def upload(d, name, fmt, path, query=""):
    with open(path, "rb") as f:
        body = f.read()
    status, ds = d.call("POST", "/api/v1/datasets?name=%s&format=%s%s" % (name, fmt, query), body,
                        headers={"Content-Type": "application/octet-stream"})
    expect(status == 201, (status, ds))
    return ds


def infer_body(x, uint8, categorical=None):
    """KServe v2's request: the examples `x`; for a table with categorical columns also their
    values as strings (a list of rows), the BYTES input "categorical"."""
    data = x.astype(np.int64).ravel().tolist() if uint8 else [None if np.isnan(v) else float(v) for v in x.ravel()]
    inputs = [{"name": "input", "shape": list(x.shape),
               "datatype": "UINT8" if uint8 else "FP32", "data": data}]
    if categorical is not None:
        inputs.append({"name": "categorical", "shape": [len(categorical), len(categorical[0])],
                       "datatype": "BYTES", "data": [v for row in categorical for v in row]})
    return {"inputs": inputs}


def probabilities(r):
    """An /infer answer's probabilities (a regression model's predictions), in their shape."""
    probs = next(o for o in r["outputs"] if o["name"] in ("probabilities", "prediction"))
    return np.array(probs["data"], dtype=np.float32).reshape(probs["shape"])


def infer(d, job, x, uint8, version=None, categorical=None):
    path = "/v2/models/%s%s/infer" % (job, "" if version is None else "/versions/%d" % version)
    status, r = d.call("POST", path, infer_body(x, uint8, categorical), timeout=120)
    expect(status == 200, (status, r))
    probs = probabilities(r)
    expect(probs.ndim == 2 and probs.shape[0] == len(x), probs.shape)
    return probs, r


def equivalence(d, case, job, data_dir, datasets_dir, tmp):
    """The whole test split through /infer, against the engine and onnxruntime."""
    prefix = os.path.join(tmp, case["name"])
    spec_path = prefix + ".spec.json"
    with open(spec_path, "w") as f:
        json.dump(d.job(job)["spec"], f)
    ox.engine_predictions(ONNX_PREDICT, os.path.join(data_dir, "jobs", job), spec_path,
                          datasets_dir, prefix)
    with open(prefix + ".json") as f:
        meta = json.load(f)
    n, shape = meta["n"], meta["example_shape"]
    x = np.fromfile(prefix + ".input.f32", dtype=np.float32).reshape([n] + shape)
    engine = np.fromfile(prefix + ".probs.f32", dtype=np.float32).reshape(n, meta["classes"])
    uint8 = case["preprocessing"] == "scale_255"
    if uint8:
        expect(np.array_equal(x, np.round(x)), "raw images are whole numbers")
    categorical = None
    if meta["categorical"]:
        with open(prefix + ".categorical.json") as f:
            categorical = json.load(f)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(
            lambda i: infer(d, job, x[i:i + CHUNK], uint8,
                            categorical=categorical and categorical[i:i + CHUNK]),
            range(0, n, CHUNK)))
    served = np.concatenate([probs for probs, _ in answers])
    regression = case.get("task") == "regression"
    if not regression:
        # A classifier's predicted classes, "label" (INT64 [batch]): onnxruntime's "label" and
        # the engine's PredictedClasses must be the same (onnx_equivalence.mjs).
        labels = []
        for _, r in answers:
            out = next(o for o in r["outputs"] if o["name"] == "label")
            expect(out["datatype"] == "INT64" and out["shape"] == [len(out["data"])], out)
            labels += out["data"]
        expect(labels == meta["predicted"], "%s: /infer's labels differ from Predict's" %
               case["name"])
        with open(prefix + ".infer_labels.json", "w") as f:
            json.dump(labels, f)
    if categorical:
        table_rows(d, job, data_dir, x, categorical, engine[:, 0] if regression else engine,
                   None if regression else meta["predicted"])
    served.tofile(prefix + ".infer.f32")
    # The server runs the engine's own Predict: the same numbers, whatever the batch.
    expect(np.array_equal(served, engine),
           "%s: /infer differs from Predict by %g" % (case["name"], np.abs(served - engine).max()))
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=60)
    conn.request("GET", "/api/v1/jobs/%s/model" % job)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    expect(r.status == 200 and r.getheader("Content-Disposition") ==
           'attachment; filename="%s-step%d.onnx"' % (job, case["spec"]["max_steps"]),
           (r.status, r.getheader("Content-Disposition")))
    onnx_path = prefix + ".onnx"
    with open(onnx_path, "wb") as f:
        f.write(body)
    # `trainingd export` of the job's directory writes the same file, which onnx_export_test.py
    # checks: onnx's checker, the graph's conventions, every metadata prop.
    job_dir = os.path.join(data_dir, "jobs", job)
    step = case["spec"]["max_steps"]
    p = ox.run(["export", job_dir, "-o", prefix + ".cli.onnx", "--job-id", job])
    expect("at global step %d" % step in p.stdout, p.stdout)
    with open(prefix + ".cli.onnx", "rb") as f:
        expect(f.read() == body, "%s: trainingd export differs from GET .../model" % case["name"])
    ox.check_file(onnx_path, case, job_dir, step, job)
    q = ox.onnxruntime_report(NODE, onnx_path, prefix)
    if regression:
        print("  %s: %d test examples; /infer against onnxruntime: max relative diff %.2e, rmse "
              "%.4f (/infer) %.4f (onnxruntime) %.4f (engine)" %
              (case["name"], n, q["infer_max_rel_diff"], q["infer_rmse"], q["ort_rmse"],
               q["engine_rmse"]))
        ox.judge(case, q, d.job(job)["latest_scalars"]["test/rmse"])
        expect(q["infer_max_rel_diff"] <= 1e-4, q)
        regression_protocol(d, job, x, categorical, engine)
        return x, engine
    print("  %s: %d test examples; /infer against onnxruntime: argmax agrees on %d, max |p diff| "
          "%.2e, accuracy %.4f (/infer) %.4f (onnxruntime) %.4f (engine)" %
          (case["name"], n, q["infer_agree"], q["infer_max_prob_diff"], q["infer_accuracy"],
           q["ort_accuracy"], q["engine_accuracy"]))
    ox.judge(case, q, d.job(job)["latest_scalars"]["test/accuracy"])
    expect(q["infer_agree"] >= 0.999 * n, q)
    expect(q["infer_max_prob_diff"] <= 1e-4, q)
    expect(q["infer_accuracy"] == q["ort_accuracy"] == q["engine_accuracy"], q)
    expect(q["infer_label_agree"] >= 0.999 * n, q)
    if case.get("decision_threshold", 0.5) != 0.5:
        threshold_protocol(d, job, x, categorical, case["decision_threshold"], meta)
    return x, engine


def threshold_protocol(d, job, x, categorical, threshold, meta):
    """A two-class model with a decision threshold: its metadata says it, TF Serving's answer
    carries the same labels beside the probabilities, and a label is class 1 exactly where the
    positive class's probability is above the threshold."""
    status, m = d.call("GET", "/v2/models/%s" % job)
    expect(status == 200 and [o["name"] for o in m["outputs"]] ==
           ["logits", "probabilities", "label"] and
           m["parameters"]["decision_threshold"] == threshold, m)
    probs, r = infer(d, job, x[:50], False, categorical=categorical[:50])
    label = next(o for o in r["outputs"] if o["name"] == "label")["data"]
    expect(label == [int(p1 > np.float32(threshold)) for p1 in probs[:, 1]], (label, probs))
    expect(label == meta["predicted"][:50], label)
    status, v = d.call("POST", "/v2/models/%s/infer" % job,
                       dict(infer_body(x[:3], False, categorical[:3]),
                            outputs=[{"name": "label"}]))
    expect(status == 200 and [o["name"] for o in v["outputs"]] == ["label"] and
           v["outputs"][0]["data"] == label[:3], (status, v))
    # A request's own threshold: its labels, p1 > 0.8, differ from the model's; echoed back.
    status, v = d.call("POST", "/v2/models/%s/infer" % job,
                       dict(infer_body(x[:50], False, categorical[:50]),
                            parameters={"decision_threshold": 0.8}))
    own = next(o for o in v["outputs"] if o["name"] == "label")["data"]
    expect(status == 200 and own == [int(p1 > np.float32(0.8)) for p1 in probs[:, 1]] and
           own != label and v["parameters"]["decision_threshold"] == 0.8, (status, own, label))
    status, v = d.call("POST", "/v2/models/%s/infer" % job,
                       dict(infer_body(x[:3], False, categorical[:3]),
                            parameters={"decision_threshold": 1.5}))
    expect(status == 400 and v["error"].startswith("parameters.decision_threshold: "), (status, v))


def table_rows(d, job, data_dir, x, categorical, engine, predicted):
    """TF Serving's instances as objects keyed by column name, in an order of their own, a
    missing value as null or left out: the same probabilities as Predict on the same rows, and
    beside them a classifier's "labels", Predict's predicted classes (`predicted`; None for a
    regression model, which has none)."""
    with open(os.path.join(data_dir, "jobs", job, "model.json")) as f:
        recorded = json.load(f)
    numbers = recorded["feature_names"]
    names = [c["name"] for c in recorded["categorical"]]
    rows = []
    for i in range(40):
        row = {}
        for name, v in reversed(list(zip(numbers, x[i]))):
            if not np.isnan(v):
                row[name] = float(v)
            elif i % 2:
                row[name] = None
        for name, v in zip(names, categorical[i]):
            row[name] = v
        rows.append(row)
    status, r = d.call("POST", "/v1/models/%s:predict" % job, {"instances": rows})
    expect(status == 200 and np.array_equal(np.array(r["predictions"], dtype=np.float32),
                                            engine[:40]), (status, str(r)[:300]))
    expect(r.get("labels") == (predicted[:40] if predicted is not None else None), str(r)[:300])
    status, m = d.call("GET", "/v2/models/%s" % job)
    expect(m["inputs"] == [{"name": "input", "datatype": "FP32", "shape": [-1, len(numbers)]},
                           {"name": "categorical", "datatype": "BYTES",
                            "shape": [-1, len(names)]}], m)
    # Two values no training row holds are both unknown (city: a hashed column): the same answer.
    column = names[-1]
    unseen = [dict(rows[0], **{column: "nowhere-1"}), dict(rows[0], **{column: "nowhere-2"})]
    status, r = d.call("POST", "/v1/models/%s:predict" % job, {"instances": unseen})
    expect(status == 200 and r["predictions"][0] == r["predictions"][1], (status, r))
    status, r = d.call("POST", "/v1/models/%s:predict" % job, {"instances": [{"colour": "red"}]})
    expect(status == 400 and "instances[0].colour: the model has no column 'colour'" in r["error"],
           (status, r))


def regression_protocol(d, job, x, categorical, engine):
    """A regression model's outputs are logits and prediction, by name too."""
    status, m = d.call("GET", "/v2/models/%s" % job)
    expect([o["name"] for o in m["outputs"]] == ["logits", "prediction"] and
           m["outputs"][1]["shape"] == [-1, 1], m)
    body = infer_body(x[:3], False, categorical[:3])
    status, r = d.call("POST", "/v2/models/%s/infer" % job,
                       dict(body, outputs=[{"name": "prediction"}]))
    expect(status == 200 and [o["name"] for o in r["outputs"]] == ["prediction"] and
           np.array_equal(np.array(r["outputs"][0]["data"], dtype=np.float32), engine[:3, 0]),
           (status, r))
    status, r = d.call("POST", "/v2/models/%s/infer" % job,
                       dict(body, outputs=[{"name": "probabilities"}]))
    expect(status == 400 and "outputs[0].name: a regression model's outputs are 'logits' and "
           "'prediction'" in r["error"], (status, r))


def protocol(d, jobs, samples):
    job = jobs["softmax"]
    status, m = d.call("GET", "/v2/models/%s" % job)
    expect(status == 200 and m["name"] == job and m["platform"] == "trainingd", m)
    expect(m["inputs"] == [{"name": "input", "datatype": "FP32", "shape": [-1, 28, 28, 1]}], m)
    expect([o["name"] for o in m["outputs"]] == ["logits", "probabilities", "label"] and
           m["outputs"][2] == {"name": "label", "datatype": "INT64", "shape": [-1]} and
           m["parameters"]["decision_threshold"] is None, m)
    expect(m["versions"][-1] == "40" and m["parameters"]["preprocessing"] == "scale_255", m)
    # A request's threshold on a ten-class model: refused naming it.
    status, r = d.call("POST", "/v2/models/%s/infer" % job, {"inputs": [
        {"name": "input", "shape": [1, 28, 28, 1], "datatype": "UINT8", "data": [0] * 784}],
        "parameters": {"decision_threshold": 0.3}})
    expect(status == 400 and r["error"].startswith("parameters.decision_threshold: only a "
                                                   "two-class classifier") and
           "10 classes" in r["error"], (status, r))
    status, t = d.call("GET", "/v2/models/%s" % jobs["table-mlp"])
    expect(t["parameters"]["class_names"] == ["high", "low", "mid"] and
           t["parameters"]["preprocessing"] == "standard" and
           len(t["parameters"]["dataset_sha256"]) == 64, t)
    expect(d.call("GET", "/v2/health/ready")[0] == 200, "ready")
    expect(d.call("GET", "/v2/models/%s/ready" % job)[0] == 200, "model ready")
    expect(d.call("GET", "/v2/models/%s/versions/0/ready" % job)[0] == 200, "version 0 ready")
    x, engine = samples["softmax"]
    # The initial checkpoint (step 0) answers differently from the trained one.
    p0, r0 = infer(d, job, x[:5], True, version=0)
    expect(r0["model_version"] == "0" and not np.array_equal(p0, engine[:5]), r0)
    status, r = d.call("POST", "/v1/models/%s:predict" % job,
                       {"instances": x[:3].astype(int).tolist()})
    expect(status == 200 and np.array_equal(np.array(r["predictions"], dtype=np.float32),
                                            engine[:3]), (status, str(r)[:200]))


def bad_requests(d, jobs):
    job = jobs["softmax"]
    url = "/v2/models/%s/infer" % job
    good = {"name": "input", "shape": [1, 28, 28, 1], "datatype": "UINT8", "data": [0] * 784}

    def refused(body, want, field, path=url, **kw):
        status, err = d.call("POST", path, body, **kw)
        expect(status == want and isinstance(err, dict) and isinstance(err.get("error"), str) and
               err["error"].startswith(field), (body if len(str(body)) < 200 else field, status,
                                                err))
    refused("{not json", 400, "")
    refused('{"inputs": [{"name": "input", "shape": [1, 2], "datatype": "FP32", "data": [NaN, 1]}]}',
            400, "")
    refused({"inputs": [dict(good, datatype="BYTES")]}, 400, "inputs[0].datatype: ")
    refused({"inputs": [dict(good, data=[0] * 783)]}, 400, "inputs[0].data: 783 values")
    refused({"inputs": [dict(good, shape=[1, 784], data=[0] * 784)]}, 400,
            "inputs[0].shape: [1, 784] does not fit the model's input [-1, 28, 28, 1]")
    refused({"inputs": [dict(good, shape=[10 ** 9, 10 ** 9, 28, 1])]}, 400, "inputs[0].shape: ")
    refused({"inputs": [dict(good, data=[0] * 783 + [300])]}, 400, "inputs[0].data[783]: ")
    refused({"inputs": [good], "outputs": [{"name": "hidden"}]}, 400, "outputs[0].name: ")
    refused({"inputs": [good]}, 404, "job 'nope'", path="/v2/models/nope/infer")
    refused({"inputs": [good]}, 404, "version 7: ", path="/v2/models/%s/versions/7/infer" % job)
    status, err = d.call("POST", url, b"{" + b" " * (2 << 20) + b"}")
    expect(status == 413, (status, err))
    expect(d.call("GET", "/healthz")[0] == 200, "up after the bad requests")


def pressure(d, jobs, samples):
    """A budget for one of the two models at a time, a queue of 256 examples."""
    small, big = jobs["softmax"], jobs["cnn"]
    xs, es = samples["softmax"]
    xb, eb = samples["cnn"]
    errors = []

    def hammer(k):
        job, x, e = (small, xs, es) if k % 2 else (big, xb, eb)
        i = (k * 37) % (len(x) - 4)
        status, r = d.call("POST", "/v2/models/%s/infer" % job, infer_body(x[i:i + 4], True))
        if status != 200:
            return status
        if not np.array_equal(probabilities(r), e[i:i + 4]):
            errors.append((job, i))
        return status
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(hammer, range(200)))
    expect(not errors, "wrong answers under eviction: %s" % errors[:5])
    expect(set(statuses) <= {200, 503} and statuses.count(200) >= 100, statuses)
    metrics = d.call("GET", "/metrics")[1]

    def metric(name):
        return float(re.search(r"^%s (\S+)$" % name, metrics, re.M).group(1))
    expect(metric("trainingd_serving_evictions_total") > 0, "evictions")
    expect(metric("trainingd_serving_memory_bytes") <= BUDGET, "within the budget")
    print("  two models under one budget: %d answers right, %d evictions, %d loads" %
          (statuses.count(200), metric("trainingd_serving_evictions_total"),
           metric("trainingd_serving_loads_total")))

    # Overload: far more than the queue holds at once. Some are refused at once, with
    # Retry-After; none waits forever; the rest are answered. All 128 requests (32 times the
    # queue) are on the wire before any answer is read: clients that each encoded their body
    # and waited for their answer arrived one at a time, no faster than a fast CPU served them.
    # The small model is asked first, so the big one is evicted and the first batch loads it:
    # the queue fills while it does.
    expect(d.call("POST", "/v2/models/%s/infer" % small, infer_body(xs[:1], True))[0] == 200,
           "the small model")
    body = json.dumps(infer_body(xb[:64], True)).encode()
    conns = [http.client.HTTPConnection("127.0.0.1", d.port, timeout=120) for _ in range(128)]
    for conn in conns:
        conn.request("POST", "/v2/models/%s/infer" % big, body,
                     {"Content-Type": "application/json"})
    answers = []
    for conn in conns:
        resp = conn.getresponse()
        payload = resp.read()
        if resp.status == 200:
            expect(np.array_equal(probabilities(json.loads(payload)), eb[:64]),
                   "a wrong answer under overload")
        answers.append((resp.status, resp.getheader("Retry-After")))
        conn.close()
    codes = [s for s, _ in answers]
    expect(set(codes) <= {200, 503} and 503 in codes and 200 in codes, codes)
    expect(all(ra == "1" for s, ra in answers if s == 503), answers)
    print("  overload: %d answered, %d refused with 503 and Retry-After" %
          (codes.count(200), codes.count(503)))

    # Deleted while served: answers are right or 404, never anything else; 404 after.
    stop = threading.Event()
    seen = []

    def keep_asking():
        while not stop.is_set():
            seen.append(d.call("POST", "/v2/models/%s/infer" % small,
                               infer_body(xs[:2], True))[0])
    asker = threading.Thread(target=keep_asking)
    asker.start()
    time.sleep(0.3)
    expect(d.call("DELETE", "/api/v1/jobs/%s" % small)[0] == 204, "deleted")
    time.sleep(0.3)
    stop.set()
    asker.join()
    expect(set(seen) <= {200, 404} and seen[-1] == 404, seen[-10:])
    expect(d.call("GET", "/v2/models/%s" % small)[0] == 404, "gone")
    expect(d.call("GET", "/healthz")[0] == 200, "up after the pressure")


BUDGET = 0  # set in main, from the two models' sizes


def main():
    global BUDGET
    tmp = tempfile.mkdtemp(prefix="trainingd-serving-")
    try:
        data_dir = os.path.join(tmp, "var")
        datasets_dir = os.path.join(data_dir, "datasets")
        npz, csv = os.path.join(tmp, "rgb.npz"), os.path.join(tmp, "table.csv")
        prices_csv = os.path.join(tmp, "prices.csv")
        ox.colour_npz(npz)
        ox.table_csv(csv)
        ox.prices_csv(prices_csv)
        d = Daemon(TRAININGD, data_dir, config={
            "serving": {"max_batch": 256, "max_delay_ms": 2, "max_queue": 4096}})
        try:
            rgb = upload(d, "rgb", "npz", npz)
            # With "was missing" indicators and city hashed, as onnx_export_test.py's table-mlp
            # spec has them; without hash_buckets, city's 40 levels are over max_levels=30.
            status, err = d.call("POST", "/api/v1/datasets?name=t2&format=csv&max_levels=30",
                                 open(csv, "rb").read(),
                                 headers={"Content-Type": "application/octet-stream"})
            expect(status == 400 and err["error"]["field"] == "body" and
                   "column 'city': more than 30 distinct values" in err["error"]["message"],
                   (status, err))
            table = upload(d, "table", "csv", csv, "&normalize=standard&missing_indicator=*"
                           "&max_levels=30&hash_buckets=city:16")
            expect([c.get("hash_buckets") for c in table["columns"] if c["name"] == "city"] ==
                   [16], table["columns"])
            status, err = d.call("POST", "/api/v1/datasets?name=t3&format=csv&hash_buckets=city",
                                 b"a,label\n1,x\n2,y\n",
                                 headers={"Content-Type": "application/octet-stream"})
            expect(status == 400 and err["error"]["field"] == "hash_buckets" and
                   err["error"]["message"].startswith("hash_buckets: each item must be COLUMN:N"),
                   (status, err))
            # 600 distinct prices: too many to be classes, numbers for a regression job.
            prices = upload(d, "prices", "csv", prices_csv,
                            "&normalize=standard&label_column=price")
            churn_csv = os.path.join(tmp, "churn.csv")
            ox.table_csv(churn_csv, binary=True)
            churn = upload(d, "churn", "csv", churn_csv, "&normalize=standard")
            expect(prices["tasks"] == ["regression"] and prices["num_classes"] == 0, prices)
            # onnx_export_test.py's five models and its regression model; the uploads named by
            # their names alone.
            cases = [dict(c, spec=dict(c["spec"], dataset=c["dataset"])
                          if c["dataset"] in ("rgb", "table", "prices", "churn") else c["spec"])
                     for c in ox.cases(rgb["sha256"], table["sha256"]) +
                     ox.regression_cases(prices["sha256"]) +
                     ox.binary_cases(churn["sha256"])]
            # A classifier on those prices: refused at submit, naming the label column.
            regression_spec = next(c for c in cases if c.get("task") == "regression")["spec"]
            status, err = d.call("POST", "/api/v1/jobs",
                                 {k: v for k, v in regression_spec.items() if k != "loss"} |
                                 {"task": "classification"})
            expect(status == 400 and err["error"]["field"] == "dataset.label_column", err)
            # A decision threshold on the three-class table: refused at submit, naming it.
            status, err = d.call("POST", "/api/v1/jobs",
                                 dict(next(c for c in cases if c["name"] == "table-mlp")["spec"],
                                      decision_threshold=0.3))
            expect(status == 400 and err["error"]["field"] == "decision_threshold" and
                   "the dataset has 3 classes" in err["error"]["message"], (status, err))
            status, err = d.call("POST", "/api/v1/jobs",
                                 {k: v for k, v in regression_spec.items() if k != "loss"} |
                                 {"task": "classification"})
            expect(status == 400 and err["error"]["field"] == "dataset.label_column" and
                   "more than 256 distinct labels" in err["error"]["message"] and
                   "task: regression" in err["error"]["message"], (status, err))

            def example(name):
                with open(os.path.join(HERE, "..", "..", "examples", name + ".json")) as f:
                    return json.load(f)
            jobs = {}
            for case in cases:
                status, job = d.call("POST", "/api/v1/jobs", case["spec"])
                expect(status == 201, (status, job))
                jobs[case["name"]] = job["id"]
            # One more, queued behind them: no checkpoint yet while the others train.
            status, queued = d.call("POST", "/api/v1/jobs", ox.tiny(example("softmax"), "q", 40))
            status, err = d.call("POST", "/v2/models/%s/infer" % queued["id"], {"inputs": [
                {"name": "input", "shape": [1, 28, 28, 1], "datatype": "UINT8",
                 "data": [0] * 784}]})
            expect(status == 409 and "no checkpoint yet" in err["error"], (status, err))
            samples = {}
            for case in cases:
                done = d.wait_state(jobs[case["name"]], {"completed", "failed"})
                expect(done["state"] == "completed", done)
                samples[case["name"]] = equivalence(d, case, jobs[case["name"]], data_dir,
                                                    datasets_dir, tmp)
            protocol(d, jobs, samples)
            bad_requests(d, jobs)
        finally:
            code, log = d.stop()
        expect(code == 0, log)
        # Each model's bytes: load each alone in a fresh daemon.
        sizes = {}
        for name in ("softmax", "cnn"):
            d = Daemon(TRAININGD, data_dir)
            try:
                expect(d.call("GET", "/v2/models/%s/ready" % jobs[name])[0] == 200, name)
                m = d.call("GET", "/metrics")[1]
                sizes[name] = float(re.search(r"^trainingd_serving_memory_bytes (\S+)$", m,
                                              re.M).group(1))
            finally:
                d.stop()
        BUDGET = int(max(sizes.values()) + min(sizes.values()) / 2)  # never both at once
        d = Daemon(TRAININGD, data_dir, config={"serving": {
            "memory_bytes": BUDGET, "max_batch": 64, "max_delay_ms": 1, "max_queue": 256}})
        try:
            pressure(d, jobs, samples)
        finally:
            code, log = d.stop()
        expect(code == 0, log)
        print("serving_test: OK")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
