#include "trainingd/engine/job/model_input.h"

#include <algorithm>
#include <cmath>

#include "trainingd/engine/nn/model.h"

namespace trainingd::engine {
namespace {

// The categorical features: named, each name once among every feature's; levels strictly in
// byte order (CategoricalFeature::CodeOf searches them) and not empty (an empty cell is
// missing); and the model's first layer encodes exactly their codes.
Status CheckCategorical(const ModelInput& input) {
  std::vector<std::string> names = input.feature_names;
  for (size_t c = 0; c < input.categorical.size(); ++c) {
    const CategoricalFeature& f = input.categorical[c];
    const std::string at = "categorical[" + std::to_string(c) + "]";
    if (f.name.empty() || std::find(names.begin(), names.end(), f.name) != names.end()) {
      return Status::InvalidArgument(at + ".name: empty or named twice");
    }
    names.push_back(f.name);
    if (f.hash_buckets != 0 &&
        (f.hash_buckets < kMinHashBuckets || f.hash_buckets > kMaxHashBuckets)) {
      return Status::InvalidArgument(
          at + ".hash_buckets: must be 0 or in [" + std::to_string(kMinHashBuckets) + ", " +
          std::to_string(kMaxHashBuckets) + "], got " + std::to_string(f.hash_buckets));
    }
    for (size_t k = 0; k < f.levels.size(); ++k) {
      if (f.levels[k].empty() || (k > 0 && !(f.levels[k - 1] < f.levels[k]))) {
        return Status::InvalidArgument(at + ".levels[" + std::to_string(k) +
                                       "]: empty, or not after the level before it in byte order");
      }
    }
  }
  if (input.categorical.empty()) return Status::Ok();
  const std::vector<LayerSpec>& layers = input.model.layers;
  if (layers.empty() || layers[0].type != LayerType::kCategoricalEncoding ||
      layers[0].category_codes.size() != input.categorical.size()) {
    return Status::InvalidArgument(
        "model.layers[0]: a model of categorical features starts with a categorical_encoding of "
        "each");
  }
  for (size_t c = 0; c < input.categorical.size(); ++c) {
    if (layers[0].category_codes[c] != input.categorical[c].codes()) {
      return Status::InvalidArgument("model.layers[0].category_codes[" + std::to_string(c) +
                                     "]: " + std::to_string(layers[0].category_codes[c]) +
                                     ", but categorical[" + std::to_string(c) + "] has " +
                                     std::to_string(input.categorical[c].codes()) + " codes");
    }
  }
  return Status::Ok();
}

// missing_indicators: names of number features, in feature_names' order, each once; only where
// a missing value is filled in (feature_impute).
Status CheckMissingIndicators(const ModelInput& input) {
  if (input.missing_indicators.empty()) return Status::Ok();
  if (input.feature_impute.empty()) {
    return Status::InvalidArgument(
        "missing_indicators: only for a model that fills in missing numbers (feature_impute)");
  }
  size_t next = 0;  // the first feature a name may be
  for (size_t k = 0; k < input.missing_indicators.size(); ++k) {
    const std::string& name = input.missing_indicators[k];
    const auto it = std::find(input.feature_names.begin() + static_cast<std::ptrdiff_t>(next),
                              input.feature_names.end(), name);
    if (it == input.feature_names.end()) {
      return Status::InvalidArgument("missing_indicators[" + std::to_string(k) + "]: \"" + name +
                                     "\" is not a number feature after the one before it "
                                     "(feature_names, in their order, each once)");
    }
    next = static_cast<size_t>(it - input.feature_names.begin()) + 1;
  }
  return Status::Ok();
}

}  // namespace

Shape ModelExampleShape(const ModelInput& input) {
  if (input.missing_indicators.empty() || input.example_shape.rank() != 1) {
    return input.example_shape;
  }
  return Shape{input.example_shape[0] + static_cast<int64_t>(input.missing_indicators.size())};
}

std::vector<int64_t> MissingIndicatorPositions(const ModelInput& input) {
  std::vector<int64_t> positions;
  for (const std::string& name : input.missing_indicators) {
    const auto it = std::find(input.feature_names.begin(), input.feature_names.end(), name);
    positions.push_back(it - input.feature_names.begin());
  }
  return positions;
}

ModelInput MakeModelInput(const JobSpec& fitted, const Datasets& data) {
  ModelInput in;
  in.example_shape = data.train.example_shape();
  // The indicators are the model's to compute from a raw example, not the caller's to give.
  in.missing_indicators = data.missing_indicators;
  if (!in.missing_indicators.empty()) {
    in.example_shape =
        Shape{in.example_shape[0] - static_cast<int64_t>(in.missing_indicators.size())};
  }
  in.num_classes = data.num_classes;
  in.class_names = data.class_names;
  in.task = data.task;
  in.decision_threshold = DecisionThresholdOf(fitted);
  if (data.task == Task::kRegression) {
    in.class_names = {fitted.dataset.label_column};
    in.target = {data.target_mean, data.target_std};
  }
  if (in.class_names.empty()) {
    for (int c = 0; c < data.num_classes; ++c) in.class_names.push_back(std::to_string(c));
  }
  in.preprocessing = data.preprocessing;
  if (data.preprocessing == Preprocessing::kStandard ||
      data.preprocessing == Preprocessing::kPerChannel) {
    in.feature_mean = data.feature_mean;
    in.feature_std = data.feature_std;
  }
  in.feature_names = data.feature_names;
  in.feature_impute = data.feature_impute;
  in.categorical = data.categorical;
  if (!in.categorical.empty()) in.missing_values = fitted.dataset.columns.missing_values;
  in.dataset_name = fitted.dataset.name;
  in.dataset_format = fitted.dataset.format;
  in.dataset_sha256 = fitted.dataset.sha256;
  in.model = fitted.model;
  return in;
}

Status ValidateModelInput(const ModelInput& input) {
  const Shape& shape = input.example_shape;
  if (shape.rank() != 1 && shape.rank() != 3) {
    return Status::InvalidArgument("example_shape: must be [H, W, C] or [F], got " +
                                   shape.ToString());
  }
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape[i] < 1 || shape[i] > (int64_t{1} << 28)) {
      return Status::InvalidArgument("example_shape[" + std::to_string(i) +
                                     "]: must be in [1, 2^28], got " + std::to_string(shape[i]));
    }
  }
  if (shape.num_elements() > (int64_t{1} << 28)) {
    return Status::InvalidArgument("example_shape: " + shape.ToString() +
                                   " has more than 2^28 values");
  }
  if (input.num_classes < 1 || input.num_classes > kMaxClasses) {
    return Status::InvalidArgument("num_classes: must be in [1, " + std::to_string(kMaxClasses) +
                                   "], got " + std::to_string(input.num_classes));
  }
  if (input.task == Task::kRegression) {
    if (input.num_classes != 1) {
      return Status::InvalidArgument("num_classes: a regression model has 1 output, got " +
                                     std::to_string(input.num_classes));
    }
    if (!std::isfinite(input.target.mean) || !std::isfinite(input.target.std) ||
        !(input.target.std > 0)) {
      return Status::InvalidArgument("target_mean, target_std: must be finite, the std > 0");
    }
  }
  if (!(input.decision_threshold > 0.0 && input.decision_threshold < 1.0)) {
    return Status::InvalidArgument("decision_threshold: must be in (0, 1), got " +
                                   std::to_string(input.decision_threshold));
  }
  if (input.decision_threshold != 0.5 &&
      (input.task != Task::kClassification || input.num_classes != 2)) {
    return Status::InvalidArgument(
        "decision_threshold: only a two-class classifier has one other than 0.5");
  }
  if (static_cast<int64_t>(input.class_names.size()) != input.num_classes) {
    return Status::InvalidArgument("class_names: " + std::to_string(input.class_names.size()) +
                                   " names for " + std::to_string(input.num_classes) + " classes");
  }
  // A table's row: its number features, then its categorical features' codes.
  const auto categoricals = static_cast<int64_t>(input.categorical.size());
  if (categoricals > 0 && (shape.rank() != 1 || categoricals > shape[0])) {
    return Status::InvalidArgument("categorical: " + std::to_string(categoricals) +
                                   " categorical features for an example of " + shape.ToString());
  }
  const int64_t numbers = shape.num_elements() - categoricals;
  const bool standard = input.preprocessing == Preprocessing::kStandard;
  const bool per_channel = input.preprocessing == Preprocessing::kPerChannel;
  if (per_channel && shape.rank() != 3) {
    return Status::InvalidArgument("preprocessing: per_channel is for images [H, W, C], not " +
                                   shape.ToString());
  }
  const size_t features = standard      ? static_cast<size_t>(numbers)
                          : per_channel ? static_cast<size_t>(shape[2])
                                        : 0;
  for (const auto& [name, values] :
       {std::pair<const char*, const std::vector<float>*>{"feature_mean", &input.feature_mean},
        {"feature_std", &input.feature_std}}) {
    if (values->size() != features) {
      return Status::InvalidArgument(
          std::string(name) + ": " + std::to_string(values->size()) + " values; " +
          (standard ? "preprocessing standard needs one per feature, " + std::to_string(features)
           : per_channel
               ? "preprocessing per_channel needs one per channel, " + std::to_string(features)
               : std::string("only preprocessing standard and per_channel have them")));
    }
    for (size_t k = 0; k < values->size(); ++k) {
      const float v = (*values)[k];
      const bool is_std = values == &input.feature_std;
      if (!std::isfinite(v) || (is_std && !(v > 0))) {
        return Status::InvalidArgument(std::string(name) + "[" + std::to_string(k) +
                                       "]: must be finite" + (is_std ? " and > 0" : "") + ", got " +
                                       std::to_string(v));
      }
    }
  }
  const int64_t flat = shape.rank() == 1 ? numbers : 0;
  if (!input.feature_names.empty() && static_cast<int64_t>(input.feature_names.size()) != flat) {
    return Status::InvalidArgument("feature_names: " + std::to_string(input.feature_names.size()) +
                                   " names for an example of " + shape.ToString());
  }
  for (size_t k = 0; k < input.feature_names.size(); ++k) {
    const std::string& name = input.feature_names[k];
    if (name.empty() ||
        std::find(input.feature_names.begin(),
                  input.feature_names.begin() + static_cast<std::ptrdiff_t>(k),
                  name) != input.feature_names.begin() + static_cast<std::ptrdiff_t>(k)) {
      return Status::InvalidArgument("feature_names[" + std::to_string(k) +
                                     "]: empty or named twice");
    }
  }
  if (!input.feature_impute.empty() && static_cast<int64_t>(input.feature_impute.size()) != flat) {
    return Status::InvalidArgument(
        "feature_impute: " + std::to_string(input.feature_impute.size()) +
        " values for an example of " + shape.ToString());
  }
  for (size_t k = 0; k < input.feature_impute.size(); ++k) {
    if (!std::isfinite(input.feature_impute[k])) {
      return Status::InvalidArgument("feature_impute[" + std::to_string(k) +
                                     "]: must be finite, got " +
                                     std::to_string(input.feature_impute[k]));
    }
  }
  TRAININGD_RETURN_IF_ERROR(CheckMissingIndicators(input));
  TRAININGD_RETURN_IF_ERROR(CheckCategorical(input));
  auto planned = Model::Plan(input.model, ModelExampleShape(input), input.num_classes, /*seed=*/0);
  if (!planned.ok()) return planned.status();
  return Status::Ok();
}

}  // namespace trainingd::engine
