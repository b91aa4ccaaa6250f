#include "trainingd/api/evaluation_json.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "trainingd/engine/data/dataset.h"

namespace trainingd::api {
// Named, not anonymous: the unity build compiles this file with others that have helpers of the
// same names.
namespace evaluation_json_internal {

using json = nlohmann::json;
using engine::Status;

// JSON has no NaN or infinity (as the run report writes them); a whole count as an integer.
json Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) return static_cast<int64_t>(v);
  return v;
}

Status Bad(const std::string& field, const std::string& why) {
  return Status::InvalidArgument("evaluation." + field + ": " + why);
}

Status ReadNumber(const json& o, const std::string& field, double* out) {
  const auto it = o.find(field);
  if (it == o.end()) return Bad(field, "required");
  if (it->is_number()) {
    *out = it->get<double>();
    return Status::Ok();
  }
  if (it->is_string()) {
    const std::string s = it->get<std::string>();
    if (s == "NaN") *out = std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") *out = std::numeric_limits<double>::infinity();
    if (s == "-Infinity") *out = -std::numeric_limits<double>::infinity();
    if (s == "NaN" || s == "Infinity" || s == "-Infinity") return Status::Ok();
  }
  return Bad(field, "must be a number");
}

// The scalar metrics, in the order of engine::kClassificationMetrics.
struct ScalarField {
  const char* name;
  double engine::ClassificationMetrics::*member;
};
constexpr ScalarField kScalars[] = {
    {"accuracy", &engine::ClassificationMetrics::accuracy},
    {"precision_macro", &engine::ClassificationMetrics::precision_macro},
    {"recall_macro", &engine::ClassificationMetrics::recall_macro},
    {"f1_macro", &engine::ClassificationMetrics::f1_macro},
    {"auc", &engine::ClassificationMetrics::auc},
    {"log_loss", &engine::ClassificationMetrics::log_loss},
};

// A regression evaluation: its metrics and the scatter's (actual, predicted) pairs.
json RegressionToJson(const engine::EvaluationSummary& e, double wall_time) {
  const engine::RegressionMetrics& r = e.regression;
  json actual = json::array(), predicted = json::array();
  for (double v : e.actual) actual.push_back(Number(v));
  for (double v : e.predicted) predicted.push_back(Number(v));
  return {{"split", e.split},
          {"step", e.step},
          {"wall_time", wall_time},
          {"task", "regression"},
          {"examples", Number(r.weight_sum)},
          {"loss", Number(e.loss)},
          {"rmse", Number(r.rmse)},
          {"mae", Number(r.mae)},
          {"r2", Number(r.r2)},
          {"scatter", {{"actual", std::move(actual)}, {"predicted", std::move(predicted)}}}};
}

// The scatter's two arrays of the same length, at most engine::kScatterPoints.
Status ReadScatter(const json& v, engine::EvaluationSummary* e) {
  const auto scatter = v.find("scatter");
  if (scatter == v.end() || !scatter->is_object()) return Bad("scatter", "must be an object");
  for (auto [field, out] :
       {std::pair{"actual", &e->actual}, std::pair{"predicted", &e->predicted}}) {
    const auto a = scatter->find(field);
    const std::string path = std::string("scatter.") + field;
    if (a == scatter->end() || !a->is_array() ||
        a->size() > static_cast<size_t>(engine::kScatterPoints)) {
      return Bad(path, "must be an array of at most " + std::to_string(engine::kScatterPoints) +
                           " numbers");
    }
    for (size_t i = 0; i < a->size(); ++i) {
      json one = {{"x", (*a)[i]}};
      double x = 0;
      if (!ReadNumber(one, "x", &x).ok()) {
        return Bad(path + "[" + std::to_string(i) + "]", "must be a number");
      }
      out->push_back(x);
    }
  }
  if (e->actual.size() != e->predicted.size()) {
    return Bad("scatter.predicted", "must be as long as scatter.actual");
  }
  return Status::Ok();
}

}  // namespace evaluation_json_internal

nlohmann::json EvaluationToJson(const engine::EvaluationSummary& e, double wall_time) {
  using namespace evaluation_json_internal;  // NOLINT(google-build-using-namespace): its helpers
  if (e.task == engine::Task::kRegression) return RegressionToJson(e, wall_time);
  const engine::ClassificationMetrics& m = e.metrics;
  json o = {{"split", e.split},
            {"step", e.step},
            {"wall_time", wall_time},
            {"examples", Number(m.weight_sum)},
            {"loss", Number(e.loss)}};
  for (const ScalarField& f : kScalars) o[f.name] = Number(m.*f.member);
  const auto c = static_cast<size_t>(m.num_classes);
  json classes = json::array();
  json matrix = json::array();
  for (size_t k = 0; k < c; ++k) {
    const auto at = [&](const std::vector<double>& v) { return k < v.size() ? v[k] : 0.0; };
    classes.push_back({{"name", k < e.class_names.size() ? e.class_names[k] : std::to_string(k)},
                       {"precision", Number(at(m.precision))},
                       {"recall", Number(at(m.recall))},
                       {"f1", Number(at(m.f1))},
                       {"support", Number(at(m.support))}});
    json row = json::array();
    for (size_t j = 0; j < c; ++j) {
      row.push_back(Number(k * c + j < m.confusion.size() ? m.confusion[k * c + j] : 0.0));
    }
    matrix.push_back(std::move(row));
  }
  o["classes"] = std::move(classes);
  o["confusion_matrix"] = std::move(matrix);
  return o;
}

engine::Result<engine::EvaluationSummary> EvaluationFromJson(const nlohmann::json& v,
                                                             double* wall_time) {
  using namespace evaluation_json_internal;  // NOLINT(google-build-using-namespace): its helpers
  if (!v.is_object()) return Status::InvalidArgument("evaluation: must be an object");
  engine::EvaluationSummary e;
  engine::ClassificationMetrics& m = e.metrics;
  const auto split = v.find("split");
  if (split == v.end() || !split->is_string()) return Bad("split", "must be a string");
  e.split = split->get<std::string>();
  if (e.split != "train" && e.split != "validation" && e.split != "test") {
    return Bad("split", "must be train, validation or test, got '" + e.split + "'");
  }
  const auto step = v.find("step");
  if (step == v.end() || !step->is_number_integer() || step->get<int64_t>() < 0) {
    return Bad("step", "must be an integer >= 0");
  }
  e.step = step->get<int64_t>();
  double wall = 0;
  TRAININGD_RETURN_IF_ERROR(ReadNumber(v, "wall_time", &wall));
  if (wall_time) *wall_time = wall;
  TRAININGD_RETURN_IF_ERROR(ReadNumber(v, "loss", &e.loss));
  if (const auto task = v.find("task"); task != v.end()) {
    if (*task != "regression" && *task != "classification") {
      return Bad("task", "must be classification or regression");
    }
    if (*task == "regression") {
      e.task = engine::Task::kRegression;
      engine::RegressionMetrics& r = e.regression;
      TRAININGD_RETURN_IF_ERROR(ReadNumber(v, "examples", &r.weight_sum));
      TRAININGD_RETURN_IF_ERROR(ReadNumber(v, "rmse", &r.rmse));
      TRAININGD_RETURN_IF_ERROR(ReadNumber(v, "mae", &r.mae));
      TRAININGD_RETURN_IF_ERROR(ReadNumber(v, "r2", &r.r2));
      TRAININGD_RETURN_IF_ERROR(ReadScatter(v, &e));
      return e;
    }
  }
  TRAININGD_RETURN_IF_ERROR(ReadNumber(v, "examples", &m.weight_sum));
  for (const ScalarField& f : kScalars)
    TRAININGD_RETURN_IF_ERROR(ReadNumber(v, f.name, &(m.*f.member)));
  const auto classes = v.find("classes");
  if (classes == v.end() || !classes->is_array() || classes->empty() ||
      classes->size() > static_cast<size_t>(engine::kMaxClasses)) {
    return Bad("classes",
               "must be an array of 1 to " + std::to_string(engine::kMaxClasses) + " classes");
  }
  const size_t c = classes->size();
  m.num_classes = static_cast<int>(c);
  for (size_t k = 0; k < c; ++k) {
    const json& cls = (*classes)[k];
    const std::string path = "classes[" + std::to_string(k) + "]";
    if (!cls.is_object()) return Bad(path, "must be an object");
    const auto name = cls.find("name");
    if (name == cls.end() || !name->is_string()) return Bad(path + ".name", "must be a string");
    e.class_names.push_back(name->get<std::string>());
    double p = 0, r = 0, f1 = 0, support = 0;
    for (auto [field, out] : {std::pair{"precision", &p}, std::pair{"recall", &r},
                              std::pair{"f1", &f1}, std::pair{"support", &support}}) {
      Status st = ReadNumber(cls, field, out);
      if (!st.ok())
        return Status::InvalidArgument("evaluation." + path + "." + field + ": " +
                                       (cls.contains(field) ? "must be a number" : "required"));
    }
    m.precision.push_back(p);
    m.recall.push_back(r);
    m.f1.push_back(f1);
    m.support.push_back(support);
  }
  const auto matrix = v.find("confusion_matrix");
  if (matrix == v.end() || !matrix->is_array() || matrix->size() != c) {
    return Bad("confusion_matrix", "must be an array of " + std::to_string(c) + " rows");
  }
  m.confusion.reserve(c * c);
  for (size_t k = 0; k < c; ++k) {
    const json& row = (*matrix)[k];
    const std::string path = "confusion_matrix[" + std::to_string(k) + "]";
    if (!row.is_array() || row.size() != c) {
      return Bad(path, "must be an array of " + std::to_string(c) + " numbers");
    }
    for (const json& x : row) {
      if (!x.is_number()) return Bad(path, "must be an array of " + std::to_string(c) + " numbers");
      m.confusion.push_back(x.get<double>());
    }
  }
  return e;
}

}  // namespace trainingd::api
