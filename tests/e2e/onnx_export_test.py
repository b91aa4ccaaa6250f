"""ONNX export end to end (docs/models.md): `trainingd run` -> `trainingd export` on tiny runs of
a CNN on colour images from a NumPy .npz and an MLP on a CSV table with `normalize: standard`,
whose uploads `trainingd run` reads itself (--datasets-dir). The three tutorial presets on
Fashion-MNIST, and the same two models trained as daemon jobs, are exported and checked the same
way by serving_test.py (e2e.serving), which trains them anyway: cases() is their shared table.

Each file must pass Debian's onnx checker (`onnx.checker.check_model(..., full_check=True)`) and
have the graph's conventions: input `input` [batch, ...] with the batch symbolic, outputs `logits`
and `probabilities` [batch, classes], opset 13, IR 7, the metadata. Then the equivalence, checked
by a runtime we did not write: onnxruntime (npm onnxruntime-node, tests/e2e/onnx_equivalence.mjs)
on the whole raw test split against the engine's own TrainedModel::Predict (onnx_predict): argmax
agreement >= 99.9%, largest probability difference <= 1e-4, equal accuracy, and the engine's
accuracy is the trainer's final test/accuracy. A regression model (a CSV's numeric label, huber
loss) has outputs `logits` and `prediction` [batch, 1] (the standardized output un-standardized
by Mul and Add in the graph): its predictions agree within 1e-4 relative, and the engine's RMSE
is the trainer's test/rmse. And export's errors: a missing directory, one without model.json, an
unknown step, no -o.

usage: onnx_export_test.py TRAININGD ONNX_PREDICT NODE
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import helper

TRAININGD = ONNX_PREDICT = NODE = None  # main() sets them (serving_test.py imports this file)
HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples")
DATA_ROOT = "/usr/share/datasets"


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def tiny(spec, name, steps):
    """A spec cut down to `steps` steps, evaluated only at the end (on the test split)."""
    spec = dict(spec, name=name, max_steps=steps)
    spec["hooks"] = {"checkpoint": {"every_steps": 10 ** 6, "max_to_keep": 5},
                     "summary": {"every_steps": 10 ** 6},
                     "step_counter": {"every_steps": 10 ** 6},
                     "logging": {"every_n_iter": 10 ** 6},
                     "evaluation": {"enabled": False},
                     "final_eval": {"split": "test"}}
    return spec


def upload(datasets_dir, name, fmt, payload):
    """Lays `payload` out as the daemon keeps an upload (<name>/<sha256>.<fmt>); its digest."""
    sha = hashlib.sha256(payload).hexdigest()
    os.makedirs(os.path.join(datasets_dir, name), exist_ok=True)
    with open(os.path.join(datasets_dir, name, "%s.%s" % (sha, fmt)), "wb") as f:
        f.write(payload)
    return sha


def colour_npz(path):
    """16x16 RGB images whose class is the channel that carries the signal."""
    rng = np.random.default_rng(7)

    def make(n):
        y = rng.integers(0, 3, n).astype(np.uint8)
        x = rng.integers(0, 120, (n, 16, 16, 3)).astype(np.uint8)
        for i, c in enumerate(y):
            x[i, :, :, c] += rng.integers(40, 130, (16, 16)).astype(np.uint8)
        return x, y
    x_train, y_train = make(600)
    x_test, y_test = make(300)
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)


def table_csv(path, binary=False):
    """Five number features on very different scales (what standardization is for) and two
    categorical ones between them, string labels, and missing values as exports have them:
    blanks in b, "NA" in d, blanks and "?" in color (5 levels: one-hot), "NA" in city (40 levels:
    an embedding). The label depends on all of them; `binary`: "yes" or "no"."""
    rng = np.random.default_rng(11)
    n = 1000
    x = rng.normal(size=(n, 5)) * np.array([1.0, 100.0, 0.01, 5.0, 1000.0]) + \
        np.array([0.0, 500.0, -3.0, 10.0, 2e4])
    colors = np.array(["red", "green", "blue", "black", "white"])
    color = rng.integers(0, 5, n)
    city = rng.integers(0, 40, n)
    score = x[:, 0] + (x[:, 1] - 500) / 100 - (x[:, 4] - 2e4) / 1000 + \
        np.array([1.5, 0, -1.5, 0.5, -0.5])[color] + (city % 3 - 1) * 1.2
    names = np.array(["low", "mid", "high"])
    y = names[np.digitize(score, [-0.8, 0.8])]
    if binary:  # two classes, "no" the more frequent (class 0 in sorted order)
        y = np.where(score > 0.6, "yes", "no")
    with open(path, "w") as f:
        f.write("a,b,color,c,d,city,e,label\n")
        for i, (row, label) in enumerate(zip(x, y)):
            cells = ["%.6g" % v for v in row]
            if i % 17 == 3:
                cells[1] = ""
            if i % 23 == 5:
                cells[3] = "NA"
            c = colors[color[i]] if i % 13 != 2 else ("" if i % 2 else "?")
            t = "city%02d" % city[i] if i % 29 != 4 else "NA"
            f.write(",".join(cells[:2] + [c] + cells[2:4] + [t, cells[4], label]) + "\n")


def prices_csv(path):
    """A regression table: a price from two numbers (one with blanks) and a categorical column
    (with "NA"), plus noise; a few hundred rows."""
    rng = np.random.default_rng(13)
    n = 600
    area = rng.uniform(30, 200, n)
    age = rng.uniform(0, 80, n)
    towns = np.array(["north", "south", "east", "west"])
    town = rng.integers(0, 4, n)
    price = 1000 + 25 * area - 4 * age + np.array([300, -200, 50, 0])[town] + \
        rng.normal(0, 40, n)
    with open(path, "w") as f:
        f.write("area,age,town,price\n")
        for i in range(n):
            a = "" if i % 19 == 7 else "%.2f" % area[i]
            t = "NA" if i % 31 == 3 else towns[town[i]]
            f.write("%s,%.1f,%s,%.2f\n" % (a, age[i], t, price[i]))


def run(args, expect_code=0):
    p = subprocess.run([TRAININGD] + args, capture_output=True, text=True, timeout=600)
    if p.returncode != expect_code:
        raise AssertionError("trainingd %s: exit %d, wanted %d\nstdout: %s\nstderr: %s" %
                             (" ".join(args), p.returncode, expect_code, p.stdout, p.stderr[-3000:]))
    return p


def value_info(v):
    dims = [d.dim_param if d.HasField("dim_param") else d.dim_value
            for d in v.type.tensor_type.shape.dim]
    return v.name, v.type.tensor_type.elem_type, dims


def check_file(path, case, ckpt_dir, final_step, job_id):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    expect(model.ir_version == 7, model.ir_version)
    categorical = case.get("categorical", 0)
    expect([(o.domain, o.version) for o in model.opset_import] ==
           [("", 13)] + ([("ai.onnx.ml", 2)] if categorical else []), model.opset_import)
    # A table's categorical values are a string input of their own (onnx.TensorProto.STRING 8).
    expect([value_info(v) for v in model.graph.input] ==
           [("input", 1, ["batch"] + case["shape"])] +
           ([("categorical", 8, ["batch", categorical])] if categorical else []),
           model.graph.input)
    regression = case.get("task") == "regression"
    # A classifier's predicted class "label" (int64, onnx.TensorProto.INT64 7), after a
    # two-class model's "positive_probability".
    two = not regression and case["classes"] == 2
    expect([value_info(v) for v in model.graph.output] ==
           [("logits", 1, ["batch", case["classes"]]),
            ("prediction" if regression else "probabilities", 1, ["batch", case["classes"]])] +
           ([("positive_probability", 1, ["batch"])] if two else []) +
           ([] if regression else [("label", 7, ["batch"])]),
           model.graph.output)
    ops = [n.op_type for n in model.graph.node]
    expect(ops[:len(case["first_ops"])] == case["first_ops"], "%s: %s" % (case["name"], ops))
    threshold = case.get("decision_threshold", 0.5)
    if regression:
        expect(ops[-2:] == ["Mul", "Add"], ops)
    else:
        label_ops = (["Gather"] if two else []) + \
            (["Greater", "Cast"] if threshold != 0.5 else ["ArgMax"])
        expect(ops[-len(label_ops):] == label_ops, ops)
        softmax = model.graph.node[-len(label_ops) - 1]
        expect(softmax.op_type == "Softmax" and
               [(a.name, helper.get_attribute_value(a)) for a in softmax.attribute] ==
               [("axis", 1)], softmax)
        if threshold != 0.5:
            t = next(i for i in model.graph.initializer if i.name == "decision_threshold")
            expect(onnx.numpy_helper.to_array(t) == np.float32(threshold), t)
    expect("Dropout" not in ops, ops)
    for op in case.get("ops", []):
        expect(op in ops, "%s: no %s in %s" % (case["name"], op, ops))
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    for conv in convs if not case.get("graph") else []:
        attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
        expect(attrs["pads"] == [2, 2, 2, 2] and attrs["kernel_shape"] == [5, 5], attrs)
    if convs and not case.get("graph"):
        # NHWC back before the flatten, so the first dense layer reads the engine's order.
        flatten = ops.index("Flatten")
        transpose = model.graph.node[flatten - 1]
        expect(transpose.op_type == "Transpose" and
               helper.get_attribute_value(transpose.attribute[0]) == [0, 2, 3, 1], transpose)
    meta = {p.key: p.value for p in model.metadata_props}
    expect(meta["job_id"] == job_id, meta)
    expect(meta["step"] == str(final_step), meta)
    expect(meta["dataset"] == case["dataset"], meta)
    expect(meta.get("dataset_sha256", "") == case.get("sha256", ""), meta)
    expect(json.loads(meta["class_names"]) == case["class_names"], meta)
    expect(meta["trainingd_version"] == model.producer_version and
           re.fullmatch(r"\d+\.\d+\.\d+", model.producer_version), meta)
    expect(meta["preprocessing"] == case["preprocessing"], meta)
    expect(meta["task"] == case.get("task", "classification"), meta)
    expect(meta.get("decision_threshold") == (repr(threshold) if two else None), meta)
    with open(os.path.join(ckpt_dir, "model.json")) as f:
        recorded = json.load(f)
    expect(recorded["example_shape"] == [case["shape"][0] + categorical] if categorical else
           recorded["example_shape"] == case["shape"], recorded)
    expect(recorded["class_names"] == case["class_names"], recorded)
    expect([c["name"] for c in recorded.get("categorical", [])] == case.get("categorical_names", []),
           recorded)
    expect(recorded.get("missing_indicators", []) == case.get("missing_indicators", []),
           recorded)
    expect([c.get("hash_buckets", 0) for c in recorded.get("categorical", [])] ==
           case.get("hash_buckets", [0] * categorical), recorded)
    if case.get("hash_buckets"):
        # The graph's table: each level of a hashed column to 2 + FNV-1a-64(level) mod N.
        def fnv1a64(s):
            h = 14695981039346656037
            for b in s.encode():
                h = ((h ^ b) * 1099511628211) % 2 ** 64
            return h
        for c, n in enumerate(case["hash_buckets"]):
            if not n:
                continue
            enc = [x for x in model.graph.node if x.op_type == "LabelEncoder"][c]
            attrs = {a.name: helper.get_attribute_value(a) for a in enc.attribute}
            levels = recorded["categorical"][c]["levels"]
            expect(len(levels) > 30 and
                   attrs["values_int64s"][:len(levels)] ==
                   [2 + fnv1a64(v) % n for v in levels], (levels, attrs["values_int64s"]))
    expect(recorded.get("task", "classification") == case.get("task", "classification") and
           ("target_mean" in recorded) == regression, recorded)
    expect(recorded.get("decision_threshold") == (threshold if two else None), recorded)


def engine_predictions(onnx_predict, ckpt_dir, spec_path, datasets_dir, prefix):
    """onnx_predict: the job's raw test split and the engine's probabilities, under `prefix`."""
    p = subprocess.run([onnx_predict, ckpt_dir, spec_path, DATA_ROOT, datasets_dir, prefix],
                       capture_output=True, text=True, timeout=600)
    expect(p.returncode == 0, "onnx_predict: %s" % p.stderr)


def onnxruntime_report(node, onnx_path, prefix):
    """onnx_equivalence.mjs on the examples under `prefix`: its JSON report."""
    p = subprocess.run([node, os.path.join(HERE, "onnx_equivalence.mjs"), onnx_path, prefix],
                       capture_output=True, text=True, timeout=600)
    expect(p.returncode == 0, "onnx_equivalence.mjs: %s" % p.stderr)
    return json.loads(p.stdout.strip().splitlines()[-1])


def judge(case, r, trainer_accuracy):
    """onnxruntime's report `r` on a model's whole test split against the engine's Predict
    (a regression model's: `trainer_accuracy` is the trainer's test/rmse)."""
    if case.get("task") == "regression":
        expect(r["outputs"] == ["logits", "prediction"] and r["n"] == case["test_examples"], r)
        expect(r["max_rel_diff"] <= 1e-4, r)
        expect(abs(r["ort_rmse"] - r["engine_rmse"]) <= 1e-4 * r["engine_rmse"], r)
        # The trainer's log line: 6 significant digits.
        expect(abs(r["engine_rmse"] - trainer_accuracy) <= 1e-5 * trainer_accuracy, (r, trainer_accuracy))
        return
    two = case["classes"] == 2
    expect(r["inputs"] == ["input"] + (["categorical"] if case.get("categorical") else []) and
           r["outputs"] == ["logits", "probabilities"] + (["positive_probability"] if two else []) +
           ["label"], r)
    expect(r["n"] == case["test_examples"], r)
    expect(r["agree"] >= 0.999 * r["n"], r)
    # The graph's labels are the engine's predicted classes; with a decision threshold some are
    # not the arg-max (else the threshold would not have been tested), without one none.
    expect(r["label_agree"] >= 0.999 * r["n"], r)
    if case.get("decision_threshold", 0.5) != 0.5:
        expect(r["not_argmax"] > 0 and abs(r["ort_not_argmax"] - r["not_argmax"]) <= 0.001 * r["n"], r)
    else:
        expect(r["not_argmax"] == 0 and r["ort_not_argmax"] == 0, r)
    expect(r["max_prob_diff"] <= 1e-4, r)
    expect(r["ort_accuracy"] == r["engine_accuracy"], r)
    # The trainer's final evaluation (its log line, 4 decimals) on the same checkpoint.
    expect(abs(r["engine_accuracy"] - trainer_accuracy) < 1e-4 + 1e-9, (r, trainer_accuracy))


def equivalence(case, ckpt_dir, spec_path, datasets_dir, onnx_path, tmp, trainer_accuracy):
    prefix = os.path.join(tmp, case["name"])
    engine_predictions(ONNX_PREDICT, ckpt_dir, spec_path, datasets_dir, prefix)
    r = onnxruntime_report(NODE, onnx_path, prefix)
    if case.get("task") == "regression":
        print("  %s: %d test examples, max relative diff %.2e, rmse %.4f (onnxruntime) %.4f "
              "(engine) %.4f (trainer)" % (case["name"], r["n"], r["max_rel_diff"], r["ort_rmse"],
                                           r["engine_rmse"], trainer_accuracy))
        judge(case, r, trainer_accuracy)
        return
    print("  %s: %d test examples, argmax agrees on %d, label on %d (%d not the argmax), max "
          "|p diff| %.2e, accuracy %.4f (onnxruntime) %.4f (engine) %.4f (trainer)" %
          (case["name"], r["n"], r["agree"], r["label_agree"], r["not_argmax"],
           r["max_prob_diff"], r["ort_accuracy"], r["engine_accuracy"], trainer_accuracy))
    judge(case, r, trainer_accuracy)


def export_errors(ckpt_dir, tmp):
    out = os.path.join(tmp, "x.onnx")
    p = run(["export", os.path.join(tmp, "nowhere"), "-o", out], 1)
    expect("no such directory" in p.stderr, p.stderr)
    bare = os.path.join(tmp, "bare")
    shutil.copytree(ckpt_dir, bare)
    os.remove(os.path.join(bare, "model.json"))
    p = run(["export", bare, "-o", out], 1)
    expect("no model.json" in p.stderr and "trained before" in p.stderr, p.stderr)
    p = run(["export", ckpt_dir, "--step", "12345", "-o", out], 1)
    expect("step 12345" in p.stderr and "there are: 0, " in p.stderr, p.stderr)
    p = run(["export", ckpt_dir], 2)
    expect("-o" in p.stderr, p.stderr)
    expect(not os.path.exists(out), "a failed export left %s" % out)
    # An earlier step, by --step: the initial checkpoint.
    run(["export", ckpt_dir, "--step", "0", "-o", out])
    meta = {p.key: p.value for p in onnx.load(out).metadata_props}
    expect(meta["step"] == "0" and "job_id" not in meta, meta)


# The table of table_csv() as its jobs see it: five numbers and two categorical columns, whose
# strings the ONNX graph encodes itself (a column picked, LabelEncoder, the one-hot or embedding
# row gathered), then joins to the numbers.
TABLE = dict(dataset="table", shape=[5], categorical=2, categorical_names=["color", "city"],
             classes=3, class_names=["high", "low", "mid"], preprocessing="standard",
             test_examples=200)
ENCODING_OPS = ["Gather", "LabelEncoder", "Gather"] * 2 + ["Concat"]
INDICATOR_OPS = ["Gather", "IsNaN", "Cast", "Concat"]


def cases(rgb_sha, table_sha):
    """The five models: the three presets on Fashion-MNIST, a colour CNN on the npz of
    colour_npz() and a standardized MLP on the CSV of table_csv() (uploads of these digests),
    each with its tiny spec and what its ONNX file must say. serving_test.py trains all five as
    daemon jobs and checks their exports; main() trains RUN_CASES with `trainingd run`."""
    def example(name):
        with open(os.path.join(EXAMPLES, name + ".json")) as f:
            return json.load(f)
    digits = [str(c) for c in range(10)]
    fmnist = dict(dataset="fashion-mnist", shape=[28, 28, 1], classes=10,
                  class_names=digits, preprocessing="scale_255", test_examples=10000)
    return [
        dict(fmnist, name="softmax", spec=tiny(example("softmax"), "softmax", 40),
             first_ops=["Div", "Flatten", "Gemm", "Softmax"]),
        dict(fmnist, name="mlp", spec=tiny(example("mlp"), "mlp", 40),
             first_ops=["Div", "Flatten", "Gemm", "Relu", "Gemm", "Relu", "Gemm"]),
        dict(fmnist, name="cnn", spec=tiny(example("cnn"), "cnn", 20),
             first_ops=["Div", "Transpose", "Conv", "Relu", "MaxPool", "Conv", "Relu",
                        "MaxPool", "Transpose", "Flatten", "Gemm", "Relu", "Gemm"]),
        dict(name="rgb-cnn", dataset="rgb", sha256=rgb_sha, shape=[16, 16, 3], classes=3,
             class_names=["0", "1", "2"], preprocessing="scale_255", test_examples=300,
             spec=tiny({"dataset": {"name": "rgb", "format": "npz", "sha256": rgb_sha},
                        "model": "cnn", "optimizer": {"type": "adam", "learning_rate": 1e-3},
                        "batch_size": 50, "seed": 3}, "rgb-cnn", 30),
             first_ops=["Div", "Transpose", "Conv"]),
        # With a "was missing" indicator for each number column with blanks (b and d): the
        # graph computes them from the raw input (Gather, IsNaN, Cast) after the standardized
        # numbers; and city's 40 levels, past max_levels 30, hashed into 16 buckets (its
        # LabelEncoder maps each level to its bucket). serving_test.py uploads the table so.
        dict(TABLE, name="table-mlp", sha256=table_sha, missing_indicators=["b", "d"],
             hash_buckets=[0, 16],
             spec=tiny({"dataset": {"name": "table", "format": "csv", "sha256": table_sha,
                                    "normalize": "standard",
                                    "columns": {"missing_indicator": ["*"], "max_levels": 30,
                                                "hash_buckets": {"city": 16}}},
                        "model": "mlp", "optimizer": {"type": "adam", "learning_rate": 1e-2},
                        "batch_size": 50, "seed": 5}, "table-mlp", 100),
             first_ops=["IsNaN", "Where", "Sub", "Div"] + INDICATOR_OPS + ENCODING_OPS +
             ["Gemm", "Relu"]),
    ]


def graph_cases(rgb_sha, table_sha):
    """Model graphs (docs/job-spec.md#graph), trained by main() only: on the colour images, a
    residual block with batch normalization (a strided 1x1 projection shortcut added to two
    3x3 convolutions, each followed by batch norm), concat, average pooling, the smooth
    activations and global average pooling; on the table, batch norm of rows and an add of two
    branches. Every layer type the ONNX writer has beyond the presets' is in one of them."""
    rgb = dict(dataset="rgb", sha256=rgb_sha, shape=[16, 16, 3], classes=3,
               class_names=["0", "1", "2"], preprocessing="scale_255", test_examples=300)
    table = dict(TABLE, sha256=table_sha)
    conv = lambda filters, kernel, **kw: dict(type="conv2d", filters=filters, kernel=kernel,
                                               padding="same", **kw)
    resnet = [
        dict(conv(8, 3), name="stem"),
        dict(type="batch_norm"),
        dict(type="relu", name="block_in"),
        conv(16, 3, stride=2),
        dict(type="batch_norm", momentum=0.9),
        dict(type="relu"),
        conv(16, 3),
        dict(type="batch_norm", name="branch"),
        dict(conv(16, 1, stride=2), name="shortcut", inputs=["block_in"]),
        dict(type="add", name="sum", inputs=["branch", "shortcut"]),
        dict(type="relu", name="block_out"),
        dict(type="sigmoid", name="gate"),
        dict(type="concat", inputs=["block_out", "gate"]),
        dict(type="avg_pool2d", pool=2),
        dict(type="tanh"),
        dict(type="global_avg_pool"),
        dict(type="gelu"),
        dict(type="dense", units=3),
    ]
    rows = [
        dict(type="batch_norm", name="normalized"),
        dict(type="dense", units=16, activation="relu", name="a"),
        dict(type="dense", units=16, name="b", inputs=["normalized"]),
        dict(type="add", inputs=["a", "b"]),
        dict(type="gelu"),
        dict(type="dense", units=3),
    ]
    return [
        dict(rgb, name="rgb-resnet", graph=True,
             spec=tiny({"dataset": {"name": "rgb", "format": "npz", "sha256": rgb_sha},
                        "model": {"layers": resnet},
                        "optimizer": {"type": "adam", "learning_rate": 1e-2},
                        "batch_size": 50, "seed": 4}, "rgb-resnet", 30),
             first_ops=["Div", "Transpose", "Conv", "BatchNormalization", "Relu"],
             ops=["Add", "Concat", "AveragePool", "GlobalAveragePool", "Sigmoid", "Tanh", "Erf"]),
        # Per-channel normalization (its Sub and Div of [C] before the first layer) and an
        # augmented training split, which the export does not see.
        dict(rgb, name="rgb-per-channel", graph=True, preprocessing="per_channel",
             spec=tiny({"dataset": {"name": "rgb", "format": "npz", "sha256": rgb_sha,
                                    "normalize": "per_channel"},
                        "model": {"layers": resnet},
                        "augmentation": {"random_crop": {"padding": 2}, "horizontal_flip": True,
                                         "brightness": 0.1, "contrast": 0.2},
                        "optimizer": {"type": "adam", "learning_rate": 1e-2},
                        "batch_size": 50, "seed": 4}, "rgb-per-channel", 30),
             first_ops=["Div", "Sub", "Div", "Transpose", "Conv", "BatchNormalization", "Relu"]),
        dict(table, name="table-graph", graph=True,
             spec=tiny({"dataset": {"name": "table", "format": "csv", "sha256": table_sha,
                                    "normalize": "standard"},
                        "model": {"layers": rows},
                        "optimizer": {"type": "adam", "learning_rate": 1e-2},
                        "batch_size": 50, "seed": 6}, "table-graph", 100),
             first_ops=["IsNaN", "Where", "Sub", "Div"] + ENCODING_OPS +
             ["BatchNormalization", "Gemm", "Relu", "Gemm", "Add"]),
    ]


def binary_cases(churn_sha):
    """A two-class MLP on table_csv(binary=True) with a decision threshold of 0.3: its ONNX
    graph has "positive_probability" and a "label" of Cast(Greater(p1, 0.3)), and onnxruntime's
    labels, the engine's (TrainedModel::PredictedClasses), /infer's (serving_test.py) and the
    trainer's test/accuracy all count class 1 where p1 > 0.3, which moves some off the arg-max."""
    return [dict(TABLE, name="binary-threshold", dataset="churn", sha256=churn_sha, classes=2,
                 class_names=["no", "yes"], decision_threshold=0.3,
                 spec=dict(tiny({"dataset": {"name": "churn", "format": "csv",
                                             "sha256": churn_sha, "normalize": "standard"},
                                 "model": "mlp",
                                 "optimizer": {"type": "adam", "learning_rate": 1e-2},
                                 "batch_size": 50, "seed": 8}, "binary-threshold", 60),
                           decision_threshold=0.3),
                 first_ops=["IsNaN", "Where", "Sub", "Div"] + ENCODING_OPS + ["Gemm", "Relu"])]


# The models trained here by `trainingd run`, which reads their uploads itself from
# --datasets-dir: the daemon's jobs load their data otherwise, and serving_test.py checks the
# exports of all five trained as daemon jobs. The graphs are trained here only.
RUN_CASES = ("rgb-cnn", "table-mlp", "rgb-resnet", "table-graph", "rgb-per-channel",
             "prices-regression", "binary-threshold")


def regression_cases(prices_sha):
    """A regression MLP (huber) on the CSV of prices_csv(): numbers with blanks, a categorical
    column with "NA", the target standardized in training and un-standardized in the graph."""
    return [dict(name="prices-regression", task="regression", dataset="prices", sha256=prices_sha,
                 shape=[2], categorical=1, categorical_names=["town"], classes=1,
                 class_names=["price"], preprocessing="standard", test_examples=120,
                 spec=tiny({"dataset": {"name": "prices", "format": "csv", "sha256": prices_sha,
                                        "label_column": "price", "normalize": "standard"},
                            "task": "regression", "loss": "huber", "model": "mlp",
                            "optimizer": {"type": "adam", "learning_rate": 1e-2},
                            "batch_size": 50, "seed": 7}, "prices-regression", 100),
                 first_ops=["IsNaN", "Where", "Sub", "Div", "Gather", "LabelEncoder", "Gather",
                            "Concat", "Gemm", "Relu"])]


def main():
    global TRAININGD, ONNX_PREDICT, NODE
    TRAININGD, ONNX_PREDICT, NODE = sys.argv[1:4]
    tmp = tempfile.mkdtemp(prefix="trainingd-onnx-")
    try:
        datasets_dir = os.path.join(tmp, "datasets")
        npz = os.path.join(tmp, "rgb.npz")
        colour_npz(npz)
        csv = os.path.join(tmp, "table.csv")
        table_csv(csv)
        with open(npz, "rb") as f:
            rgb_sha = upload(datasets_dir, "rgb", "npz", f.read())
        with open(csv, "rb") as f:
            table_sha = upload(datasets_dir, "table", "csv", f.read())
        prices = os.path.join(tmp, "prices.csv")
        prices_csv(prices)
        with open(prices, "rb") as f:
            prices_sha = upload(datasets_dir, "prices", "csv", f.read())
        churn = os.path.join(tmp, "churn.csv")
        table_csv(churn, binary=True)
        with open(churn, "rb") as f:
            churn_sha = upload(datasets_dir, "churn", "csv", f.read())
        for case in (cases(rgb_sha, table_sha) + graph_cases(rgb_sha, table_sha) +
                     regression_cases(prices_sha) + binary_cases(churn_sha)):
            if case["name"] not in RUN_CASES:
                continue
            t0 = time.monotonic()
            spec_path = os.path.join(tmp, case["name"] + ".json")
            with open(spec_path, "w") as f:
                json.dump(case["spec"], f)
            ckpt = os.path.join(tmp, "ckpt-" + case["name"])
            p = run(["run", spec_path, "--checkpoint-dir", ckpt, "--datasets-dir", datasets_dir])
            step = case["spec"]["max_steps"]
            metric = "rmse" if case.get("task") == "regression" else "accuracy"
            m = re.search(r"completed at global step (\d+).*test/%s = ([0-9.e+-]+)" % metric,
                          p.stderr)
            expect(m and int(m.group(1)) == step, p.stderr[-2000:])
            onnx_path = os.path.join(tmp, case["name"] + ".onnx")
            p = run(["export", ckpt, "-o", onnx_path, "--job-id", "job-" + case["name"]])
            expect("at global step %d" % step in p.stdout, p.stdout)
            check_file(onnx_path, case, ckpt, step, "job-" + case["name"])
            equivalence(case, ckpt, spec_path, datasets_dir, onnx_path, tmp, float(m.group(2)))
            print("  %s: %.1f s" % (case["name"], time.monotonic() - t0))
        export_errors(os.path.join(tmp, "ckpt-" + RUN_CASES[0]), tmp)
        print("onnx_export_test: OK")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
