// The direct convolution (private to engine/src): a convolution of one input channel with stride 1
// -- a CNN's first layer over grey images -- computed from the zero-padded image itself instead of
// a patch matrix (im2col) multiplied with k*k-long rows. Its products stay in registers, and no
// patch matrix is written and read back.
//
// The bits are im2col's (Conv2dLayer with ConvAlgorithm::kIm2col): an output is the same fused
// multiply-add chain as Gemm's over its patch row (the taps in (ky, kx) order, from zero, the
// border's zeros included), and a kernel-gradient element the same chain over the output pixels
// in order. So choosing it changes the time a step takes and nothing else.
#pragma once

#include <cstdint>

namespace trainingd::engine::internal {

struct DirectConvShape {
  int64_t h = 0, w = 0;            // the input image, one channel
  int64_t oh = 0, ow = 0, oc = 0;  // the output, [oh, ow, oc]
  int64_t k = 0, pad_top = 0, pad_left = 0;
  // The padded image: every window of every output pixel lies inside it.
  int64_t padded_h() const { return oh + k - 1; }
  int64_t padded_w() const { return ow + k - 1; }
  int64_t padded_size() const { return padded_h() * padded_w(); }
};

// xp [padded_h, padded_w]: the image x [h, w] at (pad_top, pad_left), zeros around it.
void PadImage(const DirectConvShape& s, const float* x, float* xp);

// Rows [oy0, oy1) of one example's output y [oh, ow, oc]: y = f(sum over the taps of
// xp * kernel[tap] + bias), the kernel [k * k, oc] (HWIO with one channel) and f ReLU or identity,
// as Gemm then AddBiasActivation would give them.
void DirectConvForward(const DirectConvShape& s, const float* xp, const float* kernel,
                       const float* bias, bool relu, float* y, int64_t oy0, int64_t oy1);

// dkernel [k * k, oc] += the sum over one example's output pixels, in order, of
// xp(pixel + tap) * dy[pixel], dy [oh * ow, oc] its output gradient (through the ReLU already).
void DirectConvKernelGradient(const DirectConvShape& s, const float* xp, const float* dy,
                              float* dkernel);

}  // namespace trainingd::engine::internal
