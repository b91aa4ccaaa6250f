// Optimizer: turns each parameter's gradient into an update of its value.
//
// The update rules are TensorFlow 1.x's (tf.train.GradientDescentOptimizer, MomentumOptimizer,
// AdamOptimizer), with Keras' decoupled weight decay on top (tf.keras.optimizers.AdamW, and the
// weight_decay of its SGD); docs/optimizers.md writes each one down exactly as implemented.
// Per-parameter state lives in "slots" keyed by the parameter's name and named as TensorFlow names
// them
// ("dense/kernel/Momentum", "dense/kernel/Adam", "dense/kernel/Adam_1"), so a checkpoint can save
// them with Slots() and a new optimizer can take them back with RestoreSlot(). Adam's beta powers
// are derived from the global step rather than stored, so the slots are the whole state.
//
// Each update is one fused pass over the parameter, split across ComputeThreads() for large
// parameters. The split only decides which thread does which element, never how an element is
// computed, so results are bitwise identical for any thread count.
//
// An Optimizer is not thread-safe: one training session owns it and calls it from one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/nn/layer.h"
#include "trainingd/engine/nn/tensor.h"
#include "trainingd/engine/optim/learning_rate.h"

namespace trainingd::engine {

// What MakeOptimizer builds. Defaults are TensorFlow 1.x's. Fields the chosen type does not use are
// ignored, by Validate() too.
struct OptimizerOptions {
  enum class Type {
    kSgd,       // tf.train.GradientDescentOptimizer
    kMomentum,  // tf.train.MomentumOptimizer
    kAdam,      // tf.train.AdamOptimizer
    kAdamW,  // tf.keras.optimizers.AdamW: kAdam with decoupled weight decay (Loshchilov & Hutter)
  };
  Type type = Type::kAdam;

  // The learning rate per global step; default a constant 0.001.
  LearningRateSchedule learning_rate;

  // kMomentum: the accumulator's decay, >= 0 and finite. TensorFlow requires it; 0.9 is the usual.
  float momentum = 0.9f;
  // kMomentum: Nesterov's variant (TensorFlow's use_nesterov).
  bool use_nesterov = false;

  // kAdam, kAdamW: decay of the first and second moment estimates, each in [0, 1).
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  // kAdam, kAdamW: TensorFlow's epsilon, which is the paper's "epsilon hat" (added after bias
  // correction); > 0 and finite.
  float epsilon = 1e-8f;

  // Every type: decoupled weight decay, as Keras' optimizers apply it. Before the type's update,
  // each decayed parameter shrinks by p -= p * (lr * weight_decay), lr the step's learning rate:
  // the decay goes to the weights, never through the gradient or the slots. >= 0 and finite; 0 =
  // off. Keras' AdamW default is 0.004 (kDefaultAdamWWeightDecay); the engine's default is 0 for
  // every type, and a job spec of type "adamw" fills in Keras' default.
  float weight_decay = 0.0f;
  static constexpr float kDefaultAdamWWeightDecay = 0.004f;

  // Which parameters weight_decay shrinks.
  enum class DecayedParameters {
    kKernels,  // those of rank >= 2 (dense and conv kernels): not biases, not batch-norm gamma/beta
    kAll,      // every trainable parameter, as Keras does unless told to exclude some
  };
  DecayedParameters weight_decay_parameters = DecayedParameters::kKernels;

  // OK, or InvalidArgument whose message starts with the offending field's name ("type",
  // "momentum", "beta1", "beta2", "epsilon", "weight_decay", or the schedule's field:
  // "learning_rate", "decay_steps", ...).
  Status Validate() const;
};

// Elements [begin, end) of a parameter's value: the part of it one update touches. A
// data-parallel rank updates only its own part of each parameter (Trainer). `begin`
// must be a multiple of 16, as ParallelUpdate's chunks are, so that every element is computed
// exactly as in an update of the whole parameter.
struct ParameterPart {
  Parameter* param = nullptr;
  int64_t begin = 0;
  int64_t end = 0;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // TensorFlow's default name for the optimizer, "GradientDescent", "Momentum", "Adam" or "AdamW".
  // The slots are named by slot kind ("<param>/Adam" for AdamW too, so an Adam checkpoint's slots
  // are AdamW's).
  virtual const char* name() const = 0;

  // Updates every param's value from its grad (which must have the value's shape). `global_step`
  // is the number of updates made before this one (0 for the first); it selects the learning rate,
  // LearningRate(global_step), and for Adam the bias correction; a negative step counts as 0.
  // Creates the slots of a param not seen before as zeros. Params must have distinct names; the
  // same name in a later call means the same variable, whatever its address.
  void Apply(std::span<Parameter* const> params, int64_t global_step);
  // The same update, of each part's elements only (its grad there must be set); the slots of
  // the other elements do not change.
  virtual void ApplyParts(std::span<const ParameterPart> parts, int64_t global_step) = 0;

  // The learning rate the update at `global_step` uses: the override when one is set, otherwise
  // the schedule's rate.
  float LearningRate(int64_t global_step) const {
    return learning_rate_override_ ? *learning_rate_override_
                                   : options_.learning_rate.LearningRateAt(global_step);
  }
  // Replaces the schedule's rate until cleared (a feed of "learning_rate" sets it for one step).
  void set_learning_rate_override(std::optional<float> rate) { learning_rate_override_ = rate; }

  const OptimizerOptions& options() const { return options_; }

  // Creates now, as zeros, the slots Apply would create for `params`, so that Slots() lists every
  // slot before the first update (a checkpoint at step 0). Also checks slots restored earlier:
  // returns InvalidArgument naming the slot and both shapes when one does not have its param's
  // shape (Apply would silently reset such a slot to zeros), or naming a duplicate param name.
  Status CreateSlots(std::span<Parameter* const> params);

  // Every slot as (slot name, tensor), sorted by name. The pointers stay valid until the next
  // non-const call on this optimizer. Empty for gradient descent, which has no state.
  std::vector<std::pair<std::string, const Tensor*>> Slots() const;

  // Sets the slot "<param name>/<slot kind>" to `value`, e.g. "dense/kernel/Adam_1". A param not
  // seen yet gets all its slots, as zeros of `value`'s shape, besides this one; Apply and
  // CreateSlots later check that shape against the param. Returns NotFound naming the slot when its
  // kind is not one of this optimizer's, and InvalidArgument naming the slot and both shapes when
  // the param's slots already exist with another shape.
  Status RestoreSlot(const std::string& slot_name, const Tensor& value);

  // `param`'s slots, in slot-kind order (m then v for Adam), created as zeros on first sight;
  // valid until the next non-const call. A data-parallel rank exchanges the parts it updated.
  std::span<Tensor> SlotsOf(const Parameter& param) {
    return {SlotsFor(param), slot_kinds_.size()};
  }

  // How many slots each parameter gets (Adam 2, Momentum 1, SGD 0), each of its shape.
  int slots_per_parameter() const { return static_cast<int>(slot_kinds_.size()); }

 protected:
  // `slot_kinds`: the suffixes of a param's slots, in the order SlotsFor returns them.
  Optimizer(const OptimizerOptions& options, std::vector<std::string> slot_kinds);

  // The slot_kinds().size() slots of `param`, created as zeros of its value's shape on first sight
  // (or reset to zeros if they were restored with another shape). One map lookup; call once per
  // param per Apply and work on raw pointers after that.
  Tensor* SlotsFor(const Parameter& param);

  const std::vector<std::string>& slot_kinds() const { return slot_kinds_; }

  // The factor decoupled weight decay scales `param` by this step: lr * weight_decay when the
  // options decay it (weight_decay_parameters), else 0 (no decay pass at all).
  float DecayFactor(const Parameter& param, float lr) const;
  // p[i] -= p[i] * decay over n elements: the weight-decay pass before an update (decay != 0).
  static void DecayWeights(float* p, int64_t n, float decay);

  // Params with at least this many elements are split across threads; smaller ones run inline.
  static constexpr int64_t kMinParallelElements = int64_t{1} << 15;

  // Calls kernel(begin, end) over chunks covering the part's elements, in parallel when they are
  // many. Every chunk starts on a multiple of 16 elements (one 64-byte cache line; the part's
  // begin is one) and all but the last end on one: no two threads write the same line, and
  // whether an element falls in a kernel's vector body or its scalar tail depends only on its
  // index, which keeps results independent of the thread count and of the parts.
  template <typename Kernel>
  static void ParallelUpdate(const ParameterPart& part, Kernel&& kernel) {
    constexpr int64_t kLine = 16;
    const int64_t n = part.end - part.begin;
    ParallelFor((n + kLine - 1) / kLine, kMinParallelElements / kLine,
                [&](int64_t begin, int64_t end) {
                  kernel(part.begin + begin * kLine, part.begin + std::min(end * kLine, n));
                });
  }

 private:
  OptimizerOptions options_;
  std::optional<float> learning_rate_override_;
  std::vector<std::string> slot_kinds_;
  // Param name -> its slots, one per slot kind.
  std::map<std::string, std::vector<Tensor>, std::less<>> slots_;
};

// Validates `options` and builds the optimizer they describe; InvalidArgument from Validate()
// otherwise.
Result<std::unique_ptr<Optimizer>> MakeOptimizer(const OptimizerOptions& options);

}  // namespace trainingd::engine
