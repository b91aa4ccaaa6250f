#include "trainingd/engine/io/event_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "io/crc32c.h"

namespace trainingd::engine {
namespace {

// Protocol buffer wire format: just what tensorflow.Event needs.
void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void PutKey(std::string& out, int field, int wire_type) {
  PutVarint(out, static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type));
}
void PutFixed32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void PutFixed64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}
void PutDouble(std::string& out, int field, double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  PutKey(out, field, 1);
  PutFixed64(out, bits);
}
void PutFloat(std::string& out, int field, float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  PutKey(out, field, 5);
  PutFixed32(out, bits);
}
void PutBytes(std::string& out, int field, std::string_view bytes) {
  PutKey(out, field, 2);
  PutVarint(out, bytes.size());
  out.append(bytes);
}
// Event.wall_time = 1, Event.step = 2 (omitted when 0, as proto3 serializers do).
std::string EventHeader(double wall_time, int64_t step) {
  std::string e;
  PutDouble(e, 1, wall_time);
  if (step != 0) {
    PutKey(e, 2, 0);
    PutVarint(e, static_cast<uint64_t>(step));
  }
  return e;
}

uint32_t MaskedCrc(std::string_view bytes) {
  const uint32_t crc = internal::Crc32c(bytes.data(), bytes.size());
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

std::string EventFileWriter::FrameRecord(std::string_view payload) {
  std::string header;
  PutFixed64(header, payload.size());
  std::string out = header;
  PutFixed32(out, MaskedCrc(header));
  out.append(payload);
  PutFixed32(out, MaskedCrc(payload));
  return out;
}

std::string EventFileWriter::EncodeFileVersionEvent(double wall_time) {
  std::string e = EventHeader(wall_time, 0);
  PutBytes(e, 3, "brain.Event:2");  // Event.file_version
  return e;
}

std::string EventFileWriter::EncodeScalarEvent(std::string_view tag, int64_t step, float value,
                                               double wall_time) {
  std::string v;  // Summary.Value: tag = 1, simple_value = 2
  PutBytes(v, 1, tag);
  PutFloat(v, 2, value);
  std::string summary;  // Summary: value = 1
  PutBytes(summary, 1, v);
  std::string e = EventHeader(wall_time, step);
  PutBytes(e, 5, summary);  // Event.summary
  return e;
}

std::string EventFileWriter::EncodeSessionLogEvent(SessionLogStatus status,
                                                   std::string_view checkpoint_path, int64_t step,
                                                   double wall_time) {
  std::string log;  // SessionLog: status = 1, checkpoint_path = 2
  PutKey(log, 1, 0);
  PutVarint(log, static_cast<uint64_t>(status));
  if (!checkpoint_path.empty()) PutBytes(log, 2, checkpoint_path);
  std::string e = EventHeader(wall_time, step);
  PutBytes(e, 7, log);  // Event.session_log
  return e;
}

Result<std::unique_ptr<EventFileWriter>> EventFileWriter::Create(const std::string& dir,
                                                                 const Options& options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create summary directory " + dir + ": " + ec.message());
  double now = options.start_wall_time;
  if (now <= 0) {
    now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%010lld", static_cast<long long>(std::floor(now)));
  const std::string path =
      (std::filesystem::path(dir) /
       ("events.out.tfevents." + std::string(secs) + "." + HostName() + options.filename_suffix))
          .string();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return ErrnoStatus(errno, "cannot create event file " + path + ": " + std::strerror(errno));
  }
  std::unique_ptr<EventFileWriter> w(new EventFileWriter(path, fd));
  Status st = w->Append(EncodeFileVersionEvent(now));
  if (st.ok()) st = w->Flush();
  if (!st.ok()) {
    ::unlink(path.c_str());  // an empty event file helps nobody
    return st;
  }
  return w;
}

EventFileWriter::~EventFileWriter() { (void)Close(); }

Status EventFileWriter::Append(const std::string& payload) {
  if (fd_ < 0) return Status::FailedPrecondition("event file " + path_ + " is closed");
  if (buffer_.size() >= kMaxBufferedBytes) {
    return Status::ResourceExhausted("event file " + path_ + ": " + std::to_string(buffer_.size()) +
                                     " bytes of records wait for the disk; a record is dropped");
  }
  buffer_ += FrameRecord(payload);
  if (buffer_.size() >= kWriteBytes) return WriteBuffered();
  return Status::Ok();
}

Status EventFileWriter::WriteBuffered() {
  size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::pwrite(fd_, buffer_.data() + done, buffer_.size() - done,
                               static_cast<off_t>(written_ + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      // Cut back to the whole records. Should that fail too, the next write still starts at
      // written_ and overwrites the torn bytes.
      if (done > 0) static_cast<void>(::ftruncate(fd_, static_cast<off_t>(written_)));
      return ErrnoStatus(err, "cannot write event file " + path_ + ": " + std::strerror(err) +
                                  " (" + std::to_string(buffer_.size()) +
                                  " bytes of records kept for the next flush)");
    }
    done += static_cast<size_t>(n);
  }
  written_ += static_cast<int64_t>(buffer_.size());
  buffer_.clear();
  return Status::Ok();
}

Status EventFileWriter::AddScalar(std::string_view tag, int64_t step, float value,
                                  double wall_time) {
  return Append(EncodeScalarEvent(tag, step, value, wall_time));
}

Status EventFileWriter::AddSessionLog(SessionLogStatus status, std::string_view checkpoint_path,
                                      int64_t step, double wall_time) {
  return Append(EncodeSessionLogEvent(status, checkpoint_path, step, wall_time));
}

Status EventFileWriter::Flush() {
  if (fd_ < 0) return Status::FailedPrecondition("event file " + path_ + " is closed");
  TRAININGD_RETURN_IF_ERROR(WriteBuffered());
  if (::fsync(fd_) != 0) {
    return ErrnoStatus(errno, "cannot flush event file " + path_ + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status EventFileWriter::Close() {
  if (fd_ < 0) return Status::Ok();
  Status s = Flush();
  if (!s.ok()) {
    s = Status(s.code(), s.message() + "; closed with " + std::to_string(buffer_.size()) +
                             " bytes of records not written");
  }
  if (::close(fd_) != 0 && s.ok()) {
    s = ErrnoStatus(errno, "cannot close event file " + path_ + ": " + std::strerror(errno));
  }
  fd_ = -1;
  buffer_.clear();
  return s;
}

}  // namespace trainingd::engine
