#include "trainingd/engine/io/best_checkpoint.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/float_format.h"
#include "io/text_format.h"
#include "trainingd/engine/io/checkpoint.h"

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;

}  // namespace

const char* BestCheckpointFileName() { return "best_checkpoint"; }

Result<std::optional<BestCheckpoint>> ReadBestCheckpoint(const std::string& directory) {
  const std::string path = (fs::path(directory) / BestCheckpointFileName()).string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<BestCheckpoint>();
  std::ifstream in(path);
  if (!in) return Status::IoError(path + ": cannot open it");
  BestCheckpoint best;
  bool has_name = false, has_step = false, has_value = false;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = internal::Trim(line);
    if (line.empty() || line.front() == '#') continue;
    const size_t colon = line.find(':');
    const std::string key = colon == std::string::npos ? "" : internal::Trim(line.substr(0, colon));
    const std::string value =
        colon == std::string::npos ? "" : internal::Trim(line.substr(colon + 1));
    const char* first = value.data();
    const char* last = value.data() + value.size();
    bool ok = false;
    if (key == "model_checkpoint_path") {
      ok = has_name = internal::ParseQuoted(value, &best.name) && !best.name.empty();
    } else if (key == "global_step") {
      const auto [p, e] = std::from_chars(first, last, best.global_step);
      ok = has_step = e == std::errc() && p == last && best.global_step >= 0;
    } else if (key == "metric") {
      ok = internal::ParseQuoted(value, &best.metric);
    } else if (key == "mode") {
      ok = internal::ParseQuoted(value, &best.mode) && (best.mode == "min" || best.mode == "max");
    } else if (key == "value") {
      const auto [p, e] = std::from_chars(first, last, best.value);
      ok = has_value = e == std::errc() && p == last && std::isfinite(best.value);
    } else if (key == "retained") {
      ok = value == "true" || value == "false";
      best.retained = value == "true";
    }
    if (!ok) {
      return Status::DataLoss(path + ": line " + std::to_string(n) + ": cannot parse '" + line +
                              "'");
    }
  }
  if (in.bad()) return Status::IoError(path + ": read error");
  if (!has_name || !has_step || !has_value) {
    return Status::DataLoss(path + ": needs model_checkpoint_path, global_step and value");
  }
  return std::optional<BestCheckpoint>(std::move(best));
}

Status WriteBestCheckpoint(const std::string& directory, const BestCheckpoint& best) {
  std::ostringstream out;
  out << "model_checkpoint_path: " << internal::TextFormatQuote(best.name) << "\n"
      << "global_step: " << best.global_step << "\n"
      << "metric: " << internal::TextFormatQuote(best.metric) << "\n"
      << "mode: " << internal::TextFormatQuote(best.mode) << "\n"
      << "value: " << internal::DoubleToString(best.value) << "\n"
      << "retained: " << (best.retained ? "true" : "false") << "\n";
  return WriteFileAtomically((fs::path(directory) / BestCheckpointFileName()).string(), out.str());
}

bool IsBetter(double value, const std::optional<double>& best, const std::string& mode,
              double min_delta) {
  if (std::isnan(value)) return false;
  if (!best) return true;
  return mode == "max" ? value > *best + min_delta : value < *best - min_delta;
}

}  // namespace trainingd::engine
