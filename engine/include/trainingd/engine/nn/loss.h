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
};

// logits: [batch, classes]; labels: batch values in [0, classes). Uses
// log softmax(z)_y = z_y - max(z) - log(sum exp(z - max(z))), so large logits never overflow.
// When `dlogits` is not null it receives dLoss/dlogits = (softmax(z) - onehot(y)) / batch.
LossAndAccuracy SoftmaxCrossEntropy(const Tensor& logits, std::span<const int32_t> labels,
                                    Tensor* dlogits);

}  // namespace trainingd::engine
