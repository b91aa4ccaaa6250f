#include "trainingd/api/static_files.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

#include "trainingd/api/http_message.h"
#include "trainingd/api/url.h"

namespace trainingd::api {
namespace fs = std::filesystem;
using engine::Result;
using engine::Status;

namespace {

// True when `path` is `root` or lies below it, comparing whole components.
bool IsInside(const fs::path& root, const fs::path& path) {
  auto r = root.begin();
  auto p = path.begin();
  for (; r != root.end(); ++r, ++p) {
    if (p == path.end() || *r != *p) return false;
  }
  return true;
}

std::string Hex(uint64_t v) {
  char buf[20];
  const int n = std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return std::string(buf, static_cast<size_t>(n));
}

// W/"<size>-<mtime ns>" of a file already known to be a regular file; "" if it cannot be read.
std::string ETagOf(const fs::path& file, uintmax_t size, bool gzip) {
  std::error_code ec;
  const auto mtime = fs::last_write_time(file, ec);
  if (ec) return "";
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch());
  return "W/\"" + Hex(size) + "-" + Hex(static_cast<uint64_t>(ns.count())) + (gzip ? "-gz" : "") +
         "\"";
}

std::string Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

}  // namespace

bool AcceptsGzip(std::string_view header) {
  while (!header.empty()) {
    const size_t comma = header.find(',');
    const std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    const size_t semi = item.find(';');
    const std::string coding = Trim(item.substr(0, semi));
    if (!EqualsIgnoreCase(coding, "gzip") && !EqualsIgnoreCase(coding, "x-gzip") && coding != "*") {
      continue;
    }
    bool refused = false;
    if (semi != std::string_view::npos) {
      const std::string param = Trim(item.substr(semi + 1));
      if (param.size() > 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
        const std::string q = param.substr(2);
        refused = q.find_first_not_of("0.") == std::string::npos;  // q=0, q=0.0, q=0.000
      }
    }
    if (!refused) return true;
  }
  return false;
}

StaticFiles::StaticFiles(const std::string& root, int64_t max_file_bytes)
    : max_file_bytes_(max_file_bytes) {
  if (root.empty()) return;
  std::error_code ec;
  fs::path canonical = fs::canonical(root, ec);
  if (ec || !fs::is_directory(canonical, ec)) {
    root_error_ = "web root " + root + " is not an existing directory";
    return;
  }
  root_ = canonical;
}

Status StaticFiles::CheckRoot() const {
  if (!root_error_.empty()) return Status::NotFound(root_error_);
  return Status::Ok();
}

Result<StaticFile> StaticFiles::Lookup(std::string_view url_path, bool accept_gzip) const {
  if (url_path.empty() || url_path.front() != '/') {
    return Status::InvalidArgument("path must start with '/'");
  }
  // Segment by segment, so no decoded text can add a separator or climb out of the root.
  std::vector<std::string> segments;
  std::string_view rest = url_path.substr(1);
  bool directory = false;
  while (true) {
    size_t slash = rest.find('/');
    std::string_view raw = rest.substr(0, slash);
    bool last = slash == std::string_view::npos;
    if (raw.empty()) {
      if (!last) return Status::InvalidArgument("path has an empty segment");
      directory = true;
      break;
    }
    auto segment = PercentDecode(raw, false);
    if (!segment) return Status::InvalidArgument("path has a malformed escape");
    if (*segment == "." || *segment == "..") {
      return Status::InvalidArgument("path must not contain '.' or '..' segments");
    }
    if (segment->find_first_of("/\\") != std::string::npos) {
      return Status::InvalidArgument("path segment contains a (back)slash");
    }
    if (segment->front() == '.') return Status::NotFound("no such file");
    segments.push_back(std::move(*segment));
    if (last) break;
    rest = rest.substr(slash + 1);
  }
  if (root_.empty()) return Status::NotFound("no web root configured");

  fs::path candidate = root_;
  for (const std::string& segment : segments) candidate /= segment;
  std::error_code ec;
  if (!directory && fs::is_directory(candidate, ec)) directory = true;
  if (directory) candidate /= "index.html";
  fs::path resolved = fs::canonical(candidate, ec);
  if (ec || !IsInside(root_, resolved) || !fs::is_regular_file(resolved, ec)) {
    return Status::NotFound("no such file");
  }
  auto size = fs::file_size(resolved, ec);
  if (ec || static_cast<int64_t>(size) > max_file_bytes_) return Status::NotFound("no such file");
  StaticFile file;
  file.content_type = ContentTypeForPath(resolved.filename().string());
  fs::path served = resolved;
  if (accept_gzip) {
    fs::path gz = fs::canonical(fs::path(resolved.string() + ".gz"), ec);
    std::error_code ec2, ec3;
    if (!ec && IsInside(root_, gz) && fs::is_regular_file(gz, ec) &&
        fs::last_write_time(gz, ec2) >= fs::last_write_time(resolved, ec3) && !ec2 && !ec3) {
      auto gz_size = fs::file_size(gz, ec);
      if (!ec && static_cast<int64_t>(gz_size) <= max_file_bytes_) {
        served = gz;
        size = gz_size;
        file.gzip = true;
      }
    }
  }
  std::ifstream in(served, std::ios::binary);
  file.content.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::IoError("cannot read " + served.filename().string());
  file.etag = ETagOf(served, size, file.gzip);
  return file;
}

std::string ContentTypeForPath(std::string_view path) {
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".htm", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".mjs", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".json", "application/json"},
      {".map", "application/json"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".txt", "text/plain; charset=utf-8"},
      {".woff2", "font/woff2"},
  };
  size_t dot = path.rfind('.');
  if (dot != std::string_view::npos && path.find('/', dot) == std::string_view::npos) {
    std::string_view ext = path.substr(dot);
    for (const auto& [known, type] : kTypes) {
      if (EqualsIgnoreCase(ext, known)) return std::string(type);
    }
  }
  return "application/octet-stream";
}

}  // namespace trainingd::api
