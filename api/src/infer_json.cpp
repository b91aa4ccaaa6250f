#include "trainingd/api/infer_json.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "trainingd/api/strict_json.h"

namespace trainingd::api {
namespace {

using engine::Result;
using engine::Status;
using json = nlohmann::json;
namespace sj = strict_json;

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// The number of values `shape` holds, or an error naming `path` when a dimension is < 1 or the
// product passes kMaxInferValues (checked as it multiplies, so it never overflows).
Result<int64_t> Elements(const std::vector<int64_t>& shape, const std::string& path) {
  if (shape.empty()) return sj::Bad(path, "must have the batch dimension at least");
  if (shape.size() > 8)
    return sj::Bad(path, "at most 8 dimensions, got " + std::to_string(shape.size()));
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 1) return sj::Bad(path, "dimensions must be at least 1, got " + ShapeText(shape));
    if (n > kMaxInferValues / d) {
      return sj::Bad(path, ShapeText(shape) + " holds more than " +
                               std::to_string(kMaxInferValues) +
                               " values, the most one request may");
    }
    n *= d;
  }
  return n;
}

// Appends the numbers of `v` (a number, or arrays of them nested to any depth up to 8) to *out,
// in row-major order, as FP32 (uint8 = integers in [0, 255]). Stops at `limit` values.
Status Flatten(const json& v, const std::string& path, bool uint8, size_t limit, int depth,
               std::vector<float>* out) {
  if (v.is_array()) {
    if (depth >= 8) return sj::Bad(path, "nested more than 8 deep");
    for (size_t i = 0; i < v.size(); ++i) {
      TRAININGD_RETURN_IF_ERROR(Flatten(v[i], sj::Index(path, i), uint8, limit, depth + 1, out));
    }
    return Status::Ok();
  }
  if (out->size() >= limit) return Status::Ok();  // too many: the caller counts and says so
  if (uint8) {
    int64_t x = 0;
    TRAININGD_RETURN_IF_ERROR(sj::ReadInt(v, path, int64_t{0}, int64_t{255}, &x));
    out->push_back(static_cast<float>(x));
    return Status::Ok();
  }
  // null is a missing value (NaN), which a table's model fills in (TrainedModel::Predict).
  if (v.is_null()) {
    out->push_back(std::numeric_limits<float>::quiet_NaN());
    return Status::Ok();
  }
  if (!v.is_number()) return sj::Bad(path, std::string("must be a number, got ") + sj::TypeName(v));
  const double d = v.get<double>();
  if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max()) {
    return sj::Bad(path, "must be a finite FP32 value, got " + sj::Got(v));
  }
  out->push_back(static_cast<float>(d));
  return Status::Ok();
}

// The count of numbers in `v`, with the shape of its nesting (each level's length, taken from
// its first element); an error when the nesting is ragged.
Status NestedShape(const json& v, const std::string& path, std::vector<int64_t>* shape) {
  const json* level = &v;
  while (level->is_array()) {
    if (shape->size() >= 8) return sj::Bad(path, "nested more than 8 deep");
    if (level->empty()) return sj::Bad(path, "an empty array");
    shape->push_back(static_cast<int64_t>(level->size()));
    level = &(*level)[0];
  }
  return Status::Ok();
}

// Appends the values of a BYTES tensor's data (strings or null, nested) to *out, stopping at
// `limit` values.
Status FlattenText(const json& v, const std::string& path, size_t limit, int depth,
                   std::vector<std::optional<std::string>>* out) {
  if (v.is_array()) {
    if (depth >= 8) return sj::Bad(path, "nested more than 8 deep");
    for (size_t i = 0; i < v.size(); ++i) {
      TRAININGD_RETURN_IF_ERROR(FlattenText(v[i], sj::Index(path, i), limit, depth + 1, out));
    }
    return Status::Ok();
  }
  if (out->size() >= limit) return Status::Ok();
  if (v.is_null()) {
    out->push_back(std::nullopt);
    return Status::Ok();
  }
  if (!v.is_string()) {
    return sj::Bad(path, std::string("must be a string or null, got ") + sj::TypeName(v));
  }
  out->push_back(v.get<std::string>());
  return Status::Ok();
}

std::string CountMismatch(size_t got, int64_t want, const std::vector<int64_t>& shape) {
  return (static_cast<int64_t>(got) > want ? std::string("more values")
                                           : std::to_string(got) + " values") +
         " for shape " + ShapeText(shape) + ", which holds " + std::to_string(want);
}

// One tensor of a KServe v2 request at `path`: "input" (FP32 or UINT8) into r->shape and
// r->data, setting *numbers; or "categorical" (BYTES) into r->categorical_shape and
// r->categorical.
Status ReadInferInput(const json& in, const std::string& path, size_t body_size, bool* numbers,
                      InferRequest* r) {
  if (!in.is_object()) return sj::Bad(path, "must be an object");
  TRAININGD_RETURN_IF_ERROR(
      sj::CheckObject(in, path, {"name", "shape", "datatype", "data", "parameters"}));
  for (const char* key : {"name", "shape", "datatype", "data"}) {
    TRAININGD_RETURN_IF_ERROR(sj::Require(in, path, key));
  }
  std::string name;
  TRAININGD_RETURN_IF_ERROR(sj::Read(in["name"], path + ".name", &name));
  const bool text = name == "categorical";
  if (name != "input" && !text) {
    return sj::Bad(path + ".name",
                   "the model's inputs are 'input' and, for a table with categorical columns, "
                   "'categorical'; not " +
                       sj::Quote(name));
  }
  if ((text && !r->categorical_shape.empty()) || (!text && *numbers)) {
    return sj::Bad(path + ".name", sj::Quote(name) + " is given twice");
  }
  std::string datatype;
  TRAININGD_RETURN_IF_ERROR(sj::Read(in["datatype"], path + ".datatype", &datatype));
  if (text ? datatype != "BYTES" : datatype != "FP32" && datatype != "UINT8") {
    return sj::Bad(path + ".datatype", std::string("must be ") +
                                           (text ? "BYTES" : "FP32 or UINT8") + ", got " +
                                           sj::Quote(datatype));
  }
  if (in.contains("parameters") && !in["parameters"].is_object()) {
    return sj::Bad(path + ".parameters", "must be an object");
  }
  const json& shape_json = in["shape"];
  if (!shape_json.is_array()) return sj::Bad(path + ".shape", "must be an array of integers");
  if (shape_json.size() > 8) return sj::Bad(path + ".shape", "at most 8 dimensions");
  std::vector<int64_t>& shape = text ? r->categorical_shape : r->shape;
  TRAININGD_RETURN_IF_ERROR(sj::Read(shape_json, path + ".shape", &shape));
  auto elements = Elements(shape, path + ".shape");
  if (!elements.ok()) return elements.status();
  const json& data = in["data"];
  if (!data.is_array()) {
    return sj::Bad(path + ".data",
                   text ? "must be an array of strings" : "must be an array of numbers");
  }
  // At most one value more than the shape holds: enough to tell that there are too many.
  const auto limit = static_cast<size_t>(*elements) + 1;
  size_t got = 0;
  if (text) {
    r->categorical.reserve(std::min<size_t>(limit, body_size / 2 + 1));
    TRAININGD_RETURN_IF_ERROR(FlattenText(data, path + ".data", limit, 0, &r->categorical));
    got = r->categorical.size();
  } else {
    *numbers = true;
    r->input_name = name;
    r->data.reserve(std::min<size_t>(limit, body_size / 2 + 1));
    TRAININGD_RETURN_IF_ERROR(
        Flatten(data, path + ".data", datatype == "UINT8", limit, 0, &r->data));
    got = r->data.size();
  }
  if (static_cast<int64_t>(got) != *elements) {
    return sj::Bad(path + ".data", CountMismatch(got, *elements, shape));
  }
  return Status::Ok();
}

// TF Serving's instances as objects keyed by column name ({"age": 41, "city": "Oslo", "x": null}),
// into r->rows; r->shape becomes [rows] (ResolveTableRequest adds the model's columns).
Status ReadInstanceRows(const json& instances, InferRequest* r) {
  if (static_cast<int64_t>(instances.size()) > kMaxInferValues) {
    return sj::Bad("instances", "more than " + std::to_string(kMaxInferValues) + " examples");
  }
  int64_t values = 0;
  for (size_t i = 0; i < instances.size(); ++i) {
    const json& row = instances[i];
    const std::string path = sj::Index("instances", i);
    if (!row.is_object()) {
      return sj::Bad(path, std::string("must be an object of column values, as the first "
                                       "instance is; got ") +
                               sj::TypeName(row));
    }
    values += static_cast<int64_t>(row.size());
    if (values > kMaxInferValues) {
      return sj::Bad("instances", "more than " + std::to_string(kMaxInferValues) + " values");
    }
    std::vector<std::pair<std::string, InferRequest::Cell>> cells;
    for (const auto& [key, value] : row.items()) {
      InferRequest::Cell c;
      if (value.is_string()) {
        c.kind = InferRequest::Cell::Kind::kText;
        c.text = value.get<std::string>();
      } else if (value.is_number()) {
        c.kind = InferRequest::Cell::Kind::kNumber;
        c.number = value.get<double>();
      } else if (!value.is_null()) {
        return sj::Bad(path + "." + key, std::string("must be a number, a string or null, got ") +
                                             sj::TypeName(value));
      }
      cells.emplace_back(key, std::move(c));
    }
    r->rows.push_back(std::move(cells));
  }
  r->shape = {static_cast<int64_t>(instances.size())};
  return Status::Ok();
}

}  // namespace

Result<InferRequest> ParseInferRequest(std::string_view body) {
  auto parsed = sj::Parse(body);
  if (!parsed.ok()) return parsed.status();
  const json& v = *parsed;
  if (!v.is_object())
    return sj::Bad("body", std::string("must be an object, got ") + sj::TypeName(v));
  TRAININGD_RETURN_IF_ERROR(sj::CheckObject(v, "", {"id", "parameters", "inputs", "outputs"}));
  InferRequest r;
  if (v.contains("id")) TRAININGD_RETURN_IF_ERROR(sj::Read(v["id"], "id", &r.id));
  if (v.contains("parameters") && !v["parameters"].is_object()) {
    return sj::Bad("parameters", "must be an object");
  }
  if (v.contains("parameters") && v["parameters"].contains("decision_threshold")) {
    double t = 0;
    const json& given = v["parameters"]["decision_threshold"];
    if (!given.is_number() || !sj::Read(given, "parameters.decision_threshold", &t).ok() ||
        !(t > 0 && t < 1)) {
      return sj::Bad("parameters.decision_threshold",
                     "must be a number in (0, 1): class 1's probability above which a two-class "
                     "model's label is 1");
    }
    r.decision_threshold = t;
  }
  TRAININGD_RETURN_IF_ERROR(sj::Require(v, "", "inputs"));
  const json& inputs = v["inputs"];
  if (!inputs.is_array() || inputs.empty() || inputs.size() > 2) {
    return sj::Bad("inputs",
                   "must be an array of the model's input 'input' and, for a table with "
                   "categorical columns, 'categorical'");
  }
  bool numbers = false;
  for (size_t k = 0; k < inputs.size(); ++k) {
    TRAININGD_RETURN_IF_ERROR(
        ReadInferInput(inputs[k], sj::Index("inputs", k), body.size(), &numbers, &r));
  }
  if (!numbers) return sj::Bad("inputs", "needs the model's input 'input'");
  if (v.contains("outputs")) {
    const json& outputs = v["outputs"];
    if (!outputs.is_array()) return sj::Bad("outputs", "must be an array");
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string opath = sj::Index("outputs", i);
      if (!outputs[i].is_object()) return sj::Bad(opath, "must be an object");
      TRAININGD_RETURN_IF_ERROR(sj::CheckObject(outputs[i], opath, {"name", "parameters"}));
      TRAININGD_RETURN_IF_ERROR(sj::Require(outputs[i], opath, "name"));
      std::string name;
      TRAININGD_RETURN_IF_ERROR(sj::Read(outputs[i]["name"], opath + ".name", &name));
      if (name != "logits" && name != "probabilities" && name != "prediction" && name != "label") {
        return sj::Bad(opath + ".name",
                       "the outputs are 'logits', 'probabilities' and 'label' (a regression "
                       "model's: 'logits' and 'prediction'), not " +
                           sj::Quote(name));
      }
      r.outputs.push_back(std::move(name));
    }
  }
  return r;
}

Result<InferRequest> ParsePredictRequest(std::string_view body) {
  auto parsed = sj::Parse(body);
  if (!parsed.ok()) return parsed.status();
  const json& v = *parsed;
  if (!v.is_object())
    return sj::Bad("body", std::string("must be an object, got ") + sj::TypeName(v));
  TRAININGD_RETURN_IF_ERROR(sj::CheckObject(v, "", {"instances", "signature_name"}));
  if (v.contains("signature_name")) {
    std::string name;
    TRAININGD_RETURN_IF_ERROR(sj::Read(v["signature_name"], "signature_name", &name));
    if (name != "serving_default") {
      return sj::Bad("signature_name",
                     "the model has one signature, 'serving_default', not " + sj::Quote(name));
    }
  }
  TRAININGD_RETURN_IF_ERROR(sj::Require(v, "", "instances"));
  const json& instances = v["instances"];
  InferRequest r;
  r.predictions_only = true;
  r.shape_field = "instances";
  if (instances.is_array() && !instances.empty() && instances[0].is_object()) {
    TRAININGD_RETURN_IF_ERROR(ReadInstanceRows(instances, &r));
    return r;
  }
  TRAININGD_RETURN_IF_ERROR(NestedShape(instances, "instances", &r.shape));
  if (r.shape.empty()) return sj::Bad("instances", "must be an array of examples");
  auto elements = Elements(r.shape, "instances");
  if (!elements.ok()) return elements.status();
  r.data.reserve(std::min<size_t>(static_cast<size_t>(*elements), body.size() / 2 + 1));
  TRAININGD_RETURN_IF_ERROR(
      Flatten(instances, "instances", false, static_cast<size_t>(*elements) + 1, 0, &r.data));
  if (static_cast<int64_t>(r.data.size()) != *elements) {
    return sj::Bad("instances",
                   "ragged: every example must have the first one's shape " +
                       ShapeText(std::vector<int64_t>(r.shape.begin() + 1, r.shape.end())));
  }
  return r;
}

namespace {

json Tensor(const char* name, const InferResult& r, const std::vector<float>& data) {
  return {{"name", name}, {"datatype", "FP32"}, {"shape", {r.batch, r.classes}}, {"data", data}};
}

}  // namespace

std::string InferResponseJson(const InferResult& r) {
  json outputs = json::array();
  if (r.with_logits) outputs.push_back(Tensor("logits", r, r.logits));
  if (r.with_probabilities) {
    outputs.push_back(Tensor(r.regression ? "prediction" : "probabilities", r, r.probabilities));
  }
  if (r.with_labels) {
    outputs.push_back(
        {{"name", "label"}, {"datatype", "INT64"}, {"shape", {r.batch}}, {"data", r.labels}});
  }
  json v = {{"model_name", r.model},
            {"model_version", std::to_string(r.version)},
            {"outputs", std::move(outputs)},
            {"parameters", {{"class_names", r.class_names}}}};
  if (r.decision_threshold) v["parameters"]["decision_threshold"] = *r.decision_threshold;
  if (!r.id.empty()) v["id"] = r.id;
  return v.dump();
}

std::string PredictResponseJson(const InferResult& r) {
  json predictions = json::array();
  if (r.regression) {
    // One number per example (TF Serving's regress API gives the same).
    for (int64_t i = 0; i < r.batch; ++i) predictions.push_back(r.probabilities[i]);
    return json{{"predictions", std::move(predictions)}}.dump();
  }
  for (int64_t i = 0; i < r.batch; ++i) {
    predictions.push_back(std::vector<float>(r.probabilities.begin() + i * r.classes,
                                             r.probabilities.begin() + (i + 1) * r.classes));
  }
  json v = {{"predictions", std::move(predictions)}};
  // Beside TF Serving's own member: each example's predicted class (docs/models.md#serving).
  if (r.with_labels) v["labels"] = r.labels;
  return v.dump();
}

std::string ModelMetadataJson(const ModelMetadata& m) {
  const auto tensors = [](const std::vector<TensorMetadata>& list) {
    json out = json::array();
    for (const TensorMetadata& t : list) {
      out.push_back({{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}});
    }
    return out;
  };
  json versions = json::array();
  for (int64_t v : m.versions) versions.push_back(std::to_string(v));
  return json{
      {"name", m.name},
      {"versions", std::move(versions)},
      {"platform", "trainingd"},
      {"inputs", tensors(m.inputs)},
      {"outputs", tensors(m.outputs)},
      {"parameters",
       {{"version", std::to_string(m.version)},
        {"checkpoint", m.checkpoint},
        {"best_version", m.best_version ? json(std::to_string(*m.best_version)) : json(nullptr)},
        {"class_names", m.class_names},
        {"preprocessing", m.preprocessing},
        {"dataset", m.dataset},
        {"dataset_sha256", m.dataset_sha256},
        {"decision_threshold",
         m.decision_threshold ? json(*m.decision_threshold) : json(nullptr)}}}}
      .dump();
}

std::string InferErrorJson(std::string_view message) {
  return json{{"error", std::string(message)}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace trainingd::api
