// An in-memory DatasetService for the router and server tests: an upload keeps the bytes of each
// file it is fed, and its Commit "validates" by a rule the tests choose (the dataset's file must
// start with "ok"). Like the real store, only a CSV upload may have a test file.
// Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trainingd/api/dataset_service.h"

namespace trainingd::api {

class FakeDatasetService : public DatasetService {
 public:
  int64_t max_bytes = int64_t{64} << 20;
  std::atomic<int> uploads_alive{0};       // uploads begun and not yet destroyed
  std::atomic<int64_t> largest_append{0};  // the most bytes one Append got

  int64_t MaxUploadBytes() const override { return max_bytes; }

  engine::Result<std::unique_ptr<DatasetUpload>> BeginUpload(const DatasetUploadOptions& options,
                                                             int64_t declared_bytes) override {
    if (options.format != "npz" && options.format != "csv") {
      return engine::Status::InvalidArgument("format: must be npz or csv");
    }
    if (declared_bytes > max_bytes) return engine::Status::ResourceExhausted("over the limit");
    std::lock_guard<std::mutex> lock(mu_);
    if (kept_.count(options.name)) return engine::Status::FailedPrecondition("name taken");
    return std::unique_ptr<DatasetUpload>(new Upload(*this, options));
  }

  engine::Result<std::vector<DatasetRecord>> ListDatasets() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<DatasetRecord> out;
    for (const auto& [name, kept] : kept_) out.push_back(kept.record);
    return out;
  }

  engine::Result<DatasetRecord> GetDataset(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kept_.find(name);
    if (it == kept_.end()) return engine::Status::NotFound("no dataset '" + name + "'");
    return it->second.record;
  }

  engine::Status DeleteDataset(const std::string& name) override {
    std::lock_guard<std::mutex> lock(mu_);
    return kept_.erase(name) ? engine::Status::Ok() : engine::Status::NotFound("no dataset");
  }

  // A committed upload's test split: `test_examples` examples of shape [2, 2, 1], example i
  // holding i, i + 1, i + 2, i + 3 (each plus `fraction`), labelled i % 3, classes "a", "b", "c";
  // bytes unless `fraction` is set.
  int64_t test_examples = 5;
  float fraction = 0;
  engine::Result<DatasetExamples> TestExamples(const std::string& name, int64_t offset,
                                               int64_t limit) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!kept_.count(name)) return engine::Status::NotFound("no dataset '" + name + "'");
    if (offset > test_examples) {
      return engine::Status::InvalidArgument("offset: must be from 0 to " +
                                             std::to_string(test_examples) + ", the test examples");
    }
    DatasetExamples out;
    out.example_shape = {2, 2, 1};
    out.split_examples = test_examples;
    out.first = offset;
    out.class_names = {"a", "b", "c"};
    out.integer_values = fraction == 0;
    for (int64_t i = offset; i < test_examples && i < offset + limit; ++i) {
      for (int64_t v = 0; v < 4; ++v) out.values.push_back(static_cast<float>(i + v) + fraction);
      out.labels.push_back(static_cast<int32_t>(i % 3));
    }
    return out;
  }

  // The bytes a committed upload had.
  std::string Body(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kept_.find(name);
    return it == kept_.end() ? "" : it->second.body[0];
  }
  // The bytes of a committed upload's test file.
  std::string TestBody(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kept_.find(name);
    return it == kept_.end() ? "" : it->second.body[1];
  }

 private:
  struct Kept {
    DatasetRecord record;
    std::string body[2];  // the dataset's file, the test file
  };

  class Upload : public DatasetUpload {
   public:
    Upload(FakeDatasetService& s, DatasetUploadOptions o) : service_(s), options_(std::move(o)) {
      ++service_.uploads_alive;
    }
    ~Upload() override { --service_.uploads_alive; }
    engine::Status Begin(DatasetFile file) override {
      if (file == DatasetFile::kTest && options_.format != "csv") {
        return engine::Status::InvalidArgument("test: only a CSV upload has a test file");
      }
      file_ = file == DatasetFile::kTest ? 1 : 0;
      return engine::Status::Ok();
    }
    engine::Status Append(std::string_view bytes) override {
      int64_t n = static_cast<int64_t>(bytes.size());
      int64_t seen = service_.largest_append.load();
      while (n > seen && !service_.largest_append.compare_exchange_weak(seen, n)) {
      }
      if (static_cast<int64_t>(body_[0].size() + body_[1].size()) + n > service_.max_bytes) {
        return engine::Status::ResourceExhausted("the upload is over the limit");
      }
      body_[file_].append(bytes);
      return engine::Status::Ok();
    }
    engine::Result<DatasetRecord> Commit() override {
      if (body_[0].rfind("ok", 0) != 0) {
        return engine::Status::InvalidArgument("y_train: 59999 labels for 60000 images");
      }
      DatasetRecord r;
      r.name = options_.name;
      r.format = options_.format;
      r.upload = options_;
      r.upload.test_file = !body_[1].empty();
      r.owner = options_.owner;
      r.bytes = static_cast<int64_t>(body_[0].size() + body_[1].size());
      std::lock_guard<std::mutex> lock(service_.mu_);
      service_.kept_[r.name] = Kept{r, {std::move(body_[0]), std::move(body_[1])}};
      return r;
    }

   private:
    FakeDatasetService& service_;
    DatasetUploadOptions options_;
    std::string body_[2];
    int file_ = 0;
  };

  std::mutex mu_;
  std::map<std::string, Kept> kept_;
};

}  // namespace trainingd::api
