// The layers that take several inputs, the joints of a model graph (model_spec.h): AddLayer (the
// residual sum, keras.layers.Add) and ConcatLayer (channels joined, keras.layers.Concatenate).
#pragma once

#include <span>
#include <vector>

#include "trainingd/engine/nn/layer.h"

namespace trainingd::engine {

// A layer of several inputs. The model calls the *Inputs methods; the single-input Layer methods
// treat the one input as a merge of one (the identity for add and concat), so a MergeLayer is
// still a Layer everywhere one is expected.
class MergeLayer : public Layer {
 public:
  // Checks the per-example input shapes (two or more; the model checks the count) and returns
  // the output shape, as Layer::Configure.
  virtual Result<Shape> ConfigureInputs(std::span<const Shape> inputs) = 0;
  virtual void ForwardInputs(std::span<const Tensor* const> in, Tensor& out, Mode mode) = 0;
  // Writes dLoss/d(input k) into din[k], for each k whose din[k] is not null; `out` is the
  // latest Forward's output.
  virtual void BackwardInputs(std::span<const Tensor* const> in, const Tensor& out,
                              const Tensor& dout, std::span<Tensor* const> din) = 0;

  Result<Shape> Configure(const Shape& input) final;
  void Forward(const Tensor& in, Tensor& out, Mode mode) final;
  using Layer::Backward;
  void Backward(const Tensor& in, const Tensor& out, const Tensor& dout, Tensor* din,
                GradientBlocks& blocks) final;

 protected:
  using Layer::Layer;
};

// out = in[0] + in[1] + ..., added in input order; every input of one shape.
class AddLayer final : public MergeLayer {
 public:
  explicit AddLayer(std::string name) : MergeLayer(std::move(name)) {}
  const char* type() const override { return "add"; }
  Result<Shape> ConfigureInputs(std::span<const Shape> inputs) override;
  void ForwardInputs(std::span<const Tensor* const> in, Tensor& out, Mode mode) override;
  void BackwardInputs(std::span<const Tensor* const> in, const Tensor& out, const Tensor& dout,
                      std::span<Tensor* const> din) override;
  int64_t ForwardFlopsPerExample() const override { return flops_; }
  // The residual block's add and ReLU in one pass each way: the ReLU applied to each chunk of
  // the sum while it is in cache, and the gradient masked by out > 0 as it is copied to the
  // inputs.
  bool FuseRelu(bool fuse) override {
    relu_ = fuse;
    return true;
  }

 private:
  int64_t flops_ = 0;
  bool relu_ = false;  // FuseRelu
};

// The inputs joined along their last axis (the channels of [H, W, C], the features of [F]), in
// input order; every other dimension the same.
class ConcatLayer final : public MergeLayer {
 public:
  explicit ConcatLayer(std::string name) : MergeLayer(std::move(name)) {}
  const char* type() const override { return "concat"; }
  Result<Shape> ConfigureInputs(std::span<const Shape> inputs) override;
  void ForwardInputs(std::span<const Tensor* const> in, Tensor& out, Mode mode) override;
  void BackwardInputs(std::span<const Tensor* const> in, const Tensor& out, const Tensor& dout,
                      std::span<Tensor* const> din) override;

 private:
  std::vector<int64_t> widths_;  // each input's last dimension
  int64_t rows_ = 0;             // per example: the product of the other dimensions
  int64_t width_ = 0;            // the output's last dimension
};

}  // namespace trainingd::engine
