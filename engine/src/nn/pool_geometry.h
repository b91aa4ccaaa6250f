// The geometry the pooling layers share (max_pool2d, avg_pool2d): valid windows of `pool` x
// `pool` every `stride` pixels over an [H, W, C] input.
#pragma once

#include <cstdint>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

struct PoolGeometry {
  int64_t h = 0, w = 0, c = 0;  // the input
  int64_t oh = 0, ow = 0;       // the output's height and width
};

// The output shape [oh, ow, C] of a `type` ("max_pool2d") layer's windows on `input`, and its
// geometry in *g. InvalidArgument: an input that is not [H, W, C], a pool or stride outside
// [1, 64], a pool larger than the input.
Result<Shape> ConfigurePool(const char* type, const Shape& input, int pool, int stride,
                            PoolGeometry* g);

}  // namespace trainingd::engine
