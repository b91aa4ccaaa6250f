#!/usr/bin/python3
"""PyTorch reference benchmark for trainingd.

Trains the three TensorFlow MNIST-tutorial models (softmax regression, a small
MLP and the "Deep MNIST" CNN) in PyTorch on the real Fashion-MNIST data, and
the CIFAR ResNet-20 (trainingd's resnet20 preset) on CIFAR-10-shaped random
data (32x32x3, 10 classes: a step's speed does not depend on the values), and
reports throughput in examples/second, one JSON object per line on stdout,
in the same format as the trainingd engine benchmark (bench/engine_bench):

  {"impl": "pytorch", "model": "cnn", "mode": "train", "batch": 50,
   "threads": 2, "examples_per_sec": 889.1, "steps": 123, "seconds": 10.01}

Everything else (progress, versions, BLAS info) goes to stderr.

Run with Debian's interpreter (python3-torch, python3-numpy):

  OMP_NUM_THREADS=2 /usr/bin/python3 bench/pytorch_reference.py \
      --models cnn,mlp,softmax --batches 50,100,256 --threads 2 --seconds 10

Only the standard library, numpy and torch are used (no torchvision, no
network access).
"""

import argparse
import gzip
import json
import os
import sys
import time

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
MODELS = ("softmax", "mlp", "cnn", "resnet20")


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="PyTorch reference throughput for the TF MNIST tutorial models "
        "on Fashion-MNIST (JSON lines on stdout).")
    p.add_argument("--models", default="cnn,mlp,softmax",
                   help="comma-separated subset of: " + ",".join(MODELS))
    p.add_argument("--batches", default="50,100,256",
                   help="comma-separated training batch sizes")
    p.add_argument("--threads", type=int, default=2,
                   help="intra-op threads (torch.set_num_threads, OMP_NUM_THREADS)")
    p.add_argument("--seconds", type=float, default=10.0,
                   help="measurement time per configuration, after warm-up")
    p.add_argument("--infer-batch", type=int, default=1000,
                   help="batch size for the cnn inference measurement")
    p.add_argument("--data", default=DEFAULT_DATA,
                   help="directory with the gzipped Fashion-MNIST IDX files")
    p.add_argument("--warmup-seconds", type=float, default=1.0,
                   help="warm-up time per configuration (at least --warmup-steps steps)")
    p.add_argument("--warmup-steps", type=int, default=3,
                   help="minimum number of warm-up steps per configuration")
    args = p.parse_args(argv)

    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    for m in args.models:
        if m not in MODELS:
            p.error("unknown model %r (choose from %s)" % (m, ",".join(MODELS)))
    try:
        args.batches = [int(b) for b in args.batches.split(",") if b.strip()]
    except ValueError:
        p.error("--batches must be a comma-separated list of integers")
    if not args.batches or any(b <= 0 for b in args.batches):
        p.error("--batches must contain positive integers")
    if args.threads <= 0:
        p.error("--threads must be positive")
    if args.infer_batch <= 0:
        p.error("--infer-batch must be positive")
    if args.seconds <= 0:
        p.error("--seconds must be positive")
    return args


# Parse the command line and pin the thread count *before* torch is imported,
# so that the OpenMP runtime (used by ATen and by OpenBLAS-openmp) starts with
# the requested number of threads.
ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:
    _prev = os.environ.get("OMP_NUM_THREADS")
    if _prev is not None and _prev != str(ARGS.threads):
        log("note: overriding OMP_NUM_THREADS=%s with --threads %d" % (_prev, ARGS.threads))
    os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
    os.environ.setdefault("MKL_NUM_THREADS", str(ARGS.threads))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(ARGS.threads))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402


# --------------------------------------------------------------------------
# Data (IDX format, gzip-compressed)
# --------------------------------------------------------------------------

def read_idx_gz(path, expected_magic):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[0:4], "big")
    if magic != expected_magic:
        raise ValueError("%s: bad IDX magic 0x%08x (expected 0x%08x)"
                         % (path, magic, expected_magic))
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    offset = 4 + 4 * ndim
    data = np.frombuffer(raw, dtype=np.uint8, offset=offset)
    expected = int(np.prod(dims))
    if data.size != expected:
        raise ValueError("%s: expected %d bytes of data, got %d" % (path, expected, data.size))
    return data.reshape(dims)


def load_split(data_dir, prefix):
    images = read_idx_gz(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"), 0x00000803)
    labels = read_idx_gz(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"), 0x00000801)
    if images.shape[0] != labels.shape[0]:
        raise ValueError("%s: %d images but %d labels" % (prefix, images.shape[0], labels.shape[0]))
    if images.shape[1:] != (28, 28):
        raise ValueError("%s: unexpected image shape %s" % (prefix, images.shape[1:]))
    x = torch.from_numpy(images.astype(np.float32) / np.float32(255.0))  # [N,28,28]
    y = torch.from_numpy(labels.astype(np.int64))
    return x.contiguous(), y.contiguous()


# --------------------------------------------------------------------------
# Models (the TensorFlow MNIST tutorials)
# --------------------------------------------------------------------------

class BasicBlock(nn.Module):
    """trainingd's resnet block: conv3x3-BN-ReLU-conv3x3-BN, plus the input (or, where the
    shape changes, a strided 1x1 convolution with BN: option B), then ReLU. trainingd's
    convolutions have biases, so these do too (the same parameters and FLOPs)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        # Keras' BatchNormalization defaults: momentum 0.99 (PyTorch's 0.01), epsilon 1e-3.
        bn = lambda c: nn.BatchNorm2d(c, eps=1e-3, momentum=0.01)  # noqa: E731
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1)
        self.bn1 = bn(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.bn2 = bn(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride), bn(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.proj is None else self.proj(x)))


def resnet20():
    layers = [nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16, eps=1e-3, momentum=0.01),
              nn.ReLU()]
    cin = 16
    for s, cout in enumerate((16, 32, 64)):
        for b in range(3):
            layers.append(BasicBlock(cin, cout, 2 if s > 0 and b == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return nn.Sequential(*layers)


def build_model(name):
    if name == "resnet20":
        return resnet20()
    if name == "softmax":
        # "MNIST for ML beginners": y = softmax(xW + b)
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
    if name == "mlp":
        # "TensorFlow Mechanics 101": 784-128-32-10
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 128), nn.ReLU(),
            nn.Linear(128, 32), nn.ReLU(),
            nn.Linear(32, 10),
        )
    if name == "cnn":
        # "Deep MNIST for experts" / layers tutorial (TF uses NHWC; this is the
        # same network in PyTorch's native NCHW layout; SAME padding = 2 for 5x5).
        return nn.Sequential(
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(),
            nn.MaxPool2d(2, 2),
            nn.Flatten(),
            nn.Linear(7 * 7 * 64, 1024), nn.ReLU(),
            nn.Dropout(0.4),
            nn.Linear(1024, 10),
        )
    raise ValueError(name)


def build_optimizer(name, params):
    if name == "resnet20":
        # He et al.'s recipe, as bench/engine_bench sets it: momentum 0.9 at 0.1, weight
        # decay 1e-4 (decoupled there; the update costs the same).
        return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4)
    if name == "softmax":
        return torch.optim.SGD(params, lr=0.5)
    if name == "mlp":
        return torch.optim.SGD(params, lr=0.01)
    if name == "cnn":
        return torch.optim.Adam(params, lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    raise ValueError(name)


def model_input(name, x):
    """Images [N,28,28] -> model input: [N,1,28,28] for the cnn, [N,784] otherwise."""
    if name == "resnet20":
        return x  # already [N, 3, 32, 32]
    if name == "cnn":
        return x.unsqueeze(1)
    return x.reshape(x.shape[0], 784)


def make_batches(name, x, y, batch):
    """Consecutive full batches (views into the in-memory tensors, no copies)."""
    xin = model_input(name, x)
    n = (x.shape[0] // batch) * batch
    if n == 0:
        raise ValueError("batch %d larger than data set (%d)" % (batch, x.shape[0]))
    return [(xin[i:i + batch], y[i:i + batch]) for i in range(0, n, batch)]


# --------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------

def run_timed(step, batches, seconds, warmup_seconds, warmup_steps):
    """Warm up, then call step(xb, yb) on consecutive batches for >= seconds.

    Returns (steps, elapsed_seconds, last_result)."""
    nb = len(batches)
    i = 0
    last = None
    t0 = time.perf_counter()
    w = 0
    while w < warmup_steps or time.perf_counter() - t0 < warmup_seconds:
        xb, yb = batches[i % nb]
        last = step(xb, yb)
        i += 1
        w += 1

    steps = 0
    t0 = time.perf_counter()
    while True:
        xb, yb = batches[i % nb]
        last = step(xb, yb)
        i += 1
        steps += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            break
    return steps, elapsed, last


def emit(model, mode, batch, threads, steps, elapsed):
    row = {
        "impl": "pytorch",
        "model": model,
        "mode": mode,
        "batch": batch,
        "threads": threads,
        "examples_per_sec": round(steps * batch / elapsed, 1),
        "steps": steps,
        "seconds": round(elapsed, 2),
    }
    print(json.dumps(row), flush=True)
    return row


def cifar_shaped(n):
    """n random images [3, 32, 32] in [0, 1) and labels in [0, 10), fixed seed."""
    g = torch.Generator().manual_seed(42)
    return (torch.rand(n, 3, 32, 32, generator=g).contiguous(),
            torch.randint(0, 10, (n,), generator=g))


def bench_train(name, batch, args, train_x, train_y):
    torch.manual_seed(0)
    model = build_model(name)
    model.train()
    opt = build_optimizer(name, model.parameters())
    loss_fn = nn.CrossEntropyLoss()  # softmax cross-entropy from logits, mean
    batches = make_batches(name, train_x, train_y, batch)

    def step(xb, yb):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    steps, elapsed, last = run_timed(step, batches, args.seconds,
                                     args.warmup_seconds, args.warmup_steps)
    row = emit(name, "train", batch, args.threads, steps, elapsed)
    log("  %-7s train batch %4d: %10.1f ex/s  (%d steps in %.2f s, last loss %.4f)"
        % (name, batch, row["examples_per_sec"], steps, elapsed, float(last.detach())))
    return model


def bench_infer(name, batch, args, test_x, test_y, model=None):
    if model is None:
        torch.manual_seed(0)
        model = build_model(name)
    model.eval()
    batches = make_batches(name, test_x, test_y, batch)
    correct = [0, 0]

    def step(xb, yb):
        logits = model(xb)
        correct[0] += int((logits.argmax(1) == yb).sum())
        correct[1] += yb.shape[0]
        return logits

    with torch.no_grad():
        steps, elapsed, _ = run_timed(step, batches, args.seconds,
                                      args.warmup_seconds, args.warmup_steps)
    row = emit(name, "infer", batch, args.threads, steps, elapsed)
    log("  %-7s infer batch %4d: %10.1f ex/s  (%d steps in %.2f s, test acc %.3f)"
        % (name, batch, row["examples_per_sec"], steps, elapsed,
           correct[0] / max(1, correct[1])))


# --------------------------------------------------------------------------
# Environment report
# --------------------------------------------------------------------------

def loaded_blas_libs():
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6:
                    path = parts[-1]
                    base = os.path.basename(path)
                    if any(k in base for k in ("blas", "lapack", "dnnl", "mkl", "gomp", "omp")):
                        libs.add(os.path.realpath(path))
    except OSError:
        pass
    return sorted(libs)


def report_environment(args):
    log("torch %s, numpy %s, python %s" % (torch.__version__, np.__version__,
                                          sys.version.split()[0]))
    cfg = torch.__config__.show()
    for line in cfg.splitlines():
        s = line.strip()
        if s.startswith("- Build settings:"):
            keep = [kv.strip() for kv in s[len("- Build settings:"):].split(",")
                    if kv.strip().split("=")[0] in
                    ("BLAS_INFO", "LAPACK_INFO", "USE_MKLDNN", "USE_OPENMP",
                     "TORCH_VERSION", "BUILD_TYPE")]
            log("  build: " + ", ".join(keep))
        elif s and not s.startswith("- CXX") and "Build settings" not in s \
                and s != "PyTorch built with:":
            log("  " + s)
    # Force BLAS/oneDNN to be used once so their libraries show up as mapped.
    a = torch.randn(64, 64)
    _ = a @ a
    for lib in loaded_blas_libs():
        log("  loaded: " + lib)
    log("  threads: torch.get_num_threads()=%d, OMP_NUM_THREADS=%s, mkldnn available=%s"
        % (torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS"),
           torch.backends.mkldnn.is_available()))


def main(args):
    torch.set_num_threads(args.threads)
    report_environment(args)

    t0 = time.perf_counter()
    train_x, train_y = load_split(args.data, "train")
    test_x, test_y = load_split(args.data, "t10k")
    log("data: %s  train %s  test %s  (loaded in %.2f s)"
        % (args.data, tuple(train_x.shape), tuple(test_x.shape), time.perf_counter() - t0))
    log("measuring %.1f s per config (warm-up >= %d steps / %.1f s), threads=%d"
        % (args.seconds, args.warmup_steps, args.warmup_seconds, args.threads))

    cifar_x, cifar_y = cifar_shaped(2560)
    for name in args.models:
        model = None
        for batch in args.batches:
            if name == "resnet20":
                model = bench_train(name, batch, args, cifar_x, cifar_y)
            else:
                model = bench_train(name, batch, args, train_x, train_y)
        if name == "cnn":
            bench_infer(name, args.infer_batch, args, test_x, test_y, model)
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGS))
