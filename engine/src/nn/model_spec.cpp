#include "trainingd/engine/nn/model_spec.h"

#include <map>

namespace trainingd::engine {

LayerSpec LayerSpec::Conv2d(int64_t filters, int64_t kernel, Padding padding, Activation act,
                            int64_t stride) {
  LayerSpec s = Of(LayerType::kConv2d);
  s.filters = filters;
  s.kernel = kernel;
  s.padding = padding;
  s.activation = act;
  s.stride = stride;
  return s;
}

LayerSpec LayerSpec::MaxPool2d(int64_t pool, int64_t stride) {
  LayerSpec s = Of(LayerType::kMaxPool2d);
  s.pool = pool;
  s.stride = stride;
  return s;
}

LayerSpec LayerSpec::Dense(int64_t units, Activation act) {
  LayerSpec s = Of(LayerType::kDense);
  s.units = units;
  s.activation = act;
  return s;
}

LayerSpec LayerSpec::Relu() { return Of(LayerType::kRelu); }

LayerSpec LayerSpec::Dropout(float rate) {
  LayerSpec s = Of(LayerType::kDropout);
  s.rate = rate;
  return s;
}

LayerSpec LayerSpec::Flatten() { return Of(LayerType::kFlatten); }

LayerSpec LayerSpec::AvgPool2d(int64_t pool, int64_t stride) {
  LayerSpec s = Of(LayerType::kAvgPool2d);
  s.pool = pool;
  s.stride = stride;
  return s;
}

LayerSpec LayerSpec::BatchNorm(float momentum, float epsilon) {
  LayerSpec s = Of(LayerType::kBatchNorm);
  s.momentum = momentum;
  s.epsilon = epsilon;
  return s;
}

LayerSpec LayerSpec::Of(LayerType type) {
  LayerSpec s;
  s.type = type;
  return s;
}

LayerSpec LayerSpec::Named(std::string layer_name, std::vector<std::string> input_names) const {
  LayerSpec s = *this;
  s.name = std::move(layer_name);
  s.inputs = std::move(input_names);
  return s;
}

bool IsMergeLayer(LayerType type) { return type == LayerType::kAdd || type == LayerType::kConcat; }

bool ModelSpec::IsGraph() const {
  for (const LayerSpec& l : layers) {
    if (!l.name.empty() || !l.inputs.empty()) return true;
  }
  return false;
}

namespace {

std::string LayerField(size_t i) { return "model.layers[" + std::to_string(i) + "]"; }

// 'text', cut to its first 64 characters: user input is echoed, but never at any length.
std::string Quoted(const std::string& text) {
  constexpr size_t kMax = 64;
  return "'" + (text.size() <= kMax ? text : text.substr(0, kMax) + "...") + "'";
}

// A layer name is what TensorFlow allows in a variable scope, short enough for every file that
// names a parameter after it.
bool IsLayerName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return name.front() != '.' && name.front() != '-';
}

}  // namespace

Result<std::vector<std::vector<int>>> ResolveModelGraph(const ModelSpec& spec) {
  std::map<std::string, size_t, std::less<>> named;  // name -> its layer
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const std::string& name = spec.layers[i].name;
    if (name.empty()) continue;
    if (!IsLayerName(name)) {
      return Status::InvalidArgument(
          LayerField(i) + ".name: " + Quoted(name) +
          " is not a layer name (1 to 64 of A-Z a-z 0-9 _ - ., not starting with . or -)");
    }
    if (name == kModelInputName) {
      return Status::InvalidArgument(LayerField(i) + ".name: '" + kModelInputName +
                                     "' names the model's input; choose another name");
    }
    const auto [it, fresh] = named.emplace(name, i);
    if (!fresh) {
      return Status::InvalidArgument(LayerField(i) + ".name: " + Quoted(name) +
                                     " is also the name of " + LayerField(it->second));
    }
  }
  std::vector<std::vector<int>> edges(spec.layers.size());
  std::vector<bool> taken(spec.layers.size(), false);
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& l = spec.layers[i];
    const std::string field = LayerField(i) + ".inputs";
    if (l.inputs.empty()) {
      edges[i] = {static_cast<int>(i) - 1};
    } else {
      if (l.inputs.size() > 64) {
        return Status::InvalidArgument(field + ": at most 64 inputs, got " +
                                       std::to_string(l.inputs.size()));
      }
      for (size_t k = 0; k < l.inputs.size(); ++k) {
        const std::string& in = l.inputs[k];
        const std::string at = field + "[" + std::to_string(k) + "]";
        if (in == kModelInputName) {
          edges[i].push_back(-1);
          continue;
        }
        const auto it = named.find(in);
        if (it == named.end()) {
          return Status::InvalidArgument(at + ": " + Quoted(in) +
                                         " names no layer of the model (nor 'input')");
        }
        if (it->second == i) {
          return Status::InvalidArgument(at + ": " + Quoted(in) +
                                         " is this layer itself: a layer takes only earlier "
                                         "layers (no cycles)");
        }
        if (it->second > i) {
          return Status::InvalidArgument(at + ": " + Quoted(in) + " names " +
                                         LayerField(it->second) +
                                         ", which comes later: a layer takes only earlier layers "
                                         "(no cycles)");
        }
        edges[i].push_back(static_cast<int>(it->second));
      }
    }
    const size_t n = edges[i].size();
    if (IsMergeLayer(l.type) && n < 2) {
      return Status::InvalidArgument(field + ": " + LayerTypeName(l.type) +
                                     " takes two or more inputs, got " + std::to_string(n) +
                                     (l.inputs.empty() ? " (give them by name)" : ""));
    }
    if (!IsMergeLayer(l.type) && n != 1) {
      return Status::InvalidArgument(field + ": " + LayerTypeName(l.type) +
                                     " takes one input, got " + std::to_string(n));
    }
    for (const int j : edges[i]) {
      if (j >= 0) taken[static_cast<size_t>(j)] = true;
    }
  }
  for (size_t i = 0; i + 1 < spec.layers.size(); ++i) {
    if (!taken[i]) {
      return Status::InvalidArgument(
          LayerField(i) +
          ": its output is taken by no later layer (only the last layer is the model's output)");
    }
  }
  return edges;
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
    case LayerType::kAdd:
      return "add";
    case LayerType::kConcat:
      return "concat";
    case LayerType::kAvgPool2d:
      return "avg_pool2d";
    case LayerType::kGlobalAvgPool:
      return "global_avg_pool";
    case LayerType::kSigmoid:
      return "sigmoid";
    case LayerType::kTanh:
      return "tanh";
    case LayerType::kGelu:
      return "gelu";
    case LayerType::kBatchNorm:
      return "batch_norm";
    case LayerType::kCategoricalEncoding:
      return "categorical_encoding";
  }
  return "unknown";
}

std::vector<std::string> PresetModelNames() {
  return {"softmax", "mlp", "cnn", "resnet", "resnet20", "resnet32", "resnet56"};
}

namespace {

// The CIFAR ResNet of He et al. (2016, section 4.2) with 6n + 2 weighted layers: a 3x3
// convolution of 16 filters, then three stages of n basic blocks of 16, 32 and 64 filters (two
// 3x3 convolutions, each followed by batch norm, the first by a ReLU too; the block's input added
// to its output, then a ReLU), global average pooling and the dense classifier. The first block
// of stages 2 and 3 halves the height and width with a stride-2 first convolution, and its
// shortcut is a strided 1x1 convolution with batch norm (the paper's option B, projection
// shortcuts where the shape changes).
ModelSpec CifarResNet(int n) {
  const auto conv = [](int64_t filters, int64_t kernel, int64_t stride) {
    return LayerSpec::Conv2d(filters, kernel, Padding::kSame, Activation::kNone, stride);
  };
  ModelSpec m;
  m.layers = {conv(16, 3, 1), LayerSpec::BatchNorm(), LayerSpec::Relu().Named("stem")};
  std::string in = "stem";
  const int64_t filters[3] = {16, 32, 64};
  for (int s = 0; s < 3; ++s) {
    for (int b = 0; b < n; ++b) {
      const std::string block = "stage" + std::to_string(s + 1) + "_block" + std::to_string(b + 1);
      const bool down = s > 0 && b == 0;
      m.layers.push_back(conv(filters[s], 3, down ? 2 : 1).Named(block + "_conv1", {in}));
      m.layers.push_back(LayerSpec::BatchNorm().Named(block + "_bn1"));
      m.layers.push_back(LayerSpec::Relu().Named(block + "_relu1"));
      m.layers.push_back(conv(filters[s], 3, 1).Named(block + "_conv2"));
      m.layers.push_back(LayerSpec::BatchNorm().Named(block + "_bn2"));
      std::string shortcut = in;
      if (down) {
        m.layers.push_back(conv(filters[s], 1, 2).Named(block + "_proj", {in}));
        m.layers.push_back(LayerSpec::BatchNorm().Named(block + "_proj_bn"));
        shortcut = block + "_proj_bn";
      }
      m.layers.push_back(
          LayerSpec::Of(LayerType::kAdd).Named(block + "_add", {block + "_bn2", shortcut}));
      m.layers.push_back(LayerSpec::Relu().Named(block + "_out"));
      in = block + "_out";
    }
  }
  m.layers.push_back(LayerSpec::Of(LayerType::kGlobalAvgPool));
  m.layers.push_back(LayerSpec::Dense(10, Activation::kNone));
  return m;
}

}  // namespace

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
  } else if (name == "resnet" || name == "resnet20") {
    m = CifarResNet(3);
  } else if (name == "resnet32") {
    m = CifarResNet(5);
  } else if (name == "resnet56") {
    m = CifarResNet(9);
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
  if (std::string_view(name).substr(0, 6) == "resnet" && example_shape.rank() != 3) {
    return Status::InvalidArgument("model: the " + std::string(name) +
                                   " preset needs images [H, W, C]; the dataset's examples are " +
                                   example_shape.ToString() + " (a table): use mlp or softmax");
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
