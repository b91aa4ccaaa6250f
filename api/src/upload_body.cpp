#include "trainingd/api/upload_body.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "trainingd/api/http_message.h"

namespace trainingd::api {
namespace {

using engine::Result;
using engine::Status;

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of parameter `key` in "type; a=1; b=\"x y\"" (RFC 9110 parameters: a token or a
// quoted string with backslash escapes), or nullopt.
std::optional<std::string> Parameter(std::string_view header, std::string_view key) {
  size_t at = header.find(';');
  while (at != std::string_view::npos) {
    std::string_view rest = TrimSpaces(header.substr(at + 1));
    const size_t eq = rest.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string_view name = TrimSpaces(rest.substr(0, eq));
    rest = TrimSpaces(rest.substr(eq + 1));
    std::string value;
    size_t end = 0;
    if (!rest.empty() && rest.front() == '"') {
      end = 1;
      while (end < rest.size() && rest[end] != '"') {
        if (rest[end] == '\\' && end + 1 < rest.size()) ++end;
        value += rest[end++];
      }
      if (end >= rest.size()) return std::nullopt;  // no closing quote
      ++end;
    } else {
      end = std::min(rest.find(';'), rest.size());
      value = std::string(TrimSpaces(rest.substr(0, end)));
    }
    if (EqualsIgnoreCase(name, key)) return value;
    const size_t next = rest.find(';', end);
    if (next == std::string_view::npos) return std::nullopt;
    header = rest.substr(next);
    at = 0;
  }
  return std::nullopt;
}

std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 64)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

}  // namespace

Result<std::optional<std::string>> UploadBody::BoundaryOf(std::string_view content_type) {
  std::string_view media = TrimSpaces(content_type.substr(0, content_type.find(';')));
  if (!EqualsIgnoreCase(media, "multipart/form-data")) return std::optional<std::string>();
  std::optional<std::string> boundary = Parameter(content_type, "boundary");
  // RFC 2046: 1 to 70 characters, no trailing space; we also refuse control characters.
  const bool valid =
      boundary && !boundary->empty() && boundary->size() <= 70 && boundary->back() != ' ' &&
      std::all_of(boundary->begin(), boundary->end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  if (!valid) {
    return Status::InvalidArgument(
        "Content-Type: multipart/form-data needs a boundary parameter of 1 to 70 characters");
  }
  return boundary;
}

UploadBody::UploadBody(std::unique_ptr<DatasetUpload> upload, std::optional<std::string> boundary)
    : upload_(std::move(upload)), multipart_(boundary.has_value()) {
  if (multipart_) {
    delimiter_ = "\r\n--" + *boundary;
    // The first delimiter may open the body, without the line end before it.
    pending_ = "\r\n";
  }
}

Status UploadBody::Write(std::string_view bytes) {
  if (!multipart_) return upload_->Append(bytes);
  if (state_ == State::kEpilogue) return Status::Ok();  // after the closing delimiter: ignored
  pending_.append(bytes);
  return Decode();
}

Status UploadBody::Decode() {
  const std::boyer_moore_horspool_searcher find_delimiter(delimiter_.begin(), delimiter_.end());
  for (;;) {
    switch (state_) {
      case State::kPreamble:
      case State::kPartData: {
        const auto hit = std::search(pending_.begin(), pending_.end(), find_delimiter);
        const bool found = hit != pending_.end();
        // Without a delimiter, all but its length less one byte is data for sure.
        const size_t data =
            found ? static_cast<size_t>(hit - pending_.begin())
                  : pending_.size() - std::min(pending_.size(), delimiter_.size() - 1);
        if (state_ == State::kPartData && data > 0) {
          TRAININGD_RETURN_IF_ERROR(upload_->Append(std::string_view(pending_).substr(0, data)));
        }
        if (!found) {
          pending_.erase(0, data);
          return Status::Ok();
        }
        pending_.erase(0, data + delimiter_.size());
        state_ = State::kAfterDelimiter;
        break;
      }
      case State::kAfterDelimiter: {
        if (pending_.size() < 2) return Status::Ok();
        if (pending_.compare(0, 2, "--") == 0) {
          state_ = State::kEpilogue;
          pending_.clear();
          return Status::Ok();
        }
        // RFC 2046 allows spaces and tabs ("transport padding") before the line end.
        const size_t padding = pending_.find_first_not_of(" \t");
        if (padding == std::string::npos || pending_.size() < padding + 2) {
          if (pending_.size() > 256) {
            return Status::InvalidArgument(
                "body: a multipart delimiter is followed by more than 256 spaces");
          }
          return Status::Ok();
        }
        if (pending_.compare(padding, 2, "\r\n") != 0) {
          return Status::InvalidArgument(
              "body: a multipart delimiter must be followed by a line end or by --");
        }
        pending_.erase(0, padding + 2);
        state_ = State::kPartHeader;
        break;
      }
      case State::kPartHeader: {
        // A part's header lines end with an empty line; a part without header lines starts
        // with it.
        size_t end = 0;
        size_t skip = 2;
        if (pending_.size() < 2) return Status::Ok();
        if (pending_.compare(0, 2, "\r\n") != 0) {
          end = pending_.find("\r\n\r\n");
          skip = 4;
          if (end == std::string::npos) {
            if (pending_.size() > kMaxPartHeaderBytes) {
              return Status::InvalidArgument("body: a multipart part's header is over " +
                                             std::to_string(kMaxPartHeaderBytes) + " bytes");
            }
            return Status::Ok();
          }
        }
        if (end > kMaxPartHeaderBytes) {
          return Status::InvalidArgument("body: a multipart part's header is over " +
                                         std::to_string(kMaxPartHeaderBytes) + " bytes");
        }
        TRAININGD_RETURN_IF_ERROR(StartPart(std::string_view(pending_).substr(0, end)));
        pending_.erase(0, end + skip);
        state_ = State::kPartData;
        break;
      }
      case State::kEpilogue:
        pending_.clear();
        return Status::Ok();
    }
  }
}

Status UploadBody::StartPart(std::string_view header) {
  std::optional<std::string> name;
  while (!header.empty()) {
    const size_t eol = std::min(header.find("\r\n"), header.size());
    const std::string_view line = header.substr(0, eol);
    header.remove_prefix(std::min(eol + 2, header.size()));
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      return Status::InvalidArgument("body: a multipart part's header line has no colon: \"" +
                                     Printable(line) + "\"");
    }
    if (!EqualsIgnoreCase(TrimSpaces(line.substr(0, colon)), "Content-Disposition")) continue;
    const std::string_view value = TrimSpaces(line.substr(colon + 1));
    if (!EqualsIgnoreCase(TrimSpaces(value.substr(0, value.find(';'))), "form-data")) {
      return Status::InvalidArgument("body: a multipart part is not form-data: \"" +
                                     Printable(value) + "\"");
    }
    name = Parameter(value, "name");
  }
  if (!name) {
    return Status::InvalidArgument(
        "body: a multipart part has no Content-Disposition: form-data; name=...");
  }
  bool* seen = nullptr;
  DatasetFile file = DatasetFile::kMain;
  if (*name == "train") {
    seen = &seen_main_;
  } else if (*name == "test") {
    file = DatasetFile::kTest;
    seen = &seen_test_;
  } else {
    return Status::InvalidArgument("body: unknown part '" + Printable(*name) +
                                   "'; the parts are train (the dataset's file) and test (a "
                                   "CSV's test file)");
  }
  if (*seen) return Status::InvalidArgument("body: the part '" + *name + "' comes twice");
  *seen = true;
  return upload_->Begin(file);
}

Result<DatasetRecord> UploadBody::Finish() {
  if (multipart_) {
    if (state_ != State::kEpilogue) {
      return Status::InvalidArgument(
          "body: the multipart body ended before its closing delimiter (--" + delimiter_.substr(4) +
          "--)");
    }
    if (!seen_main_) {
      return Status::InvalidArgument(
          "train: missing: a multipart upload needs a part named train (the dataset's file)");
    }
  }
  return upload_->Commit();
}

}  // namespace trainingd::api
