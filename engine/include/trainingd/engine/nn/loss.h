// Softmax cross-entropy from logits, computed the numerically stable way.
#pragma once

#include <cstdint>
#include <span>

#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

struct LossAndAccuracy {
  double loss = 0;      // mean over the batch
  double accuracy = 0;  // fraction of rows whose arg-max logit is the label
  int64_t correct = 0;
  double loss_sum = 0;  // loss * batch: what a data-parallel step adds up over its ranks
};

// logits: [batch, classes]; labels: batch values in [0, classes). Uses
// log softmax(z)_y = z_y - max(z) - log(sum exp(z - max(z))), so large logits never overflow.
// When `dlogits` is not null it receives (softmax(z) - onehot(y)) / normalizer, normalizer = batch
// when 0: the gradient of the batch's mean loss. A rank of a data-parallel step passes the global
// batch, so its gradients are its examples' share of the global mean and the ranks' sum is the
// global mean itself.
// `label_smoothing` eps in [0, 1) replaces onehot(y) by (1 - eps) * onehot(y) + eps / classes, in
// the loss and in its gradient, as Keras' CategoricalCrossentropy(label_smoothing=eps): the loss of
// a row is log(sum exp(z - max(z))) - sum_c target_c * (z_c - max(z)). With eps = 0 the result is
// bitwise that of plain cross-entropy.
LossAndAccuracy SoftmaxCrossEntropy(const Tensor& logits, std::span<const int32_t> labels,
                                    Tensor* dlogits, int64_t normalizer = 0,
                                    float label_smoothing = 0.0f);

}  // namespace trainingd::engine
