#include "data/csv_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace trainingd::engine {
namespace {

bool IsDelimiter(int c) { return c == ',' || c == '\n' || c == '\r' || c == -1; }
bool IsBlank(int c) { return c == ' ' || c == '\t'; }

}  // namespace

std::string CsvQuote(std::string_view s) {
  constexpr size_t kMax = 64;
  if (s.size() <= kMax) return "'" + std::string(s) + "'";
  size_t n = kMax;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return "'" + std::string(s.substr(0, n)) + "...'";
}

bool IsValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int extra;
    unsigned lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // over U+10FFFF
    } else {
      return false;
    }
    if (end - p <= extra) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (int i = 2; i <= extra; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
    }
    p += extra + 1;
  }
  return true;
}

CsvReader::CsvReader(ByteSource* source, std::string name)
    : source_(source), name_(std::move(name)), buf_(kCsvChunkBytes) {}

Status CsvReader::Error(const std::string& what) const {
  return Status::InvalidArgument(name_ + ": line " + std::to_string(line_) + ": " + what);
}

bool CsvReader::Fill() {
  if (!read_status_.ok()) return false;
  if (RecordBytes() > static_cast<int64_t>(kMaxCsvRecordBytes)) {
    read_status_ =
        Error("a row longer than " + std::to_string(kMaxCsvRecordBytes) + " bytes (the limit)");
    return false;
  }
  // Keeps the bytes not yet consumed, then reads after them.
  if (pos_ > 0) {
    std::memmove(buf_.data(), buf_.data() + pos_, len_ - pos_);
    len_ -= pos_;
    base_ += static_cast<int64_t>(pos_);
    pos_ = 0;
  }
  if (eof_ || len_ == buf_.size()) return len_ > pos_;
  const size_t got =
      static_cast<size_t>(std::min<uint64_t>(buf_.size() - len_, source_->size() - offset_));
  read_status_ = source_->ReadAt(offset_, got, reinterpret_cast<uint8_t*>(buf_.data() + len_));
  if (!read_status_.ok()) return false;
  offset_ += got;
  if (got == 0) eof_ = true;
  len_ += got;
  return len_ > pos_;
}

Status CsvReader::Next(bool* end) {
  Status s = ReadRecord(end);
  if (!read_status_.ok()) return read_status_;
  if (!s.ok() || *end) return s;
  if (RecordBytes() > static_cast<int64_t>(kMaxCsvRecordBytes)) {
    return Error("a row longer than " + std::to_string(kMaxCsvRecordBytes) + " bytes (the limit)");
  }
  // Most tables are ASCII: one look at the whole record, then each field only if needed.
  const auto* p = reinterpret_cast<const unsigned char*>(data_.data());
  unsigned char high = 0;
  for (size_t i = 0; i < data_.size(); ++i) high |= p[i];
  if (high < 0x80) return Status::Ok();
  for (size_t i = 0; i < ends_.size(); ++i) {
    if (!IsValidUtf8(field(i))) {
      return Error("field " + std::to_string(i + 1) + " is not valid UTF-8");
    }
  }
  return Status::Ok();
}

Status CsvReader::ReadRecord(bool* end) {
  *end = false;
  data_.clear();
  ends_.clear();
  if (!started_) {
    started_ = true;
    while (len_ - pos_ < 3 && !eof_ && read_status_.ok()) {
      const size_t before = len_ - pos_;
      if (!Fill() && len_ - pos_ == before) break;
    }
    if (len_ - pos_ >= 3 && std::memcmp(buf_.data() + pos_, "\xEF\xBB\xBF", 3) == 0) pos_ += 3;
  }
  // Empty lines are skipped; `c` ends as the record's first byte.
  int c;
  for (;;) {
    record_start_ = base_ + static_cast<int64_t>(pos_);
    line_ = next_line_;
    c = Get();
    if (c == -1) {
      *end = true;
      return Status::Ok();
    }
    if (c == '\r') {
      if (!Accept('\n')) return Error("a carriage return not followed by a line feed");
      c = '\n';
    }
    if (c != '\n') break;
    ++next_line_;
  }
  for (;;) {  // one field a turn; `c` is its first byte
    while (IsBlank(c)) c = Get();
    if (c == '"') {
      for (;;) {
        c = Get();
        if (c == -1) return Error("a quoted field is not closed");
        if (c == '"') {
          if (!Accept('"')) break;
        } else if (c == '\n') {
          ++next_line_;
        }
        data_.push_back(static_cast<char>(c));
      }
      c = Get();
      while (IsBlank(c)) c = Get();
      if (!IsDelimiter(c)) {
        return Error("text after the closing quote of field " + std::to_string(ends_.size() + 1) +
                     " (a field is quoted whole; \"\" is a quote inside it)");
      }
    } else {
      size_t content_end = data_.size();  // without trailing spaces and tabs
      while (!IsDelimiter(c)) {
        if (c == '"') {
          return Error("a quote inside unquoted field " + std::to_string(ends_.size() + 1) +
                       " (quote the whole field; \"\" is a quote inside it)");
        }
        data_.push_back(static_cast<char>(c));
        if (!IsBlank(c)) content_end = data_.size();
        // The rest of the field in the buffer at once.
        const size_t start = pos_;
        while (pos_ < len_) {
          const char d = buf_[pos_];
          if (d == ',' || d == '\n' || d == '\r' || d == '"') break;
          ++pos_;
        }
        if (pos_ > start) {
          data_.append(buf_.data() + start, pos_ - start);
          size_t last = data_.size();
          while (last > content_end && IsBlank(static_cast<unsigned char>(data_[last - 1]))) --last;
          content_end = last;
        }
        c = Get();
      }
      data_.resize(content_end);
    }
    TRAININGD_RETURN_IF_ERROR(EndField());
    if (c == ',') {
      c = Get();
      continue;
    }
    if (c == '\r') {
      if (!Accept('\n')) return Error("a carriage return not followed by a line feed");
      c = '\n';
    }
    if (c == '\n') ++next_line_;
    return Status::Ok();
  }
}

}  // namespace trainingd::engine
