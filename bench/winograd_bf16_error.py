#!/usr/bin/python3
"""winograd_bf16_error: how much error bfloat16 operands put into a Winograd convolution.

Mixed precision (docs/job-spec.md#precision) rounds the dense layers' operands to bfloat16. This
asks whether the convolutions' Winograd products could take bfloat16 operands too: the tutorial
CNN's second convolution (14x14x32 -> 64, 5x5, same) on F(m x m, 5 x 5) tiles, with the
transformed input V = B^T d B and the transformed kernel U = G g G^T rounded to bfloat16 (to
nearest even) and everything else exact (float64), against the same convolution computed
directly with its input and kernel rounded to bfloat16 (what TensorFlow's mixed_bfloat16 does).
The transforms are engine/src/nn/winograd.cpp's: Toom-Cook at the points 0, 1, -1, 2, -2, 1/2
(as many as the tile needs) and infinity.

The input is ReLU-like (half of it zero), the kernel the tutorial's truncated normal. Errors are
against the exact (float64) convolution of the float32 values: the largest, relative to the
largest output, and the root mean square, relative to the outputs' root mean square.

Usage: /usr/bin/python3 bench/winograd_bf16_error.py [--examples 8] [--seed 1]
(numpy: Debian's python3-numpy.)
"""
import argparse

import numpy as np


def bf16(a):
    """a's float32 values rounded to bfloat16, to nearest even, as float32."""
    u = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32)


def toom(m, r):
    """A^T [m][a], G [a][r] and B^T [a][a] of F(m, r), a = m + r - 1, as winograd.cpp solves them."""
    a = m + r - 1
    points = [0, 1, -1, 2, -2, 0.5, -0.5][: a - 1]
    at, g = np.zeros((m, a)), np.zeros((a, r))
    for j, p in enumerate(points):
        f = np.prod([p - q for l, q in enumerate(points) if l != j])
        at[:, j] = [p**i for i in range(m)]
        g[j, :] = [p**k / f for k in range(r)]
    at[m - 1, a - 1] = g[a - 1, r - 1] = 1  # the point at infinity
    # B^T: sum_xi A^T[i][xi] G[xi][k] B^T[xi][j] = [j == i + k]
    e = np.array([at[i] * g[:, k] for i in range(m) for k in range(r)])
    rhs = np.array([[1.0 if j == i + k else 0.0 for j in range(a)] for i in range(m) for k in range(r)])
    bt = np.linalg.lstsq(e, rhs, rcond=None)[0]
    assert np.allclose(e @ bt, rhs), "the transforms do not solve"
    return at, g, bt


def direct(x, w):
    """The same-padded stride-1 convolution of x [n, h, w, c] with w [r, r, c, o], in float64."""
    n, h, wd, _ = x.shape
    r = w.shape[0]
    p = r // 2
    xp = np.pad(x.astype(np.float64), ((0, 0), (p, p), (p, p), (0, 0)))
    out = np.zeros((n, h, wd, w.shape[3]))
    for ky in range(r):
        for kx in range(r):
            out += np.einsum("nhwc,co->nhwo", xp[:, ky : ky + h, kx : kx + wd], w[ky, kx].astype(np.float64))
    return out


def winograd(x, w, m, round_u, round_v):
    """The same convolution on F(m x m, r x r) tiles, U and/or V rounded to bfloat16."""
    n, h, wd, c = x.shape
    r = w.shape[0]
    a = m + r - 1
    at, g, bt = toom(m, r)
    ty, tx = -(-h // m), -(-wd // m)
    p = r // 2
    xp = np.pad(x, ((0, 0), (p, p + ty * m - h), (p, p + tx * m - wd), (0, 0)))
    tiles = np.stack([np.stack([xp[:, i * m : i * m + a, j * m : j * m + a] for j in range(tx)], 1)
                      for i in range(ty)], 1)  # [n, ty, tx, a, a, c]
    v = np.einsum("ai,ntsijc,bj->ntsabc", bt, tiles.astype(np.float64), bt).astype(np.float32)
    u = np.einsum("ak,klco,bl->abco", g, w.astype(np.float64), g).astype(np.float32)
    if round_u:
        u = bf16(u)
    if round_v:
        v = bf16(v)
    prod = np.einsum("ntsabc,abco->ntsabo", v.astype(np.float64), u.astype(np.float64))
    y = np.einsum("ia,ntsabo,jb->ntsijo", at, prod, at)  # [n, ty, tx, m, m, o]
    y = y.transpose(0, 1, 3, 2, 4, 5).reshape(n, ty * m, tx * m, -1)
    return y[:, :h, :wd]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    x = np.maximum(rng.standard_normal((args.examples, 14, 14, 32)), 0).astype(np.float32)
    w = (np.clip(rng.standard_normal((5, 5, 32, 64)), -2, 2) * 0.1).astype(np.float32)
    exact = direct(x, w)
    scale_max, scale_rms = np.abs(exact).max(), np.sqrt((exact**2).mean())

    def report(name, y):
        e = y - exact
        print(f"{name:42s} {np.abs(e).max() / scale_max:9.2e} {np.sqrt((e**2).mean()) / scale_rms:9.2e}")

    print(f"{'14x14x32 -> 64, 5x5; error relative to the output':42s} {'max':>9s} {'rms':>9s}")
    report("direct, bfloat16 input and kernel", direct(bf16(x), bf16(w)))
    for m in (2, 3, 4):
        report(f"F({m}x{m}, 5x5), float32 U and V", winograd(x, w, m, False, False))
        for round_u, round_v, what in ((True, False, "U"), (False, True, "V"), (True, True, "U and V")):
            report(f"F({m}x{m}, 5x5), bfloat16 {what}", winograd(x, w, m, round_u, round_v))


if __name__ == "__main__":
    main()
