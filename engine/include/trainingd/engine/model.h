// Model: a validated stack of layers built from a ModelSpec.
//
// Build() checks every layer against the shape flowing into it and fails with an InvalidArgument
// naming the layer ("model.layers[5] (dense): ..."). Layer and parameter names follow tf.layers
// ("conv2d", "conv2d_1", "dense/kernel"), so checkpoints and summaries read like TensorFlow's.
// A Model is not thread-safe; it parallelises internally.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trainingd/engine/layer.h"
#include "trainingd/engine/model_spec.h"
#include "trainingd/engine/step_trace.h"

namespace trainingd::engine {

class Model {
 public:
  // Builds `spec` for per-example inputs of `input_shape` (e.g. [28,28,1]) and checks that the
  // last layer produces [num_classes] logits. Parameters are initialised from `seed`.
  static Result<std::unique_ptr<Model>> Build(const ModelSpec& spec, const Shape& input_shape,
                                              int64_t num_classes, uint64_t seed);

  // Runs the layers on a batch [B, input_shape...] and returns the logits [B, num_classes]. In
  // kTrain mode the activations are kept for Backward; `input` must outlive the next Backward.
  const Tensor& Forward(const Tensor& input, Mode mode);
  // Back-propagates dLoss/dlogits through the latest Forward, writing every parameter's grad.
  void Backward(const Tensor& dlogits);

  // Every trainable parameter, in layer order (kernel before bias).
  const std::vector<Parameter*>& parameters() const { return params_; }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  // Per-example output shape of each layer.
  const std::vector<Shape>& output_shapes() const { return shapes_; }
  const Shape& input_shape() const { return input_shape_; }
  int64_t num_parameters() const;
  // FLOPs of one forward pass, and of one training step (forward + backward), per example.
  int64_t ForwardFlopsPerExample() const;
  int64_t TrainingFlopsPerExample() const;
  // When set, Forward/Backward add each layer's wall time to these (sized to the layer count).
  void set_layer_timers(std::vector<double>* forward, std::vector<double>* backward) {
    forward_times_ = forward;
    backward_times_ = backward;
  }
  // When set, Forward/Backward append one event per layer ("forward"/"backward", named after the
  // layer) to `trace`; null turns tracing off.
  void set_trace(StepTrace* trace) { trace_ = trace; }
  // A table of layers, output shapes and parameter counts, like Keras' model.summary().
  std::string Summary() const;

 private:
  Model() = default;

  Shape input_shape_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<Shape> shapes_;
  std::vector<Parameter*> params_;
  // needs_input_grad_[i]: some layer before i has parameters, so layer i must pass a gradient
  // down. A parameter-free prefix (e.g. the flatten in front of the first dense layer) gets none.
  std::vector<bool> needs_input_grad_;
  const Tensor* input_ = nullptr;
  StepTrace* trace_ = nullptr;
  std::vector<Tensor> acts_;   // acts_[i] = output of layer i
  std::vector<Tensor> grads_;  // two ping-pong buffers for the gradients flowing backwards
  std::vector<double>* forward_times_ = nullptr;
  std::vector<double>* backward_times_ = nullptr;
};

}  // namespace trainingd::engine
