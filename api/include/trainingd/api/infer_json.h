// The inference wire formats (docs/models.md#serving): the Open Inference Protocol's (KServe v2)
// JSON tensors, and TF Serving's predict API, read into the ModelService's InferRequest and
// written from its InferResult and ModelMetadata.
//
// Requests are read strictly: unknown members, a datatype other than FP32 or UINT8, a value that
// is not a finite number (or not an integer in [0, 255] for UINT8), data whose length or nesting
// disagrees with the shape, and shapes with a non-positive dimension or more than
// kMaxInferValues values are InvalidArgument naming the member ("inputs[0].data: 700 values for
// shape [1, 28, 28, 1], which holds 784"), checked before anything is allocated by the shape.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trainingd/api/model_service.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/job/model_input.h"

namespace trainingd::api {

// The most values one request may carry, whatever it declares (a body limit of 1 MiB already
// holds it to about half a million).
inline constexpr int64_t kMaxInferValues = int64_t{1} << 26;

// A KServe v2 inference request body: {"id"?, "parameters"?, "inputs": [{"name", "shape",
// "datatype", "data", "parameters"?}], "outputs"?: [{"name", "parameters"?}]}, exactly one input.
// `model` and `version` are not in the body: the caller sets them from the path.
engine::Result<InferRequest> ParseInferRequest(std::string_view body);

// A TF Serving predict body: {"instances": [example, ...], "signature_name"?}, each example a
// (nested) array of numbers of one shape.
engine::Result<InferRequest> ParsePredictRequest(std::string_view body);

// A request to a table's model as TrainedModel::Predict takes it: rows by column name (TF
// Serving's instances as objects), or KServe v2's "input" (the numbers) beside "categorical" (the
// categorical values), become `data` [batch, F], the numbers in the model's feature_names order
// (NaN where missing: null or a column left out) and then each categorical value's code
// (engine::CategoricalCode: a level, missing or unknown). A request of `data` alone passes
// as it is, unless the model has categorical columns, which only these two forms can give.
// InvalidArgument naming the field: a column the model lacks (the message lists its columns), a
// string for a number column, a number that is not an integer for a categorical one, shapes that
// disagree ("inputs[1].shape: [2, 3] for 2 examples of the model's 2 categorical columns").
engine::Status ResolveTableRequest(const engine::ModelInput& model, InferRequest* request);

// {"model_name", "model_version", "id"?, "outputs": [{"name", "datatype": "FP32", "shape",
// "data"}, ...]} (KServe v2), the data row-major and flat (a classifier's "label": INT64
// [batch]); plus "parameters": {"class_names"}.
std::string InferResponseJson(const InferResult& result);
// {"predictions": [[p, ...], ...], "labels": [c, ...]}: each example's probabilities (TF
// Serving) and, beside them, its predicted class; a regression model's {"predictions": [y,
// ...]}, each example's prediction.
std::string PredictResponseJson(const InferResult& result);
// {"name", "versions", "platform", "inputs", "outputs", "parameters"} (KServe v2 model
// metadata).
std::string ModelMetadataJson(const ModelMetadata& metadata);
// {"error": "<message>"}: the protocol's error body.
std::string InferErrorJson(std::string_view message);

}  // namespace trainingd::api
