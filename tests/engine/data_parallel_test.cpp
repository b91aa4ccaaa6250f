// Data parallelism through RunJob with N ranks as threads (ThreadCommunicator): N ranks compute
// what one process computes, repeated runs are bit-identical, a checkpoint does not depend on N,
// and a stop vote from any rank ends all ranks at the same step. The same properties over real
// MPI processes: tests/e2e/distributed_test.py. The tables' features (categorical columns,
// missing values, regression, weights, a decision threshold): data_parallel_tables_test.cpp.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <tuple>

#include "data_parallel_harness.h"

namespace trainingd::engine {
namespace data_parallel_test {  // a name of its own: the test files build as one unit

using namespace data_parallel;

TEST(DataParallelTest, RanksAndThreadsComputeBitForBitWhatOneProcessComputes) {
  // Blocks of one example; 4 blocks of 7 and 8 (the default); 12 blocks of 2 and 3. Under the
  // sanitizers (40 s for all three) only the first, the edge case.
  std::vector<std::pair<int, int>> cases = {{10, 12}, {30, 4}, {30, 12}};
  if (testing::kSanitized) cases.resize(1);
  for (auto [batch, blocks] : cases) {
    SCOPED_TRACE("batch " + std::to_string(batch) + ", " + std::to_string(blocks) + " blocks");
    JobSpec spec = SmallCnnJob(12);
    spec.batch_size = batch;
    spec.distributed.reduction_blocks = blocks;
    ScopedDir d1("dp1");
    const Outcome one = RunOnRanks(spec, 1, d1.path());
    ASSERT_EQ(one.global_step, 12);
    ASSERT_EQ(one.losses.size(), 12u);
    // Every metric of the final evaluation's split (metrics.h).
    ASSERT_EQ(one.final_values.size(), std::size(kClassificationMetrics));
    {
      SCOPED_TRACE("one process, 2 threads");
      ScopedDir d2("dp1t2");
      ExpectIdentical(one, RunOnRanks(spec, 1, d2.path(), -1, 2));
    }
    for (int ranks : {2, 3, 4}) {  // 3 and 4 do not divide the batch or its blocks
      SCOPED_TRACE(std::to_string(ranks) + " ranks");
      ScopedDir dn("dpn" + std::to_string(ranks));
      ExpectIdentical(one, RunOnRanks(spec, ranks, dn.path()));
    }
  }
}

TEST(DataParallelTest, GatheredDenseLayersAreBitIdenticalToOneProcess) {
  const JobSpec spec = GatheredDenseJob(8);
  ScopedDir d1("dpg1");
  const Outcome one = RunOnRanks(spec, 1, d1.path());
  ASSERT_EQ(one.global_step, 8);
  for (int ranks : {2, 3, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    ScopedDir dn("dpgn" + std::to_string(ranks));
    ExpectIdentical(one, RunOnRanks(spec, ranks, dn.path()));
  }
}

// Mixed precision (gemm.h's GemmBf16 in every dense product of a step) keeps the promise: the
// small CNN's dense layers summed by blocks, and the gathered ones, on 1 and 2 threads and 2 and 3
// ranks. And it is in use: the weights differ from float32's (how much: dense_layer_test.cpp).
TEST(DataParallelTest, MixedPrecisionRanksAreBitIdenticalToOneProcess) {
  JobSpec cnn = SmallCnnJob(10);
  cnn.batch_size = 30;
  JobSpec dense = GatheredDenseJob(8);
  for (JobSpec* spec : {&cnn, &dense}) {
    SCOPED_TRACE(spec == &cnn ? "cnn" : "gathered dense layers");
    ScopedDir d32("mp32");
    const Outcome float32 = RunOnRanks(*spec, 1, d32.path());
    spec->precision = Precision::kMixedBfloat16;
    ScopedDir d1("mp1");
    const Outcome one = RunOnRanks(*spec, 1, d1.path());
    ASSERT_EQ(one.global_step, spec->max_steps);
    EXPECT_FALSE(BitIdentical(one.checkpoint, float32.checkpoint));
    {
      SCOPED_TRACE("one process, 2 threads");
      ScopedDir d2("mp1t2");
      ExpectIdentical(one, RunOnRanks(*spec, 1, d2.path(), -1, 2));
    }
    for (int ranks : {2, 3}) {
      SCOPED_TRACE(std::to_string(ranks) + " ranks");
      ScopedDir dn("mpn" + std::to_string(ranks));
      ExpectIdentical(one, RunOnRanks(*spec, ranks, dn.path()));
    }
  }
}

// Colour images through the cnn preset (fitted to 3 classes), and table rows straight into a
// gathered first dense layer (64 x 300: its input is the batch itself, no flatten's view).
TEST(DataParallelTest, ColourImagesAndTableRowsAreBitIdenticalToOneProcess) {
  const Datasets colour = RandomDatasets(Shape{8, 6, 3}, 3, 1);
  const Datasets table = RandomDatasets(Shape{64}, 5, 2);
  JobSpec cnn = SmallCnnJob(4);
  cnn.model_preset = "cnn";
  cnn.model = *PresetModel("cnn");
  cnn.distributed.reduction_blocks = 12;
  JobSpec mlp = GatheredDenseJob(6);
  mlp.model.layers.erase(mlp.model.layers.begin());  // no flatten
  mlp.model.layers[0].units = 300;
  mlp.model.layers.back().units = 5;
  for (const auto& [spec, data] : {std::pair{&cnn, &colour}, std::pair{&mlp, &table}}) {
    SCOPED_TRACE(data->train.example_shape().ToString());
    ScopedDir d1("dps1");
    const Outcome one = RunOnRanks(*spec, 1, d1.path(), -1, 1, Clock::kReal, data);
    ASSERT_EQ(one.global_step, spec->max_steps);
    for (int ranks : {2, 3}) {
      SCOPED_TRACE(std::to_string(ranks) + " ranks");
      ScopedDir dn("dpsn" + std::to_string(ranks));
      ExpectIdentical(one, RunOnRanks(*spec, ranks, dn.path(), -1, 1, Clock::kReal, data));
    }
  }
}

// A model graph with batch normalization: a residual block (conv, batch_norm, relu; conv,
// batch_norm; add), pooling and a dense head. Batch norm's statistics are those of the global
// batch, summed exactly over the blocks and ranks, so the losses, the weights and the moving
// statistics in the final checkpoint are one process's, bit for bit, on 2 threads and on 2, 3 and
// 4 ranks (3 and 4 do not divide the 12 blocks evenly).
TEST(DataParallelTest, ResidualGraphWithBatchNormIsBitIdenticalToOneProcess) {
  JobSpec spec = SmallCnnJob(testing::kSanitized ? 3 : 8);
  spec.model.layers = {
      LayerSpec::Conv2d(8, 3, Padding::kSame, Activation::kNone, 2),
      LayerSpec::BatchNorm(),
      LayerSpec::Relu().Named("a"),
      LayerSpec::Conv2d(8, 3, Padding::kSame, Activation::kNone),
      LayerSpec::BatchNorm(0.9f).Named("bn_b"),
      LayerSpec::Of(LayerType::kAdd).Named("sum", {"a", "bn_b"}),
      LayerSpec::Relu(),
      LayerSpec::Of(LayerType::kGlobalAvgPool),
      LayerSpec::Dense(10, Activation::kNone),
  };
  spec.batch_size = 30;
  spec.distributed.reduction_blocks = 12;
  ScopedDir d1("dpbn1");
  const Outcome one = RunOnRanks(spec, 1, d1.path());
  ASSERT_EQ(one.global_step, spec.max_steps);
  int moving = 0;
  for (const auto& [name, t] : one.checkpoint.tensors) {
    moving += name.find("/moving_") != std::string::npos;
  }
  EXPECT_EQ(moving, 4);
  {
    SCOPED_TRACE("one process, 2 threads");
    ScopedDir d2("dpbn1t2");
    ExpectIdentical(one, RunOnRanks(spec, 1, d2.path(), -1, 2));
  }
  for (int ranks : {2, 3, 4}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    ScopedDir dn("dpbnn" + std::to_string(ranks));
    ExpectIdentical(one, RunOnRanks(spec, ranks, dn.path()));
  }
}

// The optimisation of the image models (docs/optimizers.md): AdamW's decoupled weight decay of
// the kernels, a cosine schedule with warmup and label smoothing, on the residual graph with batch
// norm; and momentum decaying every parameter. One process's results bit for bit on 2 and 3
// ranks, and after a resume with another number of ranks in the middle of the warmup-then-decay
// schedule. And they are in use: the run is not plain Adam's, and label smoothing already changes
// the first step's loss (taken before any update). weight_decay_test.cpp checks each update.
TEST(DataParallelTest, WeightDecayCosineScheduleAndLabelSmoothingKeepThePromises) {
  const int64_t steps = testing::kSanitized ? 4 : 8;
  JobSpec adamw = SmallCnnJob(steps);
  adamw.model.layers = {
      LayerSpec::Conv2d(8, 3, Padding::kSame, Activation::kNone, 2),
      LayerSpec::BatchNorm(),
      LayerSpec::Relu().Named("a"),
      LayerSpec::Conv2d(8, 3, Padding::kSame, Activation::kNone),
      LayerSpec::BatchNorm().Named("bn_b"),
      LayerSpec::Of(LayerType::kAdd).Named("sum", {"a", "bn_b"}),
      LayerSpec::Relu(),
      LayerSpec::Of(LayerType::kGlobalAvgPool),
      LayerSpec::Dense(10, Activation::kNone),
  };
  adamw.batch_size = 30;
  adamw.distributed.reduction_blocks = 12;
  JobSpec plain = adamw;
  adamw.optimizer.type = OptimizerOptions::Type::kAdamW;
  adamw.optimizer.weight_decay = 0.05f;
  adamw.optimizer.learning_rate = LearningRateSchedule::CosineDecay(0.01f, steps - 2, 0.1f, 2);
  adamw.label_smoothing = 0.1f;
  JobSpec momentum = SmallCnnJob(steps);
  momentum.batch_size = 30;
  momentum.optimizer.type = OptimizerOptions::Type::kMomentum;
  momentum.optimizer.weight_decay = 0.01f;
  momentum.optimizer.weight_decay_parameters = OptimizerOptions::DecayedParameters::kAll;
  momentum.optimizer.learning_rate = LearningRateSchedule::CosineDecay(0.05f, steps, 0.0f, 0);
  ASSERT_TRUE(ValidateJobSpec(adamw).ok()) << ValidateJobSpec(adamw).ToString();
  ASSERT_TRUE(ValidateJobSpec(momentum).ok()) << ValidateJobSpec(momentum).ToString();
  {
    ScopedDir dp("wdplain"), da("wdadamw");
    const Outcome without = RunOnRanks(plain, 1, dp.path());
    const Outcome with = RunOnRanks(adamw, 1, da.path());
    EXPECT_FALSE(BitIdentical(without.checkpoint, with.checkpoint));
    EXPECT_NE(without.losses.at(1), with.losses.at(1));  // the smoothed loss from step 1 on
  }
  for (const JobSpec* spec : {&adamw, &momentum}) {
    SCOPED_TRACE(spec == &adamw ? "adamw" : "momentum");
    ScopedDir d1("wd1");
    const Outcome one = RunOnRanks(*spec, 1, d1.path());
    ASSERT_EQ(one.global_step, steps);
    for (int ranks : {2, 3}) {
      SCOPED_TRACE(std::to_string(ranks) + " ranks");
      ScopedDir dn("wdn" + std::to_string(ranks));
      ExpectIdentical(one, RunOnRanks(*spec, ranks, dn.path()));
    }
    // Stopped after 3 steps (inside the warmup for adamw) on 2 ranks, resumed on 1.
    ScopedDir dr("wdresume");
    JobSpec first = *spec;
    first.max_steps = 3;
    ASSERT_EQ(RunOnRanks(first, 2, dr.path()).global_step, 3);
    const Outcome resumed = RunOnRanks(*spec, 1, dr.path());
    EXPECT_EQ(resumed.global_step, steps);
    EXPECT_TRUE(BitIdentical(one.checkpoint, resumed.checkpoint))
        << "largest difference " << RelativeDifference(one.checkpoint, resumed.checkpoint);
    for (int64_t step = 4; step <= steps; ++step) {
      EXPECT_EQ(resumed.losses.at(step), one.losses.at(step)) << "step " << step;
    }
  }
}

// Augmentation of colour images normalized per channel (every transform, docs/data.md), on the
// residual graph with batch norm over two epochs of the training split: one process's results bit
// for bit on 2 and 3 ranks, and after a stop and a resume, in one process and from 2 ranks onto 1,
// across the epoch boundary. And it is in use: the run differs from one without it.
TEST(DataParallelTest, AugmentationKeepsThePromises) {
  Datasets data = RandomDatasets(Shape{8, 8, 3}, 3, 4);  // 120 training examples: 4 batches
  data.preprocessing = Preprocessing::kScale255;
  ASSERT_TRUE(NormalizePerChannel(&data).ok());
  const int64_t steps = testing::kSanitized ? 5 : 8;  // into the second epoch
  JobSpec spec = SmallCnnJob(steps);
  spec.model.layers = {
      LayerSpec::Conv2d(8, 3, Padding::kSame, Activation::kNone),
      LayerSpec::BatchNorm(),
      LayerSpec::Relu().Named("a"),
      LayerSpec::Conv2d(8, 3, Padding::kSame, Activation::kNone),
      LayerSpec::BatchNorm().Named("bn_b"),
      LayerSpec::Of(LayerType::kAdd).Named("sum", {"a", "bn_b"}),
      LayerSpec::Relu(),
      LayerSpec::Of(LayerType::kGlobalAvgPool),
      LayerSpec::Dense(3, Activation::kNone),
  };
  spec.batch_size = 30;
  spec.distributed.reduction_blocks = 12;
  JobSpec plain = spec;
  spec.augmentation.random_crop_padding = 2;
  spec.augmentation.horizontal_flip = true;
  spec.augmentation.translate = 0.125f;
  spec.augmentation.brightness = 0.1f;
  spec.augmentation.contrast = 0.2f;
  ASSERT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec).ToString();
  ScopedDir d1("aug1");
  const Outcome one = RunOnRanks(spec, 1, d1.path(), -1, 1, Clock::kReal, &data);
  ASSERT_EQ(one.global_step, steps);
  {
    ScopedDir dp("augplain");
    const Outcome without = RunOnRanks(plain, 1, dp.path(), -1, 1, Clock::kReal, &data);
    EXPECT_NE(without.losses.at(1), one.losses.at(1));  // the first batch is augmented
    EXPECT_FALSE(BitIdentical(without.checkpoint, one.checkpoint));
  }
  for (int ranks : {2, 3}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    ScopedDir dn("augn" + std::to_string(ranks));
    ExpectIdentical(one, RunOnRanks(spec, ranks, dn.path(), -1, 1, Clock::kReal, &data));
  }
  for (int first_ranks : {1, 2}) {
    SCOPED_TRACE("stopped after 3 steps on " + std::to_string(first_ranks) + " rank(s)");
    ScopedDir dr("augresume");
    JobSpec first = spec;
    first.max_steps = 3;
    ASSERT_EQ(RunOnRanks(first, first_ranks, dr.path(), -1, 1, Clock::kReal, &data).global_step, 3);
    const Outcome resumed = RunOnRanks(spec, 1, dr.path(), -1, 1, Clock::kReal, &data);
    EXPECT_EQ(resumed.global_step, steps);
    EXPECT_TRUE(BitIdentical(one.checkpoint, resumed.checkpoint))
        << "largest difference " << RelativeDifference(one.checkpoint, resumed.checkpoint);
    for (int64_t step = 4; step <= steps; ++step) {
      EXPECT_EQ(resumed.losses.at(step), one.losses.at(step)) << "step " << step;
    }
  }
}

// Each rank updates only its own part of every parameter (a gathered kernel's rows, a share of
// the others) and of the optimizer's slots; the parameters' parts are exchanged every step, the
// slots' only when a checkpoint needs them. Until then a rank refuses to capture one; after a
// step with a whole-state vote (from any rank) or MakeStateWhole on every rank, its capture is
// one process's, bit for bit. Without slots (gradient descent) the state is always whole.
TEST(DataParallelTest, ARankCapturesACheckpointOnlyOnceTheStateIsWhole) {
  for (auto type : {OptimizerOptions::Type::kAdam, OptimizerOptions::Type::kMomentum,
                    OptimizerOptions::Type::kSgd}) {
    SCOPED_TRACE("optimizer " + std::to_string(static_cast<int>(type)));
    JobSpec spec = GatheredDenseJob(3);
    spec.optimizer.type = type;
    const bool slots = type != OptimizerOptions::Type::kSgd;
    const Datasets& data = testing::SmallFashionMnist();
    const auto make_trainer = [&](Communicator* comm) {
      return Trainer::Create(spec.model, spec.optimizer, data.train, data.num_classes,
                             {.batch_size = spec.batch_size,
                              .seed = spec.seed,
                              .communicator = comm,
                              .reduction_blocks = spec.distributed.reduction_blocks});
    };
    auto one = make_trainer(nullptr);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    std::vector<CheckpointData> want;
    for (int step = 1; step <= 3; ++step) {
      ASSERT_TRUE((*one)->Step().error.ok());
      want.push_back(*CaptureTrainer(**one));
    }
    for (int ranks : {2, 3}) {
      SCOPED_TRACE(std::to_string(ranks) + " ranks");
      std::mutex mu;
      std::vector<std::string> failures;
      const auto expect = [&](bool ok, const std::string& what) {
        std::lock_guard<std::mutex> lock(mu);
        if (!ok) failures.push_back(what);
      };
      RunRanks(ranks, [&](std::shared_ptr<Communicator> comm) {
        auto t = make_trainer(comm.get());
        expect(t.ok(), "create");
        if (!t.ok()) return;
        const std::string rank = "rank " + std::to_string(comm->rank()) + ": ";
        Trainer& trainer = **t;
        expect(trainer.state_whole(), rank + "whole before the first step");
        expect(trainer.Step().error.ok(), rank + "step 1");
        expect(trainer.state_whole() == !slots, rank + "whole after step 1 only without slots");
        const auto at1 = CaptureTrainer(trainer);
        if (slots) {
          expect(at1.status().code() == StatusCode::kFailedPrecondition,
                 rank + "capture refused: " + at1.status().ToString());
        } else {
          expect(at1.ok() && BitIdentical(*at1, want[0]), rank + "step 1 is one process's");
        }
        // Only the last rank votes.
        const StepResult r = trainer.Step({.whole_state_vote = comm->rank() == ranks - 1});
        expect(r.error.ok() && trainer.state_whole(), rank + "whole after the voted step 2");
        auto at2 = CaptureTrainer(trainer);
        expect(at2.ok() && BitIdentical(*at2, want[1]), rank + "step 2 is one process's");
        expect(trainer.Step().error.ok() && trainer.state_whole() == !slots, rank + "step 3");
        expect(trainer.MakeStateWhole().ok() && trainer.state_whole(), rank + "made whole");
        auto at3 = CaptureTrainer(trainer);
        expect(at3.ok() && BitIdentical(*at3, want[2]), rank + "step 3 is one process's");
      });
      EXPECT_TRUE(failures.empty()) << ::testing::PrintToString(failures);
    }
  }
}

// Every checkpoint of `dir`, by step.
std::map<int64_t, CheckpointData> AllCheckpoints(const std::string& dir) {
  std::map<int64_t, CheckpointData> out;
  auto list = ListCheckpoints(dir);
  EXPECT_TRUE(list.ok()) << list.status().ToString();
  if (!list.ok()) return out;
  for (const CheckpointFileInfo& f : *list) {
    auto data = ReadCheckpointFile(f.path);
    EXPECT_TRUE(data.ok()) << f.path << ": " << data.status().ToString();
    if (data.ok()) out.emplace(f.global_step, std::move(data).value());
  }
  return out;
}

// The chief's checkpoints during training, by steps and by seconds, hold the whole state: the
// step before each save carries its whole-state vote. Each is one process's at its step.
TEST(DataParallelTest, CheckpointsDuringTrainingAreOneProcesssBitForBit) {
  JobSpec by_steps = GatheredDenseJob(8);
  by_steps.hooks.checkpoint.trigger.every_steps = 3;
  by_steps.hooks.checkpoint.max_to_keep = 10;
  JobSpec by_secs = by_steps;
  by_secs.hooks.checkpoint.trigger = {.every_secs = 25};
  ScopedDir d1("dpc1");
  JobSpec every_step = by_steps;
  every_step.hooks.checkpoint.trigger.every_steps = 1;
  RunOnRanks(every_step, 1, d1.path());
  const std::map<int64_t, CheckpointData> want = AllCheckpoints(d1.path());
  ASSERT_EQ(want.size(), 9u);  // steps 0 to 8
  struct Case {
    const char* name;
    const JobSpec& spec;
    Clock clock;
    std::vector<int64_t> steps;
  };
  for (const Case& c : {
           Case{"every 3 steps", by_steps, Clock::kReal, {0, 3, 6, 8}},
           // Steps 4 and 7 begin 30 s after the last save: the saver votes before them.
           Case{"every 25 s, time moving after steps", by_secs, Clock::kAfterSteps, {0, 4, 7, 8}},
           // 30 s pass during step 3 (and 30 s after the save at 4, during step 7): one process
           // would save after it, but its state is not whole, so the save follows step 4 (and 8),
           // whose vote the saver gave once the deadline had passed.
           Case{"every 25 s, time moving during steps", by_secs, Clock::kDuringSteps, {0, 4, 8}},
       }) {
    SCOPED_TRACE(c.name);
    ScopedDir d2("dpc2");
    const Outcome o = RunOnRanks(c.spec, 2, d2.path(), -1, 1, c.clock);
    EXPECT_EQ(o.global_step, 8);
    const std::map<int64_t, CheckpointData> got = AllCheckpoints(d2.path());
    std::vector<int64_t> steps;
    for (const auto& [step, data] : got) {
      steps.push_back(step);
      EXPECT_TRUE(BitIdentical(data, want.at(step))) << "step " << step;
    }
    EXPECT_EQ(steps, c.steps);
  }
}

TEST(DataParallelTest, TheSameNumberOfRanksIsBitIdentical) {
  const JobSpec spec = SmallCnnJob(6);
  ScopedDir a("dpa"), b("dpb");
  const Outcome x = RunOnRanks(spec, 3, a.path());
  const Outcome y = RunOnRanks(spec, 3, b.path());
  EXPECT_TRUE(BitIdentical(x.checkpoint, y.checkpoint));
  EXPECT_EQ(x.losses, y.losses);
}

TEST(DataParallelTest, ACheckpointResumesWithAnotherNumberOfRanks) {
  ScopedDir one_dir("dp_one"), mixed_dir("dp_mixed");
  const Outcome one = RunOnRanks(SmallCnnJob(10), 1, one_dir.path());
  const Outcome first = RunOnRanks(SmallCnnJob(5), 2, mixed_dir.path());
  ASSERT_EQ(first.global_step, 5);
  const Outcome second = RunOnRanks(SmallCnnJob(10), 3, mixed_dir.path());
  EXPECT_EQ(second.global_step, 10);
  EXPECT_TRUE(BitIdentical(one.checkpoint, second.checkpoint));
  EXPECT_EQ(second.checkpoint.states, one.checkpoint.states);
  for (int64_t step = 6; step <= 10; ++step) {
    EXPECT_NEAR(second.losses.at(step), one.losses.at(step), 1e-12) << "step " << step;
  }
}

TEST(DataParallelTest, AStopFromAnyRankEndsAllRanksAtTheSameStep) {
  for (int stop_rank : {0, 2}) {
    SCOPED_TRACE("stop on rank " + std::to_string(stop_rank));
    ScopedDir dir("dp_stop" + std::to_string(stop_rank));
    const Outcome o = RunOnRanks(SmallCnnJob(1000), 3, dir.path(), stop_rank);
    EXPECT_EQ(o.outcome, JobResult::Outcome::kStopped);
    EXPECT_EQ(o.stop_cause, JobResult::StopCause::kRequest);
    EXPECT_EQ(o.global_step, 1);             // the vote rode on the first step
    EXPECT_EQ(o.checkpoint.global_step, 1);  // the chief's final checkpoint
  }
}

// resources.time_limit_secs: each rank's clock says when; the ranks stop together, after a final
// checkpoint, as on a stop vote. Time here moves 10 s per step, and the limit is 35 s.
TEST(DataParallelTest, ATimeLimitStopsEveryRankAfterTheSameStep) {
  JobSpec spec = SmallCnnJob(1000);
  spec.resources.time_limit_secs = 35;
  for (int ranks : {1, 3}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    ScopedDir dir("dp_time" + std::to_string(ranks));
    const Outcome o = RunOnRanks(spec, ranks, dir.path(), -1, 1, Clock::kAfterSteps);
    EXPECT_EQ(o.outcome, JobResult::Outcome::kStopped);
    // 40 s after step 4: one process stops there; ranks vote, and the vote rides on step 5.
    const int64_t step = ranks == 1 ? 4 : 5;
    EXPECT_EQ(o.global_step, step);
    EXPECT_EQ(o.checkpoint.global_step, step);
    EXPECT_EQ(o.stop_cause, JobResult::StopCause::kTimeLimit);
    EXPECT_EQ(o.reason, "time limit of 35 s reached (resources.time_limit_secs) at global step " +
                            std::to_string(step));
  }
}

// The classification metrics (metrics.h) of every evaluation, the AUC's whole-split ranking
// included, are one process's to the last bit on 2 and 3 ranks (3 does not divide the splits):
// each rank evaluates its shard, the shards' logits are gathered in split order, and every rank
// computes the metrics from the same data. The evaluation hook's periodic ones and final_eval's.
TEST(DataParallelTest, EvaluationMetricsAreBitIdenticalForAnyNumberOfRanks) {
  JobSpec spec = SmallCnnJob(6);
  spec.hooks.evaluation.enabled = true;
  spec.hooks.evaluation.split = "test";
  spec.hooks.evaluation.trigger.every_steps = 3;
  ScopedDir d1("dpm1");
  const Outcome one = RunOnRanks(spec, 1, d1.path());
  ASSERT_EQ(one.global_step, 6);
  // Steps 3 and 6 by the evaluation hook, 6 again by final_eval (cached, not recomputed).
  ASSERT_EQ(one.evaluations.size(), 3u);
  const EvaluationSummary& last = one.evaluations.back();
  EXPECT_EQ(last.split, "test");
  EXPECT_EQ(last.step, 6);
  EXPECT_EQ(last.metrics.num_classes, 10);
  EXPECT_EQ(last.class_names.size(), 10u);
  double total = 0;
  for (double v : last.metrics.confusion) total += v;
  EXPECT_EQ(total, static_cast<double>(testing::SmallFashionMnist().test.size()));
  EXPECT_TRUE(SameBits(one.final_values.at("test/auc"), last.metrics.auc));
  EXPECT_TRUE(SameBits(one.final_values.at("test/f1_macro"), last.metrics.f1_macro));
  EXPECT_GT(last.metrics.auc, 0.5);  // it learned something, so the AUC says more than chance
  for (int ranks : {2, 3}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    ScopedDir dn("dpmn" + std::to_string(ranks));
    const Outcome n = RunOnRanks(spec, ranks, dn.path());
    ASSERT_EQ(n.evaluations.size(), one.evaluations.size());
    for (size_t i = 0; i < one.evaluations.size(); ++i) {
      const ClassificationMetrics& a = one.evaluations[i].metrics;
      const ClassificationMetrics& b = n.evaluations[i].metrics;
      EXPECT_EQ(n.evaluations[i].step, one.evaluations[i].step);
      for (auto [x, y, what] : {std::tuple{a.accuracy, b.accuracy, "accuracy"},
                                {a.precision_macro, b.precision_macro, "precision_macro"},
                                {a.recall_macro, b.recall_macro, "recall_macro"},
                                {a.f1_macro, b.f1_macro, "f1_macro"},
                                {a.auc, b.auc, "auc"},
                                {a.log_loss, b.log_loss, "log_loss"},
                                {a.weight_sum, b.weight_sum, "weight_sum"}}) {
        EXPECT_TRUE(SameBits(x, y)) << what << ": " << x << " vs " << y;
      }
      ExpectSameBits(a.confusion, b.confusion, "confusion");
      ExpectSameBits(a.precision, b.precision, "precision");
      ExpectSameBits(a.recall, b.recall, "recall");
      ExpectSameBits(a.f1, b.f1, "f1");
    }
    for (const char* m : {"test/auc", "test/log_loss", "test/f1_macro", "test/precision_macro"}) {
      EXPECT_TRUE(SameBits(n.final_values.at(m), one.final_values.at(m))) << m;
    }
  }
}

TEST(DataParallelTest, SecondTriggeredEvaluationIsRefusedNamingTheField) {
  JobSpec spec = SmallCnnJob(5);
  spec.hooks.evaluation.enabled = true;
  spec.hooks.evaluation.trigger.every_secs = 30;
  EXPECT_TRUE(testing::FailsNaming(CheckDistributable(spec, 2), "hooks.evaluation.every_secs"));
  EXPECT_TRUE(CheckDistributable(spec, 1).ok());
  spec.distributed.workers = 2;
  EXPECT_TRUE(testing::FailsNaming(ValidateJobSpec(spec), "hooks.evaluation.every_secs"));
  spec = SmallCnnJob(5);
  spec.distributed.workers = 11;  // batch 10
  EXPECT_TRUE(testing::FailsNaming(ValidateJobSpec(spec), "batch_size"));
}

}  // namespace data_parallel_test
}  // namespace trainingd::engine
