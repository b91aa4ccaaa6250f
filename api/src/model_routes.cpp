#include "model_routes.h"

#include <charconv>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "trainingd/api/infer_json.h"
#include "trainingd/api/router.h"
#include "trainingd/engine/base/version.h"

namespace trainingd::api::model_routes {
namespace {

using engine::Result;
using engine::Status;
using engine::StatusCode;

HttpResponse ProtocolResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.headers = {{"Content-Type", "application/json"}, {"Cache-Control", "no-store"}};
  r.body = std::move(body);
  return r;
}

// A failed ModelService call in the protocol's error body; the codes as StatusResponse maps
// them (a 500 keeps its details for the log).
HttpResponse ProtocolError(const Status& status) {
  int code = 500;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      code = 400;
      break;
    case StatusCode::kNotFound:
      code = 404;
      break;
    case StatusCode::kFailedPrecondition:
      code = 409;
      break;
    case StatusCode::kUnavailable:
      code = 503;
      break;
    case StatusCode::kResourceExhausted:
      code = 503;
      break;
    default: {
      HttpResponse internal = InternalErrorResponse(status.ToString());
      nlohmann::json body = nlohmann::json::parse(internal.body);
      HttpResponse r =
          ProtocolResponse(500, InferErrorJson(body["error"]["message"].get<std::string>()));
      r.log_detail = internal.log_detail;
      return r;
    }
  }
  HttpResponse r = ProtocolResponse(code, InferErrorJson(status.message()));
  if (code == 503) r.SetHeader("Retry-After", "1");
  return r;
}

// A version from the path: a checkpoint's global step, "latest" or "best"; "" = the default
// (the best, else the latest).
Result<std::optional<int64_t>> ParseVersion(std::string_view text, const char* field) {
  if (text.empty()) return std::optional<int64_t>();
  if (text == "latest") return std::optional<int64_t>(kLatestVersion);
  if (text == "best") return std::optional<int64_t>(kBestVersion);
  int64_t v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) {
    return Status::InvalidArgument(std::string(field) +
                                   ": a version is a checkpoint's global step, an integer >= 0, "
                                   "or 'latest' or 'best'; "
                                   "got '" +
                                   std::string(text.substr(0, 32)) + "'");
  }
  return std::optional<int64_t>(v);
}

}  // namespace

HttpResponse ExportModel(ModelService& models, const std::string& id, std::string_view format,
                         std::optional<std::string> step_text,
                         std::optional<std::string> checkpoint_text) {
  if (format != "onnx") {
    return ErrorResponse(400, "invalid_argument",
                         "format: the one export format is onnx (?format=onnx)", "format");
  }
  if (step_text && checkpoint_text) {
    return ErrorResponse(400, "invalid_argument", "checkpoint: give checkpoint or step, not both",
                         "checkpoint");
  }
  const char* field = checkpoint_text ? "checkpoint" : "step";
  if (checkpoint_text) step_text = checkpoint_text;
  auto step = ParseVersion(step_text.value_or(""), field);
  if (step_text && step_text->empty())
    step = Status::InvalidArgument(std::string(field) + ": empty");
  if (!step.ok()) return StatusResponse(step.status());
  auto file = models.ExportOnnx(id, *step);
  if (!file.ok()) return StatusResponse(file.status());
  HttpResponse r;
  r.headers = {{"Content-Type", "application/octet-stream"},
               {"Content-Disposition", "attachment; filename=\"" + file->filename + "\""},
               {"Cache-Control", "no-store"}};
  r.SetHeader("X-Trainingd-Checkpoint-Step", std::to_string(file->step));
  r.SetHeader("X-Trainingd-Checkpoint", file->checkpoint);
  r.body = std::move(file->bytes);
  return r;
}

HttpResponse ServerMetadata() {
  return ProtocolResponse(200, nlohmann::json{{"name", "trainingd"},
                                              {"version", engine::TrainingdVersion()},
                                              {"extensions", nlohmann::json::array()}}
                                   .dump());
}

HttpResponse Health(ModelService* ready) {
  if (ready != nullptr && !ready->Ready()) {
    HttpResponse r = ProtocolResponse(503, InferErrorJson("the server is shutting down"));
    r.SetHeader("Retry-After", "1");
    return r;
  }
  return ProtocolResponse(200, "{}");
}

HttpResponse ModelMetadata(ModelService& models, const std::string& id, std::string_view version) {
  auto v = ParseVersion(version, "version");
  if (!v.ok()) return ProtocolError(v.status());
  auto m = models.GetModel(id, *v);
  if (!m.ok()) return ProtocolError(m.status());
  return ProtocolResponse(200, ModelMetadataJson(*m));
}

HttpResponse ModelReady(ModelService& models, const std::string& id, std::string_view version) {
  auto v = ParseVersion(version, "version");
  if (!v.ok()) return ProtocolError(v.status());
  Status ready = models.ModelReady(id, *v);
  if (!ready.ok()) return ProtocolError(ready);
  return ProtocolResponse(200, "{}");
}

HttpResponse Infer(ModelService& models, const HttpRequest& request, const std::string& id,
                   std::string_view version, bool tf_predict) {
  auto v = ParseVersion(version, "version");
  if (!v.ok()) return ProtocolError(v.status());
  auto parsed = tf_predict ? ParsePredictRequest(request.body) : ParseInferRequest(request.body);
  if (!parsed.ok()) return ProtocolError(parsed.status());
  parsed->model = id;
  parsed->version = *v;
  auto answer = [tf_predict](Result<InferResult> result) {
    if (!result.ok()) return ProtocolError(result.status());
    return ProtocolResponse(200,
                            tf_predict ? PredictResponseJson(*result) : InferResponseJson(*result));
  };
  HttpResponse r;
  r.answer_later = [&models, request = std::move(*parsed),
                    answer](std::function<void(HttpResponse)> send) mutable {
    models.Infer(std::move(request), [send = std::move(send), answer](Result<InferResult> result) {
      send(answer(std::move(result)));
    });
  };
  return r;
}

}  // namespace trainingd::api::model_routes
