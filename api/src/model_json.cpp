#include "trainingd/api/model_json.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "trainingd/api/strict_json.h"
#include "trainingd/engine/io/checkpoint.h"

namespace trainingd::api {
namespace {

using engine::Status;
using namespace strict_json;  // NOLINT(google-build-using-namespace): this file's vocabulary

constexpr int64_t kModelJsonVersion = 1;

struct PreprocessingName {
  const char* name;
  engine::Preprocessing value;
};
constexpr PreprocessingName kPreprocessings[] = {
    {"none", engine::Preprocessing::kNone},
    {"scale_255", engine::Preprocessing::kScale255},
    {"standard", engine::Preprocessing::kStandard},
    {"per_channel", engine::Preprocessing::kPerChannel}};

json FloatArray(const std::vector<float>& values) {
  json a = json::array();
  for (float v : values) a.push_back(FloatJsonValue(v));
  return a;
}

// A float array written by FloatArray. Read as doubles and rounded: the shortest decimal of
// FLT_MAX (a constant feature's std beyond float range, feature_stats.cpp) is a double just
// above it, which strict_json's float reader refuses.
Status ReadFloats(const json& root, const char* key, std::vector<float>* out) {
  std::vector<double> values;
  TRAININGD_RETURN_IF_ERROR(Field(root, "", key, &values));
  out->clear();
  for (size_t i = 0; i < values.size(); ++i) {
    const auto f = static_cast<float>(values[i]);
    if (!std::isfinite(f))
      return Bad(Index(key, i), "must be within float range, got " + Got(root[key][i]));
    out->push_back(f);
  }
  return Status::Ok();
}

Status ReadModelInputJson(const json& root, engine::ModelInput* in) {
  TRAININGD_RETURN_IF_ERROR(
      CheckObject(root, "",
                  {"version", "example_shape", "num_classes", "class_names", "preprocessing",
                   "feature_mean", "feature_std", "feature_names", "feature_impute",
                   "missing_indicators", "categorical", "missing_values", "task", "target_mean",
                   "target_std", "decision_threshold", "dataset", "model"}));
  for (const char* key : {"version", "example_shape", "num_classes", "class_names", "preprocessing",
                          "dataset", "model"}) {
    TRAININGD_RETURN_IF_ERROR(Require(root, "", key));
  }
  int64_t version = 0;
  TRAININGD_RETURN_IF_ERROR(Read(root["version"], "version", &version));
  if (version != kModelJsonVersion) {
    return Bad("version", "this trainingd reads version " + std::to_string(kModelJsonVersion) +
                              ", got " + std::to_string(version));
  }
  std::vector<int64_t> dims;
  TRAININGD_RETURN_IF_ERROR(Read(root["example_shape"], "example_shape", &dims));
  in->example_shape = engine::Shape(std::move(dims));
  TRAININGD_RETURN_IF_ERROR(ReadInt(root["num_classes"], "num_classes", int64_t{1},
                                    int64_t{engine::kMaxClasses}, &in->num_classes));
  TRAININGD_RETURN_IF_ERROR(Read(root["class_names"], "class_names", &in->class_names));
  std::string pre;
  TRAININGD_RETURN_IF_ERROR(Read(root["preprocessing"], "preprocessing", &pre));
  bool known = false;
  for (const auto& p : kPreprocessings) {
    if (pre == p.name) {
      in->preprocessing = p.value;
      known = true;
    }
  }
  if (!known) {
    return Bad("preprocessing",
               "must be one of none, scale_255, standard, per_channel; got " + Quote(pre));
  }
  TRAININGD_RETURN_IF_ERROR(ReadFloats(root, "feature_mean", &in->feature_mean));
  TRAININGD_RETURN_IF_ERROR(ReadFloats(root, "feature_std", &in->feature_std));
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "feature_names", &in->feature_names));
  TRAININGD_RETURN_IF_ERROR(ReadFloats(root, "feature_impute", &in->feature_impute));
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "missing_indicators", &in->missing_indicators));
  if (const auto it = root.find("categorical"); it != root.end()) {
    if (!it->is_array()) {
      return Bad("categorical", std::string("must be an array, got ") + TypeName(*it));
    }
    for (size_t c = 0; c < it->size(); ++c) {
      const json& f = (*it)[c];
      const std::string path = Index("categorical", c);
      if (!f.is_object()) return Bad(path, std::string("must be an object, got ") + TypeName(f));
      TRAININGD_RETURN_IF_ERROR(CheckObject(f, path, {"name", "levels", "hash_buckets"}));
      TRAININGD_RETURN_IF_ERROR(Require(f, path, "name"));
      TRAININGD_RETURN_IF_ERROR(Require(f, path, "levels"));
      engine::CategoricalFeature feature;
      TRAININGD_RETURN_IF_ERROR(Field(f, path, "name", &feature.name));
      TRAININGD_RETURN_IF_ERROR(Field(f, path, "levels", &feature.levels));
      if (const auto h = f.find("hash_buckets"); h != f.end()) {
        TRAININGD_RETURN_IF_ERROR(ReadInt(*h, path + ".hash_buckets", engine::kMinHashBuckets,
                                          engine::kMaxHashBuckets, &feature.hash_buckets));
      }
      in->categorical.push_back(std::move(feature));
    }
  }
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "missing_values", &in->missing_values));
  if (const auto it = root.find("task"); it != root.end()) {
    if (*it == engine::TaskName(engine::Task::kRegression)) {
      in->task = engine::Task::kRegression;
    } else if (*it != engine::TaskName(engine::Task::kClassification)) {
      return Bad("task", "must be classification or regression, got " + Got(*it));
    }
  }
  if (in->task == engine::Task::kRegression) {
    TRAININGD_RETURN_IF_ERROR(Require(root, "", "target_mean"));
    TRAININGD_RETURN_IF_ERROR(Require(root, "", "target_std"));
  } else if (root.contains("target_mean") || root.contains("target_std")) {
    return Bad("target_mean", "a regression model's (task regression)");
  }
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "target_mean", &in->target.mean));
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "target_std", &in->target.std));
  // Left out by a model recorded before thresholds: 0.5, the arg-max it predicted with.
  TRAININGD_RETURN_IF_ERROR(Field(root, "", "decision_threshold", &in->decision_threshold));
  const json& dataset = root["dataset"];
  if (!dataset.is_object()) {
    return Bad("dataset", std::string("must be an object, got ") + TypeName(dataset));
  }
  TRAININGD_RETURN_IF_ERROR(CheckObject(dataset, "dataset", {"name", "format", "sha256"}));
  TRAININGD_RETURN_IF_ERROR(Require(dataset, "dataset", "name"));
  TRAININGD_RETURN_IF_ERROR(Field(dataset, "dataset", "name", &in->dataset_name));
  TRAININGD_RETURN_IF_ERROR(Field(dataset, "dataset", "format", &in->dataset_format));
  TRAININGD_RETURN_IF_ERROR(Field(dataset, "dataset", "sha256", &in->dataset_sha256));
  const json& model = root["model"];
  if (!model.is_object()) {
    return Bad("model", std::string("must be an object, got ") + TypeName(model));
  }
  TRAININGD_RETURN_IF_ERROR(CheckObject(model, "model", {"layers"}));
  TRAININGD_RETURN_IF_ERROR(Require(model, "model", "layers"));
  return LayersFromJson(model["layers"], "model.layers", &in->model);
}

}  // namespace

std::string ModelInputToJson(const engine::ModelInput& in) {
  json root = {{"version", kModelJsonVersion},
               {"example_shape", in.example_shape.dims()},
               {"num_classes", in.num_classes},
               {"class_names", in.class_names},
               {"preprocessing", engine::PreprocessingName(in.preprocessing)}};
  if (in.preprocessing == engine::Preprocessing::kStandard ||
      in.preprocessing == engine::Preprocessing::kPerChannel) {
    root["feature_mean"] = FloatArray(in.feature_mean);
    root["feature_std"] = FloatArray(in.feature_std);
  }
  if (!in.feature_names.empty()) root["feature_names"] = in.feature_names;
  if (!in.feature_impute.empty()) root["feature_impute"] = FloatArray(in.feature_impute);
  if (!in.missing_indicators.empty()) root["missing_indicators"] = in.missing_indicators;
  if (!in.categorical.empty()) {
    json categorical = json::array();
    for (const engine::CategoricalFeature& f : in.categorical) {
      json entry = {{"name", f.name}, {"levels", f.levels}};
      if (f.hash_buckets > 0) entry["hash_buckets"] = f.hash_buckets;
      categorical.push_back(std::move(entry));
    }
    root["categorical"] = std::move(categorical);
    root["missing_values"] = in.missing_values;
  }
  if (in.task == engine::Task::kRegression) {
    root["task"] = engine::TaskName(in.task);
    root["target_mean"] = FloatJsonValue(in.target.mean);
    root["target_std"] = FloatJsonValue(in.target.std);
  } else if (in.num_classes == 2) {
    root["decision_threshold"] = in.decision_threshold;
  }
  root["dataset"] = {
      {"name", in.dataset_name}, {"format", in.dataset_format}, {"sha256", in.dataset_sha256}};
  root["model"] = {{"layers", LayersToJsonValue(in.model)}};
  // Class names from a user's CSV may hold bytes that are not UTF-8: replaced, never thrown on.
  return root.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

engine::Result<engine::ModelInput> ParseModelInput(std::string_view text, FieldError* error) {
  const auto fail = [error](const Status& s) {
    if (error) {
      const std::string& m = s.message();
      const size_t colon = m.find(": ");
      const size_t space = m.find(' ');
      error->field = colon != std::string::npos && (space == std::string::npos || space > colon)
                         ? m.substr(0, colon)
                         : std::string();
      error->message = m;
    }
    return s;
  };
  try {
    auto doc = Parse(text);
    if (!doc.ok()) return fail(doc.status());
    if (!doc->is_object()) {
      return fail(Bad("", std::string("model.json must be a JSON object, got ") + TypeName(*doc)));
    }
    engine::ModelInput in;
    if (Status s = ReadModelInputJson(*doc, &in); !s.ok()) return fail(s);
    if (Status s = engine::ValidateModelInput(in); !s.ok()) return fail(s);
    return in;
  } catch (const std::exception& e) {
    return fail(Status::Internal(std::string("reading model.json failed: ") + e.what()));
  }
}

Status WriteModelJson(const std::string& checkpoint_dir, const engine::ModelInput& input) {
  std::error_code ec;
  std::filesystem::create_directories(checkpoint_dir, ec);
  if (ec) {
    return Status::IoError(checkpoint_dir + ": cannot create the directory: " + ec.message());
  }
  return engine::WriteFileAtomically(checkpoint_dir + "/" + kModelJsonFile,
                                     ModelInputToJson(input));
}

engine::Result<engine::ModelInput> ReadModelJson(const std::string& checkpoint_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(checkpoint_dir, ec)) {
    return Status::NotFound(checkpoint_dir + ": no such directory");
  }
  const std::string path = checkpoint_dir + "/" + kModelJsonFile;
  if (!std::filesystem::exists(path, ec)) {
    return Status::NotFound(checkpoint_dir + ": no " + kModelJsonFile +
                            " (a directory trained before trainingd recorded its model there, or "
                            "not a checkpoint directory)");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status::IoError(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) return Status::IoError(path + ": cannot read: " + std::strerror(errno));
  auto in = ParseModelInput(text.str());
  if (!in.ok()) return Status::InvalidArgument(path + ": " + in.status().message());
  return in;
}

}  // namespace trainingd::api
