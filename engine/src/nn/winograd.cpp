#include "nn/winograd.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace trainingd::engine::internal {
namespace {

// Transformed matrices pad their channels to whole multiples of kLanes floats.
constexpr int64_t kLanes = 16;

int64_t RoundUpToLanes(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

// ---- Toom-Cook matrices, computed at compile time -----------------------------------------------
//
// For F(m, r), alpha = m + r - 1: A^T [m][alpha] evaluates the output at the points, G [alpha][r]
// evaluates the kernel (scaled by the Lagrange denominators), and B^T [alpha][alpha] is the one
// matrix for which A^T [(G g) . (B^T d)] is the correlation of d with g. B^T is found by solving
// that identity, sum_xi A^T[i][xi] G[xi][k] B^T[xi][j] = [j == i + k], in double precision: both
// sides are m x r Hankel matrices, which the alpha evaluation points span exactly. The points
// are 0, 1, -1, 2, -2, 1/2, -1/2 (as many as needed) and infinity.

constexpr double Abs(double v) { return v < 0 ? -v : v; }
constexpr double Power(double b, int e) {
  double p = 1;
  for (int i = 0; i < e; ++i) p *= b;
  return p;
}
// The entries are ratios of small integers: snap each to the nearest multiple of 1/1440 where
// that is exact, so the float matrices carry no solver noise.
constexpr float Snap(double v) {
  const double scaled = v * 1440.0;
  const double rounded =
      static_cast<double>(static_cast<long long>(scaled + (scaled >= 0 ? 0.5 : -0.5))) / 1440.0;
  return static_cast<float>(Abs(rounded - v) < 1e-9 ? rounded : v);
}

template <int M, int R>
struct Toom {
  static constexpr int A = M + R - 1;
  float at[M][A] = {};
  float g[A][R] = {};
  float bt[A][A] = {};
  bool exact = false;  // the solved B^T satisfies the identity

  constexpr Toom() {
    constexpr double kPoints[] = {0, 1, -1, 2, -2, 0.5, -0.5};
    static_assert(A - 1 <= 7, "no evaluation points left for this tile");
    double atd[M][A] = {}, gd[A][R] = {};
    for (int j = 0; j < A - 1; ++j) {
      double f = 1;
      for (int l = 0; l < A - 1; ++l)
        if (l != j) f *= kPoints[j] - kPoints[l];
      for (int i = 0; i < M; ++i) atd[i][j] = Power(kPoints[j], i);
      for (int k = 0; k < R; ++k) gd[j][k] = Power(kPoints[j], k) / f;
    }
    atd[M - 1][A - 1] = 1;  // the point at infinity: leading coefficients
    gd[A - 1][R - 1] = 1;
    // Normal equations [e^T e | e^T rhs] with e[(i,k)][xi] = A^T[i][xi] G[xi][k], solved by
    // Gauss-Jordan with partial pivoting.
    double n[A][2 * A] = {};
    for (int i = 0; i < M; ++i)
      for (int k = 0; k < R; ++k)
        for (int a = 0; a < A; ++a) {
          const double ea = atd[i][a] * gd[a][k];
          for (int b = 0; b < A; ++b) n[a][b] += ea * atd[i][b] * gd[b][k];
          n[a][A + i + k] += ea;
        }
    for (int col = 0; col < A; ++col) {
      int pivot = col;
      for (int i = col + 1; i < A; ++i)
        if (Abs(n[i][col]) > Abs(n[pivot][col])) pivot = i;
      for (int j = 0; j < 2 * A; ++j) {
        const double t = n[col][j];
        n[col][j] = n[pivot][j];
        n[pivot][j] = t;
      }
      const double p = n[col][col];
      for (int j = 0; j < 2 * A; ++j) n[col][j] /= p;
      for (int i = 0; i < A; ++i) {
        if (i == col) continue;
        const double f = n[i][col];
        for (int j = 0; j < 2 * A; ++j) n[i][j] -= f * n[col][j];
      }
    }
    exact = true;
    for (int i = 0; i < M; ++i)
      for (int k = 0; k < R; ++k)
        for (int j = 0; j < A; ++j) {
          double sum = 0;
          for (int xi = 0; xi < A; ++xi) sum += atd[i][xi] * gd[xi][k] * n[xi][A + j];
          if (Abs(sum - (j == i + k ? 1.0 : 0.0)) > 1e-9) exact = false;
        }
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < A; ++j) at[i][j] = Snap(atd[i][j]);
    for (int j = 0; j < A; ++j)
      for (int k = 0; k < R; ++k) g[j][k] = Snap(gd[j][k]);
    for (int a = 0; a < A; ++a)
      for (int j = 0; j < A; ++j) bt[a][j] = Snap(n[a][A + j]);
  }
};

template <int M, int R>
inline constexpr Toom<M, R> kToom{};
static_assert(kToom<4, 3>.exact && kToom<4, 5>.exact, "Winograd transforms do not solve");

// The tables for the tile of M outputs whose input tile is A wide.
template <int M, int A>
constexpr const Toom<M, A - M + 1>& TablesFor() {
  return kToom<M, A - M + 1>;
}

// ---- The products of the Winograd domain --------------------------------------------------------
//
// Every product here is thin (one side has 16-64 columns, the other 32-64 rows or columns) and
// there are alpha^2 of them per block, each on a different matrix. OpenBLAS ran them at 30-55
// GFLOP/s on one core (packing each operand for a product too small to amortise it), so they use
// this register-blocked kernel instead: C[rows][n] (+)= sum_k a(r, k) * B[k][n], where a(r, k) =
// a[r * a_rs + k * a_ks] covers both A and A^T, n is a whole number of vectors, and B's rows are
// read straight from memory (they are small and stay in L1). R x PV accumulator registers.

#if defined(__AVX512F__)
constexpr int64_t kVec = 16;
constexpr int kMaxPanel = 4;  // vectors per panel: 6 x 4 accumulators + 4 B + 1 broadcast
#else
constexpr int64_t kVec = 8;
constexpr int kMaxPanel = 2;
#endif
static_assert(kLanes % kVec == 0);
// Vec is a value: locals and arrays of it have its natural alignment (clang's loads of them
// assume it, whatever a typedef says). Memory is read and written through VecU, which may sit at
// any float.
typedef float Vec __attribute__((vector_size(kVec * sizeof(float))));
typedef float VecU __attribute__((vector_size(kVec * sizeof(float)), aligned(4), may_alias));
// x in every lane, one broadcast from memory. (Vec{} + x is a scalar addition first: 0 + x is not
// x for x = -0, so the compiler has to compute it, and on AVX2 the broadcast then takes a vector
// port from the multiply-adds.)
inline Vec Splat(float x) { return x - Vec{}; }

// Rows per block: R x panel accumulators plus the panel's B vectors and a broadcast fit the 32
// (AVX-512) or 16 (AVX2) vector registers.
#if defined(__AVX512F__)
constexpr int RowsFor(int panel) { return panel >= 4 ? 6 : panel == 3 ? 8 : 12; }
#else
constexpr int RowsFor(int panel) { return panel >= 2 ? 6 : 12; }
#endif

template <int R, int PV>
inline void MicroKernel(int64_t k_n, const float* a, int64_t a_rs, int64_t a_ks, const float* b,
                        int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  Vec acc[R][PV];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < PV; ++p)
      acc[r][p] = accumulate ? *reinterpret_cast<const VecU*>(c + r * ldc + p * kVec) : Vec{};
  for (int64_t k = 0; k < k_n; ++k) {
    Vec bv[PV];
    for (int p = 0; p < PV; ++p) bv[p] = *reinterpret_cast<const VecU*>(b + k * ldb + p * kVec);
    const float* ak = a + k * a_ks;
    for (int r = 0; r < R; ++r) {
      const Vec av = Splat(ak[r * a_rs]);
      for (int p = 0; p < PV; ++p) acc[r][p] += av * bv[p];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < PV; ++p) *reinterpret_cast<VecU*>(c + r * ldc + p * kVec) = acc[r][p];
}

template <int PV>
void PanelProduct(int64_t rows, int64_t k_n, const float* a, int64_t a_rs, int64_t a_ks,
                  const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  constexpr int R = RowsFor(PV);
  int64_t r0 = 0;
  for (; r0 + R <= rows; r0 += R)
    MicroKernel<R, PV>(k_n, a + r0 * a_rs, a_rs, a_ks, b, ldb, c + r0 * ldc, ldc, accumulate);
  for (; r0 < rows; ++r0)
    MicroKernel<1, PV>(k_n, a + r0 * a_rs, a_rs, a_ks, b, ldb, c + r0 * ldc, ldc, accumulate);
}

// C[rows][n] = (or +=) sum over k < k_n of a(r, k) B[k][n]; n must be a multiple of kLanes.
void SmallProduct(int64_t rows, int64_t n, int64_t k_n, const float* a, int64_t a_rs, int64_t a_ks,
                  const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  for (int64_t n0 = 0; n0 < n; n0 += kMaxPanel * kVec) {
    const int pv = static_cast<int>(std::min<int64_t>(kMaxPanel, (n - n0) / kVec));
    const float* bp = b + n0;
    float* cp = c + n0;
    switch (pv) {
      case 1:
        PanelProduct<1>(rows, k_n, a, a_rs, a_ks, bp, ldb, cp, ldc, accumulate);
        break;
      case 2:
        PanelProduct<2>(rows, k_n, a, a_rs, a_ks, bp, ldb, cp, ldc, accumulate);
        break;
#if defined(__AVX512F__)
      case 3:
        PanelProduct<3>(rows, k_n, a, a_rs, a_ks, bp, ldb, cp, ldc, accumulate);
        break;
      case 4:
        PanelProduct<4>(rows, k_n, a, a_rs, a_ks, bp, ldb, cp, ldc, accumulate);
        break;
#endif
      default:
        break;
    }
  }
}

// ---- Vector helpers for the tile transforms ----------------------------------------------------

inline Vec Load(const float* p) { return *reinterpret_cast<const VecU*>(p); }
inline void Store(float* p, Vec v) { *reinterpret_cast<VecU*>(p) = v; }
// The first n (< kVec) floats of p, the rest zero.
inline Vec LoadPartial(const float* p, int64_t n) {
  alignas(64) float buf[kVec] = {};
  std::memcpy(buf, p, sizeof(float) * static_cast<size_t>(n));
  return Load(buf);
}
inline void StorePartial(float* p, Vec v, int64_t n) {
  alignas(64) float buf[kVec];
  Store(buf, v);
  std::memcpy(p, buf, sizeof(float) * static_cast<size_t>(n));
}
inline Vec LoadN(const float* p, int64_t n) { return n == kVec ? Load(p) : LoadPartial(p, n); }
inline void StoreN(float* p, Vec v, int64_t n) {
  if (n == kVec)
    Store(p, v);
  else
    StorePartial(p, v, n);
}

// out[a][b] = sum_i sum_j L(a, i) d[i][j] L(b, j) for an Out x In matrix L given as l(a, i), each
// result handed to emit(a, b, value). All four tile transforms are of this form. The loops are
// unrolled and l returns compile-time constants, so zero coefficients cost nothing and +-1 ones
// become additions.
template <int Out, int In, typename Coef, typename Emit>
inline void Sandwich(const Vec (&d)[In][In], Coef l, Emit emit) {
#pragma GCC unroll 8
  for (int a = 0; a < Out; ++a) {
    Vec row[In];  // row[j] = sum_i L(a, i) d[i][j]
#pragma GCC unroll 8
    for (int j = 0; j < In; ++j) {
      Vec acc{};
#pragma GCC unroll 8
      for (int i = 0; i < In; ++i)
        if (l(a, i) != 0.0f) acc += l(a, i) * d[i][j];
      row[j] = acc;
    }
#pragma GCC unroll 8
    for (int b = 0; b < Out; ++b) {
      Vec acc{};
#pragma GCC unroll 8
      for (int j = 0; j < In; ++j)
        if (l(b, j) != 0.0f) acc += l(b, j) * row[j];
      emit(a, b, acc);
    }
  }
}

}  // namespace

int WinogradConv::TileSizeFor(int64_t r) {
  if (r == 3) return 4;  // F(4x4, 3x3): 36 products per 16 outputs instead of 144
  // F(4x4, 5x5): 64 products per 16 outputs instead of 400. On the tutorial CNN's second
  // convolution F(3x3, 5x5) (49 per 9) took 13-17% more time on AVX-512 (Zen 4), 5% forward and
  // 22% backward on AVX2 (Zen 3), and F(2x2, 5x5) (36 per 4) more still; all three agree with
  // im2col to a few 1e-6 of the largest value (conv_bench).
  if (r == 5) return 4;
  return 0;
}

WinogradConv::WinogradConv(const WinogradShape& shape) : s_(shape) {
  m_ = TileSizeFor(s_.r);
  if (m_ == 0) throw std::logic_error("winograd: no tile size for this kernel");
  alpha_ = m_ + static_cast<int>(s_.r) - 1;
  tiles_y_ = (s_.oh + m_ - 1) / m_;
  tiles_x_ = (s_.ow + m_ - 1) / m_;
  c_stride_ = RoundUpToLanes(s_.c);
  oc_stride_ = RoundUpToLanes(s_.oc);
  g_ = s_.r == 3 ? &kToom<4, 3>.g[0][0] : &kToom<4, 5>.g[0][0];
}

int64_t WinogradConv::WorkspaceBytes(int64_t tiles) const {
  return int64_t{alpha_} * alpha_ * tiles * (c_stride_ + oc_stride_) * 4;  // v and m
}

int64_t WinogradConv::TilesPerBlock(int64_t bytes) const {
  const int64_t per_tile = int64_t{alpha_} * alpha_ * (c_stride_ + oc_stride_) * 4;
  // A multiple of 12 rows, which the product kernels' 6- and 12-row blocks divide.
  return std::clamp<int64_t>(bytes / per_tile / 12 * 12, 12, 4092);
}

void WinogradConv::TransformKernel(const float* w, float* u, float* ut) const {
  const int64_t a_n = alpha_, r = s_.r, co = s_.c * s_.oc, oc = s_.oc, os = oc_stride_;
  // tmp[a][kx] = sum_ky G[a][ky] w[ky][kx], each a [c][oc] matrix.
  std::vector<float> tmp(static_cast<size_t>(a_n * r * co), 0.0f);
  for (int64_t a = 0; a < a_n; ++a)
    for (int64_t ky = 0; ky < r; ++ky) {
      const float coef = g_[a * r + ky];
      if (coef == 0.0f) continue;
      for (int64_t kx = 0; kx < r; ++kx) {
        const float* src = w + (ky * r + kx) * co;
        float* dst = tmp.data() + (a * r + kx) * co;
#pragma omp simd
        for (int64_t i = 0; i < co; ++i) dst[i] += coef * src[i];
      }
    }
  // u[a][b] = sum_kx tmp[a][kx] G[b][kx], rows padded to oc_stride_.
  std::fill(u, u + kernel_size(), 0.0f);
  for (int64_t a = 0; a < a_n; ++a)
    for (int64_t b = 0; b < a_n; ++b) {
      float* dst = u + (a * a_n + b) * s_.c * os;
      for (int64_t kx = 0; kx < r; ++kx) {
        const float coef = g_[b * r + kx];
        if (coef == 0.0f) continue;
        const float* src = tmp.data() + (a * r + kx) * co;
        for (int64_t c = 0; c < s_.c; ++c) {
#pragma omp simd
          for (int64_t o = 0; o < oc; ++o) dst[c * os + o] += coef * src[c * oc + o];
        }
      }
    }
  if (ut == nullptr) return;
  std::fill(ut, ut + kernel_t_size(), 0.0f);
  for (int64_t xi = 0; xi < a_n * a_n; ++xi)
    for (int64_t c = 0; c < s_.c; ++c)
      for (int64_t o = 0; o < oc; ++o)
        ut[(xi * oc + o) * c_stride_ + c] = u[(xi * s_.c + c) * os + o];
}

void WinogradConv::KernelGradient(const float* du, float* dw) const {
  const int64_t a_n = alpha_, r = s_.r, co = s_.c * s_.oc, oc = s_.oc, os = oc_stride_;
  // tmp[a][kx] = sum_b du[a][b] G[b][kx]
  std::vector<float> tmp(static_cast<size_t>(a_n * r * co), 0.0f);
  for (int64_t a = 0; a < a_n; ++a)
    for (int64_t b = 0; b < a_n; ++b) {
      const float* src = du + (a * a_n + b) * s_.c * os;
      for (int64_t kx = 0; kx < r; ++kx) {
        const float coef = g_[b * r + kx];
        if (coef == 0.0f) continue;
        float* dst = tmp.data() + (a * r + kx) * co;
        for (int64_t c = 0; c < s_.c; ++c) {
#pragma omp simd
          for (int64_t o = 0; o < oc; ++o) dst[c * oc + o] += coef * src[c * os + o];
        }
      }
    }
  // dw[ky][kx] = sum_a G[a][ky] tmp[a][kx]
  std::fill(dw, dw + r * r * co, 0.0f);
  for (int64_t ky = 0; ky < r; ++ky)
    for (int64_t a = 0; a < a_n; ++a) {
      const float coef = g_[a * r + ky];
      if (coef == 0.0f) continue;
      for (int64_t kx = 0; kx < r; ++kx) {
        const float* src = tmp.data() + (a * r + kx) * co;
        float* dst = dw + (ky * r + kx) * co;
#pragma omp simd
        for (int64_t i = 0; i < co; ++i) dst[i] += coef * src[i];
      }
    }
}

template <int M, int A>
void WinogradConv::TransformInput(const float* x, int64_t t0, int64_t t1, float* v) const {
  const int64_t c = s_.c, cs = c_stride_, tpe = tiles_per_example(), tb = t1 - t0;
  const int64_t in_size = s_.h * s_.w * c;
  static const float kZeros[kVec] = {};
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t e = t / tpe, ty = (t % tpe) / tiles_x_, tx = (t % tpe) % tiles_x_;
    const float* xe = x + e * in_size;
    const int64_t y0 = ty * M - s_.pad_top, x0 = tx * M - s_.pad_left;
    // Pixel offsets of the input tile, -1 for padding.
    int64_t at[A][A];
    for (int i = 0; i < A; ++i)
      for (int j = 0; j < A; ++j) {
        const int64_t iy = y0 + i, ix = x0 + j;
        at[i][j] = (iy >= 0 && iy < s_.h && ix >= 0 && ix < s_.w) ? (iy * s_.w + ix) * c : -1;
      }
    float* vt = v + (t - t0) * cs;
    for (int64_t c0 = 0; c0 < cs; c0 += kVec) {
      const int64_t n = std::clamp<int64_t>(c - c0, 0, kVec);
      Vec d[A][A];
      for (int i = 0; i < A; ++i)
        for (int j = 0; j < A; ++j)
          d[i][j] = at[i][j] < 0 || n == 0 ? Load(kZeros) : LoadN(xe + at[i][j] + c0, n);
      // V = B^T d B
      Sandwich<A, A>(
          d, [](int r, int k) { return TablesFor<M, A>().bt[r][k]; },
          [&](int r, int k, Vec value) { Store(vt + (r * A + k) * tb * cs + c0, value); });
    }
  }
}

template <int M, int A>
void WinogradConv::TransformOutput(const float* m, int64_t t0, int64_t t1, const float* bias,
                                   bool relu, float* y) const {
  const int64_t oc = s_.oc, os = oc_stride_, tpe = tiles_per_example(), tb = t1 - t0;
  const int64_t out_size = s_.oh * s_.ow * oc;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t e = t / tpe, ty = (t % tpe) / tiles_x_, tx = (t % tpe) % tiles_x_;
    const float* mt = m + (t - t0) * os;
    for (int64_t o0 = 0; o0 < oc; o0 += kVec) {
      const int64_t n = std::min(kVec, oc - o0);
      const Vec bv = LoadN(bias + o0, n);
      Vec mv[A][A];
      for (int r = 0; r < A; ++r)
        for (int k = 0; k < A; ++k) mv[r][k] = Load(mt + (r * A + k) * tb * os + o0);
      // Y = A^T m A, plus the bias, through the ReLU, where the tile is inside the image.
      Sandwich<M, A>(
          mv, [](int r, int k) { return TablesFor<M, A>().at[r][k]; },
          [&](int i, int j, Vec value) {
            const int64_t oy = ty * M + i, ox = tx * M + j;
            if (oy >= s_.oh || ox >= s_.ow) return;
            value += bv;
            if (relu) value = value > Vec{} ? value : Vec{};
            StoreN(y + e * out_size + (oy * s_.ow + ox) * oc + o0, value, n);
          });
    }
  }
}

template <int M, int A>
void WinogradConv::TransformOutputGradient(const float* dy, const float* y, int64_t t0, int64_t t1,
                                           float* dm, float* dbias) const {
  const int64_t oc = s_.oc, os = oc_stride_, tpe = tiles_per_example(), tb = t1 - t0;
  const int64_t out_size = s_.oh * s_.ow * oc;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t e = t / tpe, ty = (t % tpe) / tiles_x_, tx = (t % tpe) % tiles_x_;
    float* dmt = dm + (t - t0) * os;
    for (int64_t o0 = 0; o0 < os; o0 += kVec) {
      const int64_t n = std::clamp<int64_t>(oc - o0, 0, kVec);
      // g[i][j]: the tile's output gradient, zero outside the image and where the ReLU was off.
      Vec g[M][M];
      Vec bias_sum{};
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < M; ++j) {
          const int64_t oy = ty * M + i, ox = tx * M + j;
          if (n == 0 || oy >= s_.oh || ox >= s_.ow) {
            g[i][j] = Vec{};
            continue;
          }
          const int64_t at = e * out_size + (oy * s_.ow + ox) * oc + o0;
          Vec gv = LoadN(dy + at, n);
          if (y != nullptr) gv = LoadN(y + at, n) > Vec{} ? gv : Vec{};
          g[i][j] = gv;
          bias_sum += gv;
        }
      if (n > 0) StoreN(dbias + o0, LoadN(dbias + o0, n) + bias_sum, n);
      // dM = A g A^T
      Sandwich<A, M>(
          g, [](int r, int k) { return TablesFor<M, A>().at[k][r]; },
          [&](int r, int k, Vec value) { Store(dmt + (r * A + k) * tb * os + o0, value); });
    }
  }
}

template <int M, int A>
void WinogradConv::AddInputGradient(const float* dv, int64_t t0, int64_t t1, float* dx) const {
  const int64_t c = s_.c, cs = c_stride_, tpe = tiles_per_example(), tb = t1 - t0;
  const int64_t in_size = s_.h * s_.w * c;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t e = t / tpe, ty = (t % tpe) / tiles_x_, tx = (t % tpe) % tiles_x_;
    const int64_t y0 = ty * M - s_.pad_top, x0 = tx * M - s_.pad_left;
    const float* dvt = dv + (t - t0) * cs;
    for (int64_t c0 = 0; c0 < c; c0 += kVec) {
      const int64_t n = std::min(kVec, c - c0);
      Vec dvv[A][A];
      for (int r = 0; r < A; ++r)
        for (int k = 0; k < A; ++k) dvv[r][k] = Load(dvt + (r * A + k) * tb * cs + c0);
      // dx += B dV B^T, where the input tile is inside the image (the rest is padding).
      Sandwich<A, A>(
          dvv, [](int r, int k) { return TablesFor<M, A>().bt[k][r]; },
          [&](int i, int j, Vec value) {
            const int64_t iy = y0 + i, ix = x0 + j;
            if (iy < 0 || iy >= s_.h || ix < 0 || ix >= s_.w) return;
            float* dst = dx + e * in_size + (iy * s_.w + ix) * c + c0;
            StoreN(dst, LoadN(dst, n) + value, n);
          });
    }
  }
}

template <int M, int A>
void WinogradConv::ForwardT(const float* x, int64_t t0, int64_t t1, const float* u,
                            const float* bias, bool relu, float* y, WinogradWorkspace& ws) const {
  const int64_t tb = t1 - t0, cs = c_stride_, os = oc_stride_;
  ws.v.resize(static_cast<size_t>(A * A * tb * cs));
  ws.m.resize(static_cast<size_t>(A * A * tb * os));
  TransformInput<M, A>(x, t0, t1, ws.v.data());
  for (int64_t xi = 0; xi < A * A; ++xi) {
    // M[xi] = V[xi] U[xi]
    SmallProduct(tb, os, s_.c, ws.v.data() + xi * tb * cs, cs, 1, u + xi * s_.c * os, os,
                 ws.m.data() + xi * tb * os, os, false);
  }
  TransformOutput<M, A>(ws.m.data(), t0, t1, bias, relu, y);
}

template <int M, int A>
void WinogradConv::BackwardT(const float* x, const float* y, const float* dy, int64_t t0,
                             int64_t t1, const float* ut, bool relu, float* du, float* dbias,
                             float* dx, WinogradWorkspace& ws) const {
  const int64_t tb = t1 - t0, cs = c_stride_, os = oc_stride_;
  ws.v.resize(static_cast<size_t>(A * A * tb * cs));
  ws.m.resize(static_cast<size_t>(A * A * tb * os));
  TransformOutputGradient<M, A>(dy, relu ? y : nullptr, t0, t1, ws.m.data(), dbias);
  TransformInput<M, A>(x, t0, t1, ws.v.data());
  for (int64_t xi = 0; xi < A * A; ++xi) {
    // dU[xi] += V[xi]^T dM[xi]
    SmallProduct(s_.c, os, tb, ws.v.data() + xi * tb * cs, 1, cs, ws.m.data() + xi * tb * os, os,
                 du + xi * s_.c * os, os, true);
  }
  if (dx == nullptr) return;
  for (int64_t xi = 0; xi < A * A; ++xi) {
    // dV[xi] = dM[xi] U[xi]^T, written over V (padding lanes come out zero: U^T's are).
    SmallProduct(tb, cs, s_.oc, ws.m.data() + xi * tb * os, os, 1, ut + xi * s_.oc * cs, cs,
                 ws.v.data() + xi * tb * cs, cs, false);
  }
  AddInputGradient<M, A>(ws.v.data(), t0, t1, dx);
}

void WinogradConv::Forward(const float* x, int64_t t0, int64_t t1, const float* u,
                           const float* bias, bool relu, float* y, WinogradWorkspace& ws) const {
  if (alpha_ == 6) return ForwardT<4, 6>(x, t0, t1, u, bias, relu, y, ws);
  return ForwardT<4, 8>(x, t0, t1, u, bias, relu, y, ws);
}

void WinogradConv::Backward(const float* x, const float* y, const float* dy, int64_t t0, int64_t t1,
                            const float* ut, bool relu, float* du, float* dbias, float* dx,
                            WinogradWorkspace& ws) const {
  if (alpha_ == 6) return BackwardT<4, 6>(x, y, dy, t0, t1, ut, relu, du, dbias, dx, ws);
  return BackwardT<4, 8>(x, y, dy, t0, t1, ut, relu, du, dbias, dx, ws);
}

}  // namespace trainingd::engine::internal
