#!/usr/bin/python3
"""A worked model of data-parallel scaling across machines (docs/benchmarks.md), from the
measured compute time of one training step per machine and the bytes every step exchanges.

    /usr/bin/python3 bench/scaling_model.py --step-ms 24.9 [--batch 50] \
        [--dense 3136x1024,1024x10] [--other-params 52096] [--latency-us 30]

Weak scaling: every machine keeps its own batch of --batch examples, so the global batch grows
with the number of machines N. Step time = compute + exchange, with no overlap (trainingd
exchanges after the backward pass and after the update). Efficiency = compute / step time;
examples/s relative to one machine = N x efficiency. Two exchanges are modelled:

1. "float allreduce": one ring allreduce of the float gradients (what Horovod and DDP do, and
   what trainingd did before its sums were exact): each machine sends and receives 2 (N-1)/N of
   the buffer, in 2 (N-1) messages. Its results change with N (the order of the additions).
2. "trainingd": the step as built (docs/distributed.md#how-a-step-is-split), bit for bit the
   same for any N. A dense layer with 2 x in x units > B x (in + units), B the global batch, or
   with at most 16 units and B x (in + units) <= 16 x in x units, is split by columns
   (DenseLayer::GatheredAt): ring allgathers of its inputs (B x in
   floats), of its output columns (B x units), of its output gradients (B x units) and of its
   input gradient's columns (B x in), then after the update of its kernel's rows (in x units);
   each machine receives (N-1)/N of each, in N-1 messages. Every other parameter's exact sum is
   an int64 in one ring reduce-scatter (8 bytes each), and after each machine updated its part,
   its float value in one ring allgather (4 bytes): each machine receives (N-1)/N of 12 bytes
   per parameter, in 2 (N-1) messages. The step's small allreduce is left out.

The defaults are the tutorial CNN's: its two dense layers, and its convolutions' 52,096
parameters.
"""
import argparse


def ring_allreduce_s(nbytes, n, bytes_per_s, latency_s):
    return 2 * (n - 1) / n * nbytes / bytes_per_s + 2 * (n - 1) * latency_s


def ring_allgather_s(nbytes, n, bytes_per_s, latency_s):
    return (n - 1) / n * nbytes / bytes_per_s + (n - 1) * latency_s


def trainingd_exchange_s(dense, other_params, global_batch, n, bytes_per_s, latency_s):
    """The exchange of one trainingd step, and how many dense layers were split by columns."""
    t, reduced, split = 0.0, other_params, 0
    for fan_in, units in dense:
        weights, activations = fan_in * units, global_batch * (fan_in + units)
        if 2 * weights > activations or (units <= 16 and activations <= 16 * weights):
            split += 1
            for width in (fan_in, units, units, fan_in):
                t += ring_allgather_s(4 * global_batch * width, n, bytes_per_s, latency_s)
            t += ring_allgather_s(4 * fan_in * units, n, bytes_per_s, latency_s)
        else:
            reduced += fan_in * units + units  # a split layer's bias: formed whole on each rank
    t += ring_allgather_s(8 * reduced, n, bytes_per_s, latency_s)  # a reduce-scatter's bytes
    t += ring_allgather_s(4 * reduced, n, bytes_per_s, latency_s)
    return t, split


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--step-ms", type=float, required=True,
                    help="compute time of one step on one machine (ms), without the exchange")
    ap.add_argument("--batch", type=int, default=50, help="examples per machine per step")
    ap.add_argument("--dense", default="3136x1024,1024x10",
                    help="the dense layers, as in x units, comma-separated")
    ap.add_argument("--other-params", type=int, default=52096,
                    help="parameters besides the dense layers' (the CNN's convolutions)")
    ap.add_argument("--latency-us", type=float, default=30.0, help="per message (us)")
    args = ap.parse_args()
    dense = [tuple(int(x) for x in layer.split("x")) for layer in args.dense.split(",")]
    params = args.other_params + sum(i * u + u for i, u in dense)
    latency = args.latency_us * 1e-6
    print("compute %.1f ms per step per machine at %d examples, %d parameters (%.1f MB as "
          "floats), %g us per message" %
          (args.step_ms, args.batch, params, 4 * params / 1e6, args.latency_us))
    print("| machines | network | float allreduce (ms) | efficiency | speed-up "
          "| trainingd exchange (ms) | dense layers split | efficiency | speed-up |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for n in (4, 16, 64):
        for gbit in (1, 10, 100):
            bytes_per_s = gbit * 1e9 / 8
            flat = ring_allreduce_s(4 * params, n, bytes_per_s, latency) * 1e3
            ours, split = trainingd_exchange_s(dense, args.other_params, n * args.batch, n,
                                               bytes_per_s, latency)
            ours *= 1e3
            eff_flat = args.step_ms / (args.step_ms + flat)
            eff_ours = args.step_ms / (args.step_ms + ours)
            print("| %d | %d Gbit/s | %.1f | %.2f | %.1fx | %.1f | %d of %d | %.2f | %.1fx |" %
                  (n, gbit, flat, eff_flat, n * eff_flat, ours, split, len(dense), eff_ours,
                   n * eff_ours))


if __name__ == "__main__":
    main()
