// ModelSpec: a model as a list of layers -- a sequential stack, or a graph when layers name their
// inputs -- and the tutorial presets.
//
// This is the engine's own description of a model (no JSON here: the API layer parses job specs
// into it). Model::Build validates it against the input shape and reports the first bad layer.
//
// The graph: a layer without `inputs` takes the output of the layer before it in the list (the
// model's input for the first), so a list of layers without names or inputs is the sequential
// stack it always was. A layer with `inputs` takes the outputs of the earlier layers it names
// ("input" names the model's input); a layer with a `name` can be named so, and its parameters
// are named after it ("block1_conv/kernel") instead of after its type ("conv2d_3/kernel"). As
// inputs may only name earlier layers, a graph has no cycles. The last layer is the output, and
// every other layer's output must be taken by some later layer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

enum class LayerType {
  kConv2d,
  kMaxPool2d,
  kDense,
  kRelu,
  kDropout,
  kFlatten,
  kAdd,            // the element-wise sum of two or more inputs of one shape (keras.layers.Add)
  kConcat,         // inputs joined along their last axis, the channels (keras.layers.Concatenate)
  kAvgPool2d,      // average pooling, valid padding (keras.layers.AveragePooling2D)
  kGlobalAvgPool,  // [H, W, C] -> [C], the mean of each channel (GlobalAveragePooling2D)
  kSigmoid,
  kTanh,
  kGelu,       // x * Phi(x), the exact (erf) form, Keras' gelu(approximate=False)
  kBatchNorm,  // keras.layers.BatchNormalization over the last axis (batch_norm_layer.h)
  // A table's categorical codes one-hot or embedded (categorical_encoding_layer.h): the first
  // layer FitModelToData gives a model of a table with categorical columns.
  kCategoricalEncoding,
};
enum class Padding { kSame, kValid };
enum class Activation { kNone, kRelu };
// kGlorotUniform: tf.layers' default (bias 0). kTruncatedNormal: the "Deep MNIST for experts"
// tutorial's weight_variable/bias_variable (stddev 0.1, bias 0.1).
enum class Initializer { kGlorotUniform, kTruncatedNormal };

struct LayerSpec {
  LayerType type = LayerType::kDense;
  // The graph (see the top of this file): empty for a layer of a sequential stack.
  std::string name;                 // unique in the model; not "input"; no '/'
  std::vector<std::string> inputs;  // names of earlier layers, or "input"
  // conv2d
  int64_t filters = 0;
  int64_t kernel = 0;                 // square kernel size
  int64_t stride = 1;                 // conv2d stride; pooling stride (0 = pool size)
  Padding padding = Padding::kValid;  // tf.layers default
  // dense
  int64_t units = 0;
  // max_pool2d, avg_pool2d
  int64_t pool = 2;
  // dropout: fraction of units dropped in training (tf.layers.dropout's `rate`)
  float rate = 0.0f;
  // batch_norm: Keras' defaults
  float momentum = 0.99f;
  float epsilon = 1e-3f;
  // conv2d and dense
  Activation activation = Activation::kNone;
  Initializer initializer = Initializer::kGlorotUniform;
  float stddev = 0.1f;     // truncated normal stddev
  float bias_init = 0.0f;  // constant bias initial value (the tutorial's 0.1 with truncated normal)
  // categorical_encoding: per categorical column, its codes and its embedding size (0: one-hot)
  std::vector<int64_t> category_codes;
  std::vector<int64_t> embedding_dims;

  static LayerSpec Conv2d(int64_t filters, int64_t kernel, Padding padding, Activation act,
                          int64_t stride = 1);
  static LayerSpec MaxPool2d(int64_t pool, int64_t stride);
  static LayerSpec Dense(int64_t units, Activation act);
  static LayerSpec Relu();
  static LayerSpec Dropout(float rate);
  static LayerSpec Flatten();
  static LayerSpec AvgPool2d(int64_t pool, int64_t stride);
  static LayerSpec BatchNorm(float momentum = 0.99f, float epsilon = 1e-3f);
  // Layers without fields of their own: relu, flatten, add, concat, global_avg_pool, sigmoid,
  // tanh, gelu.
  static LayerSpec Of(LayerType type);
  // This layer with a name and inputs.
  LayerSpec Named(std::string layer_name, std::vector<std::string> input_names = {}) const;

  friend bool operator==(const LayerSpec&, const LayerSpec&) = default;
};

const char* LayerTypeName(LayerType type);
// The layer takes two or more inputs (add, concat); every other layer takes one.
bool IsMergeLayer(LayerType type);

// The name by which `inputs` names the model's input.
inline constexpr const char* kModelInputName = "input";
// The name of the categorical_encoding layer FitModelToData puts first in a graph.
inline constexpr const char* kCategoricalEncodingName = "categorical_encoding";

struct ModelSpec {
  std::vector<LayerSpec> layers;

  // Some layer has a name or inputs: the model is a graph, not a plain stack.
  bool IsGraph() const;

  friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

// The graph's edges: for each layer, the indices of the layers whose outputs it takes, in the order
// given (-1 for the model's input). InvalidArgument naming the field for a bad graph:
// "model.layers[3].name: 'a' is also the name of model.layers[1]", "model.layers[7].inputs[1]:
// 'b' names model.layers[9], which comes later: a layer takes only earlier layers (no cycles)",
// "model.layers[4].inputs: add takes two or more inputs, got 1", "model.layers[2]: its output is
// taken by no later layer (only the last layer is the model's output)".
Result<std::vector<std::vector<int>>> ResolveModelGraph(const ModelSpec& spec);

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
