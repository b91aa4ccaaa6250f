// The answers of the model routes (docs/models.md), for Router::Dispatch: the ONNX download of
// /api/v1 (with the REST API's error bodies), and the inference protocols' routes (KServe v2's
// /v2/..., TF Serving's /v1/models/{id}:predict), whose errors are the protocols' own
// {"error": "<message>"}, the message starting with the field.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "trainingd/api/http_message.h"
#include "trainingd/api/model_service.h"

namespace trainingd::api::model_routes {

// GET /api/v1/jobs/{id}/model?format=onnx[&checkpoint=best|latest|N][&step=N]: the query's
// step and checkpoint (one of them at most); neither = the best checkpoint, else the latest.
HttpResponse ExportModel(ModelService& models, const std::string& id, std::string_view format,
                         std::optional<std::string> step_text,
                         std::optional<std::string> checkpoint_text = std::nullopt);
// GET /v2: the server's name, version and extensions.
HttpResponse ServerMetadata();
// GET /v2/health/live and /v2/health/ready (`ready` null = live).
HttpResponse Health(ModelService* ready);
// GET /v2/models/{id}[/versions/{version}]; `version` "" = the best, else the latest.
HttpResponse ModelMetadata(ModelService& models, const std::string& id, std::string_view version);
// GET /v2/models/{id}[/versions/{version}]/ready.
HttpResponse ModelReady(ModelService& models, const std::string& id, std::string_view version);
// POST /v2/models/{id}[/versions/{version}]/infer, or /v1/models/{id}:predict (tf_predict):
// parses the body and answers later (HttpResponse::answer_later), once the batch has run; a
// request refused before that is answered at once.
HttpResponse Infer(ModelService& models, const HttpRequest& request, const std::string& id,
                   std::string_view version, bool tf_predict);

}  // namespace trainingd::api::model_routes
