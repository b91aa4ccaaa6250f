// DatasetService: what the HTTP API needs from the daemon's dataset store (docs/data.md). api/
// states it; daemon/ implements it (DatasetStore), beside the JobService and not inside it.
// Statuses map to HTTP as the JobService's do (job_service.h), plus AlreadyExists-like conflicts
// as FailedPrecondition (409) and ResourceExhausted as 413. Every method is thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/api/user_service.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/table_columns.h"

namespace trainingd::api {

// How an upload is read: the query parameters of POST /api/v1/datasets.
struct DatasetUploadOptions {
  std::string name;
  std::string format;                  // "npz" or "csv"
  std::string label_column = "label";  // csv
  double test_fraction = 0.2;          // csv: the share of rows that become the test split
  uint64_t split_seed = 0;             // csv: the seed of that split
  std::string normalize = "none";      // "none" or "standard" (tables)
  engine::TableColumnOptions columns;  // csv: the columns' types and missing values
  // csv: the upload brought its own test file (a multipart part "test"), so test_fraction and
  // split_seed do not apply. Set by the store when it commits, not by the query.
  bool test_file = false;
  // The user uploading it (user_service.h); set by the router from the request's principal.
  std::string owner{kAdminUser};
};

// One file of an upload (docs/data.md#uploading).
enum class DatasetFile {
  kMain,  // the dataset's file: the npz, or a CSV's training rows
  kTest,  // a CSV's own test file
};

// The size and SHA-256 of one file of a dataset.
struct DatasetFileRecord {
  std::string sha256;
  int64_t bytes = 0;
};

// One dataset as the API shows it.
struct DatasetRecord {
  std::string name;
  std::string format;  // "idx" (a directory under the data root, read-only), "npz", "csv"
  bool read_only = false;
  // Uploads: the dataset's identity, which a job's spec records. With one file, that file's
  // SHA-256; with a test file too, the SHA-256 of the text "<train sha256>\n<test sha256>\n".
  std::string sha256;
  int64_t bytes = 0;             // uploads: of its files together
  DatasetFileRecord train_file;  // uploads: the dataset's file
  DatasetFileRecord test_file;   // a CSV's own test file; empty sha256 = none
  std::vector<int64_t> example_shape;
  // 0 when a CSV's labels cannot be classes (numbers past kMaxClasses distinct, or not class
  // ids): its jobs are regression's.
  int num_classes = 0;
  std::vector<std::string> class_names;  // empty = "0".."n-1"
  // A CSV whose labels are all finite numbers: a regression job can read them.
  bool numeric_labels = false;
  int64_t train_examples = 0;       // the file's; a job may take validation from them
  int64_t validation_examples = 0;  // the file's own (x_val), else 0
  int64_t test_examples = 0;
  std::string element_type;                      // "uint8", "float32", ...
  std::string preprocessing;                     // "scale_255", "none", "standard"
  std::vector<float> feature_mean, feature_std;  // "standard" only
  DatasetUploadOptions upload;                   // how it was uploaded (uploads only)
  // csv: every column of the header, typed, with what it holds; the features' names.
  std::vector<engine::ColumnSummary> columns;
  std::vector<std::string> feature_names;
  double created_at = 0;  // Unix seconds; 0 for an IDX directory
  std::string owner;      // the user who uploaded it; "" for an IDX directory (the operator's)
};

// Examples of a dataset's split in its raw units (GET /api/v1/datasets/{name}/examples): what
// the model server's infer takes (uint8 pixels as 0..255, a table's values as in its file).
struct DatasetExamples {
  std::vector<int64_t> example_shape;    // [H, W, C] or [F]
  int64_t split_examples = 0;            // in the whole split
  int64_t first = 0;                     // the index of the first example here
  std::vector<float> values;             // size() examples, row-major
  std::vector<int32_t> labels;           // class ids (labels that are classes)
  std::vector<float> targets;            // the labels as numbers (a CSV's numeric labels)
  std::vector<std::string> class_names;  // every class's name, by id
  bool integer_values = false;           // uint8 data: the values are whole numbers 0..255
  // A CSV: its number columns' names, and its categorical columns' names with each example's
  // values of them ("" where missing), row-major (engine::RawExamples).
  std::vector<std::string> feature_names;
  std::vector<std::string> categorical_names;
  std::vector<std::string> categorical;
  size_t size() const { return std::max(labels.size(), targets.size()); }
};

// The most examples one call returns.
inline constexpr int64_t kMaxDatasetExamples = 100;

// The files of one upload, fed in order (UploadBody decodes the request's body into them). The
// store writes them to temporary files; nothing is kept until Commit succeeds, and an upload
// destroyed before that (a client that went away, a refusal) leaves nothing on disk. Not
// thread-safe: one caller at a time.
class DatasetUpload {
 public:
  virtual ~DatasetUpload() = default;
  // The bytes Append takes next are of `file` (until the next Begin); without a Begin they are
  // the dataset's file (kMain). Each file is begun at most once. InvalidArgument naming `test`
  // when the upload cannot have a test file (an npz holds x_test and y_test itself).
  virtual engine::Status Begin(DatasetFile file) = 0;
  // ResourceExhausted once the files together pass the size limit; IoError when the disk fails.
  virtual engine::Status Append(std::string_view bytes) = 0;
  // Validates the whole file (every array, every label, the counts), then renames it into
  // place. InvalidArgument naming the array, column or option that is wrong; FailedPrecondition
  // when the name was taken meanwhile.
  virtual engine::Result<DatasetRecord> Commit() = 0;
};

class DatasetService {
 public:
  virtual ~DatasetService() = default;
  // The largest body an upload may have, in bytes.
  virtual int64_t MaxUploadBytes() const = 0;
  // Checks the options and that the name is free. `declared_bytes` is the Content-Length, or -1
  // when the body is chunked: more than MaxUploadBytes is ResourceExhausted.
  virtual engine::Result<std::unique_ptr<DatasetUpload>> BeginUpload(
      const DatasetUploadOptions& options, int64_t declared_bytes) = 0;
  // Uploads and the data root's IDX directories, by name.
  virtual engine::Result<std::vector<DatasetRecord>> ListDatasets() = 0;
  virtual engine::Result<DatasetRecord> GetDataset(const std::string& name) = 0;
  // An upload only (IDX directories are the operator's: FailedPrecondition), and not while a
  // queued or running job names it (FailedPrecondition naming the jobs).
  virtual engine::Status DeleteDataset(const std::string& name) = 0;
  // Examples [offset, offset + limit) of the test split (fewer at its end), in raw units; limit
  // is at most kMaxDatasetExamples. NotFound for an unknown dataset; InvalidArgument
  // "offset: ..." for an offset past the split; what the file's reader says when it cannot be
  // read (FailedPrecondition for a data root directory that is no dataset).
  virtual engine::Result<DatasetExamples> TestExamples(const std::string& name, int64_t offset,
                                                       int64_t limit) = 0;
};

}  // namespace trainingd::api
