// Model: a validated stack -- or graph (model_spec.h) -- of layers built from a ModelSpec.
//
// Build() checks every layer against the shape flowing into it and fails with an InvalidArgument
// naming the layer ("model.layers[5] (dense): ..."). Plan() does the same checks without
// allocating a parameter, so a model can be sized (MemoryUse) before anyone commits memory to it.
// Layer and parameter names follow tf.layers ("conv2d", "conv2d_1", "dense/kernel"), so
// checkpoints and summaries read like TensorFlow's; a layer given a name in the spec takes that
// name instead. In a graph, a layer's output gradient is the sum of what the layers taking it pass
// down, added in descending order of those layers (the same for every batch split, so data
// parallelism stays bit-identical). A Model is not thread-safe; it parallelises internally.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trainingd/engine/nn/gradient_blocks.h"
#include "trainingd/engine/nn/layer.h"
#include "trainingd/engine/nn/model_spec.h"
#include "trainingd/engine/session/step_trace.h"

namespace trainingd::engine {

// The bytes a model holds at its peak, by kind (Model::MemoryUse).
struct ModelMemory {
  int64_t parameters = 0;   // values and gradients
  int64_t activations = 0;  // every layer's output, kept for Backward
  int64_t gradients = 0;    // the two buffers that carry input gradients down in Backward
  int64_t scratch = 0;      // the layers' own buffers (Layer::ScratchBytes)
  int64_t total() const { return parameters + activations + gradients + scratch; }
};

class DenseLayer;

class Model {
 public:
  // Builds `spec` for per-example inputs of `input_shape` (e.g. [28,28,1]) and checks that the
  // last layer produces [num_classes] logits. Parameters are initialised from `seed`.
  static Result<std::unique_ptr<Model>> Build(const ModelSpec& spec, const Shape& input_shape,
                                              int64_t num_classes, uint64_t seed);
  // Build's checks and shapes without its parameters: nothing is allocated that depends on the
  // sizes in `spec`. A planned model answers the shape, count and memory questions below but
  // must not run (Forward, Backward, parameters()).
  static Result<std::unique_ptr<Model>> Plan(const ModelSpec& spec, const Shape& input_shape,
                                             int64_t num_classes, uint64_t seed);

  // What this model holds while it trains on batches of `train_batch` examples with `threads`
  // compute threads and evaluates in batches of `eval_batch` (0 = never). Buffers live as long
  // as the model and keep their largest size, so each is counted at the larger of the two
  // batches that use it. Saturates at INT64_MAX instead of overflowing.
  ModelMemory MemoryUse(int64_t train_batch, int64_t eval_batch, int threads) const;
  // Per-layer shares of MemoryUse, in layer order (the same sums).
  std::vector<ModelMemory> LayerMemoryUse(int64_t train_batch, int64_t eval_batch,
                                          int threads) const;

  // Runs the layers on a batch [B, input_shape...] and returns the logits [B, num_classes]. In
  // kTrain mode the activations are kept for Backward; `input` must outlive the next Backward.
  const Tensor& Forward(const Tensor& input, Mode mode);
  // Back-propagates dLoss/dlogits through the latest Forward. In one process (blocks.whole())
  // every parameter's gradient is written. In a data-parallel step every parameter's exact sum
  // over `blocks` (Parameter::sum) is, except for the gathered dense layers
  // (MarkGatheredDenseLayers), whose gradients DenseLayer::GatheredGradients forms; the step then
  // adds up the ranks' sums and makes them gradients (Trainer::ReduceGradients).
  void Backward(const Tensor& dlogits, GradientBlocks& blocks);
  // Backward over the batch as one block (one process).
  void Backward(const Tensor& dlogits);

  // Every trainable parameter, in layer order (kernel before bias).
  const std::vector<Parameter*>& parameters() const { return params_; }
  // Every variable saved with them but not trained (Layer::variables), in layer order.
  const std::vector<Parameter*>& variables() const { return variables_; }
  // The blocks of the coming training step, for the layers that sum over the batch in Forward
  // (Layer::set_step_blocks); null after the step.
  void set_step_blocks(GradientBlocks* blocks);
  // Every parameter's gradient lives in one buffer, and its exact sum in another (each grad and
  // sum is a view into them, in parameter order, each starting on a 64-byte boundary; the
  // padding stays zero), so a data-parallel step reduces all gradients with one call and no
  // copies.
  std::span<float> flat_gradients() { return {flat_grads_.data(), flat_grads_.size()}; }
  std::span<int64_t> flat_gradient_sums() { return {flat_sums_.data(), flat_sums_.size()}; }
  // The position of this process's examples in the global batch of a data-parallel step (0 in
  // one process): dropout keys its masks by the global example index, so a model split over N
  // processes draws the same masks as one.
  void set_example_offset(int64_t offset);
  // The arithmetic of the training steps (Layer::set_precision), before the first; and of
  // MemoryUse, whose scratch it changes.
  void set_precision(Precision precision);
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  // For steps of `global_batch` examples, in one process or data-parallel alike: marks the dense
  // layers whose kernel gradient is cheaper to form over the whole batch (from the ranks'
  // gathered inputs and output gradients) than to sum by blocks, DenseLayer::GatheredAt (the
  // ranks then also split their forward and input gradient by columns), unmarks the others, and
  // returns the marked ones. Any number of ranks and threads gives the same bits either way.
  std::vector<DenseLayer*> MarkGatheredDenseLayers(int64_t global_batch);
  // For inference on parameters that no longer change (TrainedModel): every layer's
  // PrepareForInference, and the gradient buffers released (Parameter::grad empty and sum
  // null from then on), so that what a dense layer's packed kernel adds (4 bytes per element)
  // is less than what they held (12 bytes per parameter): MemoryUse stays an upper bound. kEval
  // Forward gives the same bits; Backward must not run after it, so training never calls it.
  void PrepareForInference();
  // Whether a relu layer is run by the layer below it (Layer::FuseRelu: batch norm and add apply
  // it in their own passes, forward and backward) where a relu layer is the only one taking that
  // layer's output. On from Build; off runs every relu layer on its own. The results are the same
  // bits either way (ModelFusionTest); only the time and the memory change. Between steps only.
  void set_fusion(bool on);
  // Layer i is a relu layer that the layer below it runs (set_fusion).
  bool relu_fused(size_t i) const { return fused_relu_[i] != 0; }
  // For each layer, the layers whose outputs it takes, in input order (-1: the model's input);
  // {i - 1} for every layer i of a sequential stack.
  const std::vector<std::vector<int>>& layer_inputs() const { return inputs_; }
  // The model is a graph (ModelSpec::IsGraph), not a plain stack.
  bool is_graph() const { return graph_; }
  // Per-example output shape of each layer.
  const std::vector<Shape>& output_shapes() const { return shapes_; }
  const Shape& input_shape() const { return input_shape_; }
  // Parameter elements (a planned model counts the ones it would create).
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
  // Build without parameters: the layers configured, the shapes checked.
  static Result<std::unique_ptr<Model>> Configure(const ModelSpec& spec, const Shape& input_shape,
                                                  int64_t num_classes, uint64_t seed);

  void BackwardGraph(const Tensor& dlogits, GradientBlocks& blocks);

  Shape input_shape_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::vector<int>> inputs_;  // layer_inputs()
  bool graph_ = false;
  std::vector<Shape> shapes_;
  std::vector<Parameter*> params_;
  std::vector<Parameter*> variables_;
  FloatBuffer flat_grads_;
  std::vector<int64_t, Align64Allocator<int64_t>> flat_sums_;
  // needs_input_grad_[i]: some layer below i (one it takes, directly or not) has parameters, so
  // layer i must pass a gradient down. A parameter-free prefix (e.g. the flatten in front of the
  // first dense layer) gets none. wants_grad_[j]: layer j or one below it has parameters, so
  // j's output gradient is needed.
  std::vector<bool> needs_input_grad_;
  std::vector<bool> wants_grad_;
  // Fusion (set_fusion): relu_inputs_ holds the relu layers that alone take their input layer's
  // output; fused_relu_[i], relu layer i runs in its input layer; relu_after_[j], the fused relu
  // layer on j's output (-1: none), whose output gradient j's Backward takes. A stack's Backward
  // passes gradients down in two buffers, grad_slot_[i] the one layer i writes (a fused relu
  // takes no turn).
  std::vector<size_t> relu_inputs_;
  std::vector<char> fused_relu_;
  std::vector<int> relu_after_;
  std::vector<int> grad_slot_;
  const Tensor* input_ = nullptr;
  StepTrace* trace_ = nullptr;
  std::vector<Tensor> acts_;   // acts_[i] = output of layer i
  std::vector<Tensor> grads_;  // two ping-pong buffers for the gradients flowing backwards
  // A graph's gradients instead: out_grads_[j] = dLoss/d(output of j), complete once every layer
  // taking j has passed its part down (has_grad_[j] once the first has); a second part is formed
  // in merge_grads_[k] (k: its input slot) and added.
  std::vector<Tensor> out_grads_;
  std::vector<char> has_grad_;
  std::vector<Tensor> merge_grads_;
  std::vector<double>* forward_times_ = nullptr;
  std::vector<double>* backward_times_ = nullptr;
};

}  // namespace trainingd::engine
