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

}  // namespace trainingd::engine
