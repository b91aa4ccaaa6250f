// TrainedModel: a checkpoint's model, ready to predict -- what `trainingd export` exports and the
// daemon's model server serves. Built from the checkpoint's parameters and the ModelInput its job
// recorded (model_input.h), it takes examples in the dataset's raw units and applies the
// recorded preprocessing itself, exactly as training did, so its callers never see the dataset.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/job/model_input.h"
#include "trainingd/engine/nn/model.h"
#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

class TrainedModel {
 public:
  TrainedModel(TrainedModel&&) noexcept;
  TrainedModel& operator=(TrainedModel&&) noexcept;
  ~TrainedModel();

  // What the model takes and the data it was trained on.
  const ModelInput& input() const { return input_; }
  // The global step of the checkpoint it was loaded from.
  int64_t step() const { return step_; }
  // Values in one example (H*W*C or F) and in one row of Predict's outputs.
  int64_t example_size() const { return input_.example_shape.num_elements(); }
  int64_t num_classes() const { return input_.num_classes; }
  // The model with the checkpoint's parameters (the ONNX writer reads its layers and values).
  const Model& model() const { return *model_; }

  // `batch` examples, row-major [batch, example_shape...] in the dataset's raw units (uint8
  // images as floats 0..255; a table's values as in its file), preprocessed as in training, then
  // the model in inference mode (dropout off). A NaN is a missing value where input().
  // feature_impute has one (a CSV table's model): it becomes that value before the preprocessing.
  // A table with categorical features takes their codes last in each row (model_input.h; NaN:
  // missing), which input().categorical[c].CodeOf gives for a value. The "was missing"
  // indicators of input().missing_indicators are computed here from the NaNs as given.
  // Writes [batch, num_classes] logits and softmax probabilities where they are not null; a
  // regression model (input().task) writes [batch, 1]: its output (the standardized target) to
  // `logits` and the prediction in the target's units (input().target.Unscale) to
  // `probabilities`. Runs in
  // slices of kPredictSlice examples, so its memory does not grow with `batch`. InvalidArgument for
  // batch < 0, a code that is not one or a non-finite input
  // ("input[12]: ..."); nothing is written then. Not thread-safe: one caller at a time per object
  // (it reuses its buffers); load one object per thread to predict in parallel. Uses the calling
  // thread's compute threads (SetComputeThreads).
  Status Predict(const float* raw, int64_t batch, float* logits, float* probabilities);

  // The class each of `batch` rows of Predict's [batch, num_classes] probabilities predicts:
  // the arg-max (the first on a tie), or for a two-class model whose decision threshold t
  // (input().decision_threshold) is not 0.5, class 1 where p[1] > float(t), the float comparison
  // the ONNX graph's "label" makes (onnx_writer.h). A regression model has no class: nothing is
  // written.
  void PredictedClasses(const float* probabilities, int64_t batch, int64_t* classes) const;
  // The same with `threshold` in place of the model's (a two-class model's; 0.5 = the arg-max).
  void PredictedClasses(const float* probabilities, int64_t batch, int64_t* classes,
                        double threshold) const;

  // Examples per Forward in Predict.
  static constexpr int64_t kPredictSlice = 256;

 private:
  friend Result<TrainedModel> LoadTrainedModel(const std::string& checkpoint_dir,
                                               std::optional<int64_t> step,
                                               const ModelInput& input);
  TrainedModel(ModelInput input, int64_t step, std::unique_ptr<Model> model);

  ModelInput input_;
  int64_t step_ = 0;
  std::unique_ptr<Model> model_;
  std::vector<int64_t> indicators_;  // MissingIndicatorPositions(input_)
  Tensor batch_;                     // one slice, preprocessed, as the model takes it
  std::vector<float> imputed_;       // one slice, its missing values filled in
  std::vector<float> staged_;        // one slice, preprocessed, before its indicators
};

// The model of checkpoint `step` in `checkpoint_dir` (the latest when nullopt), laid out by
// `input` (the job's model.json, parsed by api/model_json.h). Errors:
//   InvalidArgument  `input` is not valid (ValidateModelInput), or the checkpoint is not of its
//                    model ("dense/kernel: checkpoint has [3136,1024], model has [784,1024]");
//   NotFound         no checkpoint in `checkpoint_dir` ("...: no checkpoint (the job has not
//                    saved one yet)"), or none of step N ("step 700: no checkpoint of that step
//                    in DIR; there are: 500, 1000");
//   DataLoss/IoError the checkpoint file is corrupt or unreadable (ReadCheckpointFile).
Result<TrainedModel> LoadTrainedModel(const std::string& checkpoint_dir,
                                      std::optional<int64_t> step, const ModelInput& input);

// The probabilities of `logits` rows: softmax over each row of `classes` values, in double and
// shifted by the row's maximum (so no exp overflows).
void SoftmaxRows(const float* logits, int64_t rows, int64_t classes, float* probabilities);

}  // namespace trainingd::engine
