#!/usr/bin/python3
"""A worked model of data-parallel scaling across machines (docs/benchmarks.md), from two
measured numbers: the compute time of one training step per machine, and the gradient bytes
every step reduces.

    /usr/bin/python3 bench/scaling_model.py --step-ms 27.6 --grad-mb 13.1 [--latency-us 30]

The reduction is a ring allreduce over the network (what Open MPI's tuned allreduce does for
large messages): each machine sends and receives 2 (N-1)/N of the buffer, in 2 (N-1) messages.
Step time = compute + allreduce, with no overlap (trainingd reduces after the backward pass);
weak scaling: every machine keeps its own batch, so the global batch grows with N. Efficiency =
compute / step time; examples/s relative to one machine = N x efficiency.
"""
import argparse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--step-ms", type=float, required=True,
                    help="compute time of one step on one machine (ms), without the reduction")
    ap.add_argument("--grad-mb", type=float, required=True, help="gradient buffer (MB)")
    ap.add_argument("--latency-us", type=float, default=30.0, help="per message (us)")
    args = ap.parse_args()
    print("compute %.1f ms per step per machine, %.1f MB of gradients, %g us per message" %
          (args.step_ms, args.grad_mb, args.latency_us))
    print("| machines | network | allreduce (ms) | step (ms) | efficiency | speed-up |")
    print("|---:|---|---:|---:|---:|---:|")
    for n in (4, 16, 64):
        for gbit in (1, 10, 100):
            bytes_per_s = gbit * 1e9 / 8
            transfer = 2 * (n - 1) / n * args.grad_mb * 1e6 / bytes_per_s
            latency = 2 * (n - 1) * args.latency_us * 1e-6
            allreduce_ms = (transfer + latency) * 1e3
            step = args.step_ms + allreduce_ms
            eff = args.step_ms / step
            print("| %d | %d Gbit/s | %.1f | %.1f | %.2f | %.1fx |" %
                  (n, gbit, allreduce_ms, step, eff, n * eff))


if __name__ == "__main__":
    main()
