// Weight initialisers, as TensorFlow defines them.
#pragma once

#include <cstdint>
#include <string>

#include "trainingd/engine/base/random.h"
#include "trainingd/engine/nn/layer.h"
#include "trainingd/engine/nn/model_spec.h"
#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

// tf.glorot_uniform_initializer: U(-l, l) with l = sqrt(6 / (fan_in + fan_out)).
void InitGlorotUniform(Tensor& t, int64_t fan_in, int64_t fan_out, Rng& rng);
// tf.truncated_normal(stddev): N(0, stddev) redrawn outside two standard deviations.
void InitTruncatedNormal(Tensor& t, float stddev, Rng& rng);

// Creates a layer's "<layer>/kernel" of `kernel_shape` and "<layer>/bias" of [units] (zeroed
// gradients), initialising the kernel as `spec.initializer` says with the given fans and the bias
// to `spec.bias_init`.
void InitKernelAndBias(const std::string& layer_name, const LayerSpec& spec,
                       const Shape& kernel_shape, int64_t units, int64_t fan_in, int64_t fan_out,
                       Rng& rng, Parameter& kernel, Parameter& bias);

}  // namespace trainingd::engine
