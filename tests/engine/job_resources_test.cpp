// Admission in the engine: Model::Plan sizes a model without allocating it, ProbeMnistDirectory
// reads a dataset's shape without its images, PlanJob checks a spec against its data and
// estimates memory and disk, CheckJobBudget names the field that weighs most.
#include "trainingd/engine/job/job_resources.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <limits>

#include "largest_allocation.h"
#include "sanitized.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/nn/model.h"
#include "trainingd/engine/nn/model_spec.h"
#include "trainingd/engine/train/trainer.h"

namespace trainingd::engine {
namespace {

DatasetInfo FashionShaped() {
  DatasetInfo d;
  d.example_shape = Shape{28, 28, 1};
  d.num_classes = 10;
  d.train_examples = 55000;
  d.validation_examples = 5000;
  d.test_examples = 10000;
  d.file_train_examples = 60000;
  d.file_test_examples = 10000;
  return d;
}

JobSpec SpecWith(std::vector<LayerSpec> layers) {
  JobSpec s;
  s.name = "t";
  s.model.layers = std::move(layers);
  s.max_steps = 100;
  return s;
}

JobRunLimits TwoThreads() {
  JobRunLimits l;
  l.compute_threads = 2;
  l.max_checkpoints = 50;
  l.max_profiler_traces = 20;
  l.max_log_bytes = 16 << 20;
  return l;
}

// The spec of the issue that took the daemon down with std::bad_alloc.
JobSpec TheBadAllocSpec() {
  return SpecWith({LayerSpec::Conv2d(65536, 1, Padding::kSame, Activation::kNone),
                   LayerSpec::Conv2d(65536, 64, Padding::kSame, Activation::kNone),
                   LayerSpec::Flatten(), LayerSpec::Dense(10, Activation::kNone)});
}

TEST(ModelPlanTest, PlansAHugeModelWithoutAllocatingIt) {
  const JobSpec spec = TheBadAllocSpec();
  testing::LargestAllocation largest;
  auto plan = Model::Plan(spec.model, Shape{28, 28, 1}, 10, 1);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  // 65536 * 64 * 64 * 65536 weights in the second convolution alone.
  EXPECT_GT((*plan)->num_parameters(), int64_t{1} << 44);
  const ModelMemory m = (*plan)->MemoryUse(50, 1000, 2);
  EXPECT_GT(m.parameters, int64_t{1} << 46);
  EXPECT_LT(largest.bytes(), size_t{1} << 20) << "planning allocated what the spec sizes";
}

TEST(ModelPlanTest, PlanAndBuildAgreeOnShapesAndParameters) {
  auto spec = PresetModel("cnn");
  ASSERT_TRUE(spec.ok());
  auto plan = Model::Plan(*spec, Shape{28, 28, 1}, 10, 3);
  auto built = Model::Build(*spec, Shape{28, 28, 1}, 10, 3);
  ASSERT_TRUE(plan.ok() && built.ok());
  EXPECT_EQ((*plan)->output_shapes(), (*built)->output_shapes());
  EXPECT_EQ((*plan)->num_parameters(), 3274634);
  int64_t allocated = 0;
  for (const Parameter* p : (*built)->parameters()) allocated += p->value.size();
  EXPECT_EQ((*plan)->num_parameters(), allocated);
  // Parameters and gradients, 4 bytes each, and the gradients' exact sums, 8 bytes each.
  EXPECT_EQ((*plan)->MemoryUse(50, 0, 1).parameters, 16 * allocated);
  // Activations follow the larger batch: every layer's output for 1000 examples, but the
  // flatten layer's (a view of its input).
  int64_t elements = 0;
  const std::vector<Shape>& shapes = (*plan)->output_shapes();
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (spec->layers[i].type != LayerType::kFlatten) elements += shapes[i].num_elements();
  }
  // (Each tensor of 2 MiB and more in whole huge pages.)
  int64_t eval_bytes = 0, train_bytes = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (spec->layers[i].type == LayerType::kFlatten) continue;
    eval_bytes += BufferBytes(4 * 1000 * shapes[i].num_elements());
    train_bytes += BufferBytes(4 * 50 * shapes[i].num_elements());
  }
  EXPECT_GE(eval_bytes, 4 * 1000 * elements);
  EXPECT_EQ((*plan)->MemoryUse(50, 1000, 1).activations, eval_bytes);
  EXPECT_EQ((*plan)->MemoryUse(50, 0, 1).activations, train_bytes);
}

TEST(ModelPlanTest, PlanRejectsWhatBuildRejects) {
  auto dense_first = Model::Plan(SpecWith({LayerSpec::Dense(10, Activation::kNone)}).model,
                                 Shape{28, 28, 1}, 10, 0);
  ASSERT_FALSE(dense_first.ok());
  EXPECT_EQ(dense_first.status().message().rfind("model.layers[0]: dense ", 0), 0u)
      << dense_first.status().message();
}

TEST(ProbeMnistDirectoryTest, AgreesWithTheLoadedDataWithoutLoadingImages) {
  DatasetOptions o;
  o.validation_size = 5000;
  o.max_test_examples = 2000;
  size_t probe_largest = 0;
  Result<DatasetInfo> info = Status::Internal("unset");
  {
    testing::LargestAllocation largest;
    info = ProbeMnistDirectory(TRAININGD_FASHION_MNIST_DIR, o);
    probe_largest = largest.bytes();
  }
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_LT(probe_largest, size_t{1} << 20);  // labels (60 KB), never the 47 MB of images
  auto data = LoadMnistDirectory(TRAININGD_FASHION_MNIST_DIR, o);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(info->example_shape, data->train.example_shape());
  EXPECT_EQ(info->num_classes, data->num_classes);
  EXPECT_EQ(info->train_examples, data->train.size());
  EXPECT_EQ(info->validation_examples, data->validation.size());
  EXPECT_EQ(info->test_examples, data->test.size());
  const int64_t loaded =
      4 * (data->train.images.size() + data->validation.images.size() + data->test.images.size()) +
      4 * (data->train.size() + data->validation.size() + data->test.size());
  EXPECT_EQ(info->LoadedBytes(), loaded);
}

TEST(ProbeMnistDirectoryTest, SameErrorsAsLoading) {
  DatasetOptions o;
  o.validation_size = 60000;
  auto probe = ProbeMnistDirectory(TRAININGD_FASHION_MNIST_DIR, o);
  auto load = LoadMnistDirectory(TRAININGD_FASHION_MNIST_DIR, o);
  ASSERT_FALSE(probe.ok());
  EXPECT_EQ(probe.status().ToString(), load.status().ToString());
}

TEST(PlanJobTest, TheTutorialCnnIsEstimatedPartByPart) {
  JobSpec spec = SpecWith(PresetModel("cnn")->layers);
  spec.batch_size = 50;
  spec.hooks.evaluation.enabled = true;
  auto r = PlanJob(spec, FashionShaped(), TwoThreads());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->num_parameters, 3274634);
  EXPECT_EQ(r->parameters, 16 * 3274634);    // values, gradients and their exact sums
  EXPECT_EQ(r->optimizer, 2 * 4 * 3274634);  // Adam: two slots
  EXPECT_EQ(r->eval_batch, 1000);
  EXPECT_EQ(r->dataset, FashionShaped().LoadedBytes());
  EXPECT_EQ(r->steps, 100);
  // max_to_keep 5, every 600 s (at most every step here): 5 kept plus the one being written,
  // and the best evaluation's (hooks.checkpoint.keep_best), kept besides them.
  EXPECT_EQ(r->checkpoints_kept, 7);
  spec.hooks.checkpoint.keep_best = false;
  auto without_best = PlanJob(spec, FashionShaped(), TwoThreads());
  ASSERT_TRUE(without_best.ok());
  EXPECT_EQ(without_best->checkpoints_kept, 6);
  spec.hooks.checkpoint.keep_best = true;
  EXPECT_GT(r->checkpoint_file, 4 * 3 * 3274634);
  EXPECT_EQ(r->memory(), r->runtime + r->dataset + r->parameters + r->optimizer + r->activations +
                             r->scratch + r->checkpoint_io);
  ASSERT_EQ(r->layer_memory.size(), 8u);
  EXPECT_TRUE(CheckJobBudget(spec, *r, {int64_t{1} << 31, int64_t{1} << 31}).ok());
}

// Mixed precision rounds a step's product operands into scratch: at least the forward product's
// of the CNN's large dense layer (the batch and the 3136 x 1024 kernel, in pairs along 3136).
TEST(PlanJobTest, MixedPrecisionCountsTheRoundedOperands) {
  JobSpec spec = SpecWith(PresetModel("cnn")->layers);
  spec.batch_size = 50;
  auto float32 = PlanJob(spec, FashionShaped(), TwoThreads());
  spec.precision = Precision::kMixedBfloat16;
  auto mixed = PlanJob(spec, FashionShaped(), TwoThreads());
  ASSERT_TRUE(float32.ok() && mixed.ok());
  EXPECT_GE(mixed->scratch - float32->scratch, 4 * (50 + 1024) * (3136 / 2));
  EXPECT_EQ(mixed->memory() - float32->memory(), mixed->scratch - float32->scratch);
}

// The process's resident memory: what `trainingd run`'s peak RSS (cli.memory_estimate) measures.
// Memory freed back to the allocator stays resident until trimmed, so after malloc_trim a rise is
// the most that was in use since.
int64_t ResidentBytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  const int n = std::fscanf(f, "%ld %ld", &pages, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE) : -1;
}

// The ResNet's 3x3, strided and 1x1 convolutions and its batch norms, measured: the estimate of
// the parameters, slots, activations and scratch against the memory a Trainer makes resident
// through training steps and an evaluation (its buffers only grow), with two compute threads (the
// estimate's). It must not be low by more than 5%, nor high by more than 25%. Before tensors of
// 2 MiB and more were counted in whole huge pages, it was 17-19% low here.
TEST(PlanJobTest, TheResNetEstimateCoversWhatItsStepsHold) {
  // A sanitizer's allocator keeps freed memory in quarantine and has shadow memory of its own:
  // the resident set is no longer the job's (the Release run measures it).
  if (test_support::kSanitized) GTEST_SKIP() << "resident memory is the sanitizer's";
  SetComputeThreads(2);
  Split train;
  train.images.Resize(Shape{256, 32, 32, 3});
  for (int64_t i = 0; i < train.images.size(); ++i)
    train.images[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f;
  train.labels.resize(256);
  for (size_t i = 0; i < train.labels.size(); ++i) train.labels[i] = static_cast<int32_t>(i % 10);
  DatasetInfo data;
  data.example_shape = Shape{32, 32, 3};
  data.num_classes = 10;
  data.train_examples = 256;
  data.test_examples = 200;
  data.file_train_examples = 256;
  data.file_test_examples = 200;
  JobSpec spec = SpecWith(PresetModel("resnet20")->layers);
  spec.batch_size = 64;
  spec.optimizer.type = OptimizerOptions::Type::kMomentum;
  spec.hooks.final_eval.enabled = true;
  spec.hooks.checkpoint.enabled = false;
  auto r = PlanJob(spec, data, TwoThreads());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->eval_batch, 200);
  // The input pipeline's example order and the evaluation batch are counted for the data's
  // split sizes; this test's Trainer evaluates `train` (256) in batches of 200 as they would.
  const int64_t estimate = r->parameters + r->optimizer + r->activations + r->scratch;

  // Buffers from 1 MiB up on their own mappings, returned when freed: glibc's threshold otherwise
  // rises with every large free, and then which earlier buffers stay resident, freed, depends on
  // the tests that ran before this one.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  malloc_trim(0);
  const int64_t before = ResidentBytes();
  ASSERT_GT(before, 0);
  {
    OptimizerOptions o;
    o.type = OptimizerOptions::Type::kMomentum;
    auto trainer = Trainer::Create(spec.model, o, train, 10, {.batch_size = 64, .seed = 1});
    ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
    for (int i = 0; i < 3; ++i) (void)(*trainer)->Step();
    ASSERT_TRUE((*trainer)->Evaluate(train, 200).ok());
    for (int i = 0; i < 2; ++i) (void)(*trainer)->Step();
    const int64_t measured = ResidentBytes() - before;
    std::printf("resnet20, batch 64, eval 200: estimate %lld bytes, resident %lld (%+.1f%%)\n",
                static_cast<long long>(estimate), static_cast<long long>(measured),
                100.0 * static_cast<double>(estimate - measured) / static_cast<double>(measured));
    EXPECT_GE(estimate, measured - measured / 20);
    EXPECT_LE(estimate, measured + measured / 4);
  }
  SetComputeThreads(1);
}

TEST(PlanJobTest, SgdHasNoSlotsAndNoEvaluationNoEvalBatch) {
  JobSpec spec = SpecWith(PresetModel("softmax")->layers);
  spec.optimizer.type = OptimizerOptions::Type::kSgd;
  auto r = PlanJob(spec, FashionShaped(), TwoThreads());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->optimizer, 0);
  EXPECT_EQ(r->eval_batch, 0);
}

TEST(PlanJobTest, ChecksTheSpecAgainstItsData) {
  JobSpec big_batch = SpecWith(PresetModel("mlp")->layers);
  big_batch.batch_size = 55001;
  auto r = PlanJob(big_batch, FashionShaped(), TwoThreads());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("batch_size: 55001 is more than the 55000", 0), 0u)
      << r.status().message();

  auto conv_after_dense =
      PlanJob(SpecWith({LayerSpec::Flatten(), LayerSpec::Dense(32, Activation::kNone),
                        LayerSpec::Conv2d(8, 3, Padding::kSame, Activation::kNone),
                        LayerSpec::Dense(10, Activation::kNone)}),
              FashionShaped(), TwoThreads());
  ASSERT_FALSE(conv_after_dense.ok());
  EXPECT_EQ(conv_after_dense.status().message().rfind("model.layers[2]: conv2d ", 0), 0u)
      << conv_after_dense.status().message();
}

TEST(PlanJobTest, AHugeModelIsOverBudgetNamingItsLayer) {
  const JobSpec spec = TheBadAllocSpec();
  auto r = PlanJob(spec, FashionShaped(), TwoThreads());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Status st = CheckJobBudget(spec, *r, {int64_t{18} << 30, 0});
  ASSERT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("model.layers[1]: the job needs an estimated", 0), 0u)
      << st.message();
  EXPECT_NE(st.message().find("18.0 GiB"), std::string::npos) << st.message();
}

TEST(PlanJobTest, AWideBatchIsOverBudgetNamingBatchSize) {
  // A large convolution whose activations, not its parameters, weigh most.
  JobSpec spec = SpecWith({LayerSpec::Conv2d(4096, 3, Padding::kSame, Activation::kRelu),
                           LayerSpec::Flatten(), LayerSpec::Dense(10, Activation::kNone)});
  spec.batch_size = 5000;
  auto r = PlanJob(spec, FashionShaped(), TwoThreads());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Status st = CheckJobBudget(spec, *r, {int64_t{18} << 30, 0});
  EXPECT_EQ(st.message().rfind("batch_size: the job needs an estimated", 0), 0u) << st.message();
  EXPECT_NE(st.message().find("lower batch_size"), std::string::npos) << st.message();
}

TEST(PlanJobTest, ManyModestLayersAreOverBudgetNamingTheLayerList) {
  // 999 dense layers of 1000 units: each needs ~16 MiB, all of them ~16 GiB.
  std::vector<LayerSpec> layers = {LayerSpec::Flatten()};
  for (int i = 0; i < 998; ++i) layers.push_back(LayerSpec::Dense(1000, Activation::kRelu));
  layers.push_back(LayerSpec::Dense(10, Activation::kNone));
  const JobSpec spec = SpecWith(std::move(layers));
  auto r = PlanJob(spec, FashionShaped(), TwoThreads());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Status st = CheckJobBudget(spec, *r, {int64_t{8} << 30, 0});
  EXPECT_EQ(st.message().rfind("model.layers: the job needs an estimated", 0), 0u) << st.message();
  EXPECT_NE(st.message().find("its 1000 layers together need"), std::string::npos) << st.message();
}

TEST(PlanJobTest, ManyCheckpointsAreOverTheDiskBudgetNamingMaxToKeep) {
  JobSpec spec = SpecWith(PresetModel("cnn")->layers);
  spec.max_steps = 100000;
  spec.hooks.checkpoint.trigger.every_steps = 1;
  spec.hooks.checkpoint.max_to_keep = 1000;
  auto r = PlanJob(spec, FashionShaped(), TwoThreads());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->checkpoints_kept, 1001);
  const Status st = CheckJobBudget(spec, *r, {0, int64_t{10} << 30});
  EXPECT_EQ(st.message().rfind("hooks.checkpoint.max_to_keep: the job needs an estimated", 0), 0u)
      << st.message();
}

TEST(PlanJobTest, PreservedCheckpointsAreBoundedByTheCap) {
  JobSpec spec = SpecWith(PresetModel("mlp")->layers);
  spec.max_steps = 100000;
  spec.hooks.checkpoint.trigger.every_steps = 10;
  spec.hooks.checkpoint.keep_checkpoint_every_n_hours = 0.001;
  JobRunLimits capped = TwoThreads();
  auto r = PlanJob(spec, FashionShaped(), capped);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->checkpoints_kept, 51);  // the cap, and one being written
  capped.max_checkpoints = 0;          // no cap: every save may be preserved
  r = PlanJob(spec, FashionShaped(), capped);
  EXPECT_EQ(r->checkpoints_kept, 100000 / 10 + 1 + 1 + 1);
}

TEST(PlanJobTest, EpochsDecideTheStepsWhenTheyComeFirst) {
  JobSpec spec = SpecWith(PresetModel("softmax")->layers);
  spec.max_steps = 0;
  spec.num_epochs = 2;
  spec.batch_size = 100;
  auto r = PlanJob(spec, FashionShaped(), TwoThreads());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->steps, 1100);
}

TEST(PlanJobTest, ProfilerTracesAndTheLogAreCapped) {
  JobSpec spec = SpecWith(PresetModel("mlp")->layers);
  spec.max_steps = 1000000;
  spec.hooks.profiler.enabled = true;
  spec.hooks.profiler.trigger.every_steps = 1;
  spec.hooks.logging.every_n_iter = 1;
  JobRunLimits limits = TwoThreads();
  auto capped = PlanJob(spec, FashionShaped(), limits);
  limits.max_profiler_traces = 0;
  limits.max_log_bytes = 0;
  auto uncapped = PlanJob(spec, FashionShaped(), limits);
  ASSERT_TRUE(capped.ok() && uncapped.ok());
  EXPECT_EQ(capped->profiler / 20, uncapped->profiler / 1000001);  // 20 of 1M timelines kept
  EXPECT_EQ(capped->logs, 2 * (16 << 20));  // a full log and one rotated file
  EXPECT_EQ(uncapped->logs, 0);             // stderr
}

TEST(PlanJobTest, SaturatesInsteadOfOverflowing) {
  // Steps near INT64_MAX and a summary every second (at most once a step): the counts overflow
  // int64 unless they saturate, and a wrapped count could look small enough to admit.
  JobSpec spec = SpecWith(PresetModel("softmax")->layers);
  spec.max_steps = std::numeric_limits<int64_t>::max();
  spec.hooks.summary.trigger.every_secs = 1;
  spec.hooks.logging.every_n_secs = 1;
  spec.hooks.profiler.enabled = true;
  spec.hooks.profiler.trigger.every_secs = 1;
  JobRunLimits limits = TwoThreads();
  limits.max_profiler_traces = 0;
  auto r = PlanJob(spec, FashionShaped(), limits);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->event_files, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(r->disk(), std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(CheckJobBudget(spec, *r, {0, std::numeric_limits<int64_t>::max() - 1}).ok());
}

TEST(FormatBytesTest, BinaryUnits) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(int64_t{18} << 30), "18.0 GiB");
}

}  // namespace
}  // namespace trainingd::engine
