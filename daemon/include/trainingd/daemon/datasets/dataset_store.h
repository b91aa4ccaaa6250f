// DatasetStore: the datasets users upload, the owner of that resource beside the JobManager
// (docs/data.md). It implements api::DatasetService.
//
// On disk, under `dir`, each dataset is a directory of its name:
//   <name>/<sha256>.npz            the file as uploaded (or <sha256>.csv)
//   <name>/dataset.json            its record (api::DatasetToJson)
// An upload is written to a directory .upload-<random>/ beside them and checked whole there;
// only then is the directory renamed to <name> (atomically, never over another), so a crash or
// a failure at any point leaves no dataset half made, and Open removes what such a failure left.
// A dataset is immutable: a name is deleted before it is uploaded again, and since the file is
// named by its digest, a job that recorded the old digest finds its data gone rather than
// reading other bytes.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "trainingd/api/dataset_service.h"
#include "trainingd/engine/base/env.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/job/job_spec.h"

namespace trainingd::daemon {

struct DatasetStoreOptions {
  std::string dir;        // the uploads; created if missing
  std::string data_root;  // the operator's IDX directories, listed read-only
  int64_t max_upload_bytes = int64_t{4} << 30;
  // The ids of the queued or running jobs that name dataset `name` (DeleteDataset refuses
  // while there are any). Empty = none ever do.
  std::function<std::vector<std::string>(const std::string& name)> jobs_using;
  engine::Env* env = nullptr;  // clocks (created_at); null = Env::Default()
};

class DatasetStore : public api::DatasetService {
 public:
  // Creates `dir` if needed, removes what interrupted uploads and deletes left, and reads the
  // records. IoError when the directory cannot be made or read.
  static engine::Result<std::unique_ptr<DatasetStore>> Open(DatasetStoreOptions options);

  // A job's dataset made exact: for an upload named by `dataset->name`, fills in its format,
  // digest and how it was uploaded (the spec's canonical form records them). What the spec
  // already gives must agree: a digest or an option of another upload is InvalidArgument naming
  // the field. A name that is no upload is left as it is (an IDX directory, checked later).
  engine::Status ResolveJobDataset(engine::DatasetSpec* dataset) const;

  const std::string& dir() const { return options_.dir; }

  // api::DatasetService
  int64_t MaxUploadBytes() const override { return options_.max_upload_bytes; }
  engine::Result<std::unique_ptr<api::DatasetUpload>> BeginUpload(
      const api::DatasetUploadOptions& options, int64_t declared_bytes) override;
  engine::Result<std::vector<api::DatasetRecord>> ListDatasets() override;
  engine::Result<api::DatasetRecord> GetDataset(const std::string& name) override;
  engine::Status DeleteDataset(const std::string& name) override;
  // IDX directories read the labels and the image bytes up to the last example asked for; an
  // npz streams x_test; a CSV is loaded once and its test split kept (the last CSV asked for).
  engine::Result<api::DatasetExamples> TestExamples(const std::string& name, int64_t offset,
                                                    int64_t limit) override;

 private:
  class Upload;

  explicit DatasetStore(DatasetStoreOptions options) : options_(std::move(options)) {}
  // The record of an IDX directory under the data root (a probe of its headers).
  engine::Result<api::DatasetRecord> IdxRecord(const std::string& name) const;
  bool IsIdxDirectory(const std::string& name) const;
  // An upload that passed its checks takes its name (Upload::Commit).
  engine::Status Adopt(const std::string& staging_dir, const api::DatasetRecord& record);
  void Release(const std::string& name);  // an upload's name is free again

  const DatasetStoreOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, api::DatasetRecord> records_;  // guarded by mu_
  std::set<std::string> uploading_;                    // names being uploaded; guarded by mu_
  // The test split of the CSV upload asked for last, by its sha256; guarded by mu_.
  std::string csv_test_sha256_;
  std::shared_ptr<const engine::RawExamples> csv_test_;
};

}  // namespace trainingd::daemon
