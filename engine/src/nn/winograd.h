// Winograd convolution F(m x m, r x r) for stride-1 convolutions (private to engine/src).
//
// Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks" (2016). The output is cut into
// m x m tiles; each reads an alpha x alpha input tile (alpha = m + r - 1, neighbouring tiles
// overlap by r - 1). With U = G g G^T the transformed kernel and V = B^T d B the transformed input
// tile, an output tile is
//
//   Y = A^T [ sum over input channels c of U[c] (.) V[c] ] A          ((.) element-wise)
//
// so for each of the alpha^2 positions xi the channel sum is one matrix product
// M[xi] (tiles x out) = V[xi] (tiles x in) * U[xi] (in x out): F(4x4, 5x5) does 64 multiply-adds
// for every 16 outputs where direct convolution does 400.
//
// Training needs the adjoint of each linear step, which has the same shape: dM = A dY A^T,
// dU[xi] += V[xi]^T dM[xi], dV[xi] = dM[xi] U[xi]^T, dx += B dV B^T scattered back onto the
// (overlapping) input tiles, dg = G^T dU G. These are the exact gradients of the Winograd forward
// pass, which equals the convolution up to float rounding.
//
// A, B and G come from Toom-Cook interpolation at the points 0, 1, -1, 2, -2, 1/2, -1/2 and
// infinity (as many as alpha needs), computed at compile time in double precision.
//
// Layouts: images are NHWC; the kernel is HWIO ([r][r][in][out]); transformed data is
// [alpha^2][tiles][channels] (one row-major matrix per xi) and the transformed kernel
// [alpha^2][in][out].
#pragma once

#include <cstdint>
#include <vector>

namespace trainingd::engine::internal {

struct WinogradShape {
  int64_t h = 0, w = 0, c = 0;     // input
  int64_t oh = 0, ow = 0, oc = 0;  // output
  int64_t r = 0;                   // kernel size (square)
  int64_t pad_top = 0, pad_left = 0;
};

// Per-thread scratch for one block of examples.
struct WinogradWorkspace {
  std::vector<float> v, m;
};

class WinogradConv {
 public:
  // The output tile size used for an r x r kernel, or 0 if Winograd is not offered for it. Only
  // stride 1 convolutions can use it.
  static int TileSizeFor(int64_t r);

  // `shape.r` must have a non-zero TileSizeFor().
  explicit WinogradConv(const WinogradShape& shape);

  int m() const { return m_; }
  int alpha() const { return alpha_; }
  int64_t tiles_per_example() const { return tiles_y_ * tiles_x_; }
  // Floats of the transformed kernel u [alpha^2][in][out] (and of its gradient), and of its
  // transpose ut [alpha^2][out][in] (which the input gradient multiplies with).
  int64_t kernel_size() const { return int64_t{alpha_} * alpha_ * s_.c * oc_stride_; }
  int64_t kernel_t_size() const { return int64_t{alpha_} * alpha_ * s_.oc * c_stride_; }

  // u = G g G^T for the HWIO kernel w (u has kernel_size() floats); also its transpose into ut
  // when ut is not null.
  void TransformKernel(const float* w, float* u, float* ut) const;
  // dw[r][r][in][out] = G^T du G (overwrites dw).
  void KernelGradient(const float* du, float* dw) const;

  // Tiles are numbered across examples: tile t is tile t % tiles_per_example() of example
  // t / tiles_per_example(), counting from the example x points to. The methods below work on
  // the tiles [t0, t1), so a block can be sized to the cache whatever the image size.
  //
  // y = act(conv(x) + bias) on the output pixels of those tiles, with the transformed kernel u.
  // Single-threaded.
  void Forward(const float* x, int64_t t0, int64_t t1, const float* u, const float* bias, bool relu,
               float* y, WinogradWorkspace& ws) const;
  // For the tiles [t0, t1): du += the transformed kernel's gradient, dbias += the bias gradient
  // and, when dx is given, dx += the input gradient (the caller zeroes dx first), using ut from
  // TransformKernel. dy is the gradient of the layer's output y; with relu it is masked by y > 0.
  // Single-threaded.
  void Backward(const float* x, const float* y, const float* dy, int64_t t0, int64_t t1,
                const float* ut, bool relu, float* du, float* dbias, float* dx,
                WinogradWorkspace& ws) const;
  // Tiles per block such that the block's transformed data fits in about `bytes` of cache.
  int64_t TilesPerBlock(int64_t bytes) const;
  // The bytes a WinogradWorkspace grows to for blocks of `tiles` tiles.
  int64_t WorkspaceBytes(int64_t tiles) const;

 private:
  template <int M, int A>
  void TransformInput(const float* x, int64_t t0, int64_t t1, float* v) const;
  template <int M, int A>
  void TransformOutput(const float* m, int64_t t0, int64_t t1, const float* bias, bool relu,
                       float* y) const;
  template <int M, int A>
  void TransformOutputGradient(const float* dy, const float* y, int64_t t0, int64_t t1, float* dm,
                               float* dbias) const;
  template <int M, int A>
  void AddInputGradient(const float* dv, int64_t t0, int64_t t1, float* dx) const;
  template <int M, int A>
  void ForwardT(const float* x, int64_t t0, int64_t t1, const float* u, const float* bias,
                bool relu, float* y, WinogradWorkspace& ws) const;
  template <int M, int A>
  void BackwardT(const float* x, const float* y, const float* dy, int64_t t0, int64_t t1,
                 const float* ut, bool relu, float* du, float* dbias, float* dx,
                 WinogradWorkspace& ws) const;

  WinogradShape s_;
  int m_ = 0, alpha_ = 0;
  int64_t tiles_y_ = 0, tiles_x_ = 0;
  // Channel strides of the transformed matrices: the channel counts rounded up to whole vectors,
  // so the transforms always work on full vectors (the padding lanes hold zeros).
  int64_t c_stride_ = 0, oc_stride_ = 0;
  // G [alpha][r], row-major, for the kernel transforms (the tile transforms use the tables as
  // compile-time constants).
  const float* g_ = nullptr;
};

}  // namespace trainingd::engine::internal
