// ModelInput (what RunJob records for a model) and TrainedModel (a checkpoint's model that
// predicts on raw examples): Predict against Model::Forward on the same checkpoint, both
// preprocessings, the checkpoint of a step and the errors.
#include "trainingd/engine/job/trained_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "session_test_util.h"
#include "test_util.h"
#include "trainingd/engine/base/random.h"
#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/job/job_runner.h"
#include "trainingd/engine/nn/model.h"

namespace trainingd::engine {
namespace {

using testing::FailsNaming;
using testing::ScopedDir;

// A small CNN on 6x6 colour images in 3 classes, with every layer type.
ModelInput ImageInput() {
  ModelInput in;
  in.example_shape = Shape{6, 6, 2};
  in.num_classes = 3;
  in.class_names = {"a", "b", "c"};
  in.preprocessing = Preprocessing::kScale255;
  in.dataset_name = "tiny";
  in.dataset_format = "npz";
  in.model.layers = {LayerSpec::Conv2d(4, 3, Padding::kSame, Activation::kRelu),
                     LayerSpec::MaxPool2d(2, 2),
                     LayerSpec::Relu(),
                     LayerSpec::Flatten(),
                     LayerSpec::Dense(5, Activation::kRelu),
                     LayerSpec::Dropout(0.5f),
                     LayerSpec::Dense(3, Activation::kNone)};
  return in;
}

// An MLP on table rows of 4 features, standardized.
ModelInput TableInput() {
  ModelInput in;
  in.example_shape = Shape{4};
  in.num_classes = 2;
  in.class_names = {"no", "yes"};
  in.preprocessing = Preprocessing::kStandard;
  in.feature_mean = {1.5f, -20.0f, 0.0f, 1000.0f};
  in.feature_std = {0.5f, 4.0f, 1.0f, 250.0f};
  in.dataset_name = "table";
  in.dataset_format = "csv";
  in.model.layers = {LayerSpec::Flatten(), LayerSpec::Dense(6, Activation::kRelu),
                     LayerSpec::Dense(2, Activation::kNone)};
  return in;
}

std::unique_ptr<Model> BuildModel(const ModelInput& in, uint64_t seed) {
  auto m = Model::Build(in.model, in.example_shape, in.num_classes, seed);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

// Saves `model`'s parameters as the checkpoint of `step` (and something a trainer would add).
void Save(const std::string& dir, const Model& model, int64_t step) {
  auto manager = CheckpointManager::Create(dir);
  ASSERT_TRUE(manager.ok()) << manager.status().ToString();
  CheckpointData data;
  data.global_step = step;
  for (const Parameter* p : model.parameters()) {
    data.tensors.emplace_back(p->name, p->value);
    data.tensors.emplace_back(p->name + "/Adam", Tensor(p->value.shape(), 0.5f));
  }
  data.states.push_back({"input_pipeline", {0, 0}});
  ASSERT_TRUE((*manager)->Save(data).ok());
}

// Examples in raw units: uint8 values for images, a table's own scale for rows.
Tensor RawExamples(const ModelInput& in, int64_t n, uint64_t seed) {
  Rng rng(seed);
  Tensor x(in.example_shape.with_batch(n));
  for (int64_t i = 0; i < x.size(); ++i) {
    if (in.preprocessing == Preprocessing::kScale255) {
      x[i] = static_cast<float>(rng.UniformInt(256));
    } else {
      const size_t f = static_cast<size_t>(i % in.example_shape.num_elements());
      x[i] = in.feature_mean[f] + 2 * in.feature_std[f] * rng.Normal();
    }
  }
  return x;
}

// What training fed the model: the loaders' arithmetic.
Tensor Preprocessed(const ModelInput& in, const Tensor& raw) {
  Tensor x = raw;
  const int64_t features = in.example_shape.num_elements();
  for (int64_t i = 0; i < x.size(); ++i) {
    const size_t f = static_cast<size_t>(i % features);
    if (in.preprocessing == Preprocessing::kScale255) x[i] = raw[i] / 255.0f;
    if (in.preprocessing == Preprocessing::kStandard) {
      x[i] = static_cast<float>((double{raw[i]} - in.feature_mean[f]) / in.feature_std[f]);
    }
  }
  return x;
}

// Predict on raw examples equals the checkpoint's model's Forward (inference mode) on the
// preprocessed ones, bit for bit, and its probabilities are the logits' softmax.
void ExpectPredictIsForward(const ModelInput& in, int64_t n) {
  ScopedDir dir("trained_model");
  auto reference = BuildModel(in, 8);
  Save(dir.path(), *reference, 80);
  auto trained = LoadTrainedModel(dir.path(), std::nullopt, in);
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  EXPECT_EQ(trained->step(), 80);
  // Prepared for inference: the gradient buffers are released (Model::PrepareForInference).
  for (const Parameter* p : trained->model().parameters()) {
    EXPECT_EQ(p->grad.size(), 0) << p->name;
    EXPECT_TRUE(p->sum.empty()) << p->name;
  }
  const Tensor raw = RawExamples(in, n, 5);
  std::vector<float> logits(static_cast<size_t>(n * in.num_classes));
  std::vector<float> probs(logits.size());
  ASSERT_TRUE(trained->Predict(raw.data(), n, logits.data(), probs.data()).ok());
  const Tensor expected = reference->Forward(Preprocessed(in, raw), Mode::kEval);
  ASSERT_EQ(expected.size(), static_cast<int64_t>(logits.size()));
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0, zsum = 0;
    for (int64_t c = 0; c < in.num_classes; ++c) {
      const size_t k = static_cast<size_t>(i * in.num_classes + c);
      ASSERT_EQ(logits[k], expected[static_cast<int64_t>(k)]) << "example " << i << " class " << c;
      sum += probs[k];
      zsum += std::exp(double{logits[k]});
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
    const size_t k0 = static_cast<size_t>(i * in.num_classes);
    EXPECT_NEAR(probs[k0], std::exp(double{logits[k0]}) / zsum, 1e-6);
  }
}

TEST(TrainedModelTest, PredictOnRawImagesIsForwardOnScaledOnes) {
  ExpectPredictIsForward(ImageInput(), 13);
}

TEST(TrainedModelTest, PredictThroughPackedDenseKernelsIsForward) {
  // Dense layers of more than 16 units, whose kernels LoadTrainedModel packs: one example (a
  // one-row product), a few, and more than a slice.
  ModelInput in = ImageInput();
  in.model.layers[4] = LayerSpec::Dense(40, Activation::kRelu);
  for (int64_t n : {int64_t{1}, int64_t{13}, TrainedModel::kPredictSlice + 44}) {
    ExpectPredictIsForward(in, n);
  }
  ModelInput table = TableInput();
  table.model.layers[1] = LayerSpec::Dense(70, Activation::kRelu);
  ExpectPredictIsForward(table, 1);
  ExpectPredictIsForward(table, 300);
}

TEST(TrainedModelTest, PredictOnRawRowsIsForwardOnStandardizedOnesInSlices) {
  // More examples than one slice: Predict's slices give the whole batch's results.
  ExpectPredictIsForward(TableInput(), TrainedModel::kPredictSlice + 44);
}

TEST(TrainedModelTest, LoadsTheCheckpointOfAStepOrSaysWhichThereAre) {
  ScopedDir dir("trained_model");
  const ModelInput in = ImageInput();
  auto early = BuildModel(in, 1);
  auto late = BuildModel(in, 2);
  Save(dir.path(), *early, 40);
  Save(dir.path(), *late, 80);
  auto at40 = LoadTrainedModel(dir.path(), 40, in);
  ASSERT_TRUE(at40.ok()) << at40.status().ToString();
  EXPECT_EQ(at40->step(), 40);
  const Parameter* p = at40->model().parameters()[0];
  const Parameter* q = early->parameters()[0];
  for (int64_t i = 0; i < p->value.size(); ++i) ASSERT_EQ(p->value[i], q->value[i]);

  auto missing = LoadTrainedModel(dir.path(), 50, in);
  ASSERT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "step 50: no checkpoint of that step in " + dir.path() + "; there are: 40, 80");
}

TEST(TrainedModelTest, Errors) {
  ScopedDir dir("trained_model");
  const ModelInput in = ImageInput();
  std::filesystem::create_directories(dir.path());
  auto none = LoadTrainedModel(dir.path(), std::nullopt, in);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("no checkpoint"), std::string::npos);
  EXPECT_EQ(LoadTrainedModel(dir.path() + "/nowhere", std::nullopt, in).status().code(),
            StatusCode::kNotFound);

  // A checkpoint of another model: its parameter named with both shapes.
  Save(dir.path(), *BuildModel(in, 1), 10);
  ModelInput wider = in;
  wider.model.layers[4].units = 7;
  EXPECT_TRUE(FailsNaming(LoadTrainedModel(dir.path(), std::nullopt, wider).status(),
                          "dense/kernel: checkpoint has [36,5], model has [36,7]"));

  auto trained = LoadTrainedModel(dir.path(), std::nullopt, in);
  ASSERT_TRUE(trained.ok());
  Tensor raw = RawExamples(in, 2, 1);
  raw[40] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> probs(6, -1.0f);
  EXPECT_TRUE(FailsNaming(trained->Predict(raw.data(), 2, nullptr, probs.data()), "input[40]"));
  EXPECT_EQ(probs[0], -1.0f);  // nothing written
}

TEST(TrainedModelTest, ValidateModelInputNamesTheField) {
  EXPECT_TRUE(ValidateModelInput(ImageInput()).ok());
  EXPECT_TRUE(ValidateModelInput(TableInput()).ok());
  ModelInput in = ImageInput();
  in.class_names.pop_back();
  EXPECT_TRUE(FailsNaming(ValidateModelInput(in), "class_names: 2 names for 3 classes"));
  in = ImageInput();
  in.example_shape = Shape{6, 6};
  EXPECT_TRUE(FailsNaming(ValidateModelInput(in), "example_shape"));
  in = ImageInput();
  in.feature_mean = {1.0f};
  EXPECT_TRUE(FailsNaming(ValidateModelInput(in), "feature_mean"));
  in = TableInput();
  in.feature_std[1] = 0;
  EXPECT_TRUE(FailsNaming(ValidateModelInput(in), "feature_std[1]"));
  in = TableInput();
  in.feature_mean.pop_back();
  EXPECT_TRUE(FailsNaming(ValidateModelInput(in), "feature_mean: 3 values"));
  in = ImageInput();
  in.model.layers.back().units = 4;
  EXPECT_TRUE(FailsNaming(ValidateModelInput(in), "model.layers[6].units"));
}

// A NaN is a missing value where the model records what fills it in: Predict gives exactly what
// it gives for the recorded value in its place. Without the record, a NaN is refused as before.
TEST(TrainedModelTest, MissingValuesTakeTheRecordedValue) {
  ModelInput in = TableInput();
  in.feature_names = {"a", "b", "c", "d"};
  in.feature_impute = {1.25f, -19.0f, 0.5f, 900.0f};
  ASSERT_TRUE(ValidateModelInput(in).ok());
  ScopedDir dir("trained_model_impute");
  Save(dir.path(), *BuildModel(in, 8), 10);
  auto trained = LoadTrainedModel(dir.path(), std::nullopt, in);
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  Tensor raw = RawExamples(in, 3, 5);
  Tensor filled = raw;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  raw[1] = nan;  // example 0, feature b
  filled[1] = in.feature_impute[1];
  raw[8] = raw[11] = nan;  // example 2, features a and d
  filled[8] = in.feature_impute[0];
  filled[11] = in.feature_impute[3];
  std::vector<float> got(6), want(6);
  ASSERT_TRUE(trained->Predict(raw.data(), 3, got.data(), nullptr).ok());
  ASSERT_TRUE(trained->Predict(filled.data(), 3, want.data(), nullptr).ok());
  EXPECT_EQ(got, want);
  EXPECT_TRUE(std::isnan(raw[1]));  // the caller's values are left as they were
  raw[1] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(trained->Predict(raw.data(), 3, got.data(), nullptr).message(),
            "input[1]: must be finite or NaN (missing), got inf");

  in.feature_impute.clear();
  auto strict = LoadTrainedModel(dir.path(), std::nullopt, in);
  ASSERT_TRUE(strict.ok());
  raw[1] = nan;
  EXPECT_EQ(strict->Predict(raw.data(), 3, got.data(), nullptr).message(),
            "input[1]: must be finite, got nan");

  in.feature_impute = {1, 2};
  EXPECT_TRUE(FailsNaming(ValidateModelInput(in), "feature_impute: 2 values"));
  in.feature_impute = {1, 2, nan, 4};
  EXPECT_TRUE(FailsNaming(ValidateModelInput(in), "feature_impute[2]"));
  in.feature_impute.clear();
  in.feature_names = {"a", "b", "a", "d"};
  EXPECT_TRUE(FailsNaming(ValidateModelInput(in), "feature_names[2]"));
}

// RunJob hands the chief's ModelInput over once, before anything trains, with the preset fitted
// to the data; the model it describes, loaded from the run's last checkpoint, predicts what the
// trainer's final evaluation measured. A hook that fails stops the run before its first step.
TEST(TrainedModelTest, RunJobRecordsTheModelInputBeforeTheFirstStep) {
  auto data = testing::TwoClassTable(3, 400, 200);
  data->preprocessing = Preprocessing::kStandard;
  data->feature_mean = {0.5f, 0.25f, 0.0f};
  data->feature_std = {1.5f, 1.25f, 1.0f};

  JobSpec spec;
  spec.name = "record";
  spec.model_preset = "mlp";
  spec.model = *PresetModel("mlp");
  spec.dataset.name = "table";
  spec.dataset.format = "csv";
  spec.dataset.sha256 = std::string(64, 'a');
  spec.batch_size = 50;
  spec.max_steps = 30;
  spec.hooks.final_eval.enabled = true;
  ScopedDir dir("record");
  JobRunOptions o;
  o.checkpoint_dir = dir.path();
  o.datasets = data;
  o.logger = std::make_shared<testing::CapturingLogger>();
  std::vector<ModelInput> recorded;
  o.on_model_input = [&](const ModelInput& in) {
    recorded.push_back(in);
    // Before the first step: no checkpoint yet.
    EXPECT_EQ(LatestCheckpointStep(dir.path()), 0);
    return Status::Ok();
  };
  auto result = RunJob(spec, o);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(recorded.size(), 1u);
  const ModelInput& in = recorded[0];
  EXPECT_EQ(in.example_shape, Shape{3});
  EXPECT_EQ(in.num_classes, 2);
  EXPECT_EQ(in.class_names, (std::vector<std::string>{"left", "right"}));
  EXPECT_EQ(in.preprocessing, Preprocessing::kStandard);
  EXPECT_EQ(in.feature_std, data->feature_std);
  EXPECT_EQ(in.dataset_name, "table");
  EXPECT_EQ(in.dataset_sha256, spec.dataset.sha256);
  EXPECT_EQ(in.model.layers.back().units, 2);  // fitted: the preset's 10 units became 2
  EXPECT_TRUE(ValidateModelInput(in).ok());

  // The engine's prediction on the raw test split is the trainer's final test accuracy.
  auto trained = LoadTrainedModel(dir.path(), std::nullopt, in);
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  EXPECT_EQ(trained->step(), 30);
  Tensor raw = data->test.images;
  for (int64_t i = 0; i < raw.size(); ++i) {
    raw[i] = raw[i] * in.feature_std[static_cast<size_t>(i % 3)] +
             in.feature_mean[static_cast<size_t>(i % 3)];
  }
  std::vector<float> logits(400);
  ASSERT_TRUE(trained->Predict(raw.data(), 200, logits.data(), nullptr).ok());
  int correct = 0;
  for (int i = 0; i < 200; ++i) {
    correct += (logits[2 * i + 1] > logits[2 * i] ? 1 : 0) == data->test.labels[i];
  }
  EXPECT_NEAR(correct / 200.0, result->final_values["test/accuracy"], 0.0101);

  ScopedDir other("record_fails");
  o.checkpoint_dir = other.path();
  o.on_model_input = [](const ModelInput&) { return Status::ResourceExhausted("disk full"); };
  auto failed = RunJob(spec, o);
  EXPECT_EQ(failed.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(LatestCheckpointStep(other.path()), 0);
}

// dataset.normalize "per_channel": the job's data is normalized as it loads, model.json's input
// records the channel's statistics, and Predict on the raw pixels (as the model server and the
// ONNX export take them) classifies the test split as the final evaluation measured, with the
// training split augmented (which the model's input does not record: training only).
TEST(TrainedModelTest, PerChannelNormalizationIsRecordedAndPredictAppliesIt) {
  JobSpec spec;
  spec.name = "per-channel";
  spec.model_preset = "softmax";
  spec.model = *PresetModel("softmax");
  spec.dataset.name = "fashion-mnist";
  spec.dataset.normalize = "per_channel";
  spec.dataset.validation_size = 1000;
  spec.dataset.max_train_examples = 2000;
  spec.dataset.max_test_examples = 500;
  spec.augmentation.random_crop_padding = 2;
  spec.augmentation.horizontal_flip = true;
  spec.batch_size = 50;
  spec.max_steps = 40;
  spec.hooks.final_eval.enabled = true;
  const std::string root = std::filesystem::path(TRAININGD_FASHION_MNIST_DIR).parent_path();
  auto data = LoadJobDatasets(spec.dataset, root, "");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ((*data)->preprocessing, Preprocessing::kPerChannel);
  ASSERT_EQ((*data)->feature_mean.size(), 1u);
  EXPECT_NEAR((*data)->feature_mean[0], 0.286, 0.01);  // Fashion-MNIST's mean pixel
  EXPECT_NEAR((*data)->feature_std[0], 0.353, 0.01);
  auto probed = ProbeJobDataset(spec.dataset, root, "");
  ASSERT_TRUE(probed.ok()) << probed.status().ToString();
  EXPECT_EQ(probed->preprocessing, Preprocessing::kPerChannel);

  ScopedDir dir("per_channel");
  JobRunOptions o;
  o.checkpoint_dir = dir.path();
  o.datasets = *data;
  o.logger = std::make_shared<testing::CapturingLogger>();
  std::optional<ModelInput> recorded;
  o.on_model_input = [&](const ModelInput& in) {
    recorded = in;
    return Status::Ok();
  };
  auto result = RunJob(spec, o);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_TRUE(recorded.has_value());
  EXPECT_EQ(recorded->preprocessing, Preprocessing::kPerChannel);
  EXPECT_EQ(recorded->feature_mean, (*data)->feature_mean);
  EXPECT_EQ(recorded->feature_std, (*data)->feature_std);
  EXPECT_TRUE(ValidateModelInput(*recorded).ok());

  auto trained = LoadTrainedModel(dir.path(), std::nullopt, *recorded);
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  auto source = JobDatasetSource(spec.dataset, root, "");
  ASSERT_TRUE(source.ok());
  auto raw = ReadTestExamples(*source, 0, 500);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  std::vector<float> logits(500 * 10);
  ASSERT_TRUE(trained->Predict(raw->values.data(), 500, logits.data(), nullptr).ok());
  int correct = 0;
  for (int i = 0; i < 500; ++i) {
    const auto* row = logits.data() + i * 10;
    correct += std::max_element(row, row + 10) - row == raw->labels[static_cast<size_t>(i)];
  }
  EXPECT_GT(correct, 250);
  EXPECT_DOUBLE_EQ(correct / 500.0, result->final_values["test/accuracy"]);

  // One value per channel, exactly.
  ModelInput bad = *recorded;
  bad.feature_std = {1.0f, 1.0f};
  EXPECT_TRUE(FailsNaming(ValidateModelInput(bad), "feature_std: 2 values"));
  // The augmentation is for images.
  JobSpec flat = spec;
  EXPECT_TRUE(FailsNaming(FitModelToData(&flat, Shape{12}, 2), "augmentation.random_crop: "));
}

}  // namespace
}  // namespace trainingd::engine
