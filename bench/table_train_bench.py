#!/usr/bin/python3
"""Training throughput on a 1,000,000-row table with 20 number and 10 categorical columns.

    /usr/bin/python3 bench/table_train_bench.py build/daemon/trainingd [--rows 1000000]
        [--steps 3000] [--batch 256] [--rounds 2]

The table is upload_bench.py's CSV as people export it (20 number columns, 10 categorical ones
of 3 to 5,000 levels, 5% of the cells blank or "NA", a label of three names), uploaded once with
normalize=standard, and once more with its categorical columns left out (ignore=c0,...,c9).
Jobs of the `mlp` preset (Adam 1e-3, --batch, --steps) alternate between the two uploads (A B A
B, --rounds pairs) in one daemon with 2 compute threads. The categorical job's model starts
with a categorical_encoding layer: the 3-, 7- and 10-level columns one-hot, the others embedded
(TensorFlow's size rule, ceil(codes^0.25): 3 to 9 values each; 83 values a row in all); with
--embedding-dim N a third kind alternates with them, every embedding N wide.

Per job: the admission time (submit to running: a table with categorical columns is read whole
at submit, for its levels), the load-and-train time (running to completed) and the training
examples/s over the steps (the step counter's reports every 100 steps: the steps between its
first and its last, times the batch, over their wall times). Prints each
job, then per kind the median [min-max] and the CPU.
"""
import argparse
import os
import re
import statistics
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from experiments_bench import Daemon  # noqa: E402
from upload_bench import write_csv  # noqa: E402


def upload(d, name, path, query):
    with open(path, "rb") as f:
        req = urllib.request.Request(
            d.base + "/api/v1/datasets?name=%s&format=csv&normalize=standard%s" % (name, query),
            data=f, method="POST", headers={"Content-Type": "application/octet-stream",
                                            "Content-Length": str(os.path.getsize(path))})
        with urllib.request.urlopen(req, timeout=3600) as r:
            r.read()


def run_job(d, dataset, steps, batch, embedding_dim):
    t0 = time.monotonic()
    spec = {
        "name": dataset, "dataset": dataset, "model": "mlp", "seed": 1, "batch_size": batch,
        "max_steps": steps, "optimizer": {"type": "adam", "learning_rate": 1e-3},
        "hooks": {"checkpoint": {"every_steps": steps}, "summary": {"every_steps": 100},
                  "step_counter": {"every_steps": 100}}}
    if embedding_dim:
        spec["categorical"] = {"embedding_dim": embedding_dim}
    job = d.call("POST", "/api/v1/jobs", spec)
    admitted = time.monotonic() - t0
    running = None
    while True:
        j = d.call("GET", "/api/v1/jobs/" + job["id"])
        if j["state"] == "running" and running is None:
            running = time.monotonic()
        if j["state"] in ("completed", "failed", "stopped"):
            break
        time.sleep(0.2)
    ended = time.monotonic()
    if j["state"] != "completed":
        raise SystemExit("job %s: %s %s" % (job["id"], j["state"], j.get("error")))
    rates = d.call("GET", "/api/v1/jobs/%s/scalars?tag=global_step%%2Fsec" % job["id"])
    points = rates["points"]
    # The steady rate: from the step counter's first report (the data loaded, the first steps
    # taken) to its last, by their wall times.
    first, last = points[0], points[-1]
    rate = (last["step"] - first["step"]) * batch / (last["wall_time"] - first["wall_time"])
    return admitted, ended - (running or t0), rate


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trainingd")
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--embedding-dim", type=int, default=0,
                   help="with N > 0, a third kind of job alternates with the two: the categorical "
                        "table with every embedding N wide (categorical.embedding_dim)")
    a = p.parse_args()
    with open("/proc/cpuinfo") as f:
        cpu = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M).group(1)
    print("CPU: %s, %d cores" % (cpu, os.cpu_count()))
    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, "table.csv")
        write_csv(csv, 0, rows=a.rows)
        print("table: %d rows, %.0f MB" % (a.rows, os.path.getsize(csv) / 1e6), flush=True)
        d = Daemon(a.trainingd, os.path.join(tmp, "var"), 2)
        try:
            upload(d, "categorical", csv, "")
            upload(d, "numbers", csv, "&ignore=" + ",".join("c%d" % i for i in range(10)))
            kinds = ["categorical", "numbers"] + (["wide"] if a.embedding_dim else [])
            results = {k: [] for k in kinds}
            for _ in range(a.rounds):
                for kind in kinds:
                    r = run_job(d, "categorical" if kind == "wide" else kind, a.steps, a.batch,
                                a.embedding_dim if kind == "wide" else 0)
                    results[kind].append(r)
                    print("%s: admitted in %.2f s, loaded and trained in %.1f s, %.0f examples/s"
                          % ((kind,) + r), flush=True)
        finally:
            d.stop()
    print()
    print("| columns | admission s | load + %d steps s | training examples/s |" % a.steps)
    print("|---|---:|---:|---:|")
    for kind, rs in results.items():
        cells = []
        for k in range(3):
            v = [r[k] for r in rs]
            cells.append("%.*f [%.*f-%.*f]" % ((2 if k == 0 else 0), statistics.median(v),
                                              (2 if k == 0 else 0), min(v),
                                              (2 if k == 0 else 0), max(v)))
        label = {"categorical": "20 numbers + 10 categorical",
                 "numbers": "20 numbers (categorical left out)",
                 "wide": "20 numbers + 10 categorical, embeddings %d wide" % a.embedding_dim}
        print("| %s | %s |" % (label[kind], " | ".join(cells)))


if __name__ == "__main__":
    sys.exit(main())
