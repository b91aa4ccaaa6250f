// The training losses: softmax cross-entropy from logits (classification), computed the
// numerically stable way, and the regression losses (mse, mae, huber) on a standardized target.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

struct LossAndAccuracy {
  double loss = 0;      // mean over the batch
  double accuracy = 0;  // fraction of rows whose arg-max logit is the label
  int64_t correct = 0;
  double loss_sum = 0;  // loss * batch: what a data-parallel step adds up over its ranks
  // With weights (SoftmaxCrossEntropy, RegressionLossOf): the rows' weights, summed, and those of
  // the rows the arg-max gets right; loss_sum is then the weighted sum.
  double weight_sum = 0, weighted_correct = 0;
  // Regression (Trainer::Evaluate of a regression split), in the target's own units: the root
  // mean squared error, the mean absolute error and R^2 (metrics.h's RegressionMetrics).
  double rmse = 0, mae = 0, r2 = 0;
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
// `weights` (empty = every row 1; else one per row, >= 0): row i's loss counts w_i times in
// loss_sum and its gradient row is scaled by w_i, still divided by the normalizer (Keras'
// sample_weight with SUM_OVER_BATCH_SIZE); `weight_sum` is their sum, `correct` stays a count and
// `weighted_correct` sums the weights of the rows the arg-max gets right.
LossAndAccuracy SoftmaxCrossEntropy(const Tensor& logits, std::span<const int32_t> labels,
                                    Tensor* dlogits, int64_t normalizer = 0,
                                    float label_smoothing = 0.0f,
                                    std::span<const float> weights = {});

// A regression job's loss (the job spec's `loss`), on the residual r = output - z between the
// model's output and the standardized target z = (y - mean) / std:
//   mse    r^2                                   (Keras' MeanSquaredError)
//   mae    |r|                                   (MeanAbsoluteError)
//   huber  r^2 / 2 for |r| <= delta, else delta * (|r| - delta / 2)   (Huber(delta))
enum class RegressionLoss { kMse, kMae, kHuber };
const char* RegressionLossName(RegressionLoss loss);  // "mse", "mae", "huber"
std::optional<RegressionLoss> RegressionLossNamed(std::string_view name);

// How a regression model's output relates to its target: the train split's standardization.
struct TargetScale {
  float mean = 0, std = 1;
  // The target a model output stands for: mean + std * output, in float (TrainedModel::Predict
  // and the ONNX graph compute it the same way).
  float Unscale(float output) const { return mean + std * output; }

  friend bool operator==(const TargetScale&, const TargetScale&) = default;
};

// What a regression batch adds to its split's totals: the loss's sum (row i weighing w_i) and
// the weights' (1 each without weights). Trainer::Evaluate forms RMSE, MAE and R^2 in the
// target's units from the split's predictions (metrics.h).
struct RegressionSums {
  double loss_sum = 0, weight_sum = 0;
};

// outputs: [batch, 1]; targets: batch values as in the file. When `doutputs` is not null it
// receives the gradient of the sum of the losses divided by `normalizer` (batch when 0), as
// SoftmaxCrossEntropy's. MAE's gradient at r = 0 is 0. `weights` as SoftmaxCrossEntropy's.
RegressionSums RegressionLossOf(const Tensor& outputs, std::span<const float> targets,
                                RegressionLoss loss, float huber_delta, TargetScale scale,
                                Tensor* doutputs, int64_t normalizer = 0,
                                std::span<const float> weights = {});

}  // namespace trainingd::engine
