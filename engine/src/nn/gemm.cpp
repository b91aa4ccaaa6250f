#include "nn/gemm.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "nn/v16.h"
#include "trainingd/engine/base/parallel.h"

namespace trainingd::engine::internal {
namespace {
using namespace v16;  // the kernels' vocabulary (nn/v16.h)

// ---------------------------------------------------------------------------------------------
// The micro-kernel: a tile of R rows x 16 * NV columns of C, over kc values of k. A is read where
// it is, element (i, kk) at a[i * ars + kk * aks] (a row-major A or a transposed one alike), B's
// row kk of the tile's columns at b + kk * bks (a packed panel, or B itself). `load`: C's values
// start the chains (a later pass over k, or accumulate), else zero. Only the tile's first `nr`
// columns are read and written.
// ---------------------------------------------------------------------------------------------
// How the micro-kernel reads a row of B's tile: from a packed panel (aligned, a fixed stride),
// from B itself with every column there, or from B itself with fewer (masked).
enum class BRows { kPacked, kWhole, kMasked };

// How a chain takes a step of k: a fused multiply-add of floats (Gemm, and GemmBf16 on float
// FMAs), or of a lane's two bfloat16 pairs (GemmBf16 on VDPBF16PS or its written-out steps, whose
// kernels read 32-bit pairs where Gemm's read floats).
struct FloatStep {
  static V16 Step(V16 a, V16 b, V16 c) { return Fma(a, b, c); }
};
#if defined(V16_DOT_BF16)
struct Bf16Step {
  static V16 Step(V16 a, V16 b, V16 c) { return DotBf16(a, b, c); }
};
#endif

template <int R, int NV, BRows kB, typename Op>
void Micro(int kc, const float* a, int64_t ars, int64_t aks, const float* b, int64_t bks, float* c,
           int64_t ldc, int nr, bool load) {
  V16 acc[R][NV];
  V16_UNROLL
  for (int i = 0; i < R; ++i) {
    V16_UNROLL
    for (int v = 0; v < NV; ++v) {
      acc[i][v] = load ? LoadN(c + i * ldc + 16 * v, nr - 16 * v) : Zero();
    }
  }
  for (int kk = 0; kk < kc; ++kk) {
    V16 bv[NV];
    V16_UNROLL
    for (int v = 0; v < NV; ++v) {
      if constexpr (kB == BRows::kPacked) {
        bv[v] = Load(b + (kk * NV + v) * 16);
      } else if constexpr (kB == BRows::kWhole) {
        bv[v] = LoadU(b + kk * bks + 16 * v);
      } else {
        bv[v] = LoadN(b + kk * bks + 16 * v, nr - 16 * v);
      }
    }
    const float* ak = a + kk * aks;
    V16_UNROLL
    for (int i = 0; i < R; ++i) {
      const V16 x = Broadcast(ak + i * ars);
      V16_UNROLL
      for (int v = 0; v < NV; ++v) acc[i][v] = Op::Step(x, bv[v], acc[i][v]);
    }
  }
  V16_UNROLL
  for (int i = 0; i < R; ++i) {
    V16_UNROLL
    for (int v = 0; v < NV; ++v) StoreN(c + i * ldc + 16 * v, acc[i][v], nr - 16 * v);
  }
}

using MicroFn = void (*)(int, const float*, int64_t, int64_t, const float*, int64_t, float*,
                         int64_t, int, bool);

// A kernel shape: NV vectors of columns and up to MR rows, with Micro<1..MR, NV> for each way of
// reading B.
template <int NV, int MR, typename Op>
struct Shape {
  static constexpr int kVectors = NV;
  static constexpr int kRows = MR;
  template <BRows kB, int... R>
  static constexpr auto Table(std::integer_sequence<int, R...>) {
    return std::array<MicroFn, MR>{&Micro<R + 1, NV, kB, Op>...};
  }
  static constexpr std::array<MicroFn, MR> kPacked =
      Table<BRows::kPacked>(std::make_integer_sequence<int, MR>{});
  static constexpr std::array<MicroFn, MR> kWhole =
      Table<BRows::kWhole>(std::make_integer_sequence<int, MR>{});
  static constexpr std::array<MicroFn, MR> kMasked =
      Table<BRows::kMasked>(std::make_integer_sequence<int, MR>{});
};

#if defined(__AVX512F__)
// 32 registers: 28 accumulators, two of B and a broadcast; or 16 rows of one vector, for C of
// at most 16 columns.
template <typename Op>
using Wide = Shape<2, 14, Op>;
template <typename Op>
using Narrow = Shape<1, 16, Op>;
#elif defined(__AVX2__) && defined(__FMA__)
// 16 registers: 12 accumulators (6 rows of two halves), B's two halves and a broadcast.
template <typename Op>
using Wide = Shape<1, 6, Op>;
template <typename Op>
using Narrow = Shape<1, 6, Op>;
#else
template <typename Op>
using Wide = Shape<1, 4, Op>;
template <typename Op>
using Narrow = Shape<1, 4, Op>;
#endif

// Values of k per pass: a B panel of kKc x 32 floats (32 KB) stays in the L1 cache while the
// rows of A go past it.
constexpr int kKc = 256;

// GCC 12 warns of the undefined pass-through operand inside its own AVX-512 shuffle intrinsics.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// dst[kk * ldd + r] = src[r * lds + kk] for r < rows (<= 16), kk < cols; lanes [rows, lanes) of
// each dst row are zero. Writes `lanes` (<= 16) floats per dst row.
void Transpose(const float* src, int64_t lds, int rows, int cols, float* dst, int64_t ldd,
               int lanes) {
#if defined(__AVX512F__)
  int kk0 = 0;
  for (; kk0 < cols; kk0 += 16) {
    const int w = std::min(16, cols - kk0);
    __m512 r[16], t[16];
    for (int i = 0; i < 16; ++i) {
      r[i] = i < rows ? _mm512_maskz_loadu_ps(Lanes(w), src + i * lds + kk0) : _mm512_setzero_ps();
    }
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
      r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
      r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
      r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
      r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 16; i += 8) {
      for (int j = 0; j < 4; ++j) {
        t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
        t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xDD);
      }
    }
    for (int j = 0; j < 8; ++j) {
      r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
      r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xDD);
    }
    for (int kk = 0; kk < w; ++kk) {
      _mm512_mask_storeu_ps(dst + static_cast<int64_t>(kk0 + kk) * ldd, Lanes(lanes), r[kk]);
    }
  }
#else
  for (int kk = 0; kk < cols; ++kk) {
    float* d = dst + static_cast<int64_t>(kk) * ldd;
    for (int r = 0; r < lanes; ++r) d[r] = r < rows ? src[r * lds + kk] : 0.0f;
  }
#endif
}
#pragma GCC diagnostic pop

// Buffers of 64-byte aligned floats, one set per thread.
float* Aligned(std::vector<float>& buffer, int64_t floats) {
  buffer.resize(static_cast<size_t>(floats + 16));
  const auto p = reinterpret_cast<uintptr_t>(buffer.data());
  return reinterpret_cast<float*>((p + 63) & ~uintptr_t{63});
}

// B's rows pc.. pc + kc - 1 of columns j0.. j0 + cols - 1 (of B^T, with `trans_b`) as a panel
// [kc][kNr], zero beyond its columns.
template <int kNr>
void PackPanel(bool trans_b, const float* b, int64_t ldb, int64_t pc, int kc, int64_t j0, int cols,
               float* panel) {
  if (trans_b) {
    for (int v = 0; v < kNr; v += 16) {
      Transpose(b + (j0 + v) * ldb + pc, ldb, std::clamp(cols - v, 0, 16), kc, panel + v, kNr, 16);
    }
    return;
  }
  for (int kk = 0; kk < kc; ++kk) {
    const float* src = b + (pc + kk) * ldb + j0;
    for (int v = 0; v < kNr; v += 16) Store(panel + kk * kNr + v, LoadN(src + v, cols - v));
  }
}

template <typename Kernel>
void GemmOnThisThread(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                      bool accumulate) {
  constexpr int kNr = 16 * Kernel::kVectors;
  // Rows in tiles of at most kRows, as even as can be (25 rows: 13 and 12, not 14 and 11).
  const int64_t tiles = (m + Kernel::kRows - 1) / Kernel::kRows;
  const int64_t panels = (n + kNr - 1) / kNr;
  const int64_t ars = trans_a ? 1 : lda, aks = trans_a ? lda : 1;
  thread_local std::vector<float> b_buffer;
  const auto tile_rows = [&](int64_t t) {
    const int64_t i0 = m * t / tiles;
    return std::pair{i0, m * (t + 1) / tiles - i0};
  };
  // A large C over a short k (a dense kernel's gradient over a batch: [3136 x 1024] over 50):
  // all of B's panels for the pass are packed first (at most 256 KB, in the L2 cache), and the
  // row tiles go outside them, so that C is written a block of whole rows at a time. Panel by
  // panel, every tile would write a 128-byte piece of each of its rows, rows 4 KB or more apart:
  // a TLB entry and a cache set per row, for a few hundred multiply-adds. Either way each
  // element's chain is the same.
  if (tiles > 2 && m * n >= (int64_t{1} << 18) &&
      std::min<int64_t>(k, kKc) * panels * kNr <= (int64_t{1} << 16)) {
    for (int64_t pc = 0; pc < k; pc += kKc) {
      const int kc = static_cast<int>(std::min<int64_t>(kKc, k - pc));
      const bool load = accumulate || pc > 0;
      float* packed = Aligned(b_buffer, panels * kc * kNr);
      for (int64_t p = 0; p < panels; ++p) {
        PackPanel<kNr>(trans_b, b, ldb, pc, kc, p * kNr,
                       static_cast<int>(std::min<int64_t>(kNr, n - p * kNr)),
                       packed + p * kc * kNr);
      }
      for (int64_t t = 0; t < tiles; ++t) {
        const auto [i0, rows] = tile_rows(t);
        const MicroFn kernel = Kernel::kPacked[static_cast<size_t>(rows - 1)];
        for (int64_t p = 0; p < panels; ++p) {
          kernel(kc, a + i0 * ars + pc * aks, ars, aks, packed + p * kc * kNr, kNr,
                 c + i0 * ldc + p * kNr, ldc, static_cast<int>(std::min<int64_t>(kNr, n - p * kNr)),
                 load);
        }
      }
    }
    return;
  }
  float* bp = Aligned(b_buffer, static_cast<int64_t>(kKc) * kNr);
  for (int64_t pc = 0; pc < k; pc += kKc) {
    const int kc = static_cast<int>(std::min<int64_t>(kKc, k - pc));
    const bool load = accumulate || pc > 0;
    for (int64_t j0 = 0; j0 < n; j0 += kNr) {
      const int cols = static_cast<int>(std::min<int64_t>(kNr, n - j0));
      // B's panel for this pass; or B itself, when it is not transposed and too few rows of A go
      // past the panel to pay for the copy.
      const float* panel = bp;
      int64_t panel_ld = kNr;
      const std::array<MicroFn, Kernel::kRows>* kernels = &Kernel::kPacked;
      if (!trans_b && tiles <= 2) {
        panel = b + pc * ldb + j0;
        panel_ld = ldb;
        kernels = cols == kNr ? &Kernel::kWhole : &Kernel::kMasked;
      } else {
        PackPanel<kNr>(trans_b, b, ldb, pc, kc, j0, cols, bp);
      }
      for (int64_t t = 0; t < tiles; ++t) {
        const auto [i0, rows] = tile_rows(t);
        (*kernels)[static_cast<size_t>(rows - 1)](kc, a + i0 * ars + pc * aks, ars, aks, panel,
                                                  panel_ld, c + i0 * ldc + j0, ldc, cols, load);
      }
    }
  }
}

template <typename Op>
void GemmSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
    }
    return;
  }
  if (trans_a && !trans_b && n <= 16 && m > n) {
    // A^T B into few columns (a kernel gradient into a few units): as (B^T A)^T, whose rows are
    // the few, so that every lane of the kernel works. The same chains, from C's values when
    // accumulating.
    thread_local std::vector<float> ct;
    ct.resize(static_cast<size_t>(n * m));
    const int cols = static_cast<int>(n);
    for (int64_t i0 = 0; accumulate && i0 < m; i0 += 16) {
      const int rows = static_cast<int>(std::min<int64_t>(16, m - i0));
      Transpose(c + i0 * ldc, ldc, rows, cols, ct.data() + i0, m, rows);
    }
    GemmOnThisThread<Wide<Op>>(true, false, n, m, k, b, ldb, a, lda, ct.data(), m, accumulate);
    Transpose(ct.data(), m, cols, static_cast<int>(m), c, ldc, cols);
  } else if (n <= 16) {
    GemmOnThisThread<Narrow<Op>>(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  } else {
    GemmOnThisThread<Wide<Op>>(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
  }
}

// C's columns of packed panels [p0, p1) (PackB), on this thread. Panel by panel, B's panel read
// front to back once: with few rows of A (batch inference) B is the bulk of what is read, and
// it streams; for more rows, each kKc-row piece of the panel (32 KB) stays in the L1 cache
// while the tiles of A's rows go past it.
void GemmPackedPanels(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                      const float* packed, int64_t p0, int64_t p1, float* c, int64_t ldc) {
  constexpr int kNr = 16 * Wide<FloatStep>::kVectors;
  const int64_t tiles = (m + Wide<FloatStep>::kRows - 1) / Wide<FloatStep>::kRows;
  // With one or two tiles nothing is reused from the L1 cache between passes over k: one pass.
  const int64_t pass = tiles <= 2 ? k : kKc;
  for (int64_t p = p0; p < p1; ++p) {
    const int cols = static_cast<int>(std::min<int64_t>(kNr, n - p * kNr));
    const float* panel = packed + p * k * kNr;
    for (int64_t pc = 0; pc < k; pc += pass) {
      const int kc = static_cast<int>(std::min<int64_t>(pass, k - pc));
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t i0 = m * t / tiles, rows = m * (t + 1) / tiles - i0;
        Wide<FloatStep>::kPacked[static_cast<size_t>(rows - 1)](
            kc, a + i0 * lda + pc, lda, 1, panel + pc * kNr, kNr, c + i0 * ldc + p * kNr, ldc, cols,
            pc > 0);
      }
    }
  }
}

}  // namespace

int64_t PackedBPanel() { return 16 * Wide<FloatStep>::kVectors; }

int64_t PackedBFloats(int64_t k, int64_t n) {
  const int64_t nr = PackedBPanel();
  return (n + nr - 1) / nr * nr * k;
}

void PackB(int64_t k, int64_t n, const float* b, int64_t ldb, float* packed) {
  constexpr int kNr = 16 * Wide<FloatStep>::kVectors;
  const int64_t panels = (n + kNr - 1) / kNr;
  ParallelFor(panels, 2, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      PackPanel<kNr>(false, b, ldb, 0, static_cast<int>(k), p * kNr,
                     static_cast<int>(std::min<int64_t>(kNr, n - p * kNr)), packed + p * k * kNr);
    }
  });
}

void GemmPackedB(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* packed,
                 float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.0f);
    return;
  }
  constexpr int kNr = 16 * Wide<FloatStep>::kVectors;
  const int64_t panels = (n + kNr - 1) / kNr;
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (ComputeThreads() <= 1 || macs < kMinThreadedMacs) {
    GemmPackedPanels(m, n, k, a, lda, packed, 0, panels, c, ldc);
  } else if (m >= n) {
    ParallelFor(m, 2, [&](int64_t begin, int64_t end) {
      GemmPackedPanels(end - begin, n, k, a + begin * lda, lda, packed, 0, panels, c + begin * ldc,
                       ldc);
    });
  } else {
    ParallelFor(panels, 2, [&](int64_t begin, int64_t end) {
      GemmPackedPanels(m, n, k, a, lda, packed, begin, end, c, ldc);
    });
  }
}

namespace {
// Gemm on the thread team, with Op's chains (k: steps of Op, floats or bfloat16 pairs).
template <typename Op>
void GemmThreads(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (ComputeThreads() <= 1 || macs < kMinThreadedMacs) {
    GemmSerial<Op>(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
    return;
  }
  // Threads take rows or columns of C; every element is computed as it would be on one thread.
  if (m >= n) {
    ParallelFor(m, 2, [&](int64_t begin, int64_t end) {
      GemmSerial<Op>(trans_a, trans_b, end - begin, n, k, trans_a ? a + begin : a + begin * lda,
                     lda, b, ldb, c + begin * ldc, ldc, accumulate);
    });
  } else {
    // Columns in whole kernel panels, so that a thread's share wastes no lanes but the last.
    const int64_t panels = (n + 31) / 32;
    ParallelFor(panels, 2, [&](int64_t begin, int64_t end) {
      const int64_t j0 = begin * 32, j1 = std::min(n, end * 32);
      GemmSerial<Op>(trans_a, trans_b, m, j1 - j0, k, a, lda, trans_b ? b + j0 * ldb : b + j0, ldb,
                     c + j0, ldc, accumulate);
    });
  }
}

}  // namespace

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  GemmThreads<FloatStep>(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate);
}

namespace {
// GCC 12 warns of the undefined pass-through operand inside its own AVX-512 conversion intrinsics.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#if defined(V16_DOT_BF16)
// The rounded operands of GemmBf16 for DotBf16, as 32-bit pairs of bfloat16 values (v16.h) kept
// in float storage, which is what the kernels read.
void StorePair(float* p, uint32_t pair) { std::memcpy(p, &pair, 4); }

// pairs[j] = (row[2j], row[2j+1]) for j < (k + 1) / 2; an odd k's last pair is (row[k-1], 0).
void PairAlong(const float* row, int64_t k, float* pairs) {
  int64_t j = 0;
#if defined(__AVX512BF16__)
  for (; 2 * j + 32 <= k; j += 16) {
    const __m512bh h =
        _mm512_cvtne2ps_pbh(_mm512_loadu_ps(row + 2 * j + 16), _mm512_loadu_ps(row + 2 * j));
    _mm512_storeu_ps(pairs + j, (__m512)h);
  }
#endif
  for (; 2 * j + 1 < k; ++j) StorePair(pairs + j, Bf16Pair(row[2 * j], row[2 * j + 1]));
  if (k % 2) StorePair(pairs + j, Bf16Pair(row[k - 1], 0.0f));
}

// pairs[x] = (even[x], odd[x]) for x < n; (even[x], 0) when odd is null.
void PairAcross(const float* even, const float* odd, int64_t n, float* pairs) {
  int64_t x = 0;
#if defined(__AVX512BF16__)
  const auto half = [](const float* p) {
    return _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(p)));
  };
  for (; x + 16 <= n; x += 16) {
    const __m512i high = odd ? _mm512_slli_epi32(half(odd + x), 16) : _mm512_setzero_si512();
    _mm512_storeu_ps(pairs + x, _mm512_castsi512_ps(_mm512_or_si512(half(even + x), high)));
  }
#endif
  for (; x < n; ++x) StorePair(pairs + x, Bf16Pair(even[x], odd ? odd[x] : 0.0f));
}
#endif

#if V16_FLOAT_FMA_BF16
// The rounded operands of GemmBf16 for float FMAs: each pair of k as two floats, the odd element
// first, since its product is added first. out[2j] = row[2j+1] and out[2j+1] = row[2j], rounded,
// for j < (k + 1) / 2; an odd k's last pair is (0, row[k-1]).
void FloatsAlong(const float* row, int64_t k, float* out) {
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) StoreN(out + i, SwapPairs(RoundToBf16(LoadU(row + i))), 16);
  for (; i + 1 < k; i += 2) {
    out[i] = Bf16Float(row[i + 1]);
    out[i + 1] = Bf16Float(row[i]);
  }
  if (k % 2) {
    out[k - 1] = 0.0f;
    out[k] = Bf16Float(row[k - 1]);
  }
}

// out[x] = odd[x] (0 when odd is null) and out[n + x] = even[x], rounded, for x < n: the pair's
// two rows.
void FloatsAcross(const float* even, const float* odd, int64_t n, float* out) {
  for (int64_t x = 0; x < n; x += 16) {
    const int lanes = static_cast<int>(std::min<int64_t>(16, n - x));
    StoreN(out + x, odd ? RoundToBf16(LoadN(odd + x, lanes)) : Zero(), lanes);
    StoreN(out + n + x, RoundToBf16(LoadN(even + x, lanes)), lanes);
  }
}
#endif
#pragma GCC diagnostic pop

// Rows of `width` values per conversion task: about 64K values, so that a small product's
// operands are converted on the calling thread.
int64_t RowsPerTask(int64_t width) {
  return std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(width, 1));
}

constexpr bool Available(Bf16Kernels kernels) {
  switch (kernels) {
    case Bf16Kernels::kInstructions:
      return kBf16Instructions;
    case Bf16Kernels::kFloatFma:
      return V16_FLOAT_FMA_BF16;
    case Bf16Kernels::kEmulated:
      return !kBf16Instructions && !V16_FLOAT_FMA_BF16;
  }
  return false;
}

#if defined(__AVX512BF16__)
volatile float timing_sink;

// The best of five times of 12 independent chains of 1,024 `step`s, each step one pair of
// bfloat16 products a lane: some 10 microseconds a time.
template <typename Step>
double BestTime(Step step) {
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    __m512 acc[12];  // each its own start, or the compiler computes one chain for all
    for (int c = 0; c < 12; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 1024; ++i) {
#pragma GCC unroll 12  // the chains in registers
      for (__m512& x : acc) x = step(x);
    }
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    alignas(64) float lanes[16];
    __m512 sum = acc[0];
    for (int c = 1; c < 12; ++c) sum = _mm512_add_ps(sum, acc[c]);
    _mm512_store_ps(lanes, sum);
    timing_sink = lanes[0];
  }
  return best;
}
#endif

// The kernels GemmBf16 uses unless a test or benchmark set others: with AVX512_BF16, whichever
// takes a pair of products faster on this CPU, one VDPBF16PS or two FMAs. A VDPBF16PS costs Zen 4
// what one FMA does, and Intel family 6 model 207 what four do
// (docs/benchmarks.md#mixed-precision). Both give the same bits, so the choice is only speed.
Bf16Kernels FastestBf16Kernels() {
#if defined(__AVX512BF16__)
  const __m512 x = _mm512_set1_ps(1.0f + 0x1p-7f), y = _mm512_set1_ps(1.0f - 0x1p-7f);
  const auto dot = [&](__m512 c) { return _mm512_dpbf16_ps(c, (__m512bh)x, (__m512bh)y); };
  const auto fmas = [&](__m512 c) { return _mm512_fmadd_ps(x, y, _mm512_fmadd_ps(y, x, c)); };
  double t_dot = 1e30, t_fmas = 1e30;
  for (int round = 0; round < 2; ++round) {
    t_dot = std::min(t_dot, BestTime(dot));
    t_fmas = std::min(t_fmas, BestTime(fmas));
  }
  // Float FMAs read and convert twice the operands' bytes: they must be clearly faster.
  return t_fmas < 0.8 * t_dot ? Bf16Kernels::kFloatFma : Bf16Kernels::kInstructions;
#elif V16_FLOAT_FMA_BF16
  return Bf16Kernels::kFloatFma;
#else
  return Bf16Kernels::kEmulated;
#endif
}

std::atomic<int> bf16_kernels_set{-1};  // SetGemmBf16Kernels's, or -1
}  // namespace

Bf16Kernels GemmBf16Kernels() {
  const int set = bf16_kernels_set.load(std::memory_order_relaxed);
  if (set >= 0) return static_cast<Bf16Kernels>(set);
  static const Bf16Kernels fastest = FastestBf16Kernels();
  return fastest;
}

bool Bf16KernelsAvailable(Bf16Kernels kernels) { return Available(kernels); }

bool SetGemmBf16Kernels(Bf16Kernels kernels) {
  if (!Available(kernels)) return false;
  bf16_kernels_set.store(static_cast<int>(kernels), std::memory_order_relaxed);
  return true;
}

const char* Bf16KernelsName(Bf16Kernels kernels) {
  switch (kernels) {
    case Bf16Kernels::kInstructions:
      return "AVX512_BF16";
    case Bf16Kernels::kFloatFma:
      return "float FMA";
    case Bf16Kernels::kEmulated:
      return "emulated";
  }
  return "?";
}

int64_t GemmBf16Floats(int64_t m, int64_t n, int64_t k) { return (m + n) * 2 * ((k + 1) / 2); }

void GemmBf16(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
              int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, float* scratch,
              bool accumulate) {
  const int64_t kp = (k + 1) / 2;
  // How the kernels read the operands: a pair of k in one float (VDPBF16PS's pairs) or in two.
  const bool fmas = GemmBf16Kernels() == Bf16Kernels::kFloatFma;
  void (*along_k)(const float* row, int64_t k, float* out) = nullptr;
  void (*across_k)(const float* even, const float* odd, int64_t n, float* out) = nullptr;
#if V16_FLOAT_FMA_BF16
  if (fmas) {
    along_k = FloatsAlong;
    across_k = FloatsAcross;
  }
#endif
#if defined(V16_DOT_BF16)
  if (!fmas) {
    along_k = PairAlong;
    across_k = PairAcross;
  }
#endif
  const int64_t slots = fmas ? 2 : 1, ks = slots * kp;
  float* ap = scratch;
  float* bp = scratch + m * ks;
  // op(A)'s rows laid out along k: [m][ks] from A's rows, or [ks][m] from A's rows 2j and 2j+1.
  // op(B)'s columns likewise: [ks][n] from B's rows 2j and 2j+1, or [n][ks] from B's rows. The
  // kernels then read them as Gemm reads A, A^T, B and B^T.
  const auto across = [&](const float* x, int64_t ld, int64_t width, float* out) {
    ParallelFor(kp, RowsPerTask(width), [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        across_k(x + 2 * j * ld, 2 * j + 1 < k ? x + (2 * j + 1) * ld : nullptr, width,
                 out + j * slots * width);
      }
    });
  };
  const auto along = [&](const float* x, int64_t ld, int64_t rows, float* out) {
    ParallelFor(rows, RowsPerTask(k), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) along_k(x + i * ld, k, out + i * ks);
    });
  };
  if (trans_a) {
    across(a, lda, m, ap);
  } else {
    along(a, lda, m, ap);
  }
  if (trans_b) {
    along(b, ldb, n, bp);
  } else {
    across(b, ldb, n, bp);
  }
  const int64_t lda_s = trans_a ? m : ks, ldb_s = trans_b ? ks : n;
#if V16_FLOAT_FMA_BF16
  if (fmas) {
    // VDPBF16PS's flushes are MXCSR's flush-to-zero and denormals-are-zero, which the thread
    // team's threads have (parallel.h) and this one now too.
    FlushDenormalsOnThisThread();
    GemmThreads<FloatStep>(trans_a, trans_b, m, n, ks, ap, lda_s, bp, ldb_s, c, ldc, accumulate);
    return;
  }
#endif
#if defined(V16_DOT_BF16)
  GemmThreads<Bf16Step>(trans_a, trans_b, m, n, kp, ap, lda_s, bp, ldb_s, c, ldc, accumulate);
#endif
}

const char* GemmKernels() { return kKernels; }

}  // namespace trainingd::engine::internal
