// ModelService: what the model routes need from the daemon's model server (docs/models.md): the
// ONNX export of a job's checkpoint, and inference over the Open Inference Protocol (KServe v2)
// and TF Serving's predict API. api/ states it; daemon/ implements it (serving/ModelServer),
// beside the JobService and not inside it. A model is a job (its name is the job id) and a
// version is one of its checkpoints (the global step). Every method is thread-safe.
//
// Statuses map to HTTP as the JobService's do (job_service.h): InvalidArgument 400 (the message
// starts with the field), NotFound 404 (no such job, or no checkpoint of that step),
// FailedPrecondition 409 (the job has no checkpoint yet, or predates model.json), Unavailable
// 503 with Retry-After (the inference queue is full, or the server is shutting down).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trainingd/api/prometheus.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::api {

// Which of a job's checkpoints a version means besides a global step (>= 0). No version (nullopt)
// means the job's best checkpoint when one was kept (BestCheckpointHook), else its latest; the
// routes take "latest" and "best" for these two.
inline constexpr int64_t kLatestVersion = -1;
inline constexpr int64_t kBestVersion = -2;

// A tensor a model takes or gives: its name, KServe datatype ("FP32") and shape, with -1 for the
// batch dimension.
struct TensorMetadata {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;
};

struct ModelMetadata {
  std::string name;                     // the job id
  std::vector<int64_t> versions;        // its checkpoints' steps, oldest first
  int64_t version = 0;                  // the one described (the default unless asked for)
  std::optional<int64_t> best_version;  // the best checkpoint's step, if one was kept
  std::string checkpoint;               // what `version` is: "best", "latest" or "step"
  std::vector<TensorMetadata> inputs;   // "input"
  std::vector<TensorMetadata> outputs;  // "logits", "probabilities", "label"
  // A two-class classifier's decision threshold (its "label" is class 1 where class 1's
  // probability is above it); nullopt for other models.
  std::optional<double> decision_threshold;
  std::vector<std::string> class_names;  // one per class ("0".."n-1" when the data has none)
  std::string preprocessing;             // "scale_255", "none", "standard" (inside the model)
  std::string dataset;                   // the dataset's name and sha256
  std::string dataset_sha256;
};

// One inference: `batch` examples, row-major, in the dataset's raw units (docs/models.md).
struct InferRequest {
  std::string model;               // the job id
  std::optional<int64_t> version;  // nullopt = the default (best, else latest); kLatestVersion...
  std::string id;                  // echoed in the answer (KServe's request id)
  std::string input_name = "input";
  // The input's shape as the client gave it: [batch, example dims...]; the service checks the
  // example dims against the model's ("inputs[0].shape: ...").
  std::vector<int64_t> shape;
  // Where the shape came from, for messages: "inputs[0].shape" (KServe v2), "instances" (TF
  // Serving).
  std::string shape_field = "inputs[0].shape";
  std::vector<float> data;
  // A table's rows by column name, instead of `data` (TF Serving's instances as objects): each
  // row's (column, value) pairs as given; ResolveTableRequest orders them by the model's columns.
  struct Cell {
    enum class Kind { kMissing, kNumber, kText };  // kMissing: JSON null
    Kind kind = Kind::kMissing;
    double number = 0;
    std::string text;
  };
  std::vector<std::vector<std::pair<std::string, Cell>>> rows;
  // KServe v2's second input "categorical" (BYTES [batch, C]) of a table with categorical
  // columns, beside "input" (FP32 [batch, numbers]): the values row-major, nullopt for null.
  std::vector<int64_t> categorical_shape;
  std::vector<std::optional<std::string>> categorical;
  // Which outputs to return ("logits", "probabilities"; a regression model's "logits",
  // "prediction"); empty = both.
  std::vector<std::string> outputs;
  // TF Serving's predict: the second output only (probabilities, or a regression model's
  // prediction), whatever `outputs` says.
  bool predictions_only = false;
  // KServe v2's "parameters": {"decision_threshold": t}, t in (0, 1): this request's labels use
  // t in place of the model's threshold (a two-class classifier's only; the service refuses it
  // for another model). nullopt = the model's.
  std::optional<double> decision_threshold;
};

struct InferResult {
  std::string model;
  int64_t version = 0;
  std::string id;
  int64_t batch = 0;
  int64_t classes = 0;
  bool with_logits = true;
  bool with_probabilities = true;
  std::vector<float> logits;         // [batch, classes] when with_logits
  std::vector<float> probabilities;  // [batch, classes] when with_probabilities
  // A classifier's predicted classes (TrainedModel::PredictedClasses: the arg-max, or a two-class
  // model's decision threshold), [batch], the output "label"; TF Serving's "labels".
  bool with_labels = false;
  std::vector<int64_t> labels;
  // The threshold the labels used when the request gave one (echoed in "parameters").
  std::optional<double> decision_threshold;
  std::vector<std::string> class_names;
  // A regression model's: `probabilities` holds its predictions in the target's units ([batch,
  // 1], the output "prediction"), class_names its label column.
  bool regression = false;
};

// An exported model file.
struct ModelFile {
  std::string filename;  // "<job id>-step<N>.onnx"
  std::string bytes;
  int64_t step = 0;        // the checkpoint's global step
  std::string checkpoint;  // "best", "latest" or "step" (ModelMetadata::checkpoint)
};

using InferDone = std::function<void(engine::Result<InferResult>)>;

class ModelService {
 public:
  virtual ~ModelService() = default;
  // The job's model at `version` (nullopt: the best checkpoint, else the latest; kLatestVersion,
  // kBestVersion). Reads the checkpoint list,
  // not the weights.
  virtual engine::Result<ModelMetadata> GetModel(const std::string& id,
                                                 std::optional<int64_t> version) = 0;
  // Whether an inference on it would run now: the checkpoint is there and loads (this loads
  // it into the cache). The error says why not.
  virtual engine::Status ModelReady(const std::string& id, std::optional<int64_t> version) = 0;
  // Whether the server takes inferences (not shutting down).
  virtual bool Ready() = 0;
  // Runs `request` on the server's inference threads, batched with others of the same model
  // and version. `done` is called exactly once: on an inference thread with the result, or
  // before Infer returns when the request is refused (bad shape, unknown job, a full queue).
  virtual void Infer(InferRequest request, InferDone done) = 0;
  // The ONNX file of the job's checkpoint `step` (as `version` above).
  virtual engine::Result<ModelFile> ExportOnnx(const std::string& id,
                                               std::optional<int64_t> step) = 0;
  // Its series for /metrics (trainingd_serving_*).
  virtual std::vector<Metric> Metrics() { return {}; }
};

}  // namespace trainingd::api
