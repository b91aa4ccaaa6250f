// The format marker of a data directory, <data_dir>/format.json (docs/operations.md#upgrading):
//
//   {"format": 1, "store_schema": 6, "written_by": "trainingd 0.1.0"}
//
// `format` is the version of the files under the data directory besides the database: jobs/<id>/
// (checkpoints, their state file, model.json, the logs) and datasets/. A release bumps it when it
// writes those files in a way an older release cannot read; the database has its own version
// (PRAGMA user_version). `trainingd serve` and `trainingd db migrate` check the marker before they
// touch anything and write it once the database is migrated; a directory without one was written
// before the marker existed, in format 1.
#pragma once

#include <string>

#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

// The format this build writes and the newest it reads.
inline constexpr int kDataDirFormat = 1;
inline constexpr char kDataDirFormatFile[] = "format.json";

// The format of `dir`: its marker's, or 1 when it has none. FailedPrecondition when the marker is
// newer than kDataDirFormat ("... written by a newer trainingd ...") or is not a marker this
// build understands (naming the file); IoError when it cannot be read.
engine::Result<int> ReadDataDirFormat(const std::string& dir);

// Writes the marker of this build into `dir` (a temporary file, fsynced, renamed into place), with
// `store_schema` as the database's version; nothing when the marker already says exactly that.
engine::Status WriteDataDirFormat(const std::string& dir, int store_schema);

}  // namespace trainingd::daemon
