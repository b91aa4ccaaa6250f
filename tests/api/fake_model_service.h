// An in-memory ModelService for the router tests: model "job-1" has versions 100 and 200, takes
// [2] examples in 3 classes, and answers each example with logits (x0, x1, x0 + x1) and their
// probabilities made by a fixed rule; model "empty" has no checkpoint. Infer answers at once
// unless `hold` is set: then it keeps the callbacks for the test to run (TakeHeld, from any
// thread). Set the flags before requests come.
#pragma once

#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "trainingd/api/model_service.h"

namespace trainingd::api {

class FakeModelService : public ModelService {
 public:
  bool ready = true;
  bool hold = false;
  std::vector<std::function<void()>> held;  // the answers kept back by `hold`
  std::vector<InferRequest> seen;           // every request Infer got

  engine::Result<ModelMetadata> GetModel(const std::string& id,
                                         std::optional<int64_t> version) override {
    TRAININGD_RETURN_IF_ERROR(Check(id, version));
    ModelMetadata m;
    m.name = id;
    m.versions = {100, 200};
    m.version = Resolve(version);
    m.best_version = 100;
    m.checkpoint = m.version == 100 ? "best" : "latest";
    m.inputs = {{"input", "FP32", {-1, 2}}};
    m.outputs = {{"logits", "FP32", {-1, 3}}, {"probabilities", "FP32", {-1, 3}}};
    m.class_names = {"a", "b", "c"};
    m.preprocessing = "none";
    m.dataset = "table";
    m.dataset_sha256 = std::string(64, 'f');
    return m;
  }
  engine::Status ModelReady(const std::string& id, std::optional<int64_t> version) override {
    return Check(id, version);
  }
  bool Ready() override { return ready; }
  // The answers held back so far.
  std::vector<std::function<void()>> TakeHeld() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(held, {});
  }
  void Infer(InferRequest request, InferDone done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen.push_back(request);
    }
    engine::Status st = Check(request.model, request.version);
    if (st.ok() && (request.shape.size() != 2 || request.shape[1] != 2)) {
      st = engine::Status::InvalidArgument("inputs[0].shape: does not fit [-1, 2]");
    }
    if (!st.ok()) return done(st);
    InferResult r;
    r.model = request.model;
    r.version = Resolve(request.version);
    r.id = request.id;
    r.batch = request.shape[0];
    r.classes = 3;
    r.class_names = {"a", "b", "c"};
    const auto& out = request.outputs;
    r.with_logits = out.empty() || std::find(out.begin(), out.end(), "logits") != out.end();
    r.with_probabilities =
        out.empty() || std::find(out.begin(), out.end(), "probabilities") != out.end();
    for (int64_t i = 0; i < r.batch; ++i) {
      const float x0 = request.data[2 * i], x1 = request.data[2 * i + 1];
      r.logits.insert(r.logits.end(), {x0, x1, x0 + x1});
      r.probabilities.insert(r.probabilities.end(), {0.25f, 0.25f, 0.5f});
    }
    auto answer = [done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); };
    if (hold) {
      std::lock_guard<std::mutex> lock(mu_);
      held.push_back(std::move(answer));
    } else {
      answer();
    }
  }
  engine::Result<ModelFile> ExportOnnx(const std::string& id,
                                       std::optional<int64_t> step) override {
    TRAININGD_RETURN_IF_ERROR(Check(id, step));
    const int64_t s = Resolve(step);
    return ModelFile{id + "-step" + std::to_string(s) + ".onnx", "ONNX-BYTES", s,
                     s == 100 ? "best" : "latest"};
  }
  // Versions 100 (the best) and 200 (the latest); none = 200, as a job without a best.
  static int64_t Resolve(std::optional<int64_t> version) {
    if (version == kBestVersion) return 100;
    if (!version || *version == kLatestVersion) return 200;
    return *version;
  }

 private:
  std::mutex mu_;
  static engine::Status Check(const std::string& id, std::optional<int64_t> version) {
    if (id == "empty") {
      return engine::Status::FailedPrecondition("model 'empty': the job has no checkpoint yet");
    }
    if (id != "job-1") return engine::Status::NotFound("job '" + id + "' does not exist");
    if (version && *version >= 0 && *version != 100 && *version != 200) {
      return engine::Status::NotFound("version " + std::to_string(*version) +
                                      ": no checkpoint of that step");
    }
    return engine::Status::Ok();
  }
};

}  // namespace trainingd::api
