#include "trainingd/engine/io/checkpoint_manager.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "base/float_format.h"
#include "io/text_format.h"

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;
using internal::DoubleToString;
using internal::ParseQuoted;
using internal::TextFormatQuote;
using internal::Trim;

constexpr const char* kStateFileName = "checkpoint";

bool ParseDouble(const std::string& v, double* out) {
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return ec == std::errc() && end == v.data() + v.size() && std::isfinite(*out);
}

// The "<basename>-<step>" regular files in `dir`, by step.
std::vector<std::pair<int64_t, std::string>> ScanCheckpointFiles(const std::string& dir,
                                                                 const std::string& basename) {
  std::vector<std::pair<int64_t, std::string>> found;
  const std::string prefix = basename + "-";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || !e.is_regular_file(ec)) continue;
    int64_t step = -1;
    const char* first = name.data() + prefix.size();
    const char* last = name.data() + name.size();
    const auto [ptr, err] = std::from_chars(first, last, step);
    if (err == std::errc() && ptr == last && first != last && step >= 0) {
      found.emplace_back(step, name);
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

// What a `checkpoint` state file says.
struct StateFile {
  std::vector<std::string> names;  // tracked, oldest first; the latest last
  std::vector<double> stamps;      // one per name, or none
  std::optional<double> last_preserved;
};

// Reads and parses the state file at `path`; an error says what is wrong with it.
Result<StateFile> ReadStateFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::IoError("cannot open it");
  StateFile state;
  std::string latest;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    line = Trim(line);
    if (line.empty() || line.front() == '#') continue;
    const size_t colon = line.find(':');
    const std::string where = "line " + std::to_string(line_no);
    if (colon == std::string::npos) {
      return Status::DataLoss(where + ": expected 'field: value'");
    }
    const std::string key = Trim(line.substr(0, colon));
    const std::string value = Trim(line.substr(colon + 1));
    std::string s;
    double d = 0;
    if (key == "model_checkpoint_path" && ParseQuoted(value, &s) && !s.empty()) {
      latest = s;
    } else if (key == "all_model_checkpoint_paths" && ParseQuoted(value, &s) && !s.empty()) {
      state.names.push_back(s);
    } else if (key == "all_model_checkpoint_timestamps" && ParseDouble(value, &d)) {
      state.stamps.push_back(d);
    } else if (key == "last_preserved_timestamp" && ParseDouble(value, &d)) {
      state.last_preserved = d;
    } else {
      return Status::DataLoss(where + ": cannot parse '" + line + "'");
    }
  }
  if (in.bad()) return Status::IoError("read error");
  if (latest.empty()) return Status::DataLoss("no model_checkpoint_path");
  // The latest is always tracked, and last.
  auto& names = state.names;
  names.erase(std::remove(names.begin(), names.end(), latest), names.end());
  names.push_back(latest);
  if (state.stamps.size() != names.size()) state.stamps.clear();
  return state;
}

}  // namespace

CheckpointManager::CheckpointManager(std::string directory, CheckpointManagerOptions options)
    : directory_(std::move(directory)), options_(std::move(options)) {}

Result<std::unique_ptr<CheckpointManager>> CheckpointManager::Create(
    const std::string& directory, CheckpointManagerOptions options,
    std::vector<std::string>* warnings) {
  if (directory.empty()) return Status::InvalidArgument("checkpoint directory is empty");
  if (options.basename.empty() || options.basename.find('/') != std::string::npos) {
    return Status::InvalidArgument("basename must be a non-empty file name, got '" +
                                   options.basename + "'");
  }
  if (options.max_to_keep < 1) {
    return Status::InvalidArgument("max_to_keep must be >= 1, got " +
                                   std::to_string(options.max_to_keep));
  }
  if (!(options.keep_checkpoint_every_n_hours >= 0) ||
      !std::isfinite(options.keep_checkpoint_every_n_hours)) {
    return Status::InvalidArgument("keep_checkpoint_every_n_hours must be >= 0 and finite");
  }
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec || !fs::is_directory(directory, ec)) {
    return Status::IoError(directory + ": cannot create checkpoint directory: " +
                           (ec ? ec.message() : std::string("not a directory")));
  }
  // Temp files of writes a crash interrupted would hold their space for good.
  RemoveStaleTempFiles(directory);
  std::unique_ptr<CheckpointManager> m(new CheckpointManager(directory, std::move(options)));
  m->LoadState(warnings);
  return m;
}

double CheckpointManager::Now() const {
  if (options_.now_seconds) return options_.now_seconds();
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string CheckpointManager::PathOf(const std::string& name) const {
  if (!name.empty() && name.front() == '/') return name;
  return (fs::path(directory_) / name).string();
}

std::string CheckpointManager::StateFilePath() const { return PathOf(kStateFileName); }

void CheckpointManager::LoadState(std::vector<std::string>* warnings) {
  entries_.clear();
  best_.reset();
  if (auto best = ReadBestCheckpoint(directory_); best.ok()) {
    best_ = *best;
  } else if (warnings) {
    warnings->push_back(best.status().message() + "; no best checkpoint is known until the next " +
                        "evaluation");
  }
  const double now = Now();
  last_preserved_ = now;
  const std::string path = StateFilePath();
  std::error_code ec;
  if (!fs::exists(path, ec) && !ec) return;  // a new directory: nothing to recover

  Result<StateFile> state = ReadStateFile(path);
  if (!state.ok()) {
    // Unlike TensorFlow (which then sees no checkpoint and starts over from step 0), a broken
    // state file is rebuilt from the "<basename>-<step>" files in the directory, newest last.
    const auto found = ScanCheckpointFiles(directory_, options_.basename);
    const size_t keep = std::min(found.size(), static_cast<size_t>(options_.max_to_keep));
    for (size_t i = found.size() - keep; i < found.size(); ++i) {
      entries_.push_back({found[i].second, now});
    }
    if (warnings) {
      warnings->push_back(
          path + ": unreadable checkpoint state (" + state.status().message() + "); " +
          (entries_.empty() ? std::string("no checkpoint files found, starting without one")
                            : "rebuilt from the " + std::to_string(entries_.size()) +
                                  " newest checkpoint files, latest " + entries_.back().name));
    }
    return;
  }
  for (size_t i = 0; i < state->names.size(); ++i) {
    entries_.push_back({state->names[i], state->stamps.empty() ? now : state->stamps[i]});
  }
  // As TensorFlow: a preservation time in the future means the clock went back; restart from now.
  if (state->last_preserved && *state->last_preserved <= now) {
    last_preserved_ = *state->last_preserved;
  }
}

std::string CheckpointManager::FormatState(const std::vector<Entry>& entries,
                                           double last_preserved) const {
  std::ostringstream out;
  if (!entries.empty())
    out << "model_checkpoint_path: " << TextFormatQuote(entries.back().name) << "\n";
  for (const Entry& e : entries)
    out << "all_model_checkpoint_paths: " << TextFormatQuote(e.name) << "\n";
  for (const Entry& e : entries) {
    out << "all_model_checkpoint_timestamps: " << DoubleToString(e.timestamp) << "\n";
  }
  out << "last_preserved_timestamp: " << DoubleToString(last_preserved) << "\n";
  return out.str();
}

Result<std::string> CheckpointManager::Save(const CheckpointData& data) {
  const std::string name = options_.basename + "-" + std::to_string(data.global_step);
  const std::string path = PathOf(name);
  TRAININGD_RETURN_IF_ERROR(WriteCheckpointFile(path, data));

  // Saving a step again replaces it and makes it the latest.
  std::vector<Entry> entries;
  for (const Entry& e : entries_) {
    if (e.name != name && PathOf(e.name) != path) entries.push_back(e);
  }
  entries.push_back({name, Now()});
  double last_preserved = last_preserved_;
  std::vector<std::string> doomed;
  const double keep_seconds = options_.keep_checkpoint_every_n_hours * 3600.0;
  bool preserved = false;
  bool retain_best = false;
  // A failed write leaves no untracked new checkpoint behind (it would pass for a preserved one).
  auto RemoveUnlessTracked = [&](Status st, const std::string& file) {
    if (st.ok()) return st;
    const bool tracked = std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
      return e.name == name || PathOf(e.name) == file;
    });
    std::error_code ec;
    if (!tracked) fs::remove(file, ec);
    return st;
  };
  while (entries.size() > static_cast<size_t>(options_.max_to_keep)) {
    const Entry oldest = entries.front();
    entries.erase(entries.begin());
    if (keep_seconds > 0 && oldest.timestamp - keep_seconds >= last_preserved) {
      last_preserved = oldest.timestamp;  // preserved for good, no longer tracked
      preserved = true;
      continue;
    }
    if (best_ && PathOf(best_->name) == PathOf(oldest.name)) {
      retain_best = true;  // the best stays, untracked, until a better one replaces it
      continue;
    }
    doomed.push_back(PathOf(oldest.name));
  }
  if (retain_best && !best_->retained) {
    BestCheckpoint best = *best_;
    best.retained = true;
    TRAININGD_RETURN_IF_ERROR(RemoveUnlessTracked(WriteBestCheckpoint(directory_, best), path));
    best_ = std::move(best);
  }
  if (preserved && options_.max_preserved >= 0) {
    // The preserved checkpoints are the "<basename>-<step>" files no entry tracks.
    std::vector<std::pair<int64_t, std::string>> untracked;
    std::error_code ec;
    const std::string prefix = options_.basename + "-";
    for (const auto& file : fs::directory_iterator(directory_, ec)) {
      const std::string fname = file.path().filename().string();
      int64_t step = 0;
      const char* end = fname.data() + fname.size();
      if (fname.rfind(prefix, 0) != 0 ||
          std::from_chars(fname.data() + prefix.size(), end, step).ptr != end) {
        continue;
      }
      const bool tracked = std::any_of(entries.begin(), entries.end(), [&](const Entry& e) {
        return PathOf(e.name) == file.path();
      });
      const bool dying =
          std::find(doomed.begin(), doomed.end(), file.path().string()) != doomed.end();
      const bool best = best_ && PathOf(best_->name) == file.path().string();
      if (!tracked && !dying && !best) untracked.emplace_back(step, file.path().string());
    }
    std::sort(untracked.begin(), untracked.end());
    for (size_t i = 0; i + static_cast<size_t>(options_.max_preserved) < untracked.size(); ++i) {
      doomed.push_back(untracked[i].second);
    }
  }
  // The state file is replaced before any deletion, so it never names a file retention removed.
  bool replaced = false;
  const std::string state = FormatState(entries, last_preserved);
  if (Status st = WriteFileAtomically(StateFilePath(), state, &replaced); !st.ok()) {
    // No state file names the new checkpoint (a full disk): delete it, or it would hold the
    // space and pass for a preserved one. One written over a tracked step is that step's.
    const bool tracked = std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
      return e.name == name || PathOf(e.name) == path;
    });
    std::error_code ec;
    if (!replaced && !tracked) fs::remove(path, ec);
    return st;
  }
  entries_ = std::move(entries);
  last_preserved_ = last_preserved;
  for (const std::string& p : doomed) {
    std::error_code ec;
    fs::remove(p, ec);
  }
  return path;
}

Result<CheckpointData> CheckpointManager::RestoreLatest(std::vector<std::string>* warnings) {
  if (entries_.empty()) return Status::NotFound(directory_ + ": no checkpoint");
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    Result<CheckpointData> data = ReadCheckpointFile(PathOf(it->name));
    if (data.ok()) return data;
    if (warnings) {
      const bool older = std::next(it) != entries_.rend();
      warnings->push_back("skipping checkpoint " + PathOf(it->name) + ": " +
                          data.status().ToString() +
                          (older ? "; falling back to the previous one" : ""));
    }
  }
  return Status::DataLoss(directory_ + ": none of the " + std::to_string(entries_.size()) +
                          " tracked checkpoints could be read");
}

Status CheckpointManager::MarkBest(BestCheckpoint best) {
  const std::string name = options_.basename + "-" + std::to_string(best.global_step);
  const bool tracked = std::any_of(entries_.begin(), entries_.end(),
                                   [&](const Entry& e) { return PathOf(e.name) == PathOf(name); });
  if (!tracked) {
    return Status::NotFound(directory_ + ": no tracked checkpoint of global step " +
                            std::to_string(best.global_step) + " to mark as the best");
  }
  best.name = name;
  best.retained = false;
  TRAININGD_RETURN_IF_ERROR(WriteBestCheckpoint(directory_, best));
  // The former best goes when only being the best kept it (never the new one: same step).
  const bool old_tracked =
      best_ && std::any_of(entries_.begin(), entries_.end(),
                           [&](const Entry& e) { return PathOf(e.name) == PathOf(best_->name); });
  if (best_ && best_->retained && !old_tracked && PathOf(best_->name) != PathOf(name)) {
    std::error_code ec;
    fs::remove(PathOf(best_->name), ec);
  }
  best_ = std::move(best);
  return Status::Ok();
}

std::optional<std::string> CheckpointManager::LatestCheckpointPath() const {
  if (entries_.empty()) return std::nullopt;
  return PathOf(entries_.back().name);
}

std::vector<std::string> CheckpointManager::KeptCheckpoints() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) out.push_back(PathOf(e.name));
  return out;
}

Result<std::vector<CheckpointFileInfo>> ListCheckpoints(const std::string& directory,
                                                        const std::string& basename) {
  std::vector<CheckpointFileInfo> out;
  const std::string state_path = (fs::path(directory) / kStateFileName).string();
  std::error_code ec;
  if (!fs::exists(state_path, ec)) return out;
  std::vector<std::string> names;
  if (Result<StateFile> state = ReadStateFile(state_path); state.ok()) {
    names = std::move(state->names);
  } else {
    // As the manager would rebuild it: the checkpoint files in the directory.
    for (auto& [step, name] : ScanCheckpointFiles(directory, basename)) names.push_back(name);
  }
  for (const std::string& name : names) {
    CheckpointFileInfo c;
    c.path = !name.empty() && name.front() == '/' ? name : (fs::path(directory) / name).string();
    const std::string file = fs::path(c.path).filename().string();
    const size_t dash = file.rfind('-');
    if (dash == std::string::npos ||
        std::from_chars(file.data() + dash + 1, file.data() + file.size(), c.global_step).ec !=
            std::errc()) {
      continue;  // not a "<basename>-<step>" name
    }
    const auto bytes = fs::file_size(c.path, ec);
    if (ec) continue;  // deleted meanwhile by the writer's retention
    c.bytes = static_cast<int64_t>(bytes);
    const auto mtime = fs::last_write_time(c.path, ec);
    if (!ec) {
      c.mtime =
          std::chrono::duration<double>(std::chrono::file_clock::to_sys(mtime).time_since_epoch())
              .count();
    }
    out.push_back(std::move(c));
  }
  return out;
}

int64_t LatestCheckpointStep(const std::string& directory) {
  auto kept = ListCheckpoints(directory);
  return kept.ok() && !kept->empty() ? kept->back().global_step : 0;
}

Status DeleteCheckpoints(const std::string& directory, const std::string& basename) {
  std::error_code ec;
  for (const char* file : {kStateFileName, BestCheckpointFileName()}) {
    const fs::path state_path = fs::path(directory) / file;
    if (!fs::remove(state_path, ec) && ec) {
      return Status::IoError("cannot delete " + state_path.string() + ": " + ec.message());
    }
  }
  for (auto& [step, name] : ScanCheckpointFiles(directory, basename)) {
    const fs::path path = fs::path(directory) / name;
    if (!fs::remove(path, ec) && ec) {
      return Status::IoError("cannot delete " + path.string() + ": " + ec.message());
    }
  }
  return Status::Ok();
}

}  // namespace trainingd::engine
