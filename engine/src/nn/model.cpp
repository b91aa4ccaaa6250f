#include "trainingd/engine/nn/model.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "trainingd/engine/nn/avg_pool2d_layer.h"
#include "trainingd/engine/nn/batch_norm_layer.h"
#include "trainingd/engine/nn/categorical_encoding_layer.h"
#include "trainingd/engine/nn/conv2d_layer.h"
#include "trainingd/engine/nn/dense_layer.h"
#include "trainingd/engine/nn/elementwise_layers.h"
#include "trainingd/engine/nn/max_pool2d_layer.h"
#include "trainingd/engine/nn/merge_layers.h"

namespace trainingd::engine {
namespace {

std::unique_ptr<Layer> MakeLayer(const LayerSpec& spec, std::string name, uint64_t seed,
                                 size_t index) {
  switch (spec.type) {
    case LayerType::kConv2d:
      return std::make_unique<Conv2dLayer>(std::move(name), spec);
    case LayerType::kMaxPool2d:
      return std::make_unique<MaxPool2dLayer>(std::move(name), spec);
    case LayerType::kDense:
      return std::make_unique<DenseLayer>(std::move(name), spec);
    case LayerType::kRelu:
      return std::make_unique<ReluLayer>(std::move(name));
    case LayerType::kDropout:
      return std::make_unique<DropoutLayer>(std::move(name), spec.rate,
                                            Rng::ForStream(seed, 1000 + index).Next());
    case LayerType::kFlatten:
      return std::make_unique<FlattenLayer>(std::move(name));
    case LayerType::kAdd:
      return std::make_unique<AddLayer>(std::move(name));
    case LayerType::kConcat:
      return std::make_unique<ConcatLayer>(std::move(name));
    case LayerType::kAvgPool2d:
      return std::make_unique<AvgPool2dLayer>(std::move(name), spec);
    case LayerType::kGlobalAvgPool:
      return std::make_unique<GlobalAvgPoolLayer>(std::move(name));
    case LayerType::kSigmoid:
    case LayerType::kTanh:
    case LayerType::kGelu:
      return std::make_unique<SmoothActivationLayer>(std::move(name), spec.type);
    case LayerType::kBatchNorm:
      return std::make_unique<BatchNormLayer>(std::move(name), spec);
    case LayerType::kCategoricalEncoding:
      return std::make_unique<CategoricalEncodingLayer>(std::move(name), spec);
  }
  return nullptr;
}

// "model.layers[<i>]: <type> <what>" ("model.layers[2]: conv2d kernel 5 is larger ..."), the
// type left out when `what` starts with it: the field first, as every spec error names it.
Status LayerError(size_t i, const std::string& type, const std::string& what) {
  const bool named = what.rfind(type + " ", 0) == 0;
  return Status::InvalidArgument("model.layers[" + std::to_string(i) +
                                 "]: " + (named ? what : type + " " + what));
}

}  // namespace

Result<std::unique_ptr<Model>> Model::Build(const ModelSpec& spec, const Shape& input_shape,
                                            int64_t num_classes, uint64_t seed) {
  auto m = Configure(spec, input_shape, num_classes, seed);
  if (!m.ok()) return m.status();
  // In layer order from one stream, so every layer's initial values depend on the seed alone.
  Rng init_rng = Rng::ForStream(seed, 0);
  for (auto& layer : (*m)->layers_) {
    layer->InitializeParameters(init_rng);
    for (Parameter* p : layer->parameters()) (*m)->params_.push_back(p);
    for (Parameter* v : layer->variables()) (*m)->variables_.push_back(v);
  }
  // The gradients and their exact sums move into one flat buffer each, every parameter's part
  // padded to 16 elements (64 bytes or more).
  const auto padded = [](int64_t n) { return (n + 15) / 16 * 16; };
  int64_t total = 0;
  for (const Parameter* p : (*m)->params_) total += padded(p->value.size());
  (*m)->flat_grads_.assign(static_cast<size_t>(total), 0.0f);
  (*m)->flat_sums_.assign(static_cast<size_t>(total), 0);
  int64_t offset = 0;
  for (Parameter* p : (*m)->params_) {
    p->grad = Tensor::View(p->value.shape(), (*m)->flat_grads_.data() + offset);
    p->sum =
        std::span<int64_t>((*m)->flat_sums_.data() + offset, static_cast<size_t>(p->value.size()));
    offset += padded(p->value.size());
  }
  return m;
}

Result<std::unique_ptr<Model>> Model::Plan(const ModelSpec& spec, const Shape& input_shape,
                                           int64_t num_classes, uint64_t seed) {
  return Configure(spec, input_shape, num_classes, seed);
}

Result<std::unique_ptr<Model>> Model::Configure(const ModelSpec& spec, const Shape& input_shape,
                                                int64_t num_classes, uint64_t seed) {
  if (spec.layers.empty()) return Status::InvalidArgument("model.layers: the model has no layers");
  const LayerType first = spec.layers.front().type;
  if ((first == LayerType::kConv2d || first == LayerType::kMaxPool2d) && input_shape.rank() != 3) {
    return LayerError(0, LayerTypeName(first),
                      "needs [H, W, C] examples; the dataset's are " + input_shape.ToString() +
                          (input_shape.rank() == 1 ? " (a table)" : ""));
  }
  Result<std::vector<std::vector<int>>> edges = ResolveModelGraph(spec);
  if (!edges.ok()) return edges.status();
  std::unique_ptr<Model> m(new Model());
  m->input_shape_ = input_shape;
  m->inputs_ = std::move(edges).value();
  m->graph_ = spec.IsGraph();
  // Unnamed layers are named after their type, skipping the names the spec gives (a sequential
  // stack gives none, so its names are tf.layers' as they always were).
  std::set<std::string, std::less<>> given;
  for (const LayerSpec& ls : spec.layers) {
    if (!ls.name.empty()) given.insert(ls.name);
  }
  std::map<std::string, int> counts;
  Shape shape = input_shape;
  for (size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& ls = spec.layers[i];
    const std::string type = LayerTypeName(ls.type);
    std::string name = ls.name;
    while (name.empty() || (ls.name.empty() && given.count(name))) {
      const int n = counts[type]++;
      name = n == 0 ? type : type + "_" + std::to_string(n);
    }
    auto layer = MakeLayer(ls, name, seed, i);
    std::vector<Shape> in_shapes;
    for (const int j : m->inputs_[i]) {
      in_shapes.push_back(j < 0 ? input_shape : m->shapes_[static_cast<size_t>(j)]);
    }
    auto* merge = dynamic_cast<MergeLayer*>(layer.get());
    Result<Shape> out = merge ? merge->ConfigureInputs(in_shapes) : layer->Configure(in_shapes[0]);
    if (!out.ok() && merge) {
      return Status::InvalidArgument("model.layers[" + std::to_string(i) +
                                     "].inputs: " + out.status().message());
    }
    if (!out.ok()) return LayerError(i, type, out.status().message());
    if (out->num_elements() <= 0 || out->num_elements() > (int64_t{1} << 28)) {
      return LayerError(i, type, "output shape " + out->ToString() + " is empty or too large");
    }
    shape = *out;
    m->shapes_.push_back(shape);
    m->layers_.push_back(std::move(layer));
  }
  if (shape != Shape{num_classes}) {
    // The last dense layer makes the logits when only shape-keeping layers follow it: its units
    // are what to change.
    size_t last = spec.layers.size();
    while (last > 0 && spec.layers[last - 1].type != LayerType::kDense &&
           spec.layers[last - 1].type != LayerType::kConv2d &&
           spec.layers[last - 1].type != LayerType::kMaxPool2d) {
      --last;
    }
    if (last > 0 && spec.layers[last - 1].type == LayerType::kDense &&
        shape == Shape{spec.layers[last - 1].units}) {
      const int64_t units = spec.layers[last - 1].units;
      return Status::InvalidArgument(
          "model.layers[" + std::to_string(last - 1) + "].units: the last dense layer has " +
          std::to_string(units) + " units but the dataset has " + std::to_string(num_classes) +
          " classes: it must have " + std::to_string(num_classes) + " units");
    }
    return LayerError(spec.layers.size() - 1, LayerTypeName(spec.layers.back().type),
                      "outputs " + shape.ToString() + " but the dataset has " +
                          std::to_string(num_classes) +
                          " classes: the last layer must be a dense layer of " +
                          std::to_string(num_classes) + " units");
  }
  for (size_t i = 0; i < m->layers_.size(); ++i) {
    bool below = false;
    for (const int j : m->inputs_[i]) below = below || (j >= 0 && m->wants_grad_[j]);
    m->needs_input_grad_.push_back(below);
    m->wants_grad_.push_back(below || m->layers_[i]->NumParameters() > 0);
  }
  std::vector<int> consumers(m->layers_.size(), 0);
  for (const auto& in : m->inputs_) {
    for (const int j : in) consumers[static_cast<size_t>(std::max(j, 0))] += j >= 0;
  }
  for (size_t i = 0; i < m->layers_.size(); ++i) {
    const int j = m->inputs_[i][0];
    if (dynamic_cast<ReluLayer*>(m->layers_[i].get()) && j >= 0 &&
        consumers[static_cast<size_t>(j)] == 1) {
      m->relu_inputs_.push_back(i);
    }
  }
  m->set_fusion(true);
  m->acts_.resize(m->layers_.size());
  m->grads_.resize(2);
  if (m->graph_) {
    m->out_grads_.resize(m->layers_.size());
    m->has_grad_.assign(m->layers_.size(), 0);
    size_t slots = 0;
    for (const auto& in : m->inputs_) slots = std::max(slots, in.size());
    m->merge_grads_.resize(slots);
  }
  return m;
}

void Model::set_fusion(bool on) {
  const size_t n = layers_.size();
  fused_relu_.assign(n, 0);
  relu_after_.assign(n, -1);
  for (const size_t i : relu_inputs_) {
    // A fused relu layer's output was a view of the layer below's: the relu layer writes its own.
    if (i < acts_.size()) acts_[i] = Tensor();
    const int j = inputs_[i][0];
    if (layers_[static_cast<size_t>(j)]->FuseRelu(on) && on) {
      fused_relu_[i] = 1;
      relu_after_[static_cast<size_t>(j)] = static_cast<int>(i);
    }
  }
  grad_slot_.assign(n, 0);
  int slot = 0;
  for (size_t i = n; i-- > 0;) {
    if (fused_relu_[i]) continue;
    grad_slot_[i] = slot;
    slot ^= 1;
  }
}

void Model::set_precision(Precision precision) {
  for (auto& layer : layers_) layer->set_precision(precision);
}

void Model::set_step_blocks(GradientBlocks* blocks) {
  for (auto& layer : layers_) layer->set_step_blocks(blocks);
}

void Model::set_example_offset(int64_t offset) {
  for (auto& layer : layers_) layer->set_example_offset(offset);
}

const Tensor& Model::Forward(const Tensor& input, Mode mode) {
  input_ = &input;
  const Tensor* x = &input;
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const bool timed = forward_times_ || trace_;
    const auto t0 =
        timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (fused_relu_[i]) {
      // The layer below applied it: the same floats.
      const Tensor& below = acts_[static_cast<size_t>(inputs_[i][0])];
      acts_[i] = Tensor::View(below.shape(), const_cast<float*>(below.data()));
      x = &acts_[i];
      continue;
    }
    if (graph_) {
      ins.clear();
      for (const int j : inputs_[i]) ins.push_back(j < 0 ? &input : &acts_[static_cast<size_t>(j)]);
      x = ins[0];
    }
    if (auto* merge = graph_ ? dynamic_cast<MergeLayer*>(layers_[i].get()) : nullptr) {
      merge->ForwardInputs(ins, acts_[i], mode);
    } else {
      layers_[i]->Forward(*x, acts_[i], mode);
    }
    if (forward_times_) {
      (*forward_times_)[i] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    if (trace_) trace_->Add(layers_[i]->name(), "forward", t0);
    x = &acts_[i];
  }
  return *x;
}

void Model::Backward(const Tensor& dlogits) {
  GradientBlocks blocks = GradientBlocks::Whole(dlogits.shape()[0]);
  Backward(dlogits, blocks);
}

void Model::Backward(const Tensor& dlogits, GradientBlocks& blocks) {
  if (graph_) return BackwardGraph(dlogits, blocks);
  const Tensor* dy = &dlogits;
  for (size_t i = layers_.size(); i-- > 0;) {
    if (fused_relu_[i]) continue;  // the layer below takes its output gradient and masks it
    if (!needs_input_grad_[i] && layers_[i]->parameters().empty()) break;  // nothing left to do
    const Tensor& in = i == 0 ? *input_ : acts_[i - 1];
    Tensor* dx = needs_input_grad_[i] ? &grads_[static_cast<size_t>(grad_slot_[i])] : nullptr;
    const bool timed = backward_times_ || trace_;
    const auto t0 =
        timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    layers_[i]->Backward(in, acts_[i], *dy, dx, blocks);
    if (backward_times_) {
      (*backward_times_)[i] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    if (trace_) trace_->Add(layers_[i]->name(), "backward", t0);
    dy = dx;
  }
}

void Model::BackwardGraph(const Tensor& dlogits, GradientBlocks& blocks) {
  std::fill(has_grad_.begin(), has_grad_.end(), 0);
  std::vector<const Tensor*> ins;
  std::vector<Tensor*> dins;
  std::vector<int> added;  // input slots whose gradient went to merge_grads_, to be added
  for (size_t i = layers_.size(); i-- > 0;) {
    if (fused_relu_[i]) continue;  // the layer below takes its output gradient and masks it
    // Whose output gradient layer i takes: its own, or its fused relu layer's.
    const size_t o = relu_after_[i] < 0 ? i : static_cast<size_t>(relu_after_[i]);
    const bool last = o + 1 == layers_.size();
    if (!last && !has_grad_[o]) continue;  // nothing below needs this layer's gradient
    if (!needs_input_grad_[i] && layers_[i]->parameters().empty()) continue;
    const Tensor* dy = last ? &dlogits : &out_grads_[o];
    ins.clear();
    dins.clear();
    added.clear();
    for (size_t k = 0; k < inputs_[i].size(); ++k) {
      const int j = inputs_[i][k];
      ins.push_back(j < 0 ? input_ : &acts_[static_cast<size_t>(j)]);
      if (j < 0 || !wants_grad_[static_cast<size_t>(j)]) {
        dins.push_back(nullptr);
      } else if (!has_grad_[static_cast<size_t>(j)]) {
        dins.push_back(&out_grads_[static_cast<size_t>(j)]);
        has_grad_[static_cast<size_t>(j)] = 1;
      } else {
        dins.push_back(&merge_grads_[k]);
        added.push_back(static_cast<int>(k));
      }
    }
    const bool timed = backward_times_ || trace_;
    const auto t0 =
        timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (auto* merge = dynamic_cast<MergeLayer*>(layers_[i].get())) {
      merge->BackwardInputs(ins, acts_[i], *dy, dins);
    } else {
      layers_[i]->Backward(*ins[0], acts_[i], *dy, dins[0], blocks);
    }
    for (const int k : added) {
      Tensor& sum = out_grads_[static_cast<size_t>(inputs_[i][static_cast<size_t>(k)])];
      const float* part = merge_grads_[static_cast<size_t>(k)].data();
      float* g = sum.data();
      const int64_t n = sum.size();
#pragma omp simd
      for (int64_t e = 0; e < n; ++e) g[e] += part[e];
    }
    if (backward_times_) {
      (*backward_times_)[i] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    if (trace_) trace_->Add(layers_[i]->name(), "backward", t0);
  }
}

std::vector<DenseLayer*> Model::MarkGatheredDenseLayers(int64_t global_batch) {
  std::vector<DenseLayer*> gathered;
  for (const auto& layer : layers_) {
    auto* dense = dynamic_cast<DenseLayer*>(layer.get());
    if (!dense) continue;
    dense->set_gathered(dense->GatheredAt(global_batch));
    if (dense->gathered()) gathered.push_back(dense);
  }
  return gathered;
}

int64_t Model::num_parameters() const {
  int64_t n = 0;
  for (const auto& layer : layers_) n += layer->NumParameters();
  return n;
}

namespace {
// Byte counts of absurd specs must saturate, not wrap around into something that looks small.
int64_t SatMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}
int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}
}  // namespace

void Model::PrepareForInference() {
  for (Parameter* p : params_) {
    p->grad = Tensor();
    p->sum = {};
  }
  decltype(flat_grads_)().swap(flat_grads_);
  decltype(flat_sums_)().swap(flat_sums_);
  for (const auto& layer : layers_) layer->PrepareForInference();
}

std::vector<ModelMemory> Model::LayerMemoryUse(int64_t train_batch, int64_t eval_batch,
                                               int threads) const {
  const int64_t f = sizeof(float);
  const int64_t widest = std::max(train_batch, eval_batch);
  std::vector<ModelMemory> out(layers_.size());
  // Backward's input gradient of layer i lands in buffer i % 2, which grows to the largest it
  // carries; each buffer is charged to the layer that sizes it.
  int64_t largest[2] = {0, 0};
  size_t owner[2] = {0, 0};
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = *layers_[i];
    ModelMemory& m = out[i];
    // value, gradient and the gradient's exact sum
    m.parameters = SatMul(2 * f + 8, l.NumParameters());
    // Tensors of 2 MiB and more take whole huge pages (BufferBytes).
    m.activations = l.OutputViewsInput() || fused_relu_[i]
                        ? 0
                        : BufferBytes(SatMul(SatMul(f, widest), shapes_[i].num_elements()));
    m.scratch = std::max(l.ScratchBytes(train_batch, Mode::kTrain, threads),
                         eval_batch > 0 ? l.ScratchBytes(eval_batch, Mode::kEval, threads) : 0);
    if (needs_input_grad_[i] && !fused_relu_[i]) {
      const Shape& in = i == 0 ? input_shape_ : shapes_[i - 1];
      const int64_t bytes = BufferBytes(SatMul(SatMul(f, train_batch), in.num_elements()));
      const size_t s = static_cast<size_t>(grad_slot_[i]);
      if (bytes > largest[s]) {
        largest[s] = bytes;
        owner[s] = i;
      }
    }
  }
  if (graph_) {
    // A graph keeps each needed output gradient (the last layer's is the loss's), and one buffer
    // per input slot for second parts, as large as the largest input it carries.
    std::vector<int64_t> slot_bytes(merge_grads_.size(), 0);
    std::vector<size_t> slot_owner(merge_grads_.size(), 0);
    for (size_t i = 0; i < layers_.size(); ++i) {
      out[i].gradients = 0;
      // A layer whose relu layer is fused takes that one's output gradient, and keeps none.
      if (wants_grad_[i] && i + 1 < layers_.size() && relu_after_[i] < 0) {
        out[i].gradients = BufferBytes(SatMul(SatMul(f, train_batch), shapes_[i].num_elements()));
      }
      for (size_t k = 0; k < inputs_[i].size() && !fused_relu_[i]; ++k) {
        const int j = inputs_[i][k];
        if (j < 0 || !wants_grad_[static_cast<size_t>(j)]) continue;
        const int64_t bytes = BufferBytes(
            SatMul(SatMul(f, train_batch), shapes_[static_cast<size_t>(j)].num_elements()));
        if (bytes > slot_bytes[k]) {
          slot_bytes[k] = bytes;
          slot_owner[k] = i;
        }
      }
    }
    for (size_t k = 0; k < slot_bytes.size(); ++k) {
      out[slot_owner[k]].gradients = SatAdd(out[slot_owner[k]].gradients, slot_bytes[k]);
    }
    return out;
  }
  for (int b = 0; b < 2; ++b) {
    if (largest[b] > 0) out[owner[b]].gradients = SatAdd(out[owner[b]].gradients, largest[b]);
  }
  return out;
}

ModelMemory Model::MemoryUse(int64_t train_batch, int64_t eval_batch, int threads) const {
  ModelMemory total;
  for (const ModelMemory& m : LayerMemoryUse(train_batch, eval_batch, threads)) {
    total.parameters = SatAdd(total.parameters, m.parameters);
    total.activations = SatAdd(total.activations, m.activations);
    total.gradients = SatAdd(total.gradients, m.gradients);
    total.scratch = SatAdd(total.scratch, m.scratch);
  }
  return total;
}

int64_t Model::ForwardFlopsPerExample() const {
  int64_t f = 0;
  for (const auto& l : layers_) f += l->ForwardFlopsPerExample();
  return f;
}

int64_t Model::TrainingFlopsPerExample() const {
  // Forward, plus the weight gradient of each layer with parameters, plus the input gradient of
  // every layer that has parameters below it (the others compute none).
  int64_t f = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const int64_t fwd = layers_[i]->ForwardFlopsPerExample();
    f += fwd;
    if (!layers_[i]->parameters().empty()) f += fwd;
    if (needs_input_grad_[i]) f += fwd;
  }
  return f;
}

std::string Model::Summary() const {
  std::string s;
  char line[160];
  std::snprintf(line, sizeof line, "%-14s %-12s %-16s %12s\n", "layer", "type", "output", "params");
  s += line;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const int64_t n = layers_[i]->NumParameters();
    std::snprintf(line, sizeof line, "%-14s %-12s %-16s %12lld", layers_[i]->name().c_str(),
                  layers_[i]->type(), shapes_[i].ToString().c_str(), static_cast<long long>(n));
    s += line;
    if (graph_) {
      std::string from;
      for (const int j : inputs_[i]) {
        from += (from.empty() ? "  <- " : ", ") +
                (j < 0 ? std::string(kModelInputName) : layers_[static_cast<size_t>(j)]->name());
      }
      s += from;
    }
    s += "\n";
  }
  std::snprintf(line, sizeof line, "total parameters: %lld\n",
                static_cast<long long>(num_parameters()));
  return s + line;
}

}  // namespace trainingd::engine
