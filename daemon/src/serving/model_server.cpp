#include "trainingd/daemon/serving/model_server.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "trainingd/api/infer_json.h"
#include "trainingd/api/model_json.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/io/onnx_writer.h"
#include "trainingd/engine/job/trained_model.h"
#include "trainingd/engine/nn/model.h"

namespace trainingd::daemon {
namespace {

namespace eng = trainingd::engine;
using eng::Result;
using eng::Status;
using Clock = std::chrono::steady_clock;

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// A job's checkpoints by step (the tracked ones, and the best when only being the best keeps
// it), and which one a version means.
struct Versions {
  std::vector<int64_t> steps;  // ascending
  std::optional<int64_t> best;
  int64_t step = 0;        // the one meant
  std::string checkpoint;  // "best", "latest" or "step"
};

std::string StepsText(const std::vector<int64_t>& steps) {
  std::string out;
  for (int64_t s : steps) out += (out.empty() ? "" : ", ") + std::to_string(s);
  return out.empty() ? "none" : out;
}

// nullopt = the best, else the latest; api::kLatestVersion, api::kBestVersion, or a step.
Result<Versions> ResolveVersion(const std::string& job, const std::string& dir,
                                std::optional<int64_t> version) {
  auto listed = eng::ListCheckpoints(dir);
  if (!listed.ok()) return listed.status();
  Versions v;
  for (const auto& c : *listed) v.steps.push_back(c.global_step);
  if (auto best = eng::ReadBestCheckpoint(dir); best.ok() && *best) {
    std::error_code ec;
    const std::filesystem::path file = std::filesystem::path(dir) / (*best)->name;
    if (std::filesystem::exists(file, ec)) {
      v.best = (*best)->global_step;
      v.steps.push_back(*v.best);
    }
  }
  std::sort(v.steps.begin(), v.steps.end());
  v.steps.erase(std::unique(v.steps.begin(), v.steps.end()), v.steps.end());
  if (v.steps.empty()) {
    return Status::FailedPrecondition("model '" + job +
                                      "': the job has no checkpoint yet; it can be served once "
                                      "it saves one");
  }
  const int64_t latest = listed->empty() ? v.steps.back() : listed->back().global_step;
  if (version == api::kBestVersion && !v.best) {
    return Status::NotFound("version best: model '" + job +
                            "' has no best checkpoint (it is kept when the job evaluates: "
                            "hooks.evaluation or hooks.early_stopping); it has: " +
                            StepsText(v.steps));
  }
  if (!version || *version == api::kBestVersion) {
    v.step = v.best.value_or(latest);
    v.checkpoint = v.best ? "best" : "latest";
  } else if (*version == api::kLatestVersion) {
    v.step = latest;
    v.checkpoint = "latest";
  } else {
    if (std::find(v.steps.begin(), v.steps.end(), *version) == v.steps.end()) {
      return Status::NotFound("version " + std::to_string(*version) + ": model '" + job +
                              "' has no checkpoint of that step; it has: " + StepsText(v.steps));
    }
    v.step = *version;
    v.checkpoint = v.best == v.step ? "best" : v.step == latest ? "latest" : "step";
  }
  return v;
}

}  // namespace

struct ModelServer::Loaded {
  Loaded(std::string j, int64_t s, int64_t b, eng::TrainedModel m)
      : job(std::move(j)), step(s), bytes(b), model(std::move(m)) {}
  const std::string job;
  const int64_t step;
  const int64_t bytes;  // what it holds (Model::MemoryUse), counted against the budget
  std::mutex mu;        // one Predict (or export) at a time: TrainedModel reuses its buffers
  eng::TrainedModel model;
};

struct ModelServer::Pending {
  api::InferRequest request;
  api::InferDone done;
  int64_t examples = 0;
  Clock::time_point enqueued;
};

Result<std::unique_ptr<ModelServer>> ModelServer::Create(ModelServerOptions options) {
  if (!options.checkpoint_dir) return Status::InvalidArgument("checkpoint_dir: required");
  if (options.threads < 1 || options.threads > 64) {
    return Status::InvalidArgument("serving.threads: must be in [1, 64]");
  }
  if (options.compute_threads < 1 || options.compute_threads > 1024) {
    return Status::InvalidArgument("serving.compute_threads: must be in [1, 1024]");
  }
  if (options.max_batch < 1 || options.max_batch > 65536) {
    return Status::InvalidArgument("serving.max_batch: must be in [1, 65536]");
  }
  if (options.max_queue_examples < options.max_batch) {
    return Status::InvalidArgument("serving.max_queue: must be at least serving.max_batch");
  }
  if (options.max_delay.count() < 0 || options.max_delay > std::chrono::seconds(1)) {
    return Status::InvalidArgument("serving.max_delay_ms: must be in [0, 1000]");
  }
  if (options.memory_budget_bytes < 1) {
    return Status::InvalidArgument("serving.memory_bytes: must be positive");
  }
  std::unique_ptr<ModelServer> server(new ModelServer(std::move(options)));
  for (int i = 0; i < server->options_.threads; ++i) {
    server->threads_.emplace_back([s = server.get()] { s->Loop(); });
  }
  return server;
}

ModelServer::ModelServer(ModelServerOptions options) : options_(std::move(options)) {}

ModelServer::~ModelServer() { Shutdown(); }

void ModelServer::Shutdown() {
  std::map<Key, std::deque<Pending>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    dropped.swap(queues_);
    queued_examples_ = 0;
  }
  wake_.notify_all();
  for (auto& [key, queue] : dropped) {
    for (Pending& p : queue) p.done(Status::Unavailable("the daemon is shutting down"));
  }
  // A batch running now answers its requests before its thread ends.
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

bool ModelServer::Ready() {
  std::lock_guard<std::mutex> lock(mu_);
  return !stopping_;
}

ModelServerStats ModelServer::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ModelServerStats s = stats_;
  s.cached_models = static_cast<int64_t>(cache_.size());
  s.cached_bytes = cached_bytes_;
  s.queued_examples = queued_examples_;
  return s;
}

std::vector<api::Metric> ModelServer::Metrics() {
  const ModelServerStats s = Stats();
  using api::MetricType;
  struct Row {
    const char* name;
    const char* help;
    MetricType type;
    int64_t value;
  };
  const Row rows[] = {
      {"models_loaded", "Models in the serving cache", MetricType::kGauge, s.cached_models},
      {"memory_bytes", "Bytes the cached models hold (the budget is serving.memory_bytes)",
       MetricType::kGauge, s.cached_bytes},
      {"loads_total", "Models loaded from checkpoints", MetricType::kCounter, s.loads},
      {"evictions_total", "Models evicted to stay within the memory budget", MetricType::kCounter,
       s.evictions},
      {"batches_total", "Inference batches run", MetricType::kCounter, s.batches},
      {"requests_total", "Inference requests run in batches", MetricType::kCounter,
       s.batched_requests},
      {"rejected_total", "Inference requests refused with 503: the queue was full",
       MetricType::kCounter, s.rejected_full},
      {"queued_examples", "Examples waiting for a batch", MetricType::kGauge, s.queued_examples},
  };
  std::vector<api::Metric> out;
  for (const Row& r : rows) {
    out.push_back(api::SingleMetric(std::string("trainingd_serving_") + r.name, r.help, r.type,
                                    static_cast<double>(r.value)));
  }
  return out;
}

void ModelServer::Infer(api::InferRequest request, api::InferDone done) {
  if (request.shape.empty() || request.shape[0] < 1) {
    return done(Status::InvalidArgument(request.shape_field + ": needs the batch dimension first"));
  }
  auto dir = options_.checkpoint_dir(request.model);
  if (!dir.ok()) return done(dir.status());
  Pending p;
  p.examples = request.shape[0];
  if (p.examples > options_.max_queue_examples) {
    return done(Status::InvalidArgument(request.shape_field + ": " + std::to_string(p.examples) +
                                        " examples in one request; at most " +
                                        std::to_string(options_.max_queue_examples) +
                                        " (serving.max_queue)"));
  }
  Key key{request.model, request.version.value_or(kDefaultVersion)};
  p.request = std::move(request);
  p.done = std::move(done);
  p.enqueued = Clock::now();
  Status refused;  // answered outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      refused = Status::Unavailable("the daemon is shutting down");
    } else if (queued_examples_ + p.examples > options_.max_queue_examples) {
      ++stats_.rejected_full;
      refused =
          Status::Unavailable("the inference queue is full (" + std::to_string(queued_examples_) +
                              " examples wait; serving.max_queue is " +
                              std::to_string(options_.max_queue_examples) + "); retry");
    } else {
      queued_examples_ += p.examples;
      queues_[key].push_back(std::move(p));
    }
  }
  if (!refused.ok()) return p.done(refused);  // p was not moved
  wake_.notify_one();
}

void ModelServer::Loop() {
  eng::SetComputeThreads(options_.compute_threads);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (queues_.empty()) {
      wake_.wait(lock);
      continue;
    }
    // The model whose first request has waited longest.
    auto best = queues_.begin();
    for (auto it = queues_.begin(); it != queues_.end(); ++it) {
      if (it->second.front().enqueued < best->second.front().enqueued) best = it;
    }
    int64_t waiting = 0;
    for (const Pending& p : best->second) waiting += p.examples;
    const Clock::time_point deadline = best->second.front().enqueued + options_.max_delay;
    if (waiting < options_.max_batch && Clock::now() < deadline) {
      wake_.wait_until(lock, deadline);
      continue;
    }
    // Whole requests up to max_batch examples (at least the first, whatever its size).
    std::vector<Pending> batch;
    int64_t examples = 0;
    auto& queue = best->second;
    while (!queue.empty() &&
           (batch.empty() || examples + queue.front().examples <= options_.max_batch)) {
      examples += queue.front().examples;
      batch.push_back(std::move(queue.front()));
      queue.pop_front();
    }
    const Key key = best->first;
    if (queue.empty()) queues_.erase(best);
    queued_examples_ -= examples;
    lock.unlock();
    RunBatch(key, std::move(batch));
    lock.lock();
  }
}

void ModelServer::RunBatch(const Key& key, std::vector<Pending> batch) {
  auto loaded =
      Acquire(key.job, key.version == kDefaultVersion ? std::nullopt : std::optional(key.version));
  if (!loaded.ok()) {
    for (Pending& p : batch) p.done(loaded.status());
    return;
  }
  Loaded& m = **loaded;
  const eng::ModelInput& input = m.model.input();
  const std::vector<int64_t>& example = input.example_shape.dims();
  const int64_t size = m.model.example_size();
  const int64_t classes = m.model.num_classes();
  // Each request's shape checked against the model's; the ones that fit run together.
  std::vector<Pending*> runs;
  int64_t total = 0;
  for (Pending& p : batch) {
    // A table's rows by column name, or its categorical values apart, as the model's rows.
    if (const Status table = api::ResolveTableRequest(input, &p.request); !table.ok()) {
      p.done(table);
      continue;
    }
    const std::vector<int64_t> dims(p.request.shape.begin() + 1, p.request.shape.end());
    if (dims != example) {
      std::vector<int64_t> want = {-1};
      want.insert(want.end(), example.begin(), example.end());
      p.done(Status::InvalidArgument(p.request.shape_field + ": " + ShapeText(p.request.shape) +
                                     " does not fit the model's input " + ShapeText(want)));
      continue;
    }
    // A classifier's outputs are logits, probabilities and label, a regression model's logits
    // and prediction.
    const bool regression = input.task == eng::Task::kRegression;
    const auto& asked = p.request.outputs;
    const auto it = std::find_if(asked.begin(), asked.end(), [&](const std::string& name) {
      return regression ? name == "probabilities" || name == "label" : name == "prediction";
    });
    if (p.request.decision_threshold && (regression || input.num_classes != 2)) {
      p.done(Status::InvalidArgument(
          "parameters.decision_threshold: only a two-class classifier's label has one; this " +
          (regression ? std::string("regression model")
                      : "model has " + std::to_string(input.num_classes) + " classes")));
      continue;
    }
    if (it != asked.end()) {
      p.done(Status::InvalidArgument(
          "outputs[" + std::to_string(it - asked.begin()) + "].name: a " +
          eng::TaskName(input.task) + " model's outputs are " +
          (regression ? "'logits' and 'prediction'" : "'logits', 'probabilities' and 'label'")));
      continue;
    }
    runs.push_back(&p);
    total += p.examples;
  }
  if (runs.empty()) return;
  std::vector<float> raw;
  const bool one = runs.size() == 1;
  if (!one) {
    raw.reserve(static_cast<size_t>(total * size));
    for (Pending* p : runs) raw.insert(raw.end(), p->request.data.begin(), p->request.data.end());
  }
  std::vector<float> logits(static_cast<size_t>(total * classes));
  std::vector<float> probabilities(logits.size());
  const bool classifier = input.task == eng::Task::kClassification;
  std::vector<int64_t> labels(classifier ? static_cast<size_t>(total) : 0);
  Status predicted;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    predicted = m.model.Predict(one ? runs[0]->request.data.data() : raw.data(), total,
                                logits.data(), probabilities.data());
  }
  if (predicted.ok() && classifier) {
    m.model.PredictedClasses(probabilities.data(), total, labels.data());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.batches;
    stats_.batched_requests += static_cast<int64_t>(runs.size());
  }
  int64_t row = 0;
  for (Pending* p : runs) {
    if (!predicted.ok()) {
      p->done(predicted);
      continue;
    }
    api::InferResult r;
    r.model = key.job;
    r.version = m.step;
    r.id = p->request.id;
    r.batch = p->examples;
    r.classes = classes;
    const auto& outputs = p->request.outputs;
    r.with_logits =
        !p->request.predictions_only &&
        (outputs.empty() || std::find(outputs.begin(), outputs.end(), "logits") != outputs.end());
    r.regression = input.task == eng::Task::kRegression;
    r.with_probabilities =
        outputs.empty() || p->request.predictions_only ||
        std::find(outputs.begin(), outputs.end(), r.regression ? "prediction" : "probabilities") !=
            outputs.end();
    const auto from = static_cast<ptrdiff_t>(row * classes);
    const auto to = static_cast<ptrdiff_t>((row + p->examples) * classes);
    if (r.with_logits) r.logits.assign(logits.begin() + from, logits.begin() + to);
    if (r.with_probabilities) {
      r.probabilities.assign(probabilities.begin() + from, probabilities.begin() + to);
    }
    r.with_labels =
        classifier && (p->request.predictions_only || outputs.empty() ||
                       std::find(outputs.begin(), outputs.end(), "label") != outputs.end());
    if (r.with_labels && p->request.decision_threshold) {
      // This request's own threshold, on its own rows.
      r.labels.resize(static_cast<size_t>(p->examples));
      m.model.PredictedClasses(probabilities.data() + row * classes, p->examples, r.labels.data(),
                               *p->request.decision_threshold);
      r.decision_threshold = p->request.decision_threshold;
    } else if (r.with_labels) {
      r.labels.assign(labels.begin() + row, labels.begin() + row + p->examples);
    }
    r.class_names = input.class_names;
    row += p->examples;
    p->done(std::move(r));
  }
}

Result<std::shared_ptr<ModelServer::Loaded>> ModelServer::Acquire(const std::string& job,
                                                                  std::optional<int64_t> version,
                                                                  std::string* checkpoint) {
  auto dir = options_.checkpoint_dir(job);
  if (!dir.ok()) return dir.status();
  // A running job may replace its latest checkpoint (and delete old ones) meanwhile: once more
  // with a fresh list if the one listed went.
  for (int attempt = 0;; ++attempt) {
    auto resolved = ResolveVersion(job, *dir, version);
    if (!resolved.ok()) return resolved.status();
    const int64_t step = resolved->step;
    if (checkpoint) *checkpoint = resolved->checkpoint;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = cache_.begin(); it != cache_.end(); ++it) {
        if ((*it)->job == job && (*it)->step == step) {
          cache_.splice(cache_.begin(), cache_, it);  // most recently used
          return cache_.front();
        }
      }
    }
    std::lock_guard<std::mutex> loading(load_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);  // loaded by another thread meanwhile?
      for (const auto& m : cache_) {
        if (m->job == job && m->step == step) return m;
      }
    }
    auto loaded = Load(*dir, job, step);
    if (loaded.ok() || loaded.status().code() != eng::StatusCode::kNotFound ||
        (version && *version >= 0) || attempt > 0) {
      return loaded;
    }
  }
}

Result<std::shared_ptr<ModelServer::Loaded>> ModelServer::Load(const std::string& dir,
                                                               const std::string& job,
                                                               std::optional<int64_t> step) {
  auto input = api::ReadModelJson(dir);
  if (!input.ok()) {
    if (input.status().code() == eng::StatusCode::kNotFound) {
      return Status::FailedPrecondition("model '" + job + "': " + input.status().message());
    }
    return input.status();
  }
  // Sized before anything is allocated, so a model that cannot fit is refused, not attempted.
  auto plan = eng::Model::Plan(input->model, eng::ModelExampleShape(*input), input->num_classes, 0);
  if (!plan.ok()) return plan.status();
  const int64_t bytes =
      (*plan)->MemoryUse(1, eng::TrainedModel::kPredictSlice, options_.compute_threads).total();
  if (bytes > options_.memory_budget_bytes) {
    return Status::FailedPrecondition("model '" + job + "' needs " + std::to_string(bytes) +
                                      " bytes to serve; serving.memory_bytes is " +
                                      std::to_string(options_.memory_budget_bytes));
  }
  {
    // Room first: the least recently used go (a batch still running on one keeps it alive until
    // it ends).
    std::lock_guard<std::mutex> lock(mu_);
    while (!cache_.empty() && cached_bytes_ + bytes > options_.memory_budget_bytes) {
      cached_bytes_ -= cache_.back()->bytes;
      cache_.pop_back();
      ++stats_.evictions;
    }
  }
  auto model = eng::LoadTrainedModel(dir, step, *input);
  if (!model.ok()) return model.status();
  auto loaded = std::make_shared<Loaded>(job, model->step(), bytes, std::move(*model));
  std::lock_guard<std::mutex> lock(mu_);
  cache_.push_front(loaded);
  cached_bytes_ += bytes;
  ++stats_.loads;
  return loaded;
}

Result<api::ModelMetadata> ModelServer::GetModel(const std::string& id,
                                                 std::optional<int64_t> version) {
  auto dir = options_.checkpoint_dir(id);
  if (!dir.ok()) return dir.status();
  auto resolved = ResolveVersion(id, *dir, version);
  if (!resolved.ok()) return resolved.status();
  api::ModelMetadata m;
  m.name = id;
  m.versions = resolved->steps;
  m.version = resolved->step;
  m.best_version = resolved->best;
  m.checkpoint = resolved->checkpoint;
  auto input = api::ReadModelJson(*dir);
  if (!input.ok()) {
    if (input.status().code() == eng::StatusCode::kNotFound) {
      return Status::FailedPrecondition("model '" + id + "': " + input.status().message());
    }
    return input.status();
  }
  // A table with categorical columns: its numbers, and its categorical values as strings (the
  // exported ONNX file's inputs).
  std::vector<int64_t> shape = {-1};
  for (int64_t d : input->example_shape.dims()) shape.push_back(d);
  const auto categorical = static_cast<int64_t>(input->categorical.size());
  shape.back() -= categorical;
  m.inputs = {{"input", "FP32", shape}};
  if (categorical > 0) m.inputs.push_back({"categorical", "BYTES", {-1, categorical}});
  m.outputs = {{"logits", "FP32", {-1, input->num_classes}},
               {input->task == eng::Task::kRegression ? "prediction" : "probabilities",
                "FP32",
                {-1, input->num_classes}}};
  if (input->task == eng::Task::kClassification) {
    m.outputs.push_back({"label", "INT64", {-1}});
    if (input->num_classes == 2) m.decision_threshold = input->decision_threshold;
  }
  m.class_names = input->class_names;
  m.preprocessing = eng::PreprocessingName(input->preprocessing);
  m.dataset = input->dataset_name;
  m.dataset_sha256 = input->dataset_sha256;
  return m;
}

Status ModelServer::ModelReady(const std::string& id, std::optional<int64_t> version) {
  if (!Ready()) return Status::Unavailable("the daemon is shutting down");
  auto loaded = Acquire(id, version);
  return loaded.ok() ? Status::Ok() : loaded.status();
}

Result<api::ModelFile> ModelServer::ExportOnnx(const std::string& id, std::optional<int64_t> step) {
  std::string checkpoint;
  auto loaded = Acquire(id, step, &checkpoint);
  if (!loaded.ok()) return loaded.status();
  eng::OnnxMetadata metadata;
  metadata.job_id = id;
  metadata.checkpoint = checkpoint;
  auto bytes = [&] {
    std::lock_guard<std::mutex> lock((*loaded)->mu);
    return eng::ExportOnnx((*loaded)->model, metadata);
  }();
  if (!bytes.ok()) return bytes.status();
  return api::ModelFile{id + "-step" + std::to_string((*loaded)->step) + ".onnx", std::move(*bytes),
                        (*loaded)->step, checkpoint};
}

}  // namespace trainingd::daemon
