#include "trainingd/api/dataset_json.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "table_columns_json.h"
#include "trainingd/api/strict_json.h"

namespace trainingd::api {
namespace {

using json = nlohmann::json;
namespace sj = strict_json;

json UploadToJson(const DatasetRecord& d) {
  json u = {{"normalize", d.upload.normalize}};
  if (d.format == "csv") {
    u["label_column"] = d.upload.label_column;
    u["test_file"] = d.upload.test_file;
    if (!d.upload.test_file) {
      u["test_fraction"] = d.upload.test_fraction;
      u["split_seed"] = d.upload.split_seed;
    }
    json columns = ColumnOptionsToJson(d.upload.columns);
    if (!columns.empty()) u["columns"] = std::move(columns);
  }
  return u;
}

json FileToJson(const DatasetFileRecord& f) { return {{"sha256", f.sha256}, {"bytes", f.bytes}}; }

DatasetFileRecord FileFromJson(const json& v) {
  return {v.at("sha256").get<std::string>(), v.at("bytes").get<int64_t>()};
}

// The double nearest the shortest decimal that reads back as `v` (std::to_chars), which JSON
// then writes as that decimal: 4.07, not 4.070000171661377.
double ShortestDouble(float v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf - 1, v);
  if (ec != std::errc()) return v;
  *end = '\0';
  return std::strtod(buf, nullptr);
}

// What jobs the dataset's labels serve: classification when they are classes, regression when
// they are numbers (a CSV's).
json Tasks(const DatasetRecord& d) {
  json tasks = json::array();
  if (d.num_classes > 0) tasks.push_back(engine::TaskName(engine::Task::kClassification));
  if (d.numeric_labels) tasks.push_back(engine::TaskName(engine::Task::kRegression));
  return tasks;
}

}  // namespace

json DatasetToJson(const DatasetRecord& d) {
  json names = json::array();
  for (int c = 0; c < d.num_classes; ++c) {
    names.push_back(c < static_cast<int>(d.class_names.size()) ? d.class_names[c]
                                                               : std::to_string(c));
  }
  json preprocessing = {{"kind", d.preprocessing}};
  if (d.preprocessing == "standard") {
    preprocessing["mean"] = d.feature_mean;
    preprocessing["std"] = d.feature_std;
  }
  json v = {{"name", d.name},
            {"format", d.format},
            {"read_only", d.read_only},
            {"sha256", d.sha256.empty() ? json(nullptr) : json(d.sha256)},
            {"bytes", d.bytes},
            {"example_shape", d.example_shape},
            {"num_classes", d.num_classes},
            {"class_names", std::move(names)},
            {"tasks", Tasks(d)},
            {"splits",
             {{"train", d.train_examples},
              {"validation", d.validation_examples},
              {"test", d.test_examples}}},
            {"element_type", d.element_type},
            {"preprocessing", std::move(preprocessing)},
            {"created_at", d.created_at > 0 ? json(d.created_at) : json(nullptr)},
            {"owner", d.owner.empty() ? json(nullptr) : json(d.owner)}};
  if (d.format == "csv") {
    json columns = json::array();
    for (const engine::ColumnSummary& c : d.columns) {
      columns.push_back(ColumnSummaryToJson(c, d.numeric_labels));
    }
    v["columns"] = std::move(columns);
    v["feature_names"] = d.feature_names;
  }
  if (!d.read_only) {
    v["upload"] = UploadToJson(d);
    v["files"] = {{"train", FileToJson(d.train_file)}};
    if (!d.test_file.sha256.empty()) v["files"]["test"] = FileToJson(d.test_file);
  }
  return v;
}

json DatasetExamplesToJson(const DatasetExamples& e) {
  int64_t per = 1;
  for (int64_t d : e.example_shape) per *= d;
  json list = json::array();
  for (size_t i = 0; i < e.size(); ++i) {
    json data = json::array();
    const float* v = e.values.data() + static_cast<int64_t>(i) * per;
    for (int64_t k = 0; k < per; ++k) {
      if (e.integer_values) {
        data.push_back(static_cast<int64_t>(v[k]));
      } else {
        data.push_back(ShortestDouble(v[k]));
      }
    }
    json example = {{"index", e.first + static_cast<int64_t>(i)}};
    if (!e.labels.empty()) {
      const int32_t label = e.labels[i];
      example["label"] = label;
      example["class_name"] = label < static_cast<int32_t>(e.class_names.size())
                                  ? e.class_names[static_cast<size_t>(label)]
                                  : std::to_string(label);
    }
    // A regression job's target, as in the file.
    if (!e.targets.empty()) example["target"] = ShortestDouble(e.targets[i]);
    example["shape"] = e.example_shape;
    example["data"] = std::move(data);
    // A CSV's categorical values, as the model server's "categorical" input takes them.
    const size_t columns = e.categorical_names.size();
    if (columns > 0) {
      json values = json::array();
      for (size_t c = 0; c < columns; ++c) {
        const std::string& v = e.categorical[i * columns + c];
        values.push_back(v.empty() ? json(nullptr) : json(v));
      }
      example["categorical"] = std::move(values);
    }
    list.push_back(std::move(example));
  }
  json out = {{"offset", e.first}, {"total", e.split_examples}, {"examples", std::move(list)}};
  if (!e.feature_names.empty()) out["feature_names"] = e.feature_names;
  if (!e.categorical_names.empty()) out["categorical_names"] = e.categorical_names;
  return out;
}

json DatasetListToJson(const std::vector<DatasetRecord>& datasets) {
  json list = json::array();
  for (const DatasetRecord& d : datasets) list.push_back(DatasetToJson(d));
  return {{"datasets", std::move(list)}};
}

engine::Result<DatasetRecord> DatasetFromJson(std::string_view text) {
  auto parsed = sj::Parse(text);
  if (!parsed.ok()) return parsed.status();
  const json& v = *parsed;
  DatasetRecord d;
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "name", &d.name));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "format", &d.format));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "read_only", &d.read_only));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "sha256", &d.sha256));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "bytes", &d.bytes));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "num_classes", &d.num_classes));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "element_type", &d.element_type));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, "", "created_at", &d.created_at));
  if (const auto owner = v.find("owner"); owner != v.end() && owner->is_string()) {
    d.owner = owner->get<std::string>();
  }
  // Uploaded before there were users: the admin's.
  if (d.owner.empty() && !d.read_only) d.owner = std::string(kAdminUser);
  try {
    d.example_shape = v.at("example_shape").get<std::vector<int64_t>>();
    d.class_names = v.at("class_names").get<std::vector<std::string>>();
    const json& splits = v.at("splits");
    d.train_examples = splits.at("train").get<int64_t>();
    d.validation_examples = splits.at("validation").get<int64_t>();
    d.test_examples = splits.at("test").get<int64_t>();
    const json& p = v.at("preprocessing");
    d.preprocessing = p.at("kind").get<std::string>();
    if (d.preprocessing == "standard") {
      d.feature_mean = p.at("mean").get<std::vector<float>>();
      d.feature_std = p.at("std").get<std::vector<float>>();
    }
    if (const auto u = v.find("upload"); u != v.end()) {
      d.upload.name = d.name;
      d.upload.format = d.format;
      d.upload.normalize = u->at("normalize").get<std::string>();
      if (d.format == "csv") {
        d.upload.label_column = u->at("label_column").get<std::string>();
        d.upload.test_file = u->value("test_file", false);
        if (!d.upload.test_file) {
          d.upload.test_fraction = u->at("test_fraction").get<double>();
          d.upload.split_seed = u->at("split_seed").get<uint64_t>();
        }
        if (const auto c = u->find("columns"); c != u->end()) {
          TRAININGD_RETURN_IF_ERROR(ColumnOptionsFromJson(*c, "upload.columns", &d.upload.columns));
        }
      }
    }
    // Records written before tables had typed columns have neither.
    if (const auto c = v.find("columns"); c != v.end()) {
      for (const json& column : *c) d.columns.push_back(ColumnSummaryFromJson(column));
    }
    if (const auto f = v.find("feature_names"); f != v.end()) {
      d.feature_names = f->get<std::vector<std::string>>();
    }
    // Records written before regression list only classification.
    if (const auto t = v.find("tasks"); t != v.end()) {
      const auto tasks = t->get<std::vector<std::string>>();
      d.numeric_labels = std::find(tasks.begin(), tasks.end(),
                                   engine::TaskName(engine::Task::kRegression)) != tasks.end();
    }
    // Records written before datasets had two files name only the one.
    if (const auto f = v.find("files"); f != v.end()) {
      d.train_file = FileFromJson(f->at("train"));
      if (f->contains("test")) d.test_file = FileFromJson(f->at("test"));
    } else if (!d.read_only) {
      d.train_file = {d.sha256, d.bytes};
    }
  } catch (const json::exception& e) {
    return engine::Status::InvalidArgument(std::string("dataset record: ") + e.what());
  }
  return d;
}

}  // namespace trainingd::api
