// CsvReader: RFC 4180 records from a byte source read in chunks, in memory bounded by the longest
// record (kMaxCsvRecordBytes), whatever the file's size. The table semantics (header, labels,
// numbers) are csv_dataset.cpp's; this file only splits bytes into fields.
//
// What a record is (docs/data.md, "CSV tables"):
//   - fields are separated by commas; a record ends at LF or CRLF, or at the end of the file;
//   - a field may be double-quoted; inside quotes "" is one quote, and commas, CR and LF are
//     content (a record may span lines);
//   - spaces and tabs before a field and after it (after its closing quote) are not part of it;
//     a quoted field's content is kept exactly;
//   - a UTF-8 byte order mark at the start of the file is skipped; empty lines are skipped;
//   - every field must be valid UTF-8.
// Errors are InvalidArgument naming the source and the record's first line: a quote inside an
// unquoted field, text after a closing quote, an unclosed quote, a CR not followed by LF, a record
// over kMaxCsvRecordBytes or kMaxCsvFields, a field that is not UTF-8. A failed read is IoError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/byte_source.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::engine {

inline constexpr size_t kMaxCsvRecordBytes = size_t{1} << 20;  // raw bytes of one record
inline constexpr size_t kMaxCsvFields = 65536;                 // fields of one record
inline constexpr size_t kCsvChunkBytes = size_t{1} << 16;      // bytes read at a time

// `s` quoted for a message: 'text', cut to 64 bytes (at a character boundary) and "...".
std::string CsvQuote(std::string_view s);

// Whether `s` is valid UTF-8 (no overlong forms, surrogates or code points over U+10FFFF).
bool IsValidUtf8(std::string_view s);

class CsvReader {
 public:
  // `name` starts every message ("train.csv: line 3: ..."). `source` must outlive the reader.
  CsvReader(ByteSource* source, std::string name);

  // Reads the next record. *end = true, and no record, at the end of the source.
  Status Next(bool* end);

  // The last record: its fields (views valid until the next call) and its first line (1-based).
  size_t size() const { return ends_.size(); }
  std::string_view field(size_t i) const {
    const size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(data_).substr(begin, ends_[i] - begin);
  }
  int64_t line() const { return line_; }
  const std::string& name() const { return name_; }

 private:
  // The next byte, or -1 at the end of the source and after a failed read or a row that is too
  // long (read_status_ says which).
  int Get() {
    if (pos_ == len_ && !Fill()) return -1;
    return static_cast<unsigned char>(buf_[pos_++]);
  }
  // Whether the next byte is `c`, consuming it when it is.
  bool Accept(int c) {
    if (pos_ == len_ && !Fill()) return false;
    if (static_cast<unsigned char>(buf_[pos_]) != c) return false;
    ++pos_;
    return true;
  }
  // Reads more after the unconsumed bytes; false when none came. Also where a row's length is
  // checked, so a row over the limit is refused once it holds kCsvChunkBytes more at most.
  bool Fill();
  int64_t RecordBytes() const { return base_ + static_cast<int64_t>(pos_) - record_start_; }
  Status ReadRecord(bool* end);
  Status EndField() {
    if (ends_.size() == kMaxCsvFields) {
      return Error("more than " + std::to_string(kMaxCsvFields) + " fields (the limit)");
    }
    ends_.push_back(data_.size());
    return Status::Ok();
  }
  Status Error(const std::string& what) const;

  ByteSource* source_;
  uint64_t offset_ = 0;  // the next byte to read from source_
  std::string name_;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0;
  int64_t base_ = 0;          // the offset in the source of buf_[0]
  int64_t record_start_ = 0;  // the offset of the record's first byte
  bool started_ = false;      // the byte order mark check is done
  bool eof_ = false;
  Status read_status_;     // a failed read or a row too long: ends the reading
  int64_t next_line_ = 1;  // the line the next byte is on
  int64_t line_ = 0;
  std::string data_;          // the record's fields, back to back
  std::vector<size_t> ends_;  // where each field ends in data_
};

}  // namespace trainingd::engine
