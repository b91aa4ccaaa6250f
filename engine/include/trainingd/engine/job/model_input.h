// ModelInput: what a trained model needs besides its weights, recorded when its job starts
// training, so that exporting or serving it never needs the dataset again: the examples' shape
// and units, how training scaled them, the classes, the data it was trained on and the model's
// layers as they ran (a preset fitted to the data).
//
// The daemon and `trainingd run` keep it as `<checkpoint_dir>/model.json` (api/model_json.h,
// docs/models.md); RunJob hands it to JobRunOptions::on_model_input. Plain data, no JSON here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/job/job_spec.h"
#include "trainingd/engine/nn/model_spec.h"
#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

struct ModelInput {
  // One example as TrainedModel::Predict takes it: [H, W, C] images (NHWC) or [F] table rows (a
  // CSV's: its numbers, then its categorical codes). The model's first layer sees
  // ModelExampleShape: the same with the missing indicators inserted.
  Shape example_shape;
  int64_t num_classes = 0;
  // One name per class, in class-id order: the dataset's (CSV string labels), else "0".."n-1".
  // Regression: num_classes 1 (the one output), named by the label column.
  std::vector<std::string> class_names;
  // Classification, or regression: the model's output is the standardized target, and the
  // prediction in the target's units is target.Unscale(output) (Datasets::target_mean, _std).
  Task task = Task::kClassification;
  TargetScale target;
  // A two-class classifier's decision threshold (JobSpec::decision_threshold): it predicts class
  // 1 when class 1's probability is above it (TrainedModel::PredictedClasses); 0.5 = the
  // arg-max, what every other model predicts with.
  double decision_threshold = 0.5;
  // How an example in the dataset's raw units (0..255 for uint8 images, the file's values for
  // tables) becomes what the model saw: value / 255, (value - mean) / std per feature,
  // (value / 255 - mean) / std per channel, or as is.
  Preprocessing preprocessing = Preprocessing::kNone;
  // kStandard: per feature, the train split's mean and standard deviation; kPerChannel: per
  // channel. Empty otherwise.
  std::vector<float> feature_mean, feature_std;
  // Tables from a CSV: each feature's column name, and the value a missing feature (NaN) takes
  // before the preprocessing above (the train split's mean or median, Datasets::feature_impute).
  // Empty for images, an npz table and a model recorded before missing values were handled: its
  // inputs must then be finite.
  std::vector<std::string> feature_names;
  std::vector<float> feature_impute;
  // The number features with a "was missing" indicator (Datasets::missing_indicators), a subset
  // of feature_names in its order. Not part of example_shape: Predict, the ONNX graph and the
  // model server compute them from the raw numbers (1 where NaN, before imputation) and the model
  // sees them after the preprocessed numbers, before the categorical codes. Empty for a model
  // recorded before indicators existed.
  std::vector<std::string> missing_indicators;
  // A CSV table's categorical features: the last categorical.size() values of an example are
  // their codes (CategoricalFeature), after feature_names.size() numbers, which feature_mean,
  // feature_std and feature_impute cover. The model's first layer encodes them.
  std::vector<CategoricalFeature> categorical;
  // With categorical features: the texts that mean a missing value besides the empty one (the
  // dataset's TableColumnOptions::missing_values), so a served or exported model reads a
  // categorical value as training did. Empty without them.
  std::vector<std::string> missing_values;
  // The job's dataset (DatasetSpec): its name, format ("idx", "npz", "csv") and, for an upload,
  // the sha256 of its file (empty for an IDX directory).
  std::string dataset_name;
  std::string dataset_format;
  std::string dataset_sha256;
  // The layers that trained, a preset already fitted to the data (FitModelToData).
  ModelSpec model;

  friend bool operator==(const ModelInput&, const ModelInput&) = default;
};

// The shape of an example as the model's first layer sees it: example_shape with
// missing_indicators.size() more values ([F + I]).
Shape ModelExampleShape(const ModelInput& input);
// missing_indicators as positions in feature_names (ValidateModelInput checks that each is one).
std::vector<int64_t> MissingIndicatorPositions(const ModelInput& input);

// The ModelInput of a job that trains `fitted` (FitModelToData applied) on `data`.
ModelInput MakeModelInput(const JobSpec& fitted, const Datasets& data);

// Checks that `input` describes a model that can be built and fed: an example shape of rank 1 or
// 3 with positive sizes, num_classes in [1, kMaxClasses] with as many class names, feature_mean
// and feature_std of one finite value per feature (std > 0) exactly when kStandard, and layers
// that Model::Plan accepts; feature_names and feature_impute empty or one per feature of an [F]
// example (the names non-empty and distinct, the values finite); missing_indicators names of
// feature_names in its order, each once, with feature_impute; for that shape (ModelExampleShape)
// and those classes.
// InvalidArgument naming the field as model.json writes it ("feature_std[3]: must be finite and >
// 0, got 0").
Status ValidateModelInput(const ModelInput& input);

}  // namespace trainingd::engine
