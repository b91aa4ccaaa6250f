// ModelSpec: a model as a plain list of layers, and the tutorial presets.
//
// This is the engine's own description of a model (no JSON here: the API layer parses job specs
// into it). Model::Build validates it against the input shape and reports the first bad layer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

enum class LayerType { kConv2d, kMaxPool2d, kDense, kRelu, kDropout, kFlatten };
enum class Padding { kSame, kValid };
enum class Activation { kNone, kRelu };
// kGlorotUniform: tf.layers' default (bias 0). kTruncatedNormal: the "Deep MNIST for experts"
// tutorial's weight_variable/bias_variable (stddev 0.1, bias 0.1).
enum class Initializer { kGlorotUniform, kTruncatedNormal };

struct LayerSpec {
  LayerType type = LayerType::kDense;
  // conv2d
  int64_t filters = 0;
  int64_t kernel = 0;                 // square kernel size
  int64_t stride = 1;                 // conv2d stride; max_pool2d stride (0 = pool size)
  Padding padding = Padding::kValid;  // tf.layers default
  // dense
  int64_t units = 0;
  // max_pool2d
  int64_t pool = 2;
  // dropout: fraction of units dropped in training (tf.layers.dropout's `rate`)
  float rate = 0.0f;
  // conv2d and dense
  Activation activation = Activation::kNone;
  Initializer initializer = Initializer::kGlorotUniform;
  float stddev = 0.1f;     // truncated normal stddev
  float bias_init = 0.0f;  // constant bias initial value (the tutorial's 0.1 with truncated normal)

  static LayerSpec Conv2d(int64_t filters, int64_t kernel, Padding padding, Activation act,
                          int64_t stride = 1);
  static LayerSpec MaxPool2d(int64_t pool, int64_t stride);
  static LayerSpec Dense(int64_t units, Activation act);
  static LayerSpec Relu();
  static LayerSpec Dropout(float rate);
  static LayerSpec Flatten();

  friend bool operator==(const LayerSpec&, const LayerSpec&) = default;
};

const char* LayerTypeName(LayerType type);

struct ModelSpec {
  std::vector<LayerSpec> layers;

  friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

// The presets of the TensorFlow MNIST tutorials, as written for 28x28x1 inputs and 10 classes:
//   "softmax": flatten, dense 10 (softmax regression, 784 -> 10)
//   "mlp":     flatten, dense 128 relu, dense 32 relu, dense 10
//   "cnn":     conv 5x5x32 same relu, max-pool 2x2/2, conv 5x5x64 same relu, max-pool 2x2/2,
//              flatten, dense 1024 relu, dropout 0.4, dense 10
// Returns NotFound naming the preset and listing the known ones.
Result<ModelSpec> PresetModel(std::string_view name);

// The preset for examples of `example_shape` in `num_classes` classes: the same layers, the last
// dense layer of `num_classes` units. softmax and mlp take any example shape (flatten of a table
// row [F] is [F]); cnn takes images [H, W, C] with H, W >= 4 (two 2x2 poolings leave at least
// 1x1). NotFound as above; InvalidArgument starting "model: " and naming the example shape when
// the preset does not fit it ("model: the cnn preset needs images [H, W, C]; the dataset's
// examples are [13] (a table)"), or when num_classes < 1.
Result<ModelSpec> PresetModel(std::string_view name, const Shape& example_shape,
                              int64_t num_classes);
// True if `model` is preset `name` as PresetModel writes it for some number of classes: the
// layers are the preset's, except maybe the last one's units. Such a model is adapted to the
// dataset (PresetModel above); any other is the user's own and runs as written.
bool IsPresetModel(std::string_view name, const ModelSpec& model);
// The preset names, for help texts and errors.
std::vector<std::string> PresetModelNames();

}  // namespace trainingd::engine
