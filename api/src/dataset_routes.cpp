// The dataset routes' handlers that are more than a call (docs/data.md): an upload, its query
// parameters read into DatasetUploadOptions and its body streamed to the DatasetService, and a
// dataset's test examples. Router::Dispatch (router.cpp) matches the route and checks its access
// before any of these runs.
#include <algorithm>
#include <charconv>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "route_util.h"
#include "router_context.h"
#include "table_columns_json.h"
#include "trainingd/api/dataset_json.h"
#include "trainingd/api/router.h"
#include "trainingd/api/upload_body.h"

namespace trainingd::api {

using engine::Result;
using engine::Status;
using nlohmann::json;
using route_util::IntParam;
using route_util::JsonResponse;
using route_util::kMaxInt;

namespace {

// "a,b,,c" -> a, b, c (empty items dropped); "" -> none.
std::vector<std::string> SplitCommas(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

// The query parameters of an upload (docs/data.md); the service checks what they mean.
Result<DatasetUploadOptions> UploadOptions(const QueryParams& query) {
  // The upload's own parameters, then a CSV's column options.
  constexpr std::string_view kUploadParameters[] = {"name",          "format",     "label_column",
                                                    "test_fraction", "split_seed", "normalize"};
  const auto has = [](const auto& names, const std::string& key) {
    return std::find(std::begin(names), std::end(names), key) != std::end(names);
  };
  const auto join = [](const auto& names) {
    std::string list;
    for (const std::string_view name : names)
      list += (list.empty() ? "" : ", ") + std::string(name);
    return list;
  };
  for (const auto& [key, value] : query) {
    if (has(kUploadParameters, key) || has(engine::kTableColumnOptionNames, key)) continue;
    return Status::InvalidArgument(key.substr(0, 64) +
                                   ": unknown parameter; known: " + join(kUploadParameters) + ", " +
                                   join(engine::kTableColumnOptionNames));
  }
  DatasetUploadOptions o;
  o.name = QueryValue(query, "name").value_or("");
  if (o.name.empty()) return Status::InvalidArgument("name: required (?name=NAME)");
  o.format = QueryValue(query, "format").value_or("");
  if (o.format.empty()) return Status::InvalidArgument("format: required: npz or csv");
  o.label_column = QueryValue(query, "label_column").value_or(o.label_column);
  o.normalize = QueryValue(query, "normalize").value_or(o.normalize);
  if (auto text = QueryValue(query, "test_fraction")) {
    double f = 0;
    const char* end = text->data() + text->size();
    auto [ptr, ec] = std::from_chars(text->data(), end, f);
    if (text->empty() || ec != std::errc() || ptr != end || !(f > 0 && f < 1)) {
      return Status::InvalidArgument("test_fraction: must be a number in (0, 1), got \"" +
                                     text->substr(0, 64) + "\"");
    }
    o.test_fraction = f;
  }
  auto seed = IntParam(query, "split_seed", 0, kMaxInt);
  if (!seed.ok()) return seed.status();
  o.split_seed = static_cast<uint64_t>(seed->value_or(0));
  // The columns' options: names and markers separated by commas (docs/data.md#columns).
  const auto list = [&](const char* key, std::vector<std::string>* out) {
    if (auto text = QueryValue(query, key)) *out = SplitCommas(*text);
  };
  list("categorical", &o.columns.categorical);
  list("number", &o.columns.number);
  list("ignore", &o.columns.ignore);
  list("missing_values", &o.columns.missing_values);
  list("missing_indicator", &o.columns.missing_indicator);
  if (auto text = QueryValue(query, "impute")) {
    const auto impute = engine::ImputeNamed(*text);
    if (!impute) {
      return Status::InvalidArgument("impute: must be mean or median, got \"" +
                                     text->substr(0, 64) + "\"");
    }
    o.columns.impute = *impute;
  }
  // hash_buckets=city:1024,zip:64: each a column and its buckets.
  if (auto text = QueryValue(query, "hash_buckets")) {
    for (const std::string& item : SplitCommas(*text)) {
      const size_t colon = item.rfind(':');
      int64_t n = 0;
      const char* end = item.data() + item.size();
      const auto [ptr, ec] = colon == std::string::npos
                                 ? std::from_chars(end, end, n)
                                 : std::from_chars(item.data() + colon + 1, end, n);
      if (colon == std::string::npos || colon == 0 || ec != std::errc() || ptr != end ||
          colon + 1 == item.size()) {
        return Status::InvalidArgument("hash_buckets: each item must be COLUMN:N, got \"" +
                                       item.substr(0, 64) + "\"");
      }
      if (n < engine::kMinHashBuckets || n > engine::kMaxHashBuckets) {
        return Status::InvalidArgument(
            "hash_buckets." + item.substr(0, std::min<size_t>(colon, 64)) + ": must be in [" +
            std::to_string(engine::kMinHashBuckets) + ", " +
            std::to_string(engine::kMaxHashBuckets) + "], got " + std::to_string(n));
      }
      o.columns.hash_buckets[item.substr(0, colon)] = n;
    }
  }
  auto levels = IntParam(query, "max_levels", 1, engine::kMaxMaxLevels);
  if (!levels.ok()) return levels.status();
  o.columns.max_levels = levels->value_or(o.columns.max_levels);
  return o;
}

}  // namespace

HttpResponse Router::UploadDataset(const Context& c) {
  auto options = UploadOptions(c.query);
  if (!options.ok()) return StatusResponse(options.status());
  options->owner = c.principal.name;
  int64_t declared = -1;  // chunked
  if (std::string_view length = c.request.Header("Content-Length"); !length.empty()) {
    std::from_chars(length.data(), length.data() + length.size(), declared);
  } else if (!c.request.body_follows) {
    declared = static_cast<int64_t>(c.request.body.size());
  }
  auto boundary = UploadBody::BoundaryOf(c.request.Header("Content-Type"));
  if (!boundary.ok()) return StatusResponse(boundary.status());
  auto upload = datasets_->BeginUpload(*options, declared);
  if (!upload.ok()) return DatasetStatusResponse(upload.status());
  auto body = std::make_unique<UploadBody>(std::move(*upload), std::move(*boundary));
  HttpResponse r;
  if (c.request.body_follows) {
    r.upload = std::move(body);
    return r;
  }
  // The body is here already (a caller without a socket): the same steps at once.
  Status written = body->Write(c.request.body);
  if (!written.ok()) return DatasetStatusResponse(written);
  auto record = body->Finish();
  if (!record.ok()) return DatasetStatusResponse(record.status());
  r = JsonResponse(201, DatasetToJson(*record));
  r.SetHeader("Location", "/api/v1/datasets/" + record->name);
  return r;
}

HttpResponse Router::ListExamples(const Context& c) {
  const std::string split = QueryValue(c.query, "split").value_or("test");
  if (split != "test") {
    return ErrorResponse(
        400, "invalid_argument",
        "split: only the test split's examples are served, got \"" + split.substr(0, 32) + "\"",
        "split");
  }
  auto offset = IntParam(c.query, "offset", 0, kMaxInt);
  if (!offset.ok()) return StatusResponse(offset.status());
  auto limit = IntParam(c.query, "limit", 1, kMaxDatasetExamples);
  if (!limit.ok()) return StatusResponse(limit.status());
  auto examples = datasets_->TestExamples(c.job_id, offset->value_or(0), limit->value_or(10));
  if (!examples.ok()) return DatasetStatusResponse(examples.status());
  json body = DatasetExamplesToJson(*examples);
  body["dataset"] = c.job_id;
  body["split"] = split;
  return JsonResponse(200, body);
}

}  // namespace trainingd::api
