// StaticFiles: the dashboard's files under a web root, looked up by URL path without ever leaving
// the root. Thread-safe (immutable after construction; reads the file system per lookup).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "trainingd/engine/base/status.h"

namespace trainingd::api {

struct StaticFile {
  std::string content;
  std::string content_type;  // from the extension, see ContentTypeForPath
  // A weak validator from the served file's size and modification time, distinct for the
  // gzipped and the plain form: W/"<size>-<mtime ns>[-gz]" in hex.
  std::string etag;
  bool gzip = false;  // `content` is the precompressed <file>.gz (Content-Encoding: gzip)
};

class StaticFiles {
 public:
  // `root` empty = no static files: every lookup is NotFound. The root is made canonical here, so
  // it must exist now (CheckRoot says whether it does).
  explicit StaticFiles(const std::string& root, int64_t max_file_bytes = 16 << 20);

  // OK when no root was given or it is an existing directory; otherwise NotFound naming it
  // (start-up code should treat that as fatal).
  engine::Status CheckRoot() const;

  // The file for `url_path` (the still percent-encoded path of a request target, starting with
  // '/'): "/" and paths ending in '/' mean the directory's index.html.
  //   InvalidArgument: a path that tries to leave the root by its text: ".." or "." segments
  //     (also as %2e%2e), empty segments ("//etc"), backslashes, NUL, malformed escapes.
  //   NotFound: anything that does not resolve to a regular file of at most max_file_bytes whose
  //     canonical path (symlinks followed) lies inside the canonical root; hidden names
  //     (".git") are never served.
  //   IoError: the file exists but cannot be read.
  // With `accept_gzip`, a regular file "<file>.gz" beside the file (the build writes one for each
  // dashboard file), inside the root and newer than the file, is served instead, gzip = true.
  engine::Result<StaticFile> Lookup(std::string_view url_path, bool accept_gzip = false) const;

 private:
  std::filesystem::path root_;  // canonical; empty = serve nothing
  std::string root_error_;      // why the given root is unusable; "" = fine
  int64_t max_file_bytes_;
};

// "text/html; charset=utf-8" for .html, "text/javascript; charset=utf-8" for .js/.mjs,
// "text/css; charset=utf-8", "application/json", "image/svg+xml", a few more; otherwise
// "application/octet-stream". The extension compares case-insensitively.
std::string ContentTypeForPath(std::string_view path);

// Whether an Accept-Encoding header value accepts gzip ("gzip", "x-gzip" or "*", without q=0).
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace trainingd::api
