#include "trainingd/engine/io/best_checkpoint.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/float_format.h"
#include "trainingd/engine/io/checkpoint.h"

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;

}  // namespace

namespace best_checkpoint_text {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

bool Unquote(const std::string& v, std::string* out) {
  if (v.size() < 2 || v.front() != '"' || v.back() != '"') return false;
  out->clear();
  for (size_t i = 1; i + 1 < v.size(); ++i) {
    char ch = v[i];
    if (ch == '"') return false;
    if (ch == '\\') {
      if (i + 2 >= v.size()) return false;
      ch = v[++i];
    }
    out->push_back(ch);
  }
  return true;
}

}  // namespace best_checkpoint_text

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
    line = best_checkpoint_text::Trim(line);
    if (line.empty() || line.front() == '#') continue;
    const size_t colon = line.find(':');
    const std::string key =
        colon == std::string::npos ? "" : best_checkpoint_text::Trim(line.substr(0, colon));
    const std::string value =
        colon == std::string::npos ? "" : best_checkpoint_text::Trim(line.substr(colon + 1));
    const char* first = value.data();
    const char* last = value.data() + value.size();
    bool ok = false;
    if (key == "model_checkpoint_path") {
      ok = has_name = best_checkpoint_text::Unquote(value, &best.name) && !best.name.empty();
    } else if (key == "global_step") {
      const auto [p, e] = std::from_chars(first, last, best.global_step);
      ok = has_step = e == std::errc() && p == last && best.global_step >= 0;
    } else if (key == "metric") {
      ok = best_checkpoint_text::Unquote(value, &best.metric);
    } else if (key == "mode") {
      ok = best_checkpoint_text::Unquote(value, &best.mode) &&
           (best.mode == "min" || best.mode == "max");
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
  out << "model_checkpoint_path: " << best_checkpoint_text::Quote(best.name) << "\n"
      << "global_step: " << best.global_step << "\n"
      << "metric: " << best_checkpoint_text::Quote(best.metric) << "\n"
      << "mode: " << best_checkpoint_text::Quote(best.mode) << "\n"
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
