#include "trainingd/daemon/datasets/dataset_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>

#include "trainingd/api/dataset_json.h"
#include "trainingd/api/job_json.h"
#include "trainingd/daemon/jobs/job_id.h"
#include "trainingd/engine/base/sha256.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/job/job_runner.h"

namespace trainingd::daemon {
namespace {

// Whether a reader's message is about one of the upload's column options (data.md#columns),
// as `ignore: ...` or `hash_buckets.city: ...`.
bool NamesAColumnOption(const std::string& message) {
  for (const std::string_view option : engine::kTableColumnOptionNames) {
    const std::string o(option);
    if (message.rfind(o + ": ", 0) == 0 || message.rfind(o + ".", 0) == 0) return true;
  }
  return false;
}

namespace fs = std::filesystem;
namespace eng = trainingd::engine;
using engine::Status;

constexpr const char* kRecordFile = "dataset.json";
constexpr const char* kStagingPrefix = ".upload-";
constexpr const char* kDeletingPrefix = ".delete-";

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// Writes `text` to `path` and fsyncs it.
Status WriteFileSynced(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError(Errno(path));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = Status::IoError(Errno(path));
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  return synced ? Status::Ok() : Status::IoError(Errno("fsync " + path));
}

Status SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IoError(Errno(dir));
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok ? Status::Ok() : Status::IoError(Errno("fsync " + dir));
}

// Renames `from` to `to` unless `to` exists (renameat2 RENAME_NOREPLACE): a name is never taken
// over. FailedPrecondition when it exists.
Status RenameNoReplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) {
    return Status::Ok();
  }
  if (errno == EEXIST || errno == ENOTEMPTY) {
    return Status::FailedPrecondition("a dataset named '" + fs::path(to).filename().string() +
                                      "' exists; delete it first (datasets are immutable)");
  }
  return Status::IoError(Errno("rename " + from + " -> " + to));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

api::DatasetRecord RecordFromInfo(const eng::DatasetInfo& info) {
  api::DatasetRecord r;
  r.example_shape = info.example_shape.dims();
  r.num_classes = info.num_classes;
  r.class_names = info.class_names;
  r.numeric_labels = info.numeric_labels;
  r.train_examples = info.train_examples;
  r.validation_examples = info.validation_examples;
  r.test_examples = info.test_examples;
  r.element_type = info.element_type;
  r.preprocessing = eng::PreprocessingName(info.preprocessing);
  r.feature_mean = info.feature_mean;
  r.feature_std = info.feature_std;
  r.columns = info.columns;
  r.feature_names = info.feature_names;
  return r;
}

// The job spec's view of an upload: what JobDatasetSource needs to find and read it.
eng::DatasetSpec SpecOf(const api::DatasetRecord& r) {
  eng::DatasetSpec d;
  d.name = r.name;
  d.format = r.format;
  d.sha256 = r.sha256;
  d.normalize = r.upload.normalize;
  if (r.format == "csv") {
    d.label_column = r.upload.label_column;
    d.columns = r.upload.columns;
    d.test_file = r.upload.test_file;
    if (!d.test_file) {
      d.test_fraction = r.upload.test_fraction;
      d.split_seed = r.upload.split_seed;
    }
  }
  return d;
}

}  // namespace

// One upload in progress: its files go to <dir>/.upload-<random>/upload (and upload.test, a
// CSV's test file), hashed as they arrive. Destroyed before a successful Commit, it removes its
// directory.
class DatasetStore::Upload : public api::DatasetUpload {
 public:
  Upload(DatasetStore& store, api::DatasetUploadOptions options, std::string staging, int fd)
      : store_(store), options_(std::move(options)), staging_(std::move(staging)) {
    files_[0].fd = fd;
  }

  ~Upload() override {
    for (File& f : files_) {
      if (f.fd >= 0) ::close(f.fd);
    }
    if (!committed_) {
      std::error_code ec;
      fs::remove_all(staging_, ec);
      store_.Release(options_.name);
    }
  }

  Status Begin(api::DatasetFile file) override {
    if (file == api::DatasetFile::kMain) {
      current_ = &files_[0];
      return Status::Ok();
    }
    if (options_.format != "csv") {
      return Status::InvalidArgument(
          "test: only a CSV upload has a test file; an npz holds x_test and y_test itself");
    }
    if (options_.test_fraction != api::DatasetUploadOptions{}.test_fraction ||
        options_.split_seed != 0) {
      return Status::InvalidArgument(
          "test_fraction: a CSV with its own test file is not split; leave test_fraction and "
          "split_seed out");
    }
    if (test_begun_ || closed_) return Status::FailedPrecondition("test: begun twice");
    files_[1].fd =
        ::open((staging_ + "/upload.test").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (files_[1].fd < 0) return Status::IoError(Errno(staging_ + "/upload.test"));
    test_begun_ = true;
    current_ = &files_[1];
    return Status::Ok();
  }

  Status Append(std::string_view bytes) override {
    if (current_->fd < 0) return Status::FailedPrecondition("the upload is closed");
    if (files_[0].bytes + files_[1].bytes + static_cast<int64_t>(bytes.size()) >
        store_.options_.max_upload_bytes) {
      return Status::ResourceExhausted("the upload is over max_dataset_bytes, " +
                                       std::to_string(store_.options_.max_upload_bytes) + " bytes");
    }
    current_->sha.Update(bytes);
    while (!bytes.empty()) {
      const ssize_t n = ::write(current_->fd, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        return errno == ENOSPC ? Status::IoError("no space left for the upload")
                               : Status::IoError(Errno("writing the upload"));
      }
      bytes.remove_prefix(static_cast<size_t>(n));
      current_->bytes += n;
    }
    return Status::Ok();
  }

  eng::Result<api::DatasetRecord> Commit() override {
    if (closed_) return Status::FailedPrecondition("the upload is closed");
    closed_ = true;
    for (File& f : files_) {
      if (f.fd < 0) continue;
      const bool synced = ::fsync(f.fd) == 0;
      ::close(f.fd);
      f.fd = -1;
      if (!synced) return Status::IoError(Errno("fsync of the upload"));
    }
    const bool has_test = test_begun_;
    if (files_[0].bytes == 0)
      return Status::InvalidArgument("body: empty; send the file as the body");
    if (has_test && files_[1].bytes == 0)
      return Status::InvalidArgument("test: the test file is empty");

    api::DatasetRecord record;
    record.name = options_.name;
    record.format = options_.format;
    record.upload = options_;
    record.upload.test_file = has_test;
    record.train_file = {files_[0].sha.HexDigest(), files_[0].bytes};
    record.sha256 = record.train_file.sha256;
    record.bytes = files_[0].bytes + files_[1].bytes;
    if (has_test) {
      record.test_file = {files_[1].sha.HexDigest(), files_[1].bytes};
      eng::Sha256 both;  // the two files' identity (DatasetRecord::sha256)
      both.Update(record.train_file.sha256 + "\n" + record.test_file.sha256 + "\n");
      record.sha256 = both.HexDigest();
    }
    eng::DatasetSpec spec = SpecOf(record);
    // The label column as it is: classes, numbers (regression), or both.
    auto source =
        eng::JobDatasetSource(spec, "", store_.options_.dir, eng::LabelUse::kClassesOrNumbers);
    if (!source.ok()) return source.status();
    // The files get the names a job reads them by, in the staging directory; once checked, the
    // directory becomes the dataset's.
    source->path = staging_ + "/" + eng::UploadedDatasetFile(record.sha256, record.format);
    if (::rename((staging_ + "/upload").c_str(), source->path.c_str()) != 0) {
      return Status::IoError(Errno("naming the upload"));
    }
    if (has_test) {
      source->test_path = staging_ + "/" + eng::UploadedDatasetFile(record.sha256, "csv", true);
      if (::rename((staging_ + "/upload.test").c_str(), source->test_path.c_str()) != 0) {
        return Status::IoError(Errno("naming the upload's test file"));
      }
    }
    // Every value is checked, in bounded memory, with the options a job would use by default:
    // read as a job would read it (JobDatasetSource), from where it is now.
    auto info = eng::ProbeDataset(*source, eng::JobDatasetOptions(spec), eng::ProbeDepth::kFull);
    if (!info.ok()) {
      // The reader's messages name the files by their staging paths: the client knows them as
      // the dataset's name and its test file.
      std::string message = info.status().message();
      // The field is the column option the reader names (`hash_buckets: column 'f2' is number,
      // ...`), so that a form marks that option's input; otherwise the file it names: the test
      // file's, or the dataset's.
      const char* field = !has_test                                              ? "body: "
                          : message.find(source->test_path) != std::string::npos ? "test: "
                                                                                 : "train: ";
      if (NamesAColumnOption(message)) field = "";
      const auto rename_path = [&](const std::string& path, const std::string& as) {
        if (path.empty()) return;
        for (size_t at = message.find(path); at != std::string::npos; at = message.find(path)) {
          message.replace(at, path.size(), as);
        }
      };
      rename_path(source->test_path, "the test file");
      rename_path(source->path, has_test ? "the training file" : options_.name);
      return Status::InvalidArgument(field + message);
    }
    api::DatasetRecord checked = RecordFromInfo(*info);
    checked.name = record.name;
    checked.format = record.format;
    checked.upload = record.upload;
    checked.sha256 = record.sha256;
    checked.bytes = record.bytes;
    checked.train_file = record.train_file;
    checked.test_file = record.test_file;
    eng::Env* env = store_.options_.env ? store_.options_.env : eng::Env::Default();
    checked.created_at = std::floor(env->NowSeconds() * 1000) / 1000;
    checked.owner = record.upload.owner;
    TRAININGD_RETURN_IF_ERROR(
        WriteFileSynced(staging_ + "/" + kRecordFile, api::DumpJson(api::DatasetToJson(checked))));
    TRAININGD_RETURN_IF_ERROR(SyncDirectory(staging_));
    TRAININGD_RETURN_IF_ERROR(store_.Adopt(staging_, checked));
    committed_ = true;
    return checked;
  }

 private:
  struct File {
    int fd = -1;
    int64_t bytes = 0;
    eng::Sha256 sha;
  };

  DatasetStore& store_;
  const api::DatasetUploadOptions options_;
  const std::string staging_;
  File files_[2];  // the dataset's file, a CSV's test file
  File* current_ = &files_[0];
  bool test_begun_ = false;
  bool closed_ = false;
  bool committed_ = false;
};

eng::Result<std::unique_ptr<DatasetStore>> DatasetStore::Open(DatasetStoreOptions options) {
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec) return Status::IoError(options.dir + ": " + ec.message());
  std::unique_ptr<DatasetStore> store(new DatasetStore(std::move(options)));
  const std::string& dir = store->options_.dir;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kStagingPrefix, 0) == 0 || name.rfind(kDeletingPrefix, 0) == 0) {
      fs::remove_all(entry.path(), ec);  // an upload or a delete that did not finish
      continue;
    }
    if (!entry.is_directory(ec) || !eng::IsSafeName(name)) continue;
    const std::string text = ReadFile(entry.path().string() + "/" + kRecordFile);
    auto record = api::DatasetFromJson(text);
    if (!record.ok()) {
      return Status::IoError(entry.path().string() + "/" + kRecordFile + ": " +
                             record.status().message());
    }
    store->records_[name] = std::move(*record);
  }
  if (ec) return Status::IoError(dir + ": " + ec.message());
  return store;
}

bool DatasetStore::IsIdxDirectory(const std::string& name) const {
  std::error_code ec;
  return !options_.data_root.empty() && fs::is_directory(options_.data_root + "/" + name, ec);
}

eng::Result<api::DatasetRecord> DatasetStore::IdxRecord(const std::string& name) const {
  eng::DatasetSpec spec;
  spec.name = name;
  auto info = eng::ProbeJobDataset(spec, options_.data_root, "");
  if (!info.ok()) return info.status();
  api::DatasetRecord r = RecordFromInfo(*info);
  r.name = name;
  r.format = "idx";
  r.read_only = true;
  r.element_type = "uint8";
  return r;
}

eng::Result<std::unique_ptr<api::DatasetUpload>> DatasetStore::BeginUpload(
    const api::DatasetUploadOptions& options, int64_t declared_bytes) {
  if (!eng::IsSafeName(options.name)) {
    return Status::InvalidArgument(
        "name: 1 to 100 of the characters A-Z a-z 0-9 . _ -, and not . or ..");
  }
  if (options.format != "npz" && options.format != "csv") {
    return Status::InvalidArgument("format: must be npz or csv, got '" +
                                   options.format.substr(0, 32) + "'");
  }
  if (options.normalize != "none" && options.normalize != "standard") {
    return Status::InvalidArgument("normalize: must be none or standard, got '" +
                                   options.normalize.substr(0, 32) + "'");
  }
  if (options.format != "csv" &&
      (options.label_column != "label" ||
       options.test_fraction != api::DatasetUploadOptions{}.test_fraction ||
       options.split_seed != 0)) {
    return Status::InvalidArgument(
        "label_column: label_column, test_fraction and split_seed are for CSV uploads");
  }
  if (options.label_column.empty()) return Status::InvalidArgument("label_column: empty");
  if (declared_bytes > options_.max_upload_bytes) {
    return Status::ResourceExhausted("the upload's " + std::to_string(declared_bytes) +
                                     " bytes are over max_dataset_bytes, " +
                                     std::to_string(options_.max_upload_bytes));
  }
  if (IsIdxDirectory(options.name)) {
    return Status::FailedPrecondition("'" + options.name + "' is a dataset of the data root (" +
                                      options_.data_root + "); choose another name");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (records_.count(options.name) || uploading_.count(options.name)) {
      return Status::FailedPrecondition("a dataset named '" + options.name +
                                        (records_.count(options.name)
                                             ? "' exists; delete it first (datasets are immutable)"
                                             : "' is being uploaded"));
    }
    uploading_.insert(options.name);
  }
  const std::string staging = options_.dir + "/" + kStagingPrefix + NewJobId();
  std::error_code ec;
  int fd = -1;
  if (fs::create_directory(staging, ec)) {
    fd = ::open((staging + "/upload").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  if (fd < 0) {
    Status s = Status::IoError(ec ? staging + ": " + ec.message() : Errno(staging + "/upload"));
    fs::remove_all(staging, ec);
    Release(options.name);
    return s;
  }
  return std::unique_ptr<api::DatasetUpload>(new Upload(*this, options, staging, fd));
}

Status DatasetStore::Adopt(const std::string& staging_dir, const api::DatasetRecord& record) {
  TRAININGD_RETURN_IF_ERROR(RenameNoReplace(staging_dir, options_.dir + "/" + record.name));
  TRAININGD_RETURN_IF_ERROR(SyncDirectory(options_.dir));
  std::lock_guard<std::mutex> lock(mu_);
  records_[record.name] = record;
  uploading_.erase(record.name);
  return Status::Ok();
}

void DatasetStore::Release(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  uploading_.erase(name);
}

eng::Result<std::vector<api::DatasetRecord>> DatasetStore::ListDatasets() {
  std::vector<api::DatasetRecord> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, record] : records_) out.push_back(record);
  }
  std::error_code ec;
  if (!options_.data_root.empty()) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(options_.data_root, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory(ec) && eng::IsSafeName(name)) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    // A directory that is no MNIST-format dataset is not one, and is left out.
    for (const std::string& name : names) {
      if (auto r = IdxRecord(name); r.ok()) out.push_back(std::move(*r));
    }
  }
  std::sort(out.begin(), out.end(), [](const api::DatasetRecord& a, const api::DatasetRecord& b) {
    return a.name < b.name;
  });
  return out;
}

eng::Result<api::DatasetRecord> DatasetStore::GetDataset(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = records_.find(name); it != records_.end()) return it->second;
  }
  if (IsIdxDirectory(name)) {
    auto r = IdxRecord(name);
    if (r.ok()) return r;
    return Status::FailedPrecondition("'" + name +
                                      "' in the data root cannot be read: " + r.status().message());
  }
  return Status::NotFound("no dataset '" + name + "'");
}

Status DatasetStore::DeleteDataset(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!records_.count(name)) {
    if (IsIdxDirectory(name)) {
      return Status::FailedPrecondition("'" + name + "' is a dataset of the data root (" +
                                        options_.data_root + "), which the daemon never deletes");
    }
    return Status::NotFound("no dataset '" + name + "'");
  }
  if (options_.jobs_using) {
    const std::vector<std::string> jobs = options_.jobs_using(name);
    if (!jobs.empty()) {
      std::string list;
      for (size_t i = 0; i < jobs.size() && i < 10; ++i) list += (i ? ", " : "") + jobs[i];
      if (jobs.size() > 10) list += ", ...";
      return Status::FailedPrecondition("dataset '" + name + "' is used by " +
                                        std::to_string(jobs.size()) +
                                        " queued or running job(s): " + list + "; stop them first");
    }
  }
  // Out of its name at once (a rename), then removed: a crash in between leaves a .delete-
  // directory that Open removes.
  const std::string doomed = options_.dir + "/" + kDeletingPrefix + NewJobId();
  if (::rename((options_.dir + "/" + name).c_str(), doomed.c_str()) != 0) {
    return Status::IoError(Errno("deleting dataset '" + name + "'"));
  }
  records_.erase(name);
  std::error_code ec;
  fs::remove_all(doomed, ec);
  return Status::Ok();
}

eng::Result<api::DatasetExamples> DatasetStore::TestExamples(const std::string& name,
                                                             int64_t offset, int64_t limit) {
  if (limit < 1 || limit > api::kMaxDatasetExamples) {
    return Status::InvalidArgument("limit: must be an integer from 1 to " +
                                   std::to_string(api::kMaxDatasetExamples));
  }
  auto record = GetDataset(name);
  if (!record.ok()) return record.status();
  eng::DatasetSpec spec = record->read_only ? eng::DatasetSpec{} : SpecOf(*record);
  spec.name = name;
  auto source = eng::JobDatasetSource(spec, options_.data_root, options_.dir,
                                      eng::LabelUse::kClassesOrNumbers);
  if (!source.ok()) return source.status();

  eng::Result<eng::RawExamples> raw = Status::Internal("unread");
  if (record->format == "csv") {
    // A CSV's test split is known only by reading the whole table: it is read once and kept.
    std::shared_ptr<const eng::RawExamples> whole;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (csv_test_sha256_ == record->sha256) whole = csv_test_;
    }
    if (!whole) {
      auto read = eng::ReadTestExamples(*source, 0, std::numeric_limits<int64_t>::max());
      if (!read.ok()) return read.status();
      whole = std::make_shared<const eng::RawExamples>(std::move(*read));
      std::lock_guard<std::mutex> lock(mu_);
      csv_test_sha256_ = record->sha256;
      csv_test_ = whole;
    }
    if (offset > whole->split_examples) {
      return Status::InvalidArgument("offset: must be from 0 to " +
                                     std::to_string(whole->split_examples) + ", the test examples");
    }
    const int64_t count = std::min(limit, whole->split_examples - offset);
    const int64_t per = whole->example_shape.num_elements();
    eng::RawExamples part;
    part.example_shape = whole->example_shape;
    part.split_examples = whole->split_examples;
    part.first = offset;
    part.values.assign(whole->values.begin() + offset * per,
                       whole->values.begin() + (offset + count) * per);
    if (!whole->labels.empty()) {
      part.labels.assign(whole->labels.begin() + offset, whole->labels.begin() + offset + count);
    }
    if (!whole->targets.empty()) {
      part.targets.assign(whole->targets.begin() + offset, whole->targets.begin() + offset + count);
    }
    part.feature_names = whole->feature_names;
    part.categorical_names = whole->categorical_names;
    const auto columns = static_cast<int64_t>(whole->categorical_names.size());
    part.categorical.assign(whole->categorical.begin() + offset * columns,
                            whole->categorical.begin() + (offset + count) * columns);
    raw = std::move(part);
  } else {
    raw = eng::ReadTestExamples(*source, offset, limit);
  }
  if (!raw.ok()) return raw.status();
  api::DatasetExamples out;
  out.example_shape = raw->example_shape.dims();
  out.split_examples = raw->split_examples;
  out.first = raw->first;
  out.values = std::move(raw->values);
  out.labels = std::move(raw->labels);
  out.targets = std::move(raw->targets);
  out.feature_names = std::move(raw->feature_names);
  out.categorical_names = std::move(raw->categorical_names);
  out.categorical = std::move(raw->categorical);
  out.integer_values = record->element_type == "uint8";
  for (int c = 0; c < record->num_classes; ++c) {
    out.class_names.push_back(c < static_cast<int>(record->class_names.size())
                                  ? record->class_names[static_cast<size_t>(c)]
                                  : std::to_string(c));
  }
  return out;
}

Status DatasetStore::ResolveJobDataset(eng::DatasetSpec* d) const {
  api::DatasetRecord r;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = records_.find(d->name);
    if (it == records_.end()) {
      if (d->format != "idx") {
        return Status::InvalidArgument("dataset.name: no uploaded dataset '" + d->name + "'");
      }
      return Status::Ok();
    }
    r = it->second;
  }
  const eng::DatasetSpec want = SpecOf(r);
  const eng::DatasetSpec defaults;
  // A field the spec gives must be the upload's; one it leaves at its default takes it.
  const auto agree = [&](const char* field, auto given, auto fallback, auto actual,
                         auto* out) -> Status {
    if (given != fallback && given != actual) {
      std::ostringstream m;
      m << std::boolalpha << "dataset." << field << ": dataset '" << d->name
        << "' was uploaded with " << field << " " << actual << ", not " << given;
      return Status::InvalidArgument(m.str());
    }
    *out = actual;
    return Status::Ok();
  };
  if (!d->sha256.empty() && d->sha256 != r.sha256) {
    return Status::InvalidArgument("dataset.sha256: dataset '" + d->name + "' is " + r.sha256 +
                                   " now, not " + d->sha256 +
                                   " (it was deleted and uploaded "
                                   "again)");
  }
  if (d->format != defaults.format && d->format != r.format) {
    return Status::InvalidArgument("dataset.format: dataset '" + d->name + "' is " + r.format +
                                   ", not " + d->format);
  }
  d->format = r.format;
  d->sha256 = r.sha256;
  // per_channel is the job's own normalization of images, computed as it loads them
  // (eng::NormalizePerChannel), over an upload made without one; the probe checks it fits.
  if (d->normalize != "per_channel" || want.normalize != "none") {
    TRAININGD_RETURN_IF_ERROR(
        agree("normalize", d->normalize, defaults.normalize, want.normalize, &d->normalize));
  }
  TRAININGD_RETURN_IF_ERROR(agree("label_column", d->label_column, defaults.label_column,
                                  want.label_column, &d->label_column));
  TRAININGD_RETURN_IF_ERROR(agree("test_fraction", d->test_fraction, defaults.test_fraction,
                                  want.test_fraction, &d->test_fraction));
  TRAININGD_RETURN_IF_ERROR(
      agree("split_seed", d->split_seed, defaults.split_seed, want.split_seed, &d->split_seed));
  TRAININGD_RETURN_IF_ERROR(
      agree("test_file", d->test_file, defaults.test_file, want.test_file, &d->test_file));
  if (d->columns != defaults.columns && d->columns != want.columns) {
    return Status::InvalidArgument("dataset.columns: dataset '" + d->name +
                                   "' was uploaded with other column options (GET "
                                   "/api/v1/datasets/" +
                                   d->name + ": upload.columns)");
  }
  d->columns = want.columns;
  return Status::Ok();
}

}  // namespace trainingd::daemon
