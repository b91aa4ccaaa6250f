#include "trainingd/engine/nn/model_spec.h"

namespace trainingd::engine {

LayerSpec LayerSpec::Conv2d(int64_t filters, int64_t kernel, Padding padding, Activation act,
                            int64_t stride) {
  LayerSpec s;
  s.type = LayerType::kConv2d;
  s.filters = filters;
  s.kernel = kernel;
  s.padding = padding;
  s.activation = act;
  s.stride = stride;
  return s;
}

LayerSpec LayerSpec::MaxPool2d(int64_t pool, int64_t stride) {
  LayerSpec s;
  s.type = LayerType::kMaxPool2d;
  s.pool = pool;
  s.stride = stride;
  return s;
}

LayerSpec LayerSpec::Dense(int64_t units, Activation act) {
  LayerSpec s;
  s.type = LayerType::kDense;
  s.units = units;
  s.activation = act;
  return s;
}

LayerSpec LayerSpec::Relu() {
  LayerSpec s;
  s.type = LayerType::kRelu;
  return s;
}

LayerSpec LayerSpec::Dropout(float rate) {
  LayerSpec s;
  s.type = LayerType::kDropout;
  s.rate = rate;
  return s;
}

LayerSpec LayerSpec::Flatten() {
  LayerSpec s;
  s.type = LayerType::kFlatten;
  return s;
}

const char* LayerTypeName(LayerType type) {
  switch (type) {
    case LayerType::kConv2d:
      return "conv2d";
    case LayerType::kMaxPool2d:
      return "max_pool2d";
    case LayerType::kDense:
      return "dense";
    case LayerType::kRelu:
      return "relu";
    case LayerType::kDropout:
      return "dropout";
    case LayerType::kFlatten:
      return "flatten";
  }
  return "unknown";
}

std::vector<std::string> PresetModelNames() { return {"softmax", "mlp", "cnn"}; }

Result<ModelSpec> PresetModel(std::string_view name) {
  ModelSpec m;
  if (name == "softmax") {
    m.layers = {LayerSpec::Flatten(), LayerSpec::Dense(10, Activation::kNone)};
  } else if (name == "mlp") {
    m.layers = {LayerSpec::Flatten(), LayerSpec::Dense(128, Activation::kRelu),
                LayerSpec::Dense(32, Activation::kRelu), LayerSpec::Dense(10, Activation::kNone)};
  } else if (name == "cnn") {
    m.layers = {LayerSpec::Conv2d(32, 5, Padding::kSame, Activation::kRelu),
                LayerSpec::MaxPool2d(2, 2),
                LayerSpec::Conv2d(64, 5, Padding::kSame, Activation::kRelu),
                LayerSpec::MaxPool2d(2, 2),
                LayerSpec::Flatten(),
                LayerSpec::Dense(1024, Activation::kRelu),
                LayerSpec::Dropout(0.4f),
                LayerSpec::Dense(10, Activation::kNone)};
  } else {
    std::string known;
    for (const auto& n : PresetModelNames()) known += (known.empty() ? "" : ", ") + n;
    return Status::NotFound("unknown model preset '" + std::string(name) + "' (known: " + known +
                            ")");
  }
  return m;
}

Result<ModelSpec> PresetModel(std::string_view name, const Shape& example_shape,
                              int64_t num_classes) {
  Result<ModelSpec> m = PresetModel(name);
  if (!m.ok()) return m;
  if (num_classes < 1) {
    return Status::InvalidArgument("model: the dataset has " + std::to_string(num_classes) +
                                   " classes; the " + std::string(name) +
                                   " preset needs at least 1");
  }
  if (example_shape.rank() != 1 && example_shape.rank() != 3) {
    return Status::InvalidArgument("model: the " + std::string(name) +
                                   " preset needs examples [H, W, C] or [F]; the dataset's are " +
                                   example_shape.ToString());
  }
  if (name == "cnn") {
    if (example_shape.rank() != 3) {
      return Status::InvalidArgument(
          "model: the cnn preset needs images [H, W, C]; the dataset's examples are " +
          example_shape.ToString() + " (a table): use mlp or softmax");
    }
    if (example_shape[0] < 4 || example_shape[1] < 4) {
      return Status::InvalidArgument(
          "model: the cnn preset needs images of at least 4x4 (it pools 2x2 twice); the "
          "dataset's examples are " +
          example_shape.ToString());
    }
  }
  m->layers.back().units = num_classes;
  return m;
}

bool IsPresetModel(std::string_view name, const ModelSpec& model) {
  Result<ModelSpec> preset = PresetModel(name);
  if (!preset.ok() || preset->layers.size() != model.layers.size()) return false;
  preset->layers.back().units = model.layers.back().units;
  return *preset == model;
}

}  // namespace trainingd::engine
