#include "trainingd/engine/nn/categorical_encoding_layer.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "nn/fixed_point.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/data/table_columns.h"
#include "trainingd/engine/nn/gradient_blocks.h"

namespace trainingd::engine {

CategoricalEncodingLayer::CategoricalEncodingLayer(std::string name, const LayerSpec& spec)
    : Layer(std::move(name)), codes_(spec.category_codes), dims_(spec.embedding_dims) {}

Result<Shape> CategoricalEncodingLayer::Configure(const Shape& input) {
  const int64_t columns = static_cast<int64_t>(codes_.size());
  if (columns == 0 || dims_.size() != codes_.size()) {
    return Status::InvalidArgument(
        "categorical_encoding needs one category_codes and one embedding_dims value per "
        "categorical column, got " +
        std::to_string(codes_.size()) + " and " + std::to_string(dims_.size()));
  }
  if (input.rank() != 1 || input[0] < columns) {
    return Status::InvalidArgument("categorical_encoding needs table rows [F] of at least " +
                                   std::to_string(columns) + " values (one code per column), got " +
                                   input.ToString());
  }
  numbers_ = input[0] - columns;
  in_width_ = input[0];
  out_width_ = numbers_;
  table_of_.assign(codes_.size(), -1);
  int tables = 0;
  for (size_t c = 0; c < codes_.size(); ++c) {
    const std::string column = "column " + std::to_string(c) + ": ";
    if (codes_[c] < CategoricalFeature::kFirstLevel ||
        codes_[c] > kMaxMaxLevels + CategoricalFeature::kFirstLevel) {
      return Status::InvalidArgument(
          "categorical_encoding " + column + "category_codes must be in [" +
          std::to_string(CategoricalFeature::kFirstLevel) + ", " +
          std::to_string(kMaxMaxLevels + CategoricalFeature::kFirstLevel) + "], got " +
          std::to_string(codes_[c]));
    }
    if (dims_[c] < 0 || dims_[c] > kMaxEmbeddingDim) {
      return Status::InvalidArgument(
          "categorical_encoding " + column + "embedding_dims must be in [0, " +
          std::to_string(kMaxEmbeddingDim) + "] (0: one-hot), got " + std::to_string(dims_[c]));
    }
    if (dims_[c] == 0 && codes_[c] > kMaxOneHotLevels) {
      return Status::InvalidArgument("categorical_encoding " + column + "one-hot of " +
                                     std::to_string(codes_[c]) + " codes is more than " +
                                     std::to_string(kMaxOneHotLevels) + "; embed it");
    }
    if (dims_[c] > 0) table_of_[c] = tables++;
    out_width_ += dims_[c] > 0 ? dims_[c] : codes_[c];
  }
  tables_.assign(static_cast<size_t>(tables), Parameter{});
  for (size_t c = 0; c < codes_.size(); ++c) {
    if (table_of_[c] < 0) continue;
    Parameter& p = tables_[static_cast<size_t>(table_of_[c])];
    p.name = name() + "/embedding_" + std::to_string(c) + "/embeddings";
  }
  return Shape{out_width_};
}

void CategoricalEncodingLayer::InitializeParameters(Rng& init_rng) {
  for (size_t c = 0; c < codes_.size(); ++c) {
    if (table_of_[c] < 0) continue;
    Parameter& p = tables_[static_cast<size_t>(table_of_[c])];
    p.value.Resize(Shape{codes_[c], dims_[c]});
    for (int64_t i = 0; i < p.value.size(); ++i)
      p.value.data()[i] = init_rng.Uniform(-0.05f, 0.05f);
    p.grad.Resize(p.value.shape());
    p.grad.SetZero();
  }
}

int64_t CategoricalEncodingLayer::NumParameters() const {
  int64_t n = 0;
  for (size_t c = 0; c < codes_.size(); ++c) n += codes_[c] * dims_[c];
  return n;
}

int64_t CategoricalEncodingLayer::ScratchBytes(int64_t batch, Mode mode, int /*threads*/) const {
  if (mode != Mode::kTrain || tables_.empty()) return 0;
  const int64_t widest = *std::max_element(dims_.begin(), dims_.end());
  return batch * static_cast<int64_t>(sizeof(order_[0])) + widest * 4;
}

std::vector<Parameter*> CategoricalEncodingLayer::parameters() {
  std::vector<Parameter*> out;
  for (Parameter& p : tables_) out.push_back(&p);
  return out;
}

const Parameter* CategoricalEncodingLayer::table(size_t c) const {
  return table_of_[c] < 0 ? nullptr : &tables_[static_cast<size_t>(table_of_[c])];
}

int64_t CategoricalEncodingLayer::CodeAt(const float* row, size_t c) const {
  const float v = row[numbers_ + static_cast<int64_t>(c)];
  // In float: a NaN or a value out of range never reaches an integer conversion.
  if (!(v >= 0.0f && v < static_cast<float>(codes_[c])) || v != std::floor(v)) {
    return CategoricalFeature::kUnknownLevel;
  }
  return static_cast<int64_t>(v);
}

void CategoricalEncodingLayer::Forward(const Tensor& in, Tensor& out, Mode /*mode*/) {
  const int64_t batch = in.shape()[0];
  out.Resize(Shape{batch, out_width_});
  const float* x = in.data();
  float* y = out.data();
  ParallelFor(batch, 256, [&](int64_t e0, int64_t e1) {
    for (int64_t e = e0; e < e1; ++e) {
      const float* row = x + e * in_width_;
      float* o = y + e * out_width_;
      std::copy(row, row + numbers_, o);
      o += numbers_;
      for (size_t c = 0; c < codes_.size(); ++c) {
        const int64_t code = CodeAt(row, c);
        if (table_of_[c] < 0) {
          std::fill(o, o + codes_[c], 0.0f);
          o[code] = 1.0f;
          o += codes_[c];
        } else {
          const float* t =
              tables_[static_cast<size_t>(table_of_[c])].value.data() + code * dims_[c];
          std::copy(t, t + dims_[c], o);
          o += dims_[c];
        }
      }
    }
  });
}

void CategoricalEncodingLayer::Backward(const Tensor& in, const Tensor& /*out*/, const Tensor& dout,
                                        Tensor* din, GradientBlocks& blocks) {
  const int64_t batch = in.shape()[0];
  const float* x = in.data();
  const float* g = dout.data();
  if (din) {
    din->Resize(in.shape());
    din->SetZero();
    for (int64_t e = 0; e < batch; ++e) {
      std::copy(g + e * out_width_, g + e * out_width_ + numbers_, din->data() + e * in_width_);
    }
  }
  if (tables_.empty()) return;
  // Each column's place in the output row.
  std::vector<int64_t> offset(codes_.size());
  for (size_t c = 0, o = static_cast<size_t>(numbers_); c < codes_.size(); ++c) {
    offset[c] = static_cast<int64_t>(o);
    o += static_cast<size_t>(dims_[c] > 0 ? dims_[c] : codes_[c]);
  }
  // The grids (gradient_blocks.h): a block's partial of a table row is a sum of at most
  // largest() rows of dout.
  std::vector<float> maxima(tables_.size(), 0.0f);
  for (size_t c = 0; c < codes_.size(); ++c) {
    if (table_of_[c] < 0) continue;
    float& m = maxima[static_cast<size_t>(table_of_[c])];
    for (int64_t e = 0; e < batch; ++e) {
      m = std::max(m, internal::MaxAbs(g + e * out_width_ + offset[c], dims_[c]));
    }
  }
  blocks.AgreeMax(maxima);
  for (size_t c = 0; c < codes_.size(); ++c) {
    if (table_of_[c] < 0) continue;
    Parameter& p = tables_[static_cast<size_t>(table_of_[c])];
    p.sum_exponent = FixedPointExponent(static_cast<double>(blocks.largest()) *
                                        maxima[static_cast<size_t>(table_of_[c])]);
    std::fill(p.sum.begin(), p.sum.end(), 0);
    const int64_t d = dims_[c];
    partial_.resize(static_cast<size_t>(d));
    for (int k = 0; k < blocks.size(); ++k) {
      // The block's examples by code, each code's in example order.
      order_.clear();
      for (int64_t e = blocks.begin(k); e < blocks.end(k); ++e) {
        order_.emplace_back(CodeAt(x + e * in_width_, c), e);
      }
      std::sort(order_.begin(), order_.end());
      for (size_t i = 0; i < order_.size();) {
        const int64_t code = order_[i].first;
        std::fill(partial_.begin(), partial_.end(), 0.0f);
        for (; i < order_.size() && order_[i].first == code; ++i) {
          const float* row = g + order_[i].second * out_width_ + offset[c];
          for (int64_t j = 0; j < d; ++j) partial_[static_cast<size_t>(j)] += row[j];
        }
        internal::AddFixed(partial_.data(), d, p.sum_exponent, p.sum.data() + code * d);
      }
    }
  }
  if (blocks.whole()) FinishGradients(parameters());
}

}  // namespace trainingd::engine
