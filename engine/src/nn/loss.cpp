#include "trainingd/engine/nn/loss.h"

#include <cassert>
#include <cmath>

namespace trainingd::engine {

LossAndAccuracy SoftmaxCrossEntropy(const Tensor& logits, std::span<const int32_t> labels,
                                    Tensor* dlogits, int64_t normalizer, float label_smoothing,
                                    std::span<const float> weights) {
  const int64_t batch = logits.shape()[0];
  const double denominator = static_cast<double>(normalizer > 0 ? normalizer : batch);
  const int64_t classes = batch ? logits.size() / batch : 0;
  assert(static_cast<int64_t>(labels.size()) == batch);
  if (dlogits) dlogits->Resize(logits.shape());
  // Label smoothing's targets: `on` for the label, `off` for every class (the label included).
  const bool smoothing = label_smoothing != 0.0f && classes > 0;
  const double off =
      smoothing ? static_cast<double>(label_smoothing) / static_cast<double>(classes) : 0.0;
  const double on = 1.0 - static_cast<double>(label_smoothing);
  const float off_grad = static_cast<float>(off / denominator);
  const float on_grad = static_cast<float>(on / denominator);
  assert(weights.empty() || static_cast<int64_t>(weights.size()) == batch);
  LossAndAccuracy r;
  double total = 0;
  for (int64_t i = 0; i < batch; ++i) {
    const float* z = logits.data() + i * classes;
    const float w = weights.empty() ? 1.0f : weights[static_cast<size_t>(i)];
    r.weight_sum += w;
    int64_t arg = 0;
    for (int64_t c = 1; c < classes; ++c) {
      if (z[c] > z[arg]) arg = c;
    }
    const float zmax = z[arg];
    // The exponentials go straight into the gradient row when there is one (no allocation on
    // the training step's path); evaluation only needs their sum.
    float* d = dlogits ? dlogits->data() + i * classes : nullptr;
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) {
      const float e = std::exp(z[c] - zmax);
      if (d) d[c] = e;
      sum += e;
    }
    const int32_t y = labels[static_cast<size_t>(i)];
    if (arg == y) {
      ++r.correct;
      r.weighted_correct += w;
    }
    double row_loss = 0;
    if (!smoothing) {
      row_loss = std::log(sum) - static_cast<double>(z[y] - zmax);
      if (d) {
        const float inv = static_cast<float>(1.0 / (sum * denominator));
        for (int64_t c = 0; c < classes; ++c) d[c] *= inv;
        d[y] -= static_cast<float>(1.0 / denominator);
      }
    } else {
      double shifted_sum = 0;
      for (int64_t c = 0; c < classes; ++c) shifted_sum += static_cast<double>(z[c] - zmax);
      row_loss = std::log(sum) - on * static_cast<double>(z[y] - zmax) - off * shifted_sum;
      if (d) {
        const float inv = static_cast<float>(1.0 / (sum * denominator));
        for (int64_t c = 0; c < classes; ++c) d[c] = d[c] * inv - off_grad;
        d[y] -= on_grad;
      }
    }
    // Without weights, exactly the unweighted arithmetic (w = 1 multiplies nothing).
    if (weights.empty()) {
      total += row_loss;
      continue;
    }
    total += static_cast<double>(w) * row_loss;
    if (d) {
      for (int64_t c = 0; c < classes; ++c) d[c] *= w;
    }
  }
  r.loss_sum = total;
  if (batch > 0) {
    r.loss = total / static_cast<double>(batch);
    r.accuracy = static_cast<double>(r.correct) / static_cast<double>(batch);
  }
  return r;
}

const char* RegressionLossName(RegressionLoss loss) {
  switch (loss) {
    case RegressionLoss::kMse:
      return "mse";
    case RegressionLoss::kMae:
      return "mae";
    case RegressionLoss::kHuber:
      return "huber";
  }
  return "mse";
}

std::optional<RegressionLoss> RegressionLossNamed(std::string_view name) {
  for (RegressionLoss l : {RegressionLoss::kMse, RegressionLoss::kMae, RegressionLoss::kHuber}) {
    if (name == RegressionLossName(l)) return l;
  }
  return std::nullopt;
}

RegressionSums RegressionLossOf(const Tensor& outputs, std::span<const float> targets,
                                RegressionLoss loss, float huber_delta, TargetScale scale,
                                Tensor* doutputs, int64_t normalizer,
                                std::span<const float> weights) {
  const int64_t batch = outputs.shape()[0];
  assert(outputs.size() == batch && static_cast<int64_t>(targets.size()) == batch);
  const double denominator = static_cast<double>(normalizer > 0 ? normalizer : batch);
  const auto inv = static_cast<float>(1.0 / denominator);
  if (doutputs) doutputs->Resize(outputs.shape());
  RegressionSums s;
  for (int64_t i = 0; i < batch; ++i) {
    const double w = weights.empty() ? 1.0 : weights[static_cast<size_t>(i)];
    const float o = outputs.data()[i];
    const float y = targets[static_cast<size_t>(i)];
    const float z = (y - scale.mean) / scale.std;
    const float r = o - z;
    const float a = std::abs(r);
    float grad = 0;
    double row_loss = 0;
    switch (loss) {
      case RegressionLoss::kMse:
        row_loss = static_cast<double>(r) * r;
        grad = 2 * r;
        break;
      case RegressionLoss::kMae:
        row_loss = a;
        grad = r > 0 ? 1.0f : r < 0 ? -1.0f : 0.0f;
        break;
      case RegressionLoss::kHuber:
        if (a <= huber_delta) {
          row_loss = 0.5 * r * r;
          grad = r;
        } else {
          row_loss = static_cast<double>(huber_delta) * (a - 0.5 * huber_delta);
          grad = r > 0 ? huber_delta : -huber_delta;
        }
        break;
    }
    s.loss_sum += w * row_loss;
    if (doutputs) {
      doutputs->data()[i] = weights.empty() ? grad * inv : grad * inv * static_cast<float>(w);
    }
    s.weight_sum += w;
  }
  return s;
}

}  // namespace trainingd::engine
