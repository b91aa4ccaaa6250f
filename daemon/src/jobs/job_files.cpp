#include "trainingd/daemon/jobs/job_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

namespace trainingd::daemon {
namespace fs = std::filesystem;
using engine::Status;

namespace {

// One index entry per this many lines.
constexpr int64_t kIndexStride = 256;
constexpr char kCurrentName[] = "log.txt";

Status WriteError(const std::string& path, int err) {
  return engine::ErrnoStatus(err, path + ": cannot write: " + std::strerror(err));
}

}  // namespace

// One file of a job's log.
struct LogFile {
  std::string path;
  int64_t first_line = 1;  // the number of its first line
  int64_t lines = 0;
  int64_t bytes = 0;
  std::vector<int64_t> index;  // offsets of lines first_line + k * kIndexStride

  // Counts the lines of the file on disk and indexes them. A last line without its newline (a
  // crash mid-append) is completed, so the next append starts a line of its own.
  Status Scan() {
    std::ifstream in(path, std::ios::binary);
    lines = bytes = 0;
    index.clear();
    if (!in) return Status::Ok();  // no file yet
    char buf[1 << 16];
    bool at_line_start = true;
    while (in) {
      in.read(buf, sizeof buf);
      const std::streamsize n = in.gcount();
      for (std::streamsize i = 0; i < n; ++i) {
        if (at_line_start) {
          if (lines % kIndexStride == 0) index.push_back(bytes + i);
          at_line_start = false;
        }
        if (buf[i] == '\n') {
          ++lines;
          at_line_start = true;
        }
      }
      bytes += n;
    }
    if (!at_line_start) {  // a torn last line
      std::ofstream out(path, std::ios::binary | std::ios::app);
      out << '\n';
      if (!out.flush()) return Status::IoError(path + ": cannot complete its last line");
      ++lines;
      ++bytes;
    }
    return Status::Ok();
  }

  void Appended(int64_t size) {
    if (lines % kIndexStride == 0) index.push_back(bytes);
    ++lines;
    bytes += size;
  }

  // Lines [from, from + limit) of this file that exist, appended to `out`.
  Status Read(int64_t from, int64_t limit, std::vector<api::LogLine>* out) const {
    const int64_t end = std::min(first_line + lines, from + limit);
    if (from >= end) return Status::Ok();
    const int64_t k = (from - first_line) / kIndexStride;
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::IoError(path + ": cannot open: " + std::strerror(errno));
    in.seekg(index[static_cast<size_t>(k)]);
    std::string text;
    for (int64_t n = first_line + k * kIndexStride; n < end && std::getline(in, text); ++n) {
      if (n >= from) out->push_back({n, text});
    }
    return Status::Ok();
  }
};

struct JobFiles::Log {
  std::mutex mu;
  std::optional<LogFile> old;  // the rotated file, if any
  LogFile current;
  int fd = -1;  // log.txt, open for appending

  ~Log() { Close(); }
  void Close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

JobFiles::JobFiles(JobFilesOptions options) : options_(std::move(options)) {}
JobFiles::~JobFiles() = default;

std::string JobFiles::Dir(const std::string& id) const {
  return (options_.jobs_dir.empty() ? options_.data_dir + "/jobs" : options_.jobs_dir) + "/" + id;
}

Status JobFiles::CreateDir(const std::string& id) {
  std::error_code ec;
  fs::create_directories(Dir(id), ec);
  if (ec) return Status::IoError(Dir(id) + ": cannot create: " + ec.message());
  return Status::Ok();
}

Status JobFiles::Remove(const std::string& id) {
  std::shared_ptr<Log> log;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = logs_.find(id);
    if (it != logs_.end()) {
      log = it->second;
      logs_.erase(it);
    }
  }
  if (log) {
    std::lock_guard<std::mutex> lock(log->mu);
    log->Close();
  }
  std::error_code ec;
  fs::remove_all(Dir(id), ec);
  if (ec) return Status::IoError(Dir(id) + ": cannot delete: " + ec.message());
  return Status::Ok();
}

engine::Result<std::shared_ptr<JobFiles::Log>> JobFiles::LogFor(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = logs_[id];
  if (slot) return slot;
  auto log = std::make_shared<Log>();
  const std::string dir = Dir(id);
  // The rotated file is log-<first line>.txt; if a crash left two, the newer one counts.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= 8 || name.rfind("log-", 0) != 0 || !name.ends_with(".txt")) continue;
    int64_t first = 0;
    const char* begin = name.data() + 4;
    const char* end = name.data() + name.size() - 4;
    if (std::from_chars(begin, end, first).ptr != end || first < 1) continue;
    if (!log->old || first > log->old->first_line) {
      log->old = LogFile{entry.path().string(), first, 0, 0, {}};
    }
  }
  if (log->old) TRAININGD_RETURN_IF_ERROR(log->old->Scan());
  log->current.path = dir + "/" + kCurrentName;
  log->current.first_line = log->old ? log->old->first_line + log->old->lines : 1;
  TRAININGD_RETURN_IF_ERROR(log->current.Scan());
  slot = log;
  return log;
}

Status JobFiles::AppendLog(const std::string& id, std::string_view line) {
  auto log_or = LogFor(id);
  if (!log_or.ok()) return log_or.status();
  Log& log = **log_or;
  std::string text(line);
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  text += '\n';
  const int64_t size = static_cast<int64_t>(text.size());
  std::lock_guard<std::mutex> lock(log.mu);
  LogFile& cur = log.current;
  if (cur.lines > 0 && cur.bytes + size > options_.max_log_bytes) {
    // Rotate: the current file becomes log-<first>.txt and the one before it goes.
    log.Close();
    const std::string rotated = Dir(id) + "/log-" + std::to_string(cur.first_line) + ".txt";
    if (::rename(cur.path.c_str(), rotated.c_str()) != 0) {
      return Status::IoError(cur.path + ": cannot rotate to " + rotated + ": " +
                             std::strerror(errno));
    }
    if (log.old) ::unlink(log.old->path.c_str());
    log.old = cur;
    log.old->path = rotated;
    cur = LogFile{Dir(id) + "/" + kCurrentName, log.old->first_line + log.old->lines, 0, 0, {}};
  }
  if (log.fd < 0) {
    log.fd = ::open(cur.path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log.fd < 0) return WriteError(cur.path, errno);
  }
  const ssize_t n = ::write(log.fd, text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size())) {
    const int err = n < 0 ? errno : ENOSPC;  // a short write to a regular file: out of space
    // No partial line stays behind to be glued to the next one.
    if (::ftruncate(log.fd, cur.bytes) != 0) log.Close();
    return WriteError(cur.path, err);
  }
  cur.Appended(size);
  return Status::Ok();
}

engine::Result<std::vector<api::LogLine>> JobFiles::ReadLog(const std::string& id,
                                                            int64_t from_line, int64_t limit) {
  auto log_or = LogFor(id);
  if (!log_or.ok()) return log_or.status();
  Log& log = **log_or;
  std::vector<api::LogLine> out;
  std::lock_guard<std::mutex> lock(log.mu);
  int64_t from = from_line;
  for (const LogFile* f : {log.old ? &*log.old : nullptr, &log.current}) {
    if (f == nullptr) continue;
    from = std::max(from, f->first_line);
    const size_t before = out.size();
    TRAININGD_RETURN_IF_ERROR(f->Read(from, limit - static_cast<int64_t>(out.size()), &out));
    if (out.size() > before) from = out.back().line + 1;
    if (static_cast<int64_t>(out.size()) >= limit) break;
  }
  return out;
}

void JobFiles::CloseLog(const std::string& id) {
  std::shared_ptr<Log> log;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = logs_.find(id);
    if (it == logs_.end()) return;
    log = it->second;
  }
  std::lock_guard<std::mutex> lock(log->mu);
  log->Close();
}

}  // namespace trainingd::daemon
