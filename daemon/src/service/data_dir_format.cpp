#include "trainingd/daemon/service/data_dir_format.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "trainingd/engine/base/version.h"

namespace trainingd::daemon {
namespace fs = std::filesystem;
using engine::Status;
using json = nlohmann::json;

engine::Result<int> ReadDataDirFormat(const std::string& dir) {
  const std::string path = dir + "/" + kDataDirFormatFile;
  std::error_code ec;
  if (!fs::exists(path, ec)) return 1;  // written before the marker existed
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return Status::IoError(path + ": cannot read");
  const json root = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!root.is_object() || !root.contains("format") || !root["format"].is_number_integer() ||
      root["format"].get<int64_t>() < 1) {
    return Status::FailedPrecondition(
        path + ": not a data directory format marker (a JSON object with an integer \"format\" " +
        "of at least 1)");
  }
  const int64_t format = root["format"].get<int64_t>();
  if (format > kDataDirFormat) {
    std::string by;
    if (root.contains("written_by") && root["written_by"].is_string()) {
      by = " by " + root["written_by"].get<std::string>();
    }
    return Status::FailedPrecondition(
        dir + ": the data directory was written" + by + " in format " + std::to_string(format) +
        ", newer than this trainingd (" + engine::TrainingdVersion() + ") reads (" +
        std::to_string(kDataDirFormat) +
        "); use that trainingd or a newer one, or restore a backup of the directory");
  }
  return static_cast<int>(format);
}

Status WriteDataDirFormat(const std::string& dir, int store_schema) {
  const std::string path = dir + "/" + kDataDirFormatFile;
  const std::string tmp = path + ".tmp";
  const std::string text =
      json{{"format", kDataDirFormat},
           {"store_schema", store_schema},
           {"written_by", std::string("trainingd ") + engine::TrainingdVersion()}}
          .dump() +
      "\n";
  {
    std::ifstream in(path, std::ios::binary);
    std::stringstream current;
    current << in.rdbuf();
    if (in && current.str() == text) return Status::Ok();  // nothing to write
  }
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return engine::ErrnoStatus(errno, tmp + ": cannot create: " + std::strerror(errno));
  const bool written =
      write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  const int err = errno;
  close(fd);
  if (!written) {
    std::error_code ec;
    fs::remove(tmp, ec);
    return engine::ErrnoStatus(err, tmp + ": cannot write: " + std::strerror(err));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return engine::ErrnoStatus(errno, path + ": cannot rename into place: " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace trainingd::daemon
