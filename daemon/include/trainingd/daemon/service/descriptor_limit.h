// The HTTP connection cap against the process's file descriptor limit (RLIMIT_NOFILE): every
// connection holds a descriptor, and so do the daemon's own files. If connections could take
// them all, SQLite, checkpoints and event files would fail with EMFILE under a connection flood.
// `trainingd serve` raises the soft limit to the hard one and keeps the cap below it with a
// reserve for its own files (docs/operations.md#connections-and-file-descriptors).
#pragma once

#include <cstddef>
#include <cstdint>

#include "trainingd/engine/base/status.h"

namespace trainingd::daemon {

// Descriptors the daemon may hold besides its HTTP connections: 64 for the process itself
// (stdio, the data-directory lock, the SQLite writer's database, WAL and shared-memory files,
// the event loop's epoll, eventfd and timer descriptors, the listening socket, the web root's
// files being read), 4 per HTTP handler thread (each may hold a SQLite read connection of
// three files while reading a log or checkpoint list), and 16 per concurrent job (its log,
// its event file, the checkpoint being written and its directory, the dataset files while
// loading, a profiler timeline). Several times what was measured: 15 open while idle, at most
// 18 with a CNN job training and checkpointing every 20 steps (docs/operations.md).
size_t DescriptorReserve(int max_concurrent_jobs, int http_handler_threads);

// The fewest connections worth starting with; below this start-up fails.
inline constexpr size_t kMinConnections = 16;

// Raises the soft RLIMIT_NOFILE to the hard limit (no-op when they are equal) and returns the
// soft limit now in force. IoError when getrlimit fails; a refused raise keeps the old limit.
engine::Result<uint64_t> RaiseDescriptorLimit();

// The cap that fits: `wanted`, or limit - reserve when that is smaller; 0 when that is
// smaller still than kMinConnections (the caller refuses to start).
size_t FitConnectionCap(size_t wanted, uint64_t limit, size_t reserve);

}  // namespace trainingd::daemon
