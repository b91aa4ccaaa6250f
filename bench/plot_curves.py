#!/usr/bin/python3
"""Validation-accuracy curves of finished runs on one chart, as a hand-written SVG.

  plot_curves.py --out docs/images/curves.svg \\
      --run "ResNet-20" examples/resnet20-augmented.json /work/runs/resnet20-augmented \\
      --run "tutorial CNN" bench/cnn_curve.json /work/runs/cnn-curve

Each --run is a label, the job spec the run was made from and its checkpoint directory. The
scalars are read from the directory's TensorBoard event files (tests/tools/read_tfevents.py,
which checks every record's CRC). The x axis is epochs, global step x the spec's batch_size /
--train-examples (55,000: Fashion-MNIST's 60,000 training images less the specs' 5,000 for
validation), so runs with different batch sizes compare. A run's final test accuracy, when its
event files hold one, is drawn as a hollow marker after its last evaluation. Prints, per run, a
Markdown table of the validation accuracy at the evaluations nearest to the --at epochs.
No dependency beyond the standard library and Debian's python3-protobuf (the reader's).
"""
import argparse
import glob
import json
import math
import os
import sys
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "tools"))
from read_tfevents import read_events  # noqa: E402

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
WIDTH, HEIGHT = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 40, 56


def read_scalars(directory, tag):
    """step -> value of `tag`, from every event file in `directory`; on a step written twice
    (a resumed run) the value of the latest wall time wins."""
    files = sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*")))
    if not files:
        raise SystemExit("%s: no events.out.tfevents.* file" % directory)
    latest = {}
    for path in files:
        for e in read_events(path):
            if not e.HasField("summary"):
                continue
            for v in e.summary.value:
                if v.tag == tag and (e.step not in latest or latest[e.step][0] <= e.wall_time):
                    latest[e.step] = (e.wall_time, v.simple_value)
    return {step: value for step, (_, value) in latest.items()}


def downsample(points, max_points):
    """At most max_points of `points` (sorted), evenly by index, the first and last kept."""
    if len(points) <= max_points:
        return points
    stride = (len(points) - 1) / (max_points - 1)
    return [points[round(i * stride)] for i in range(max_points)]


def nice_ticks(lo, hi, count, mults=(1, 2, 2.5, 5, 10)):
    """About `count` round tick values (`mults` times a power of ten apart) in [lo, hi]."""
    raw = (hi - lo) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in mults if m * magnitude >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 9) for i in range(int((hi - first) / step + 1e-9) + 1)]


def svg(runs, title):
    """runs: [(label, [(epoch, acc)], test_acc or None)] -> the SVG text."""
    xs = [x for _, pts, _ in runs for x, _ in pts]
    ys = [y for _, pts, _ in runs for _, y in pts] + [t for _, _, t in runs if t is not None]
    x_max = max(xs) * 1.04
    y_lo = int(min(ys) * 20) / 20.0  # down to a multiple of 0.05
    y_hi = min(1.0, int(max(ys) * 100 + 1.999) / 100.0)
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x):
        return LEFT + pw * x / x_max

    def py(y):
        return TOP + ph * (y_hi - y) / (y_hi - y_lo)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="sans-serif" font-size="12">' % (WIDTH, HEIGHT, WIDTH, HEIGHT),
           '<rect width="100%" height="100%" fill="#fff"/>',
           '<text x="%d" y="22" font-size="14" font-weight="bold">%s</text>' % (LEFT,
                                                                               escape(title))]
    for y in nice_ticks(y_lo, y_hi, 8):
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' %
                   (LEFT, LEFT + pw, py(y), py(y)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>' % (LEFT - 6, py(y) + 4, y))
    for x in nice_ticks(0, x_max, 12, (1, 2, 5, 10)):
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/>' %
                   (px(x), px(x), TOP, TOP + ph))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (px(x), TOP + ph + 16,
                                                                             x))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>' %
               (LEFT, TOP, pw, ph))
    out.append('<text x="%.1f" y="%d" text-anchor="middle">epochs (examples seen / training '
               'examples)</text>' % (LEFT + pw / 2, HEIGHT - 14))
    out.append('<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">validation '
               'accuracy</text>' % (TOP + ph / 2))
    legend = [label + ("" if test is None else ", test accuracy %.4f (hollow)" % test)
              for label, _, test in runs]
    # About 6.5 px a character at 12 px sans-serif: the legend ends inside the plot's right edge.
    legend_x = max(LEFT + 8, int(LEFT + pw - 12 - 26 - 6.5 * max(len(s) for s in legend)))
    for i, (label, pts, test) in enumerate(runs):
        c = COLOURS[i % len(COLOURS)]
        path = " ".join("%.1f,%.1f" % (px(x), py(y)) for x, y in pts)
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (c, path))
        for x, y in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>' % (px(x), py(y), c))
        if test is not None:
            out.append('<circle cx="%.1f" cy="%.1f" r="4.5" fill="#fff" stroke="%s" '
                       'stroke-width="2"/>' % (px(pts[-1][0]) + 9, py(test), c))
        ly = TOP + ph - 18 * (len(runs) - i) - 4
        out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>' %
                   (legend_x, legend_x + 20, ly, ly, c))
        out.append('<text x="%d" y="%d">%s</text>' % (legend_x + 26, ly + 4, escape(legend[i])))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", nargs=3, action="append", required=True,
                    metavar=("LABEL", "SPEC", "DIR"))
    ap.add_argument("--out", required=True, help="the SVG file to write")
    ap.add_argument("--train-examples", type=int, default=55000)
    ap.add_argument("--tag", default="validation/accuracy")
    ap.add_argument("--max-points", type=int, default=60, help="per curve, to keep the SVG small")
    ap.add_argument("--at", default="1,5,10", help="epochs for the printed table (and the last)")
    ap.add_argument("--title", default="Fashion-MNIST: validation accuracy by epoch")
    args = ap.parse_args()

    runs = []
    for label, spec_path, directory in args.run:
        with open(spec_path) as f:
            batch = json.load(f).get("batch_size", 32)
        per_epoch = args.train_examples / batch
        series = sorted(read_scalars(directory, args.tag).items())
        if not series:
            raise SystemExit("%s: no %s scalars" % (directory, args.tag))
        test = read_scalars(directory, "test/accuracy")
        test_acc = test[max(test)] if test else None
        pts = [(step / per_epoch, value) for step, value in series]
        runs.append((label, downsample(pts, args.max_points), test_acc))

        print("%s (%s, batch %d, %d evaluations):" % (label, directory, batch, len(pts)))
        print("| epoch | global step | %s |\n|---:|---:|---:|" % args.tag)
        wanted = [float(a) for a in args.at.split(",")] + [pts[-1][0]]
        for want in wanted:
            i = min(range(len(pts)), key=lambda k: abs(pts[k][0] - want))
            print("| %.2f | %d | %.4f |" % (pts[i][0], series[i][0], pts[i][1]))
        if test_acc is not None:
            print("test/accuracy at step %d: %.4f" % (max(test), test_acc))
        print()

    with open(args.out, "w") as f:
        f.write(svg(runs, args.title))
    print("wrote %s (%d bytes)" % (args.out, os.path.getsize(args.out)))


if __name__ == "__main__":
    main()
