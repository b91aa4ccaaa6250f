// ModelServer: the daemon's models out (docs/models.md). It implements api::ModelService beside
// the JobManager (not inside it): a job's checkpoints exported as ONNX, and inference on them.
//
// How it serves:
//   - Inference runs on the server's own threads (`threads`, each with `compute_threads` for the
//     engine's loops): never the HTTP threads, never a training job's workers.
//   - Models load lazily, on an inference thread, from a job's checkpoint directory (model.json
//     and the checkpoint: engine::LoadTrainedModel) and stay in an LRU cache whose models
//     together hold at most `memory_budget_bytes`; loading one evicts the least recently used.
//     A model that alone needs more than the budget is refused (409 naming both).
//   - Requests for one model and version are batched dynamically: a batch starts once
//     `max_batch` examples wait or the oldest has waited `max_delay`, whichever comes first.
//   - The queue is bounded (`max_queue_examples`): a request beyond it is Unavailable (503 with
//     Retry-After), never queued.
//   - A running job is served too: "the latest" is its latest checkpoint when a batch starts.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "trainingd/api/model_service.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

struct ModelServerOptions {
  // A job's checkpoint directory; NotFound when there is no such job. Required.
  std::function<engine::Result<std::string>(const std::string& job_id)> checkpoint_dir;
  int64_t memory_budget_bytes = int64_t{1} << 30;  // config serving.memory_bytes
  int threads = 1;                                 // config serving.threads
  int compute_threads = 2;                         // config serving.compute_threads
  int64_t max_batch = 64;                          // config serving.max_batch
  std::chrono::microseconds max_delay{0};          // config serving.max_delay_ms
  int64_t max_queue_examples = 4096;               // config serving.max_queue
};

// What ModelServer::Stats counts, for /metrics and the tests.
struct ModelServerStats {
  int64_t cached_models = 0;
  int64_t cached_bytes = 0;
  int64_t loads = 0;
  int64_t evictions = 0;
  int64_t batches = 0;
  int64_t batched_requests = 0;  // requests that ran, in all batches
  int64_t rejected_full = 0;     // refused with 503: the queue was full
  int64_t queued_examples = 0;
};

class ModelServer : public api::ModelService {
 public:
  // InvalidArgument naming the option when one is out of range.
  static engine::Result<std::unique_ptr<ModelServer>> Create(ModelServerOptions options);
  // Stops the threads; requests still queued are answered Unavailable.
  ~ModelServer() override;
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;

  engine::Result<api::ModelMetadata> GetModel(const std::string& id,
                                              std::optional<int64_t> version) override;
  engine::Status ModelReady(const std::string& id, std::optional<int64_t> version) override;
  bool Ready() override;
  void Infer(api::InferRequest request, api::InferDone done) override;
  engine::Result<api::ModelFile> ExportOnnx(const std::string& id,
                                            std::optional<int64_t> step) override;
  std::vector<api::Metric> Metrics() override;

  // Stops taking requests, answers the queued ones Unavailable, and returns once the batches
  // running have answered theirs (the daemon's shutdown, before the HTTP server stops). Call it
  // from one thread, not from a `done` callback.
  void Shutdown();
  ModelServerStats Stats() const;

 private:
  struct Loaded;
  struct Pending;
  struct Key {
    std::string job;
    int64_t version = kDefaultVersion;  // a step, api::kLatestVersion or api::kBestVersion
    auto operator<=>(const Key&) const = default;
  };

  explicit ModelServer(ModelServerOptions options);
  void Loop();
  // No version: the default checkpoint (the best, else the latest).
  static constexpr int64_t kDefaultVersion = -3;
  // The model of `job` at `version` (api::ModelService's meaning), from the cache or loaded
  // into it; *checkpoint (if given) says what it is: "best", "latest" or "step".
  engine::Result<std::shared_ptr<Loaded>> Acquire(const std::string& job,
                                                  std::optional<int64_t> version,
                                                  std::string* checkpoint = nullptr);
  engine::Result<std::shared_ptr<Loaded>> Load(const std::string& dir, const std::string& job,
                                               std::optional<int64_t> version);
  // Runs one batch of requests of one model.
  void RunBatch(const Key& key, std::vector<Pending> batch);

  const ModelServerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<Key, std::deque<Pending>> queues_;
  int64_t queued_examples_ = 0;
  // The cache, most recently used first; and the models being loaded, so two threads never load
  // one twice.
  std::list<std::shared_ptr<Loaded>> cache_;
  int64_t cached_bytes_ = 0;
  ModelServerStats stats_;
  std::mutex load_mu_;  // one load at a time: the budget is checked against what is loaded
  std::vector<std::thread> threads_;
};

}  // namespace trainingd::daemon
