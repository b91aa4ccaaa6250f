// ModelServer on real checkpoint directories: requests batched (up to max_batch, or after
// max_delay), each answer its own examples' Predict; the queue bounded (503, never queued); the
// LRU within its memory budget; the latest checkpoint followed; every refusal naming the field.
#include "trainingd/daemon/serving/model_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "trainingd/api/model_json.h"
#include "trainingd/engine/base/random.h"
#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/job/trained_model.h"
#include "trainingd/engine/nn/model.h"

namespace trainingd::daemon {
namespace {

namespace fs = std::filesystem;
namespace eng = trainingd::engine;
using eng::StatusCode;

// An MLP on table rows of 4 features in 3 classes.
eng::ModelInput TableInput(int64_t hidden = 8) {
  eng::ModelInput in;
  in.example_shape = eng::Shape{4};
  in.num_classes = 3;
  in.class_names = {"x", "y", "z"};
  in.preprocessing = eng::Preprocessing::kNone;
  in.dataset_name = "table";
  in.dataset_format = "csv";
  in.model.layers = {eng::LayerSpec::Flatten(),
                     eng::LayerSpec::Dense(hidden, eng::Activation::kRelu),
                     eng::LayerSpec::Dense(3, eng::Activation::kNone)};
  return in;
}

// A checkpoint of `step` with parameters drawn from `seed`, and model.json.
void Save(const std::string& dir, const eng::ModelInput& in, int64_t step, uint64_t seed) {
  ASSERT_TRUE(api::WriteModelJson(dir, in).ok());
  auto model = eng::Model::Build(in.model, in.example_shape, in.num_classes, seed);
  ASSERT_TRUE(model.ok());
  auto manager = eng::CheckpointManager::Create(dir);
  ASSERT_TRUE(manager.ok());
  eng::CheckpointData data;
  data.global_step = step;
  for (const eng::Parameter* p : (*model)->parameters())
    data.tensors.emplace_back(p->name, p->value);
  ASSERT_TRUE((*manager)->Save(data).ok());
}

api::InferRequest Request(const std::string& job, std::vector<float> rows,
                          std::optional<int64_t> version = std::nullopt) {
  api::InferRequest r;
  r.model = job;
  r.version = version;
  r.shape = {static_cast<int64_t>(rows.size() / 4), 4};
  r.data = std::move(rows);
  return r;
}

class ModelServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/trainingd_model_server_XXXXXX";
    root_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(root_);
  }
  std::string Dir(const std::string& job) { return root_ + "/" + job; }
  void Start(ModelServerOptions o) {
    o.checkpoint_dir = [this](const std::string& id) -> eng::Result<std::string> {
      if (!fs::exists(Dir(id))) return eng::Status::NotFound("job '" + id + "' does not exist");
      return Dir(id);
    };
    auto s = ModelServer::Create(std::move(o));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  // Infer, as a future of its answer.
  std::future<eng::Result<api::InferResult>> Send(api::InferRequest r) {
    auto promise = std::make_shared<std::promise<eng::Result<api::InferResult>>>();
    auto future = promise->get_future();
    server_->Infer(std::move(r), [promise](eng::Result<api::InferResult> result) {
      promise->set_value(std::move(result));
    });
    return future;
  }
  eng::Result<api::InferResult> Call(api::InferRequest r) { return Send(std::move(r)).get(); }
  // What the checkpoint's model predicts for `rows` on its own.
  std::vector<float> Expected(const std::string& job, const eng::ModelInput& in,
                              const std::vector<float>& rows) {
    auto m = eng::LoadTrainedModel(Dir(job), std::nullopt, in);
    EXPECT_TRUE(m.ok());
    const int64_t n = static_cast<int64_t>(rows.size() / 4);
    std::vector<float> probs(static_cast<size_t>(n * 3));
    EXPECT_TRUE(m->Predict(rows.data(), n, nullptr, probs.data()).ok());
    return probs;
  }

  std::string root_;
  std::unique_ptr<ModelServer> server_;
};

TEST_F(ModelServerTest, ConcurrentRequestsRunAsOneBatchAndEachGetsItsOwnRows) {
  const eng::ModelInput in = TableInput();
  Save(Dir("a"), in, 100, 1);
  ModelServerOptions o;
  o.max_batch = 6;
  o.max_delay = std::chrono::seconds(1);  // long: only max_batch starts the batch
  Start(o);
  eng::Rng rng(3);
  std::vector<std::vector<float>> rows;
  std::vector<std::future<eng::Result<api::InferResult>>> answers;
  for (int i = 0; i < 3; ++i) {  // 1 + 2 + 3 = 6 examples
    std::vector<float> r;
    for (int k = 0; k < 4 * (i + 1); ++k) r.push_back(rng.Normal() * 3);
    rows.push_back(r);
    answers.push_back(Send(Request("a", r)));
  }
  for (int i = 0; i < 3; ++i) {
    auto got = answers[i].get();
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->version, 100);
    EXPECT_EQ(got->batch, i + 1);
    EXPECT_EQ(got->class_names, in.class_names);
    EXPECT_EQ(got->probabilities, Expected("a", in, rows[i])) << "request " << i;
    EXPECT_EQ(got->logits.size(), got->probabilities.size());
  }
  const ModelServerStats s = server_->Stats();
  EXPECT_EQ(s.batches, 1);
  EXPECT_EQ(s.batched_requests, 3);
  EXPECT_EQ(s.loads, 1);
}

TEST_F(ModelServerTest, ALoneRequestRunsAfterMaxDelay) {
  Save(Dir("a"), TableInput(), 100, 1);
  ModelServerOptions o;
  o.max_batch = 64;
  o.max_delay = std::chrono::milliseconds(50);
  Start(o);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(Call(Request("a", {1, 2, 3, 4})).ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
}

TEST_F(ModelServerTest, AFullQueueIsRefusedNotQueued) {
  Save(Dir("a"), TableInput(), 100, 1);
  ModelServerOptions o;
  o.max_batch = 8;
  o.max_queue_examples = 8;
  o.max_delay = std::chrono::seconds(1);
  Start(o);
  std::vector<float> three(12, 1.0f);
  auto first = Send(Request("a", three));
  auto second = Send(Request("a", three));
  auto refused = Call(Request("a", three));  // 9 > 8 examples
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("serving.max_queue"), std::string::npos);
  EXPECT_EQ(server_->Stats().rejected_full, 1);
  auto big = Call(Request("a", std::vector<float>(4 * 9, 1.0f)));  // never fits
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  server_->Shutdown();  // the queued ones are answered, Unavailable
  EXPECT_EQ(first.get().status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(second.get().status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(Call(Request("a", {1, 2, 3, 4})).status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(server_->Ready());
}

TEST_F(ModelServerTest, RefusalsNameTheField) {
  Save(Dir("a"), TableInput(), 100, 1);
  fs::create_directories(Dir("empty"));
  ASSERT_TRUE(api::WriteModelJson(Dir("empty"), TableInput()).ok());
  Save(Dir("old"), TableInput(), 5, 1);
  fs::remove(Dir("old") + "/model.json");  // trained before model.json existed
  Start({});
  EXPECT_EQ(Call(Request("nope", {1, 2, 3, 4})).status().code(), StatusCode::kNotFound);
  auto empty = Call(Request("empty", {1, 2, 3, 4}));
  EXPECT_EQ(empty.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(empty.status().message().find("no checkpoint yet"), std::string::npos);
  auto version = Call(Request("a", {1, 2, 3, 4}, 7));
  EXPECT_EQ(version.status().code(), StatusCode::kNotFound);
  EXPECT_NE(version.status().message().find("it has: 100"), std::string::npos)
      << version.status().message();
  api::InferRequest wide = Request("a", {1, 2, 3, 4, 5, 6});
  wide.shape = {1, 6};
  auto shape = Call(wide);
  EXPECT_EQ(shape.status().message(),
            "inputs[0].shape: [1, 6] does not fit the model's input [-1, 4]");
  EXPECT_EQ(Call(Request("old", {1, 2, 3, 4})).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(server_->GetModel("old", std::nullopt).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_TRUE(server_->ModelReady("a", 100).ok());
  EXPECT_EQ(server_->ModelReady("a", 3).code(), StatusCode::kNotFound);
}

TEST_F(ModelServerTest, TheCacheStaysWithinItsBudget) {
  const eng::ModelInput in = TableInput(64);
  Save(Dir("a"), in, 100, 1);
  Save(Dir("b"), in, 100, 2);
  auto plan = eng::Model::Plan(in.model, in.example_shape, in.num_classes, 0);
  ASSERT_TRUE(plan.ok());
  ModelServerOptions o;
  const int64_t one =
      (*plan)->MemoryUse(1, eng::TrainedModel::kPredictSlice, o.compute_threads).total();
  o.memory_budget_bytes = one + one / 2;  // room for one model
  Start(o);
  const std::vector<float> row = {1, -2, 3, 0.5f};
  for (const char* job : {"a", "b", "a", "b"}) {
    auto r = Call(Request(job, row));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->probabilities, Expected(job, in, row)) << job;
    EXPECT_LE(server_->Stats().cached_bytes, o.memory_budget_bytes);
  }
  EXPECT_EQ(server_->Stats().loads, 4);
  EXPECT_EQ(server_->Stats().evictions, 3);
  EXPECT_EQ(server_->Stats().cached_models, 1);

  // A model that alone needs more than the budget is refused, not loaded.
  Save(Dir("huge"), TableInput(4096), 100, 3);
  auto huge = Call(Request("huge", row));
  EXPECT_EQ(huge.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(huge.status().message().find("serving.memory_bytes"), std::string::npos);
  EXPECT_EQ(server_->Stats().loads, 4);
}

TEST_F(ModelServerTest, TheLatestCheckpointIsFollowedAndVersionsStay) {
  const eng::ModelInput in = TableInput();
  Save(Dir("a"), in, 100, 1);
  Start({});
  const std::vector<float> row = {1, 2, 3, 4};
  auto first = Call(Request("a", row));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->version, 100);
  Save(Dir("a"), in, 200, 2);  // the job saved another
  auto second = Call(Request("a", row));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->version, 200);
  EXPECT_NE(second->probabilities, first->probabilities);
  auto pinned = Call(Request("a", row, 100));
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(pinned->probabilities, first->probabilities);
  auto meta = server_->GetModel("a", std::nullopt);
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->versions, (std::vector<int64_t>{100, 200}));
  EXPECT_EQ(meta->version, 200);
  EXPECT_EQ(meta->inputs[0].shape, (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(meta->outputs[1].shape, (std::vector<int64_t>{-1, 3}));
  auto file = server_->ExportOnnx("a", 100);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->filename, "a-step100.onnx");
  EXPECT_GT(file->bytes.size(), 100u);
}

// A job with a best checkpoint (kept past max_to_keep) is served and exported at it by default;
// "latest" and a step still take the others, and the answers say which is which.
TEST_F(ModelServerTest, TheBestCheckpointIsTheDefaultAndLatestStaysReachable) {
  const eng::ModelInput in = TableInput();
  Save(Dir("b"), in, 100, 1);
  {
    auto manager = eng::CheckpointManager::Create(Dir("b"));
    ASSERT_TRUE(manager.ok());
    eng::BestCheckpoint best;
    best.global_step = 100;
    best.metric = "validation/loss";
    best.value = 0.5;
    ASSERT_TRUE((*manager)->MarkBest(best).ok());
  }
  for (int64_t step = 200; step <= 700; step += 100) Save(Dir("b"), in, step, step);
  ASSERT_FALSE(fs::exists(Dir("b") + "/model.ckpt-200"));  // max_to_keep 5 dropped it
  ASSERT_TRUE(fs::exists(Dir("b") + "/model.ckpt-100"));   // the best stays
  Start({});
  const std::vector<float> row = {1, 2, 3, 4};
  auto by_default = Call(Request("b", row));
  ASSERT_TRUE(by_default.ok()) << by_default.status().ToString();
  EXPECT_EQ(by_default->version, 100);
  auto best = Call(Request("b", row, api::kBestVersion));
  ASSERT_TRUE(best.ok());
  EXPECT_EQ(best->version, 100);
  auto latest = Call(Request("b", row, api::kLatestVersion));
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->version, 700);
  EXPECT_NE(latest->probabilities, by_default->probabilities);

  auto meta = server_->GetModel("b", std::nullopt);
  ASSERT_TRUE(meta.ok()) << meta.status().ToString();
  EXPECT_EQ(meta->versions, (std::vector<int64_t>{100, 300, 400, 500, 600, 700}));
  EXPECT_EQ(meta->version, 100);
  EXPECT_EQ(meta->checkpoint, "best");
  EXPECT_EQ(meta->best_version, std::optional<int64_t>(100));
  auto meta_latest = server_->GetModel("b", api::kLatestVersion);
  ASSERT_TRUE(meta_latest.ok());
  EXPECT_EQ(meta_latest->version, 700);
  EXPECT_EQ(meta_latest->checkpoint, "latest");

  auto file = server_->ExportOnnx("b", std::nullopt);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->filename, "b-step100.onnx");
  EXPECT_EQ(file->step, 100);
  EXPECT_EQ(file->checkpoint, "best");
  EXPECT_NE(file->bytes.find("checkpoint"), std::string::npos);  // in the ONNX metadata
  auto latest_file = server_->ExportOnnx("b", api::kLatestVersion);
  ASSERT_TRUE(latest_file.ok());
  EXPECT_EQ(latest_file->step, 700);
  EXPECT_EQ(latest_file->checkpoint, "latest");

  // A job without a best: the default is the latest, and "best" is a 404 saying why.
  Save(Dir("c"), in, 50, 3);
  auto plain = server_->ExportOnnx("c", std::nullopt);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->step, 50);
  EXPECT_EQ(plain->checkpoint, "latest");
  auto no_best = server_->ExportOnnx("c", api::kBestVersion);
  ASSERT_FALSE(no_best.ok());
  EXPECT_EQ(no_best.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_best.status().message().find("no best checkpoint"), std::string::npos);
}

}  // namespace
}  // namespace trainingd::daemon
