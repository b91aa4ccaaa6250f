#include "trainingd/engine/nn/tensor.h"

#include <algorithm>
#include <cassert>

namespace trainingd::engine {

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

Shape Shape::drop_front() const {
  if (dims_.empty()) return {};
  return Shape(std::vector<int64_t>(dims_.begin() + 1, dims_.end()));
}

Shape Shape::with_batch(int64_t n) const {
  std::vector<int64_t> d;
  d.reserve(dims_.size() + 1);
  d.push_back(n);
  d.insert(d.end(), dims_.begin(), dims_.end());
  return Shape(std::move(d));
}

std::string Shape::ToString() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

Tensor::Tensor(Shape shape, float fill)
    : shape_(std::move(shape)), data_(static_cast<size_t>(shape_.num_elements()), fill) {}

void Tensor::Resize(const Shape& shape) {
  shape_ = shape;
  data_.resize(static_cast<size_t>(shape.num_elements()));
}

void Tensor::Reshape(const Shape& shape) {
  assert(shape.num_elements() == size());
  shape_ = shape;
}

void Tensor::SetZero() { std::fill(data_.begin(), data_.end(), 0.0f); }
void Tensor::Fill(float value) { std::fill(data_.begin(), data_.end(), value); }

MatrixMap Tensor::matrix() {
  const int64_t rows = shape_.rank() ? shape_[0] : 1;
  return matrix(rows, rows ? size() / rows : 0);
}
ConstMatrixMap Tensor::matrix() const {
  const int64_t rows = shape_.rank() ? shape_[0] : 1;
  return matrix(rows, rows ? size() / rows : 0);
}
MatrixMap Tensor::matrix(int64_t rows, int64_t cols) {
  assert(rows * cols == size());
  return MatrixMap(data(), rows, cols);
}
ConstMatrixMap Tensor::matrix(int64_t rows, int64_t cols) const {
  assert(rows * cols == size());
  return ConstMatrixMap(data(), rows, cols);
}

}  // namespace trainingd::engine
