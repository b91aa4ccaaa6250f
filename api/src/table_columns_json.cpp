#include "table_columns_json.h"

#include <cmath>

namespace trainingd::api {
namespace {

using json = strict_json::json;
namespace sj = strict_json;

json NumberOrNull(double v) { return std::isnan(v) ? json(nullptr) : json(v); }
double NumberOrNan(const json& v) { return v.is_null() ? std::nan("") : v.get<double>(); }

}  // namespace

json ColumnOptionsToJson(const engine::TableColumnOptions& o) {
  const engine::TableColumnOptions defaults;
  json v = json::object();
  if (!o.categorical.empty()) v["categorical"] = o.categorical;
  if (!o.number.empty()) v["number"] = o.number;
  if (!o.ignore.empty()) v["ignore"] = o.ignore;
  if (o.missing_values != defaults.missing_values) v["missing_values"] = o.missing_values;
  if (o.impute != defaults.impute) v["impute"] = engine::ImputeName(o.impute);
  if (o.max_levels != defaults.max_levels) v["max_levels"] = o.max_levels;
  if (!o.missing_indicator.empty()) v["missing_indicator"] = o.missing_indicator;
  if (!o.hash_buckets.empty()) v["hash_buckets"] = o.hash_buckets;
  return v;
}

engine::Status ColumnOptionsFromJson(const json& v, const std::string& path,
                                     engine::TableColumnOptions* out) {
  if (!v.is_object()) {
    return sj::Bad(path, std::string("must be an object, got ") + sj::TypeName(v));
  }
  TRAININGD_RETURN_IF_ERROR(sj::CheckObject(v, path, engine::kTableColumnOptionNames));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "categorical", &out->categorical));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "number", &out->number));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "ignore", &out->ignore));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "missing_values", &out->missing_values));
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "missing_indicator", &out->missing_indicator));
  std::string impute = engine::ImputeName(out->impute);
  TRAININGD_RETURN_IF_ERROR(sj::Field(v, path, "impute", &impute));
  const auto named = engine::ImputeNamed(impute);
  if (!named) {
    return sj::Bad(sj::Child(path, "impute"), "must be mean or median, got " + sj::Quote(impute));
  }
  out->impute = *named;
  if (const auto it = v.find("hash_buckets"); it != v.end()) {
    const std::string at = sj::Child(path, "hash_buckets");
    if (!it->is_object()) {
      return sj::Bad(at,
                     std::string("must be an object of column: buckets, got ") + sj::TypeName(*it));
    }
    out->hash_buckets.clear();
    for (const auto& [name, n] : it->items()) {
      int64_t buckets = 0;
      TRAININGD_RETURN_IF_ERROR(sj::ReadInt(n, sj::Child(at, name), engine::kMinHashBuckets,
                                            engine::kMaxHashBuckets, &buckets));
      out->hash_buckets[name] = buckets;
    }
  }
  if (const auto it = v.find("max_levels"); it != v.end()) {
    TRAININGD_RETURN_IF_ERROR(sj::ReadInt(*it, sj::Child(path, "max_levels"), int64_t{1},
                                          engine::kMaxMaxLevels, &out->max_levels));
  }
  return engine::Status::Ok();
}

json ColumnSummaryToJson(const engine::ColumnSummary& c, bool numbers) {
  json v = {{"name", c.name},
            {"type", engine::ColumnTypeName(c.type)},
            {"typed_by_user", c.typed_by_user},
            {"missing", c.missing},
            {"present", c.present}};
  if (c.type == engine::ColumnType::kNumber || (numbers && c.type == engine::ColumnType::kLabel)) {
    v["mean"] = NumberOrNull(c.mean);
    v["std"] = NumberOrNull(c.stddev);
    v["min"] = NumberOrNull(c.min);
    v["max"] = NumberOrNull(c.max);
  }
  if (c.type == engine::ColumnType::kCategorical) {
    v["levels"] = c.levels;
    json top = json::array();
    for (const auto& [value, count] : c.top_levels) {
      top.push_back({{"value", value}, {"count", count}});
    }
    v["top_levels"] = std::move(top);
  }
  if (!c.dropped.empty()) v["dropped"] = c.dropped;
  if (!c.note.empty()) v["note"] = c.note;
  if (c.missing_indicator) v["missing_indicator"] = true;
  if (c.hash_buckets > 0) v["hash_buckets"] = c.hash_buckets;
  return v;
}

engine::ColumnSummary ColumnSummaryFromJson(const json& v) {
  engine::ColumnSummary c;
  c.name = v.at("name").get<std::string>();
  c.type = engine::ColumnTypeNamed(v.at("type").get<std::string>())
               .value_or(engine::ColumnType::kNumber);
  c.typed_by_user = v.at("typed_by_user").get<bool>();
  c.missing = v.at("missing").get<int64_t>();
  c.present = v.at("present").get<int64_t>();
  if (c.type == engine::ColumnType::kNumber || v.contains("mean")) {
    c.mean = NumberOrNan(v.at("mean"));
    c.stddev = NumberOrNan(v.at("std"));
    c.min = NumberOrNan(v.at("min"));
    c.max = NumberOrNan(v.at("max"));
  }
  if (c.type == engine::ColumnType::kCategorical) {
    c.levels = v.at("levels").get<int64_t>();
    for (const json& t : v.at("top_levels")) {
      c.top_levels.emplace_back(t.at("value").get<std::string>(), t.at("count").get<int64_t>());
    }
  }
  c.dropped = v.value("dropped", "");
  c.note = v.value("note", "");
  c.missing_indicator = v.value("missing_indicator", false);
  c.hash_buckets = v.value("hash_buckets", int64_t{0});
  return c;
}

}  // namespace trainingd::api
