#include "trainingd/engine/nn/initializers.h"

#include <cmath>

namespace trainingd::engine {

void InitGlorotUniform(Tensor& t, int64_t fan_in, int64_t fan_out, Rng& rng) {
  const float limit = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
  for (int64_t i = 0; i < t.size(); ++i) t[i] = rng.Uniform(-limit, limit);
}

void InitTruncatedNormal(Tensor& t, float stddev, Rng& rng) {
  for (int64_t i = 0; i < t.size(); ++i) t[i] = rng.TruncatedNormal(stddev);
}

void InitKernelAndBias(const std::string& layer_name, const LayerSpec& spec,
                       const Shape& kernel_shape, int64_t units, int64_t fan_in, int64_t fan_out,
                       Rng& rng, Parameter& kernel, Parameter& bias) {
  kernel.name = layer_name + "/kernel";
  kernel.value = Tensor(kernel_shape);
  kernel.grad = Tensor(kernel_shape);
  bias.name = layer_name + "/bias";
  bias.value = Tensor(Shape{units}, spec.bias_init);
  bias.grad = Tensor(Shape{units});
  if (spec.initializer == Initializer::kTruncatedNormal) {
    InitTruncatedNormal(kernel.value, spec.stddev, rng);
  } else {
    InitGlorotUniform(kernel.value, fan_in, fan_out, rng);
  }
}

}  // namespace trainingd::engine
