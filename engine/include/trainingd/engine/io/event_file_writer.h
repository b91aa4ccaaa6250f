// EventFileWriter: TensorBoard event files (tf.summary.FileWriter's on-disk format).
//
// Writes `events.out.tfevents.<10-digit unix seconds>.<hostname><suffix>` in a directory. Each
// record is framed as TensorFlow's TFRecord: u64 little-endian payload length, its masked CRC-32C,
// the payload (a serialized tensorflow.Event protocol buffer), the payload's masked CRC-32C. The
// first record carries file_version "brain.Event:2". Scalars use the legacy
// Summary.Value.simple_value form, which TensorBoard reads. The protocol buffers are encoded by
// hand (a few fixed fields), so the engine needs no protobuf library.
//
// Records are buffered in memory and written out once kWriteBytes wait, and by Flush(), which
// also fsyncs the file. A write that fails (a full disk) is cut back to the last whole record, so
// the file never holds a torn record with others after it (readers stop at one), and the records
// stay buffered: a later Flush() writes them once there is room. At most kMaxBufferedBytes wait;
// records beyond are refused. Not thread-safe: one owner (the summary writer of a session) calls
// it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "trainingd/engine/base/status.h"

namespace trainingd::engine {

// tensorflow.SessionLog.SessionStatus
enum class SessionLogStatus { kStart = 1, kStop = 2, kCheckpoint = 3 };

class EventFileWriter {
 public:
  struct Options {
    std::string filename_suffix;  // appended to the file name, as tf.summary.FileWriter's
    // Seconds since the epoch for the file name and the version record; 0 = now.
    double start_wall_time = 0;
  };

  // Buffered records are written out once this many bytes wait.
  static constexpr size_t kWriteBytes = size_t{64} << 10;
  // While writes fail, at most this many bytes of records wait; more are refused.
  static constexpr size_t kMaxBufferedBytes = size_t{8} << 20;

  // Creates the directory if needed and the event file with its version record (written and
  // fsynced: a disk with no room for it is an error, and no file is left then).
  static Result<std::unique_ptr<EventFileWriter>> Create(const std::string& dir,
                                                         const Options& options);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // One Event with one scalar Summary.Value. Errors of writing out what was buffered
  // (ResourceExhausted on a full disk, IoError) leave the record buffered.
  Status AddScalar(std::string_view tag, int64_t step, float value, double wall_time);
  // One Event with a SessionLog (e.g. kCheckpoint with the checkpoint's path). As AddScalar.
  Status AddSessionLog(SessionLogStatus status, std::string_view checkpoint_path, int64_t step,
                       double wall_time);
  // Writes buffered records to the file and fsyncs it. On a failure the file keeps its whole
  // records and the rest stays buffered for the next Flush.
  Status Flush();
  // Flushes and closes; later calls fail. Records a failed flush leaves are lost (the error says
  // so). Also done by the destructor (errors then ignored).
  Status Close();

  const std::string& path() const { return path_; }

  // The framing of one record around `payload`, exposed for tests.
  static std::string FrameRecord(std::string_view payload);
  // The serialized Event protos, exposed for tests.
  static std::string EncodeFileVersionEvent(double wall_time);
  static std::string EncodeScalarEvent(std::string_view tag, int64_t step, float value,
                                       double wall_time);
  static std::string EncodeSessionLogEvent(SessionLogStatus status,
                                           std::string_view checkpoint_path, int64_t step,
                                           double wall_time);

 private:
  EventFileWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  Status Append(const std::string& payload);
  // Writes the buffer after the file's whole records; on a failure cuts the file back to them.
  Status WriteBuffered();

  std::string path_;
  int fd_;               // -1 once closed
  std::string buffer_;   // framed records not written yet
  int64_t written_ = 0;  // bytes of whole records in the file
};

}  // namespace trainingd::engine
