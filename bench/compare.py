#!/usr/bin/python3
"""Run the trainingd engine benchmark and the PyTorch reference side by side.

The two benchmarks are run alternately (trainingd, pytorch, trainingd,
pytorch, ...) for --rounds rounds with identical flags:

  <build>/bench/engine_bench     --models M --batches B --threads T --seconds S
                                 --infer-batch I --data D
  bench/pytorch_reference.py     (same flags, run with /usr/bin/python3)

Both print one JSON object per line on stdout, e.g.

  {"impl": "trainingd", "model": "cnn", "mode": "train", "batch": 50,
   "threads": 2, "examples_per_sec": 889.1, "steps": 123, "seconds": 10.01}

and this script prints, per (model, mode, batch), the median and min-max
spread of examples/s for each implementation, the ratio trainingd/pytorch of
the medians, and the target from the issue:

  cnn train, batch 50           >= 2.0x
  cnn train, batch 100          >= 1.3x
  cnn infer                     >= 1.3x
  softmax / mlp train           >= 1.0x
  resnet20 train, batch 128     >= 1.5x  (CIFAR-10-shaped data, issue 51)
  (cnn train batch 256 and anything else: no target, "-")

Usage:
  /usr/bin/python3 bench/compare.py --build build --rounds 3 --seconds 10
  /usr/bin/python3 bench/compare.py --markdown --json-out /tmp/bench.jsonl
  /usr/bin/python3 bench/compare.py --models resnet20 --batches 128 --rounds 2

Standard library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_builds import openblas_core  # noqa: E402
REPO_ROOT = os.path.dirname(HERE)
DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
DEFAULT_PYTHON = "/usr/bin/python3"
DEFAULT_REFERENCE = os.path.join(HERE, "pytorch_reference.py")

IMPL_A = "trainingd"
IMPL_B = "pytorch"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def die(msg, code=2):
    log("compare.py: error: " + msg)
    sys.exit(code)


# --------------------------------------------------------------------------
# Targets (from the issue)
# --------------------------------------------------------------------------

def target_for(model, mode, batch):
    """Minimum ratio trainingd/pytorch, or None when there is no target."""
    if model == "cnn":
        if mode == "train" and batch == 50:
            return 2.0
        if mode == "train" and batch == 100:
            return 1.3
        if mode == "infer":
            return 1.3
        return None
    if model in ("softmax", "mlp") and mode == "train":
        return 1.0
    if model == "resnet20" and mode == "train" and batch == 128:
        return 1.5
    return None


# --------------------------------------------------------------------------
# Running the benchmarks
# --------------------------------------------------------------------------

def bench_flags(args):
    return [
        "--models", args.models,
        "--batches", args.batches,
        "--threads", str(args.threads),
        "--seconds", str(args.seconds),
        "--infer-batch", str(args.infer_batch),
        "--data", args.data,
    ]


def resolve_engine(args):
    if args.engine:
        candidates = [args.engine]
    else:
        rel = os.path.join(args.build, "bench", "engine_bench")
        candidates = [rel]
        if not os.path.isabs(args.build):
            candidates.append(os.path.join(REPO_ROOT, rel))
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    tried = ", ".join(candidates)
    die("trainingd benchmark binary not found or not executable (tried: %s).\n"
        "  Build it first, e.g. `cmake --build %s --target engine_bench`, "
        "or pass --build DIR / --engine PATH." % (tried, args.build))


def busy_cpus():
    """Number of runnable tasks other than ourselves (from /proc/loadavg)."""
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
        return max(0, running - 1)
    except (OSError, ValueError, IndexError):
        return 0


def check_idle(label):
    # Sample a few times; a single reading is noisy.
    samples = []
    for _ in range(3):
        samples.append(busy_cpus())
        time.sleep(0.05)
    busy = min(samples)
    if busy > 0:
        log("compare.py: warning: %d other runnable task(s) before %s; "
            "results may be disturbed by concurrent load" % (busy, label))


def run_one(impl, cmd, env, round_no, args):
    label = "%s (round %d/%d)" % (impl, round_no, args.rounds)
    check_idle(label)
    log("compare.py: running %s: %s" % (label, " ".join(cmd)))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if args.quiet else None,
            universal_newlines=True)
    except OSError as e:
        die("cannot run %s: %s" % (cmd[0], e))
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        die("%s exited with status %d (command: %s)" % (label, proc.returncode, " ".join(cmd)))

    rows = []
    for line in proc.stdout.splitlines():
        s = line.strip()
        if not s:
            continue
        if not s.startswith("{"):
            log("compare.py: warning: %s: ignoring non-JSON stdout line: %s" % (impl, s[:200]))
            continue
        try:
            row = json.loads(s)
        except ValueError as e:
            die("%s: bad JSON line (%s): %s" % (impl, e, s[:200]))
        missing = [k for k in ("impl", "model", "mode", "batch", "examples_per_sec") if k not in row]
        if missing:
            die("%s: JSON row lacks %s: %s" % (impl, ", ".join(missing), s[:200]))
        if row["impl"] != impl:
            die("%s: row has \"impl\": %r, expected %r" % (label, row["impl"], impl))
        if "threads" in row and int(row["threads"]) != args.threads:
            log("compare.py: warning: %s reports threads=%s, requested %d"
                % (impl, row["threads"], args.threads))
        row["round"] = round_no
        rows.append(row)
    if not rows:
        die("%s printed no result rows" % label)
    log("compare.py: %s done in %.1f s, %d rows" % (label, elapsed, len(rows)))
    return rows


# --------------------------------------------------------------------------
# Table
# --------------------------------------------------------------------------

def fmt_rate(v):
    if v is None:
        return "n/a"
    if v >= 1000:
        return "{:,.0f}".format(v)
    return "{:.1f}".format(v)


def fmt_cell(values):
    if not values:
        return "n/a"
    med = statistics.median(values)
    if len(values) == 1:
        return fmt_rate(med)
    return "%s [%s-%s]" % (fmt_rate(med), fmt_rate(min(values)), fmt_rate(max(values)))


def build_table(rows, models_order, batches_order):
    data = {}  # (model, mode, batch) -> impl -> [examples_per_sec]
    by_round = {}  # (model, mode, batch) -> round -> impl -> examples_per_sec
    for r in rows:
        key = (r["model"], r["mode"], int(r["batch"]))
        data.setdefault(key, {}).setdefault(r["impl"], []).append(float(r["examples_per_sec"]))
        if "round" in r:
            by_round.setdefault(key, {}).setdefault(r["round"], {})[r["impl"]] = \
                float(r["examples_per_sec"])

    def sort_key(key):
        model, mode, batch = key
        mi = models_order.index(model) if model in models_order else len(models_order)
        modei = {"train": 0, "infer": 1}.get(mode, 2)
        bi = batches_order.index(batch) if batch in batches_order else len(batches_order)
        return (mi, model, modei, mode, bi, batch)

    table = []
    for key in sorted(data, key=sort_key):
        model, mode, batch = key
        a = data[key].get(IMPL_A, [])
        b = data[key].get(IMPL_B, [])
        ratio = None
        if a and b and statistics.median(b) > 0:
            ratio = statistics.median(a) / statistics.median(b)
        target = target_for(model, mode, batch)
        if target is None:
            status = "-"
        elif ratio is None:
            status = "n/a"
        else:
            status = "PASS" if ratio >= target else "MISS"
        # trainingd / PyTorch within each round, where both ran.
        round_ratios = [v[IMPL_A] / v[IMPL_B] for _, v in sorted(by_round.get(key, {}).items())
                        if v.get(IMPL_A) and v.get(IMPL_B)]
        table.append({
            "model": model, "mode": mode, "batch": batch,
            "round_ratios": round_ratios,
            IMPL_A: fmt_cell(a), IMPL_B: fmt_cell(b),
            "ratio": "n/a" if ratio is None else "%.2fx" % ratio,
            "target": "-" if target is None else ">= %.1fx" % target,
            "status": status,
            "ratio_value": ratio,
        })
    return table


HEADERS = ("model", "mode", "batch", "trainingd ex/s", "pytorch ex/s",
           "ratio", "target", "result")


def table_cells(table):
    return [(t["model"], t["mode"], str(t["batch"]), t[IMPL_A], t[IMPL_B],
             t["ratio"], t["target"], t["status"]) for t in table]


def print_plain(table, out):
    cells = table_cells(table)
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(HEADERS)]
    right = {2, 3, 4, 5}

    def line(vals):
        parts = []
        for i, v in enumerate(vals):
            parts.append(v.rjust(widths[i]) if i in right else v.ljust(widths[i]))
        return "  ".join(parts).rstrip()

    print(line(HEADERS), file=out)
    print(line(["-" * w for w in widths]), file=out)
    for c in cells:
        print(line(c), file=out)


def print_markdown(table, out):
    heads = ("Model", "Mode", "Batch", "trainingd ex/s", "PyTorch ex/s",
             "Ratio", "Target", "Result")
    print("| " + " | ".join(heads) + " |", file=out)
    print("|" + "|".join(["---", "---", "---:", "---:", "---:", "---:", "---", "---"]) + "|",
          file=out)
    for c in table_cells(table):
        vals = list(c)
        if vals[7] in ("PASS", "MISS"):
            vals[7] = "**%s**" % vals[7]
        print("| " + " | ".join(vals) + " |", file=out)


# --------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Compare trainingd's engine_bench with the PyTorch reference "
        "(alternating runs, medians, ratio vs. targets).")
    p.add_argument("--build", default="build",
                   help="CMake build directory containing bench/engine_bench (default: build)")
    p.add_argument("--engine", default=None,
                   help="explicit path to the engine_bench binary (overrides --build)")
    p.add_argument("--rounds", type=int, default=3, help="A/B rounds (default 3)")
    p.add_argument("--models", default="cnn,mlp,softmax")
    p.add_argument("--batches", default="50,100,256")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seconds", type=float, default=10.0,
                   help="measurement time per configuration and run")
    p.add_argument("--infer-batch", type=int, default=1000)
    p.add_argument("--data", default=DEFAULT_DATA)
    p.add_argument("--python", default=DEFAULT_PYTHON,
                   help="interpreter for the PyTorch reference (default /usr/bin/python3)")
    p.add_argument("--reference", default=DEFAULT_REFERENCE,
                   help="path of pytorch_reference.py")
    p.add_argument("--markdown", action="store_true",
                   help="print the table as Markdown (for docs/benchmarks.md)")
    p.add_argument("--json-out", metavar="FILE", default=None,
                   help="write all raw rows (JSON lines, with a \"round\" field) to FILE")
    p.add_argument("--quiet", action="store_true",
                   help="discard the benchmarks' stderr (progress output)")
    p.add_argument("--from-json", metavar="FILE", default=None,
                   help="print the table from rows saved by --json-out instead of running")
    p.add_argument("--fail-on-miss", action="store_true",
                   help="exit with status 1 if any target is missed")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error("--rounds must be >= 1")
    if args.threads < 1:
        p.error("--threads must be >= 1")
    if args.seconds <= 0:
        p.error("--seconds must be positive")
    try:
        args.batch_list = [int(b) for b in args.batches.split(",") if b.strip()]
    except ValueError:
        p.error("--batches must be a comma-separated list of integers")
    args.model_list = [m.strip() for m in args.models.split(",") if m.strip()]
    if args.seconds == int(args.seconds):
        args.seconds = int(args.seconds)
    return args


def load_rows(path):
    rows = []
    try:
        with open(path) as f:
            for line in f:
                if line.strip():
                    rows.append(json.loads(line))
    except (OSError, ValueError) as e:
        die("cannot read rows from %s: %s" % (path, e))
    return rows


def main(argv=None):
    args = parse_args(argv)
    if args.from_json:
        rows = load_rows(args.from_json)
        args.rounds = max([r.get("round", 1) for r in rows] or [1])
        return report(rows, args)

    engine = resolve_engine(args)
    if not os.path.isfile(args.reference):
        die("PyTorch reference script not found: %s" % args.reference)
    if not (os.path.isfile(args.python) and os.access(args.python, os.X_OK)):
        die("python interpreter not found: %s (needs python3-torch and python3-numpy)"
            % args.python)
    if not os.path.isdir(args.data):
        die("data directory not found: %s" % args.data)

    flags = bench_flags(args)
    cmd_a = [engine] + flags
    cmd_b = [args.python, args.reference] + flags
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(args.threads)
    # PyTorch's dense layers run on Debian's OpenBLAS, which falls back to its SSE3 kernels on a
    # CPU newer than its table (this machine's Emerald Rapids): give it the kernels it would pick
    # if it knew the CPU, as a fair comparison must (compare_builds.py says which).
    core = openblas_core()
    if core and "OPENBLAS_CORETYPE" not in env:
        env["OPENBLAS_CORETYPE"] = core
    log("compare.py: OpenBLAS kernels for PyTorch: %s" % env.get("OPENBLAS_CORETYPE", "its own"))

    rows = []
    json_file = None
    if args.json_out:
        try:
            json_file = open(args.json_out, "w")
        except OSError as e:
            die("cannot write %s: %s" % (args.json_out, e))

    for rnd in range(1, args.rounds + 1):
        for impl, cmd in ((IMPL_A, cmd_a), (IMPL_B, cmd_b)):
            new = run_one(impl, cmd, env, rnd, args)
            rows.extend(new)
            if json_file:
                for r in new:
                    json_file.write(json.dumps(r) + "\n")
                json_file.flush()
    if json_file:
        json_file.close()
        log("compare.py: raw rows written to %s" % args.json_out)
    return report(rows, args)


def report(rows, args):
    table = build_table(rows, args.model_list, args.batch_list)
    out = sys.stdout
    # From the rows themselves, so that --from-json describes the run it reads, not its own flags.
    rounds = len({r["round"] for r in rows if "round" in r}) or args.rounds
    seconds = statistics.median([float(r["seconds"]) for r in rows]) if rows else args.seconds
    if args.markdown:
        print_markdown(table, out)
        print("", file=out)
        print("Median [min-max] examples/s over %d alternating rounds; %d thread(s), "
              "about %.0f s per configuration; cnn inference at batch %d. "
              "Ratio = trainingd median / PyTorch median."
              % (rounds, args.threads, seconds, args.infer_batch), file=out)
    else:
        print("median [min-max] examples/s over %d rounds, threads=%d, about %.0f s per config"
              % (rounds, args.threads, seconds), file=out)
        print_plain(table, out)
    print("", file=out)
    for t in table:
        if t["round_ratios"]:
            r = t["round_ratios"]
            print("%s %s batch %d, trainingd / PyTorch per round: %s (median %.2f)"
                  % (t["model"], t["mode"], t["batch"], ", ".join("%.2f" % x for x in r),
                     statistics.median(r)), file=out)

    misses = [t for t in table if t["status"] == "MISS"]
    missing = [t for t in table if t["status"] == "n/a"]
    if missing:
        log("compare.py: warning: %d row(s) with a target lack data from one side"
            % len(missing))
    if args.fail_on_miss and (misses or missing):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
