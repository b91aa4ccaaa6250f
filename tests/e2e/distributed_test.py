#!/usr/bin/python3
"""Data-parallel training over real Open MPI processes (docs/distributed.md).

The tutorial CNN with dropout (Adam, 1e-4) at batch 50 on Fashion-MNIST, 40 steps:
- N = 2, 3 and 4 ranks (`trainingd run --workers N`) end bit for bit where one process ends:
  every variable and Adam slot, the global step, input position and dropout streams, and every
  logged loss (issue 13 asks for 1e-5; the exact gradient sums of gradient_blocks.h give 0);
- so does one process with 1 compute thread instead of 2;
- so does `mpirun -np 2 trainingd run` (the Horovod-style launch, handed over to
  trainingd-mpi), a second run of 2 ranks: two runs with the same N are bit-identical;
- 2 ranks to step 20, then 3 ranks to step 40 from that checkpoint, match one process at 40;
- more workers than a batch has blocks is refused before any rank starts, naming the field.

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
STEPS = 40  # every step's loss compared, the state at the end; 100 took 59 s alone, 40 take 32 s
MPIRUN_LOOPBACK = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                   "--mca", "btl", "self,vader,tcp", "--mca", "btl_tcp_if_include", "lo",
                   "--mca", "oob_tcp_if_include", "lo", "--mca", "mpi_yield_when_idle", "1"]


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def write_spec(path, max_steps):
    # A checkpoint mid-run (step 20 of 40: every rank makes the state whole for the chief's
    # saver) and at the end; each costs as much as ten steps, so no more of them.
    spec = {"name": "cnn-dp", "model": "cnn", "batch_size": 50, "max_steps": max_steps, "seed": 7,
            "hooks": {"summary": {"every_steps": 1}, "checkpoint": {"every_steps": STEPS // 2},
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
        expect(got[step] == reference[step], "%s: loss at step %d is %.9g, one process %.9g" %
               (what, step, got[step], reference[step]))


def expect_identical(a, b, what):
    c = compare(a, b)
    expect(c["identical"], "%s: differs from one process: %s" % (what, c))


def main():
    work = tempfile.mkdtemp(prefix="trainingd-distributed-")
    try:
        spec = write_spec(os.path.join(work, "cnn.json"), STEPS)
        spec_half = write_spec(os.path.join(work, "cnn-half.json"), STEPS // 2)

        def train(name, workers, spec=spec, directory=None, flags=()):
            directory = directory or os.path.join(work, name)
            run([TRAININGD, "run", spec, "--workers", str(workers), "--checkpoint-dir",
                 directory] + list(flags), name)
            return directory

        one = train("one", 1)
        reference = losses(one)
        expect(sorted(reference) == list(range(1, STEPS + 1)), "one process: losses at %s" %
               sorted(reference))
        ckpt = lambda d, step=STEPS: os.path.join(d, "model.ckpt-%d" % step)  # noqa: E731
        for n in (2, 3, 4):  # 4 blocks of 12 and 13 examples (the default): 3 gets 1, 1, 2
            d = train("n%d" % n, n)
            expect_identical(ckpt(one), ckpt(d), "%d ranks" % n)
            expect_losses_match(reference, losses(d), range(1, STEPS + 1), "%d ranks" % n)
            print("%d ranks: bit-identical to one process after %d steps, every loss equal" %
                  (n, STEPS), flush=True)
        threads1 = train("one-thread", 1, flags=["--threads", "1"])
        expect_identical(ckpt(one), ckpt(threads1), "one process with 1 thread")
        print("one process, 1 thread against 2: bit-identical", flush=True)

        # The launch Horovod users know: mpirun starts `trainingd run`, which hands over to
        # trainingd-mpi. A second run of 2 ranks, so also the repeat: bit-identical to one process
        # as the first was.
        launched = os.path.join(work, "mpirun")
        out = run(MPIRUN_LOOPBACK + ["-np", "2", TRAININGD, "run", spec, "--checkpoint-dir",
                                     launched], "mpirun -np 2 trainingd run")
        expect("2 ranks" in out, "mpirun -np 2: the ranks did not find each other:\n" + out)
        expect_identical(ckpt(one), ckpt(launched), "mpirun -np 2")
        print("mpirun -np 2 trainingd run: bit-identical", flush=True)

        # A checkpoint does not depend on N: 2 ranks to the middle, 3 ranks from there.
        mixed = train("mixed", 2, spec=spec_half)
        train("mixed", 3, directory=mixed)
        expect_identical(ckpt(one), ckpt(mixed), "2 then 3 ranks")
        expect_losses_match(reference, losses(mixed), range(1, STEPS + 1), "2 then 3 ranks")
        print("2 ranks to step %d, 3 ranks to %d: bit-identical to one process" %
              (STEPS // 2, STEPS), flush=True)

        # Refused before any rank starts: more workers than examples, or blocks, in a batch.
        for workers, message in (("51", "batch_size: 50 is less than the 51 workers"),
                                 ("5", "distributed.reduction_blocks: 4 is less than the 5 "
                                       "workers")):
            p = subprocess.run([TRAININGD, "run", spec, "--workers", workers, "--checkpoint-dir",
                                os.path.join(work, "refused")], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=60)
            expect(p.returncode == 2 and message in p.stdout,
                   "%s workers for a batch of 50: exit %d\n%s" % (workers, p.returncode,
                                                                   p.stdout))
        print("ok", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
