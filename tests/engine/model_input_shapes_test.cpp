// Examples of any shape (issue 23): colour images [H, W, C] and table rows [F] through the
// models, the presets fitted to a dataset's shape and classes, admission's errors, and learning
// on seeded colour images (an npz) and a seeded table (a CSV with string labels) that real NumPy
// wrote, loaded by the engine's readers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "session_test_util.h"
#include "test_util.h"
#include "trainingd/engine/base/random.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/job/job_resources.h"
#include "trainingd/engine/job/job_runner.h"
#include "trainingd/engine/nn/model.h"
#include "trainingd/engine/nn/model_spec.h"
#include "trainingd/engine/train/trainer.h"

namespace trainingd::engine {
namespace {

using testing::FailsNaming;
using testing::kSanitized;

OptimizerOptions Adam(float lr) {
  OptimizerOptions o;
  o.type = OptimizerOptions::Type::kAdam;
  o.learning_rate = LearningRateSchedule::Constant(lr);
  return o;
}

DatasetInfo InfoOf(const Shape& example, int classes) {
  DatasetInfo d;
  d.example_shape = example;
  d.num_classes = classes;
  d.element_type = example.rank() == 1 ? "float32" : "uint8";
  d.preprocessing = example.rank() == 1 ? Preprocessing::kNone : Preprocessing::kScale255;
  d.train_examples = 900;
  d.validation_examples = 100;
  d.test_examples = 200;
  d.file_train_examples = 1000;
  d.file_test_examples = 200;
  return d;
}

JobSpec PresetJob(const std::string& preset) {
  JobSpec s;
  s.name = "shapes";
  s.model_preset = preset;
  s.model = *PresetModel(preset);  // as api/ expands "model": "<preset>"
  s.batch_size = 50;
  s.max_steps = 100;
  return s;
}

// A forward and backward pass runs and gives [batch, classes] logits.
void ExpectRuns(Model& model, const Shape& example, int64_t classes) {
  Rng rng(3);
  Tensor x(example.with_batch(4));
  for (int64_t i = 0; i < x.size(); ++i) x[i] = rng.Uniform(-1, 1);
  const Tensor& logits = model.Forward(x, Mode::kTrain);
  ASSERT_EQ(logits.shape(), (Shape{4, classes}));
  Tensor dlogits(logits.shape());
  for (int64_t i = 0; i < dlogits.size(); ++i) dlogits[i] = 0.1f;
  model.Backward(dlogits);
  for (const Parameter* p : model.parameters()) {
    for (int64_t i = 0; i < p->grad.size(); ++i) ASSERT_TRUE(std::isfinite(p->grad[i])) << p->name;
  }
}

TEST(InputShapesTest, ModelsBuildForColourImagesAndTableRows) {
  // CIFAR-sized colour images through the cnn preset with 3 classes.
  auto cnn = PresetModel("cnn", Shape{32, 32, 3}, 3);
  ASSERT_TRUE(cnn.ok()) << cnn.status().ToString();
  auto colour = Model::Build(*cnn, Shape{32, 32, 3}, 3, 1);
  ASSERT_TRUE(colour.ok()) << colour.status().ToString();
  EXPECT_EQ((*colour)->output_shapes()[0], (Shape{32, 32, 32}));
  EXPECT_EQ((*colour)->output_shapes()[4], (Shape{8 * 8 * 64}));
  // conv 5*5*3*32+32, conv 5*5*32*64+64, dense 4096*1024+1024, dense 1024*3+3.
  EXPECT_EQ((*colour)->num_parameters(), 2432 + 51264 + 4195328 + 3075);
  ExpectRuns(**colour, Shape{32, 32, 3}, 3);

  // A table of 13 features: a first dense layer straight on the rows; flatten of [13] is [13].
  ModelSpec direct;
  direct.layers = {LayerSpec::Dense(16, Activation::kRelu), LayerSpec::Dense(4, Activation::kNone)};
  auto table = Model::Build(direct, Shape{13}, 4, 1);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ((*table)->num_parameters(), 13 * 16 + 16 + 16 * 4 + 4);
  ExpectRuns(**table, Shape{13}, 4);
  auto mlp = Model::Build(*PresetModel("mlp", Shape{13}, 4), Shape{13}, 4, 1);
  ASSERT_TRUE(mlp.ok()) << mlp.status().ToString();
  EXPECT_EQ((*mlp)->output_shapes()[0], Shape{13});
  ExpectRuns(**mlp, Shape{13}, 4);

  // Odd sizes and four channels.
  auto odd = Model::Build(*PresetModel("cnn", Shape{5, 7, 4}, 2), Shape{5, 7, 4}, 2, 1);
  ASSERT_TRUE(odd.ok()) << odd.status().ToString();
  EXPECT_EQ((*odd)->output_shapes()[4], (Shape{1 * 1 * 64}));
  ExpectRuns(**odd, Shape{5, 7, 4}, 2);
}

TEST(InputShapesTest, PresetsTakeTheDatasetsClassesAndFitItsShape) {
  for (int classes : {3, 7}) {
    for (const std::string& preset : PresetModelNames()) {
      for (const Shape& example : {Shape{32, 32, 3}, Shape{12, 9, 4}, Shape{13}}) {
        SCOPED_TRACE(preset + " on " + example.ToString() + ", " + std::to_string(classes));
        auto spec = PresetModel(preset, example, classes);
        if ((preset == "cnn" || preset.rfind("resnet", 0) == 0) && example.rank() == 1) {
          EXPECT_TRUE(FailsNaming(spec.status(),
                                  "model: the " + preset + " preset needs images [H, W, C]"));
          EXPECT_NE(spec.status().message().find("[13] (a table)"), std::string::npos)
              << spec.status().message();
          continue;
        }
        ASSERT_TRUE(spec.ok()) << spec.status().ToString();
        EXPECT_EQ(spec->layers.back().units, classes);
        EXPECT_TRUE(IsPresetModel(preset, *spec));
        // Everything else is the preset as written.
        ModelSpec as_written = *PresetModel(preset);
        as_written.layers.back().units = classes;
        EXPECT_EQ(*spec, as_written);
        auto plan = Model::Plan(*spec, example, classes, 1);
        ASSERT_TRUE(plan.ok()) << plan.status().ToString();
        EXPECT_EQ((*plan)->output_shapes().back(), Shape{classes});
      }
    }
  }
  // Fashion-MNIST's preset is the one written.
  EXPECT_EQ(*PresetModel("cnn", Shape{28, 28, 1}, 10), *PresetModel("cnn"));
  // Two 2x2 poolings need at least 4x4.
  EXPECT_TRUE(PresetModel("cnn", Shape{4, 4, 3}, 3).ok());
  EXPECT_TRUE(FailsNaming(PresetModel("cnn", Shape{3, 8, 3}, 3).status(),
                          "model: the cnn preset needs images of at least 4x4"));
  EXPECT_EQ(PresetModel("vgg", Shape{13}, 3).status().code(), StatusCode::kNotFound);
  // A model that is not the preset's layers is the user's own.
  ModelSpec own = *PresetModel("mlp");
  own.layers[1].units = 64;
  EXPECT_FALSE(IsPresetModel("mlp", own));
  EXPECT_FALSE(IsPresetModel("cnn", *PresetModel("mlp")));
}

TEST(InputShapesTest, FitModelToDataChangesOnlyAPresetsLastUnits) {
  JobSpec cnn = PresetJob("cnn");
  ASSERT_TRUE(FitModelToData(&cnn, Shape{32, 32, 3}, 7).ok());
  EXPECT_EQ(cnn.model, *PresetModel("cnn", Shape{32, 32, 3}, 7));
  // Fitted again (a canonical spec that already has 7) it stays.
  ASSERT_TRUE(FitModelToData(&cnn, Shape{32, 32, 3}, 7).ok());
  EXPECT_EQ(cnn.model.layers.back().units, 7);

  JobSpec fashion = PresetJob("cnn");
  ASSERT_TRUE(FitModelToData(&fashion, Shape{28, 28, 1}, 10).ok());
  EXPECT_EQ(fashion.model, *PresetModel("cnn"));

  JobSpec table = PresetJob("cnn");
  EXPECT_TRUE(FailsNaming(FitModelToData(&table, Shape{13}, 3), "model: the cnn preset"));

  // Custom layers (with or without a preset's name kept) run as written.
  JobSpec own = PresetJob("mlp");
  own.model.layers[1].units = 64;
  ASSERT_TRUE(FitModelToData(&own, Shape{13}, 3).ok());
  EXPECT_EQ(own.model.layers.back().units, 10);
  own.model_preset.clear();
  ASSERT_TRUE(FitModelToData(&own, Shape{13}, 3).ok());
  EXPECT_EQ(own.model.layers.back().units, 10);
}

TEST(InputShapesTest, PlanJobFitsPresetsAndNamesTheFieldThatDoesNotFit) {
  const JobRunLimits limits;
  // Presets on colour images and on a table, 3 and 7 classes.
  for (int classes : {3, 7}) {
    auto colour = PlanJob(PresetJob("cnn"), InfoOf(Shape{32, 32, 3}, classes), limits);
    ASSERT_TRUE(colour.ok()) << colour.status().ToString();
    EXPECT_EQ(colour->num_parameters, 2432 + 51264 + 4195328 + 1024 * classes + classes);
    auto table = PlanJob(PresetJob("mlp"), InfoOf(Shape{13}, classes), limits);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    EXPECT_EQ(table->num_parameters, 13 * 128 + 128 + 128 * 32 + 32 + 32 * classes + classes);
  }
  // The dataset is counted at its real size: 1200 examples of 32*32*3 floats, not 784.
  auto colour = PlanJob(PresetJob("softmax"), InfoOf(Shape{32, 32, 3}, 3), limits);
  ASSERT_TRUE(colour.ok());
  EXPECT_EQ(colour->dataset, InfoOf(Shape{32, 32, 3}, 3).LoadedBytes());
  EXPECT_GE(colour->dataset, 1200 * 32 * 32 * 3 * 4);

  // The cnn preset on a table.
  auto cnn_table = PlanJob(PresetJob("cnn"), InfoOf(Shape{13}, 3), limits);
  EXPECT_TRUE(FailsNaming(cnn_table.status(), "model: the cnn preset needs images [H, W, C]"));
  EXPECT_NE(cnn_table.status().message().find("[13]"), std::string::npos);

  // Custom layers: a convolution on a table, and a last layer of the wrong width.
  JobSpec conv = PresetJob("cnn");
  conv.model_preset.clear();
  auto conv_table = PlanJob(conv, InfoOf(Shape{13}, 10), limits);
  EXPECT_TRUE(FailsNaming(conv_table.status(),
                          "model.layers[0]: conv2d needs [H, W, C] examples; "
                          "the dataset's are [13] (a table)"));
  JobSpec wide = PresetJob("mlp");
  wide.model_preset.clear();
  auto wrong = PlanJob(wide, InfoOf(Shape{13}, 3), limits);
  EXPECT_TRUE(FailsNaming(wrong.status(), "model.layers[3].units: "));
  EXPECT_NE(wrong.status().message().find("10 units"), std::string::npos);
  EXPECT_NE(wrong.status().message().find("3 classes"), std::string::npos);
  // Shape-keeping layers after it do not hide it.
  wide.model.layers.push_back(LayerSpec::Dropout(0.1f));
  wrong = PlanJob(wide, InfoOf(Shape{13}, 3), limits);
  EXPECT_TRUE(FailsNaming(wrong.status(), "model.layers[3].units: ")) << wrong.status().message();
  // A dense layer on images without a flatten.
  JobSpec flat;
  flat = PresetJob("mlp");
  flat.model_preset.clear();
  flat.model.layers.erase(flat.model.layers.begin());
  EXPECT_TRUE(FailsNaming(PlanJob(flat, InfoOf(Shape{8, 8, 3}, 10), limits).status(),
                          "model.layers[0]: dense expects a flat input [features], got [8,8,3]"));
}

// The learning tests train on files real NumPy wrote (tests/engine/write_npz_files.py, run by the
// CTest fixture engine.npz_cases, or by SetUpTestSuite when the binary is run by hand), read
// through the engine's own readers as a job's data would be.
class LearningFromFilesTest : public ::testing::Test {
 protected:
  static std::string Case(const std::string& name) {
    return std::string(TRAININGD_NPZ_CASES_DIR "/") + name;
  }
  static void SetUpTestSuite() {
    if (std::filesystem::exists(Case(".complete")) &&
        std::filesystem::exists(Case("learn_table.csv"))) {
      return;
    }
    const std::string cmd = std::string("/usr/bin/python3 ") + TRAININGD_NPZ_WRITER + " " +
                            TRAININGD_NPZ_CASES_DIR + " > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  // learn_colour.npz: uint8 [N, 12, 12, 3] colour images where only colour tells the classes
  // apart (class k has more of channel k, while every pixel's grey level, the mean of its
  // channels, is uniform on [0.2, 0.7] whatever the class): 1500 to train, 600 to test.
  static Datasets Colour() {
    DatasetSource source;
    source.format = DatasetSource::Format::kNpz;
    source.path = Case("learn_colour.npz");
    DatasetOptions options;
    options.validation_size = 0;
    auto d = LoadDataset(source, options);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? *std::move(d) : Datasets{};
  }

  // learn_table.csv: three Gaussian blobs in 8 features (unit variance), 3.5 standard deviations
  // apart along their own axes (about 98% separable), 3000 rows whose label column "species"
  // names the class; a third of them split off as the test split, the features standardized.
  static Datasets Table() {
    DatasetSource source;
    source.format = DatasetSource::Format::kCsv;
    source.path = Case("learn_table.csv");
    source.label_column = "species";
    source.test_fraction = 1.0 / 3;
    source.split_seed = 7;
    source.standardize = true;
    DatasetOptions options;
    options.validation_size = 0;
    auto d = LoadDataset(source, options);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    return d.ok() ? *std::move(d) : Datasets{};
  }
};

// The same images averaged to one grey channel.
Split Grey(const Split& colour) {
  const Shape& s = colour.images.shape();
  Split g;
  g.labels = colour.labels;
  g.images = Tensor(Shape{s[0], s[1], s[2], 1});
  for (int64_t i = 0; i < g.images.size(); ++i) {
    const float* px = colour.images.data() + i * s[3];
    g.images[i] = (px[0] + px[1] + px[2]) / 3.0f;
  }
  return g;
}

ModelSpec SmallCnn(int classes) {
  ModelSpec m;
  m.layers = {LayerSpec::Conv2d(8, 3, Padding::kSame, Activation::kRelu),
              LayerSpec::MaxPool2d(2, 2), LayerSpec::Flatten(),
              LayerSpec::Dense(classes, Activation::kNone)};
  return m;
}

double TestAccuracy(const Split& train, const Split& test, int steps) {
  auto t = Trainer::Create(SmallCnn(3), Adam(3e-3f), train, 3, {50, 5});
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return 0;
  for (int i = 0; i < steps; ++i) (void)(*t)->Step();
  auto r = (*t)->Evaluate(test);
  EXPECT_TRUE(r.ok());
  return r.ok() ? r->accuracy : 0;
}

TEST_F(LearningFromFilesTest, ASmallCnnLearnsColourThatItsGreyVersionCannotSeparate) {
  const Datasets data = Colour();
  ASSERT_EQ(data.train.size(), 1500);
  ASSERT_EQ(data.test.size(), 600);
  EXPECT_EQ(data.train.example_shape(), (Shape{12, 12, 3}));
  EXPECT_EQ(data.num_classes, 3);
  EXPECT_EQ(data.preprocessing, Preprocessing::kScale255);
  // The grey images really carry no class: each class's mean grey level is the same (0.45).
  const Split grey_test = Grey(data.test);
  double mean[3] = {0, 0, 0}, count[3] = {0, 0, 0};
  const int64_t pixels = 12 * 12;
  for (int64_t e = 0; e < grey_test.size(); ++e) {
    const int label = grey_test.labels[static_cast<size_t>(e)];
    for (int64_t p = 0; p < pixels; ++p) mean[label] += grey_test.images[e * pixels + p];
    count[label] += pixels;
  }
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(mean[k] / count[k], 0.45, 0.01) << "class " << k;

  const int steps = kSanitized ? 60 : 300;  // 10 epochs in Release
  const double colour = TestAccuracy(data.train, data.test, steps);
  const double grey = TestAccuracy(Grey(data.train), grey_test, steps);
  RecordProperty("colour_accuracy", std::to_string(colour));
  RecordProperty("grey_accuracy", std::to_string(grey));
  EXPECT_GT(colour, kSanitized ? 0.6 : 0.9) << "colour";
  EXPECT_LT(grey, 0.42) << "grey (chance is 0.33)";
}

TEST_F(LearningFromFilesTest, TheMlpPresetLearnsATable) {
  const Datasets data = Table();
  ASSERT_EQ(data.train.size(), 2000);
  ASSERT_EQ(data.test.size(), 1000);
  EXPECT_EQ(data.train.example_shape(), Shape{8});
  EXPECT_EQ(data.class_names, (std::vector<std::string>{"setosa", "versicolor", "virginica"}));
  EXPECT_EQ(data.num_classes, 3);
  EXPECT_EQ(data.preprocessing, Preprocessing::kStandard);
  EXPECT_EQ(data.feature_mean.size(), 8u);
  auto mlp = PresetModel("mlp", data.train.example_shape(), data.num_classes);
  ASSERT_TRUE(mlp.ok()) << mlp.status().ToString();
  auto t = Trainer::Create(*mlp, Adam(1e-3f), data.train, data.num_classes, {100, 9});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const double before = (*t)->Evaluate(data.test)->accuracy;
  const int steps = kSanitized ? 100 : 300;  // 15 epochs in Release
  for (int i = 0; i < steps; ++i) (void)(*t)->Step();
  const LossAndAccuracy after = *(*t)->Evaluate(data.test);
  RecordProperty("test_accuracy", std::to_string(after.accuracy));
  EXPECT_LT(before, 0.6);
  EXPECT_GE(after.accuracy, 0.9) << "test loss " << after.loss;
}

// The whole job path: a spec that says "mlp" (api/'s 10-unit expansion) runs on the 3-class
// table with the preset fitted, and checkpoints the 3-unit model.
TEST_F(LearningFromFilesTest, RunJobFitsThePresetToTheLoadedData) {
  auto data = std::make_shared<const Datasets>(Table());
  ASSERT_EQ(data->num_classes, 3);
  JobSpec spec = PresetJob("mlp");
  spec.max_steps = kSanitized ? 20 : 120;
  spec.hooks.final_eval.enabled = true;
  const std::string dir = ::testing::TempDir() + "/input_shapes_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  JobRunOptions o;
  o.checkpoint_dir = dir;
  o.datasets = data;
  o.logger = std::make_shared<testing::CapturingLogger>();
  auto result = RunJob(spec, o);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->outcome, JobResult::Outcome::kCompleted) << result->error.ToString();
  EXPECT_EQ(result->global_step, spec.max_steps);
  RecordProperty("test_accuracy", std::to_string(result->final_values["test/accuracy"]));
  if (!kSanitized) {
    EXPECT_GE(result->final_values["test/accuracy"], 0.9);
  }

  // The cnn preset on the same table does not start.
  JobSpec cnn = PresetJob("cnn");
  EXPECT_TRUE(FailsNaming(RunJob(cnn, o).status(), "model: the cnn preset needs images"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trainingd::engine
