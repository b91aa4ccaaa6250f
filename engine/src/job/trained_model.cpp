#include "trainingd/engine/job/trained_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <utility>

#include "trainingd/engine/io/checkpoint.h"
#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/train/trainer_checkpoint.h"

namespace trainingd::engine {
namespace {

// The path of checkpoint `step` (the latest when nullopt), with the errors of LoadTrainedModel.
Result<std::string> CheckpointPathFor(const std::string& dir, std::optional<int64_t> step) {
  auto kept = ListCheckpoints(dir);
  if (!kept.ok()) return kept.status();
  if (!step) {
    if (kept->empty()) {
      return Status::NotFound(dir + ": no checkpoint (the job has not saved one yet)");
    }
    return kept->back().path;
  }
  for (const CheckpointFileInfo& c : *kept) {
    if (c.global_step == *step) return c.path;
  }
  // A checkpoint kept for good by keep_checkpoint_every_n_hours is on disk but no longer
  // tracked by the state file.
  const std::string preserved = dir + "/model.ckpt-" + std::to_string(*step);
  std::error_code ec;
  if (*step >= 0 && std::filesystem::is_regular_file(preserved, ec)) return preserved;
  std::string steps;
  for (const CheckpointFileInfo& c : *kept) {
    steps += (steps.empty() ? "" : ", ") + std::to_string(c.global_step);
  }
  return Status::NotFound("step " + std::to_string(*step) + ": no checkpoint of that step in " +
                          dir + "; there are: " + (steps.empty() ? "none" : steps));
}

}  // namespace

TrainedModel::TrainedModel(ModelInput input, int64_t step, std::unique_ptr<Model> model)
    : input_(std::move(input)),
      step_(step),
      model_(std::move(model)),
      indicators_(MissingIndicatorPositions(input_)) {}
TrainedModel::TrainedModel(TrainedModel&&) noexcept = default;
TrainedModel& TrainedModel::operator=(TrainedModel&&) noexcept = default;
TrainedModel::~TrainedModel() = default;

Result<TrainedModel> LoadTrainedModel(const std::string& checkpoint_dir,
                                      std::optional<int64_t> step, const ModelInput& input) {
  TRAININGD_RETURN_IF_ERROR(ValidateModelInput(input));
  std::error_code ec;
  if (!std::filesystem::is_directory(checkpoint_dir, ec)) {
    return Status::NotFound(checkpoint_dir + ": no such directory");
  }
  auto path = CheckpointPathFor(checkpoint_dir, step);
  if (!path.ok()) return path.status();
  auto data = ReadCheckpointFile(*path);
  if (!data.ok()) return data.status();
  // The initial values are overwritten by the checkpoint's; the seed does not matter.
  auto model = Model::Build(input.model, ModelExampleShape(input), input.num_classes, /*seed=*/0);
  if (!model.ok()) return model.status();
  TRAININGD_RETURN_IF_ERROR(RestoreModelParameters(**model, *data));
  // The weights are final: dense kernels packed and Winograd kernels transformed once here, not
  // on every Predict.
  (*model)->PrepareForInference();
  return TrainedModel(input, data->global_step, std::move(model).value());
}

Status TrainedModel::Predict(const float* raw, int64_t batch, float* logits, float* probabilities) {
  if (batch < 0)
    return Status::InvalidArgument("batch: must be >= 0, got " + std::to_string(batch));
  const int64_t size = example_size();
  const int64_t classes = num_classes();
  // A table row: its numbers, then its categorical codes (model_input.h).
  const auto categoricals = static_cast<int64_t>(input_.categorical.size());
  const int64_t numbers = size - categoricals;
  // A NaN is a missing value where the model records what fills it in, and a missing categorical
  // value; else every number must be finite, every code one of its column's.
  const bool imputes = !input_.feature_impute.empty();
  for (int64_t i = 0; i < batch * size; ++i) {
    const int64_t k = i % size;
    if (k >= numbers) {
      const int64_t codes = input_.categorical[static_cast<size_t>(k - numbers)].codes();
      const float v = raw[i];
      if (!std::isnan(v) && !(v >= 0 && v < static_cast<float>(codes) && v == std::floor(v))) {
        return Status::InvalidArgument(
            "input[" + std::to_string(i) + "]: must be a code of categorical[" +
            std::to_string(k - numbers) + "], an integer in [0, " + std::to_string(codes) +
            "), or NaN (missing), got " + std::to_string(v));
      }
    } else if (!std::isfinite(raw[i]) && !(imputes && std::isnan(raw[i]))) {
      return Status::InvalidArgument("input[" + std::to_string(i) + "]: must be finite" +
                                     (imputes ? " or NaN (missing)" : "") + ", got " +
                                     std::to_string(raw[i]));
    }
  }
  const auto flags = static_cast<int64_t>(indicators_.size());
  for (int64_t first = 0; first < batch; first += kPredictSlice) {
    const int64_t n = std::min(kPredictSlice, batch - first);
    batch_.Resize(ModelExampleShape(input_).with_batch(n));
    const float* in = raw + first * size;
    const float* given = in;
    if (imputes || categoricals > 0) {
      // Filled in place of the caller's values, as the loader did (csv_dataset.cpp ImputeRows).
      imputed_.assign(in, in + n * size);
      for (int64_t i = 0; i < n * size; ++i) {
        float& v = imputed_[static_cast<size_t>(i)];
        if (!std::isnan(v)) continue;
        const int64_t k = i % size;
        v = k >= numbers ? static_cast<float>(CategoricalFeature::kMissingLevel)
                         : input_.feature_impute[static_cast<size_t>(k)];
      }
      in = imputed_.data();
    }
    // With missing indicators, the preprocessed example is staged and then widened into batch_.
    if (flags > 0) staged_.resize(static_cast<size_t>(n * size));
    float* x = flags > 0 ? staged_.data() : batch_.data();
    // Exactly the loaders' arithmetic (dataset.cpp, npz_dataset.cpp, feature_stats.cpp): a uint8
    // value v became float(v) / 255.0f, a table value (double(v) - mean) / std clamped to floats.
    switch (input_.preprocessing) {
      case Preprocessing::kNone:
        std::copy_n(in, n * size, x);
        break;
      case Preprocessing::kScale255:
        for (int64_t i = 0; i < n * size; ++i) x[i] = in[i] / 255.0f;
        break;
      case Preprocessing::kStandard: {
        constexpr double kMax = std::numeric_limits<float>::max();
        std::copy_n(in, n * size, x);
        for (int64_t r = 0; r < n; ++r) {
          for (int64_t k = 0; k < numbers; ++k) {
            const size_t f = static_cast<size_t>(k);
            const double z =
                (double{in[r * size + k]} - input_.feature_mean[f]) / input_.feature_std[f];
            x[r * size + k] = static_cast<float>(std::clamp(z, -kMax, kMax));
          }
        }
        break;
      }
      case Preprocessing::kPerChannel: {
        // NormalizePerChannel's arithmetic on the loader's value / 255.
        const auto channels = static_cast<int64_t>(input_.feature_mean.size());
        for (int64_t i = 0; i < n * size; ++i) {
          const size_t k = static_cast<size_t>(i % channels);
          x[i] = (in[i] / 255.0f - input_.feature_mean[k]) / input_.feature_std[k];
        }
        break;
      }
    }
    if (flags > 0) {
      // As the loader's rows (csv_dataset.cpp): the numbers, 1 per indicator whose number was
      // missing (NaN as given, before imputation) else 0, then the codes.
      const int64_t width = size + flags;
      float* wide = batch_.data();
      for (int64_t r = 0; r < n; ++r) {
        const float* from = x + r * size;
        float* to = wide + r * width;
        std::copy_n(from, numbers, to);
        for (int64_t k = 0; k < flags; ++k) {
          to[numbers + k] =
              std::isnan(given[r * size + indicators_[static_cast<size_t>(k)]]) ? 1.0f : 0.0f;
        }
        std::copy(from + numbers, from + size, to + numbers + flags);
      }
    }
    const Tensor& out = model_->Forward(batch_, Mode::kEval);
    if (logits) std::copy_n(out.data(), n * classes, logits + first * classes);
    if (!probabilities) continue;
    if (input_.task == Task::kRegression) {
      for (int64_t i = 0; i < n; ++i)
        probabilities[first + i] = input_.target.Unscale(out.data()[i]);
    } else {
      SoftmaxRows(out.data(), n, classes, probabilities + first * classes);
    }
  }
  return Status::Ok();
}

void TrainedModel::PredictedClasses(const float* probabilities, int64_t batch,
                                    int64_t* classes) const {
  PredictedClasses(probabilities, batch, classes, input_.decision_threshold);
}

void TrainedModel::PredictedClasses(const float* probabilities, int64_t batch, int64_t* classes,
                                    double threshold) const {
  if (input_.task != Task::kClassification) return;
  const int64_t c = num_classes();
  const bool thresholded = c == 2 && threshold != 0.5;
  const auto t = static_cast<float>(threshold);
  for (int64_t r = 0; r < batch; ++r) {
    const float* p = probabilities + r * c;
    if (thresholded) {
      classes[r] = p[1] > t ? 1 : 0;
    } else {
      classes[r] = std::max_element(p, p + c) - p;
    }
  }
}

void SoftmaxRows(const float* logits, int64_t rows, int64_t classes, float* probabilities) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = logits + r * classes;
    float* p = probabilities + r * classes;
    const float zmax = *std::max_element(z, z + classes);
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(double{z[c]} - zmax);
    for (int64_t c = 0; c < classes; ++c) {
      p[c] = static_cast<float>(std::exp(double{z[c]} - zmax) / sum);
    }
  }
}

}  // namespace trainingd::engine
