#include "trainingd/engine/session/session_creator.h"

#include <cmath>
#include <filesystem>

#include "trainingd/engine/base/format.h"
#include "trainingd/engine/io/checkpoint.h"

namespace trainingd::engine {
namespace {

Result<std::unique_ptr<Session>> NewSession(const SessionSource& s) {
  return Session::Create(s.config, s.datasets, s.env, s.logger);
}

bool Distributed(const SessionSource& s) {
  return s.config.communicator && s.config.communicator->size() > 1;
}

// The chief's whole state (parameters, optimizer slots, global step, input position, random
// streams) to every rank, in the checkpoint format: the chief sends, the workers restore it.
Status ShareChiefState(Session& session, Communicator& comm) {
  std::string bytes;
  if (comm.is_chief()) {
    auto data = session.Capture();
    if (!data.ok()) return data.status();
    auto encoded = EncodeCheckpoint(*data);
    if (!encoded.ok()) return encoded.status();
    bytes = std::move(encoded).value();
  }
  TRAININGD_RETURN_IF_ERROR(BroadcastString(comm, bytes, 0));
  if (comm.is_chief()) return Status::Ok();
  auto data = ParseCheckpoint(bytes, "the chief's state");
  if (!data.ok()) return data.status();
  return session.Restore(*data);
}

}  // namespace

ChiefSessionCreator::ChiefSessionCreator(SessionSource source, std::string checkpoint_dir,
                                         CheckpointManagerOptions checkpoint_options)
    : source_(std::move(source)),
      checkpoint_dir_(std::move(checkpoint_dir)),
      checkpoint_options_(std::move(checkpoint_options)) {
  if (!source_.env) source_.env = Env::Default();
  if (!source_.logger) source_.logger = Logger::Stderr();
}

Result<std::unique_ptr<Session>> ChiefSessionCreator::CreateSession(const Coordinator&) {
  auto session = RestoreOrInitialize();
  if (session.ok() && Distributed(source_)) {
    TRAININGD_RETURN_IF_ERROR(ShareChiefState(**session, *source_.config.communicator));
  }
  return session;
}

Result<std::unique_ptr<Session>> ChiefSessionCreator::RestoreOrInitialize() {
  auto session = NewSession(source_);
  if (!session.ok() || checkpoint_dir_.empty()) return session;
  std::vector<std::string> warnings;
  auto manager = CheckpointManager::Create(checkpoint_dir_, checkpoint_options_, &warnings);
  if (!manager.ok()) return manager.status();
  auto data = (*manager)->RestoreLatest(&warnings);
  for (const std::string& w : warnings) source_.logger->Warning(w);
  if (!data.ok()) {
    if (data.status().code() == StatusCode::kNotFound) return session;  // nothing to restore
    return data.status();
  }
  // RestoreLatest may have fallen back to an older checkpoint; name the one that was read.
  const std::string path = checkpoint_dir_ + "/" + checkpoint_options_.basename + "-" +
                           std::to_string(data->global_step);
  Status st = (*session)->Restore(*data);
  if (!st.ok()) {
    return Status::InvalidArgument("restoring " + path +
                                   " into this model failed: " + st.message());
  }
  source_.logger->Info("Restoring parameters from " + path);
  return session;
}

WorkerSessionCreator::WorkerSessionCreator(SessionSource source, Options options)
    : source_(std::move(source)), options_(std::move(options)) {
  if (!source_.env) source_.env = Env::Default();
  if (!source_.logger) source_.logger = Logger::Stderr();
  if (!options_.ready) {
    const std::string dir = options_.checkpoint_dir;
    options_.ready = [dir]() -> Result<bool> {
      if (dir.empty()) return true;
      std::error_code ec;
      if (!std::filesystem::exists(dir + "/checkpoint", ec)) return false;  // never create it
      auto manager = CheckpointManager::Create(dir);
      if (!manager.ok()) return manager.status();
      return (*manager)->LatestCheckpointPath().has_value();
    };
  }
}

Result<std::unique_ptr<Session>> WorkerSessionCreator::CreateSession(
    const Coordinator& coordinator) {
  if (Distributed(source_)) {
    // The chief sends its state when it has it: nothing to poll for.
    auto session = NewSession(source_);
    if (session.ok()) {
      TRAININGD_RETURN_IF_ERROR(ShareChiefState(**session, *source_.config.communicator));
    }
    return session;
  }
  Env& env = *source_.env;
  const double start = env.NowMonotonic();
  bool logged = false;
  for (;;) {
    auto ready = options_.ready();
    if (!ready.ok()) return ready.status();
    if (*ready) return NewSession(source_);
    const double waited = env.NowMonotonic() - start;
    if (waited >= options_.max_wait_secs) {
      return Status::DeadlineExceeded("Session was not ready after waiting " +
                                      FormatSeconds(std::floor(waited)) + " secs.");
    }
    if (coordinator.ShouldStop()) {
      return Status::Cancelled("stop requested while waiting for the chief");
    }
    if (!logged) {
      source_.logger->Info("Waiting for the chief to initialise the model; checking every " +
                           FormatSeconds(options_.poll_secs) + " s for up to " +
                           FormatSeconds(options_.max_wait_secs) + " s.");
      logged = true;
    }
    env.SleepForSeconds(std::min(options_.poll_secs, options_.max_wait_secs - waited));
  }
}

}  // namespace trainingd::engine
