// ExportOnnx: a trained model as an ONNX file (IR version 7, opset 13) that other runtimes run
// (onnxruntime, ...), written by the engine's own protobuf encoder (src/io/protobuf_writer.h).
//
// The graph's conventions (docs/models.md):
//   input          "input", float32 [batch, H, W, C] (NHWC) or [batch, F], batch symbolic
//                  ("batch"), in the dataset's raw units (0..255 for uint8 images);
//   preprocessing  inside the graph, as training applied it: Div by 255, or Sub the train split's
//                  mean and Div by its std per feature (initializers "feature_mean",
//                  "feature_std"), or Div by 255, Sub the mean and Div by the std per channel
//                  (per_channel: "channel_mean", "channel_std" of [C], broadcast over NHWC);
//   layers         conv2d -> Conv (kernel HWIO transposed to OIHW, TF's SAME padding as explicit
//                  pads) + Relu; max_pool2d -> MaxPool; both on NCHW, with a Transpose from NHWC
//                  before the first and one back to NHWC before a flatten, so the first dense
//                  layer reads features in the engine's order; dense -> Gemm (+ Relu); relu ->
//                  Relu; flatten -> Flatten(axis 1); dropout is left out (inference);
//   outputs        "logits" and "probabilities" (Softmax, axis 1), float32 [batch, classes]; a
//                  regression model's "logits" (the standardized target) and "prediction"
//                  (Mul by "target_std", Add "target_mean": the target's units), [batch, 1];
//                  a classifier's "label", int64 [batch], the predicted class: ArgMax of the
//                  probabilities, or for a two-class model with a decision threshold t other
//                  than 0.5, Cast(Greater(p1, float(t))); a two-class model's
//                  "positive_probability", float32 [batch], class 1's probability (before
//                  "label");
//   metadata_props job_id (when known), step, dataset, dataset_format, dataset_sha256 (uploads),
//                  preprocessing, class_names (a JSON array; a regression model's: the label
//                  column), task, decision_threshold (a two-class classifier's), trainingd_version.
#pragma once

#include <cstdint>
#include <string>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/job/trained_model.h"

namespace trainingd::engine {

// What the file records that the model itself does not know.
struct OnnxMetadata {
  std::string job_id;  // the daemon's job id; empty (a foreground run's directory) = left out
  // Which checkpoint the model is: "best", "latest" or "step"; empty = left out.
  std::string checkpoint;
};

// The bytes of model.onnx for `model`. Reads `model` only (its layers and parameters), so it may
// run while no Predict does on the same object. InvalidArgument when a layer has no ONNX form
// (none today: every layer type of model_spec.h has one).
Result<std::string> ExportOnnx(const TrainedModel& model, const OnnxMetadata& metadata);

// TensorFlow's SAME padding along one dimension: out = ceil(in / stride), total = max((out - 1)
// * stride + kernel - in, 0), begin = floor(total / 2), the rest at the end -- what Conv2dLayer
// computes and what the ONNX Conv's explicit pads say.
struct SamePadding {
  int64_t begin = 0;
  int64_t end = 0;
};
SamePadding TfSamePadding(int64_t in, int64_t kernel, int64_t stride);

}  // namespace trainingd::engine
