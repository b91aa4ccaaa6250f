// Layer: one differentiable step of a model, with its parameters.
//
// Shapes passed to Build() are per example (no batch dimension); tensors passed to Forward() and
// Backward() carry the batch as their first dimension. A layer keeps whatever it needs between
// Forward and Backward (masks, indices) and reuses its buffers from step to step. Layers are not
// thread-safe; they parallelise internally with ParallelFor.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/base/random.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

// A trainable variable and its gradient. Names follow tf.layers: "conv2d/kernel", "dense_1/bias".
struct Parameter {
  std::string name;
  Tensor value;
  Tensor grad;  // same shape as value; written by every step's Backward (Layer::Backward)
  // Backward's exact sum of the gradient over the batch, in fixed point: grad = sum *
  // 2^-sum_exponent (GradientBlocks). A view of the model's flat sum buffer, as many elements as
  // value; a data-parallel step adds up the ranks' sums before FinishGradients.
  std::span<int64_t> sum;
  int sum_exponent = 0;
};

class GradientBlocks;

enum class Mode { kTrain, kEval };

// The arithmetic of a model's training steps (a job's "precision", docs/job-spec.md#precision):
// float32 throughout, or TensorFlow's "mixed_bfloat16" policy: the dense layers' matrix products
// take their operands rounded to bfloat16 and sum in float32 (the convolutions stay float32: in
// their Winograd products bfloat16 would cost ten times a bfloat16 convolution's accuracy,
// bench/winograd_bf16_error.py), while parameters, activations, gradients and updates stay
// float32. Evaluation and inference (kEval) are float32 either way, as the exported ONNX model
// computes.
enum class Precision { kFloat32, kMixedBfloat16 };
// TensorFlow's names for the policies (tf.keras.mixed_precision.Policy): "float32",
// "mixed_bfloat16". Every spelling of a precision (the job spec, `trainingd train`, the
// benchmarks) is this one.
constexpr const char* PrecisionName(Precision precision) {
  return precision == Precision::kMixedBfloat16 ? "mixed_bfloat16" : "float32";
}
// The precision named `name`, if any.
constexpr std::optional<Precision> PrecisionNamed(std::string_view name) {
  for (Precision p : {Precision::kFloat32, Precision::kMixedBfloat16}) {
    if (name == PrecisionName(p)) return p;
  }
  return std::nullopt;
}

class Layer {
 public:
  virtual ~Layer() = default;

  // Unique name within the model ("conv2d_1"); the prefix of its parameters' names.
  const std::string& name() const { return name_; }
  // The layer type as written in a job spec ("conv2d", "max_pool2d", ...).
  virtual const char* type() const = 0;

  // Checks the per-example input shape, sets the layer's geometry and returns the per-example
  // output shape, allocating nothing (so a model can be sized before it is built). On a bad shape
  // returns InvalidArgument saying what the layer expected and what it got (the model adds which
  // layer it is).
  virtual Result<Shape> Configure(const Shape& input) = 0;
  // After a successful Configure: creates the parameters and initialises them from `init_rng`.
  virtual void InitializeParameters(Rng& /*init_rng*/) {}
  // Configure, then InitializeParameters.
  Result<Shape> Build(const Shape& input, Rng& init_rng) {
    Result<Shape> out = Configure(input);
    if (out.ok()) InitializeParameters(init_rng);
    return out;
  }

  // After Configure: the number of parameter elements (known before they exist).
  virtual int64_t NumParameters() const { return 0; }
  // After Configure: the bytes of scratch the layer keeps for a batch of `batch` examples --
  // patch matrices, masks, pooling indices; not its output or input gradient, which the model
  // holds -- when Forward (and, in kTrain, Backward) runs with `threads` compute threads. This
  // is what admission adds up before a job runs (docs/operations.md), so it must follow the
  // allocations in Forward and Backward.
  virtual int64_t ScratchBytes(int64_t /*batch*/, Mode /*mode*/, int /*threads*/) const {
    return 0;
  }

  // out = f(in). Resizes `out` as needed.
  virtual void Forward(const Tensor& in, Tensor& out, Mode mode) = 0;
  // Forward's output is a view of its input (a reshape), which costs no memory of its own.
  virtual bool OutputViewsInput() const { return false; }

  // Given in/out of the latest Forward and dout = dLoss/dout, writes every parameter's gradient
  // (Parameter::grad) when `blocks` are whole (one process), or else its exact gradient sum
  // (Parameter::sum, summed over `blocks`, see gradient_blocks.h); and, when `din` is not null,
  // dLoss/din. The first layer of a model gets din == nullptr, which lets it skip the input
  // gradient entirely.
  virtual void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                        GradientBlocks& blocks) = 0;
  // The same over the whole batch as one block, in one process: every parameter's grad is
  // written (layer tests). Gives parameters without a sum buffer their own.
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din);

  // Fusion (Model::set_fusion), asked by the model when a relu layer takes this layer's output
  // and no other layer does. With `fuse` and a true answer, from the next Forward on the layer
  // applies that ReLU itself, in the same pass, and the model runs no relu layer (its output is
  // a view of this one's): Forward's `out` is then max(f(in), 0), with the relu layer's bits;
  // Backward's `out` is that, and its `dout` is dLoss/d(the ReLU's output), which the layer
  // passes only where f(in) > 0 (out > 0), as the relu layer's backward pass would. Nothing else
  // changes: the model, its parameters, checkpoints and export still have the relu layer.
  // `fuse` false undoes it. Returns whether the layer can fuse (the default: no).
  virtual bool FuseRelu(bool /*fuse*/) { return false; }

  virtual std::vector<Parameter*> parameters() { return {}; }
  // Variables that are not trained but saved and restored with the parameters (batch norm's
  // moving statistics): name and value only, no gradient or sum.
  virtual std::vector<Parameter*> variables() { return {}; }
  // The blocks of the coming training step (set before its Forward, null after its Backward):
  // layers whose Forward sums over the batch (batch norm's statistics) sum over these blocks and
  // ranks. Null: the batch given to Forward is the whole batch, in one process.
  virtual void set_step_blocks(GradientBlocks* /*blocks*/) {}

  // The layer's random stream (dropout), or nullptr; checkpoints save and restore its state.
  virtual Rng* rng() { return nullptr; }
  // Where the next Forward's batch starts in the global batch of a data-parallel step
  // (Model::set_example_offset); layers that draw per-example randomness key it by that index.
  virtual void set_example_offset(int64_t /*offset*/) {}

  // For inference on parameters that no longer change (TrainedModel, after they are restored):
  // the layer may keep its parameters in the form its kEval Forward reads (a packed or
  // transformed copy), made once here instead of on every call. kEval Forward's outputs stay the
  // same bits. A later change to the parameters is not seen by kEval Forward until the next
  // call, so training never calls it.
  virtual void PrepareForInference() {}

  // The arithmetic of the training steps (kTrain) from now on; set before the first. Layers
  // without matrix products ignore it.
  virtual void set_precision(Precision /*precision*/) {}

  // Multiply-adds x2 per example of one forward pass, for GFLOP/s reports.
  virtual int64_t ForwardFlopsPerExample() const { return 0; }

 protected:
  explicit Layer(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
  std::vector<std::vector<int64_t>> own_sums_;  // sum buffers of a layer outside a model
};

}  // namespace trainingd::engine
