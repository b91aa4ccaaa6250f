#include "trainingd/engine/nn/tensor.h"

#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace trainingd::engine {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr std::align_val_t kCacheLine{64}, kHugePageAlignment{kHugePage};

}  // namespace

void* AllocateBuffer(size_t bytes) {
  if (bytes < kHugePage) return ::operator new(bytes, kCacheLine);
  const size_t whole = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = ::operator new(whole, kHugePageAlignment);
  // Advice only: where THP is "never" or not built it has no effect (or fails), and 4 KiB pages
  // serve.
  (void)madvise(p, whole, MADV_HUGEPAGE);
  return p;
}

int64_t BufferBytes(int64_t bytes) {
  constexpr int64_t kHuge = static_cast<int64_t>(kHugePage);
  if (bytes < kHuge) return bytes;
  // Saturates for absurd sizes, as the estimate's sums do.
  if (bytes > std::numeric_limits<int64_t>::max() - kHuge) return bytes;
  return (bytes + kHuge - 1) / kHuge * kHuge;
}

void FreeBuffer(void* p, size_t bytes) noexcept {
  ::operator delete(p, bytes < kHugePage ? kCacheLine : kHugePageAlignment);
}

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

Tensor::~Tensor() = default;

Tensor::Tensor(Shape shape, float fill)
    : shape_(std::move(shape)), data_(static_cast<size_t>(shape_.num_elements()), fill) {}

Tensor Tensor::View(Shape shape, float* data) {
  assert(reinterpret_cast<uintptr_t>(data) % 64 == 0);
  Tensor t;
  t.view_size_ = shape.num_elements();
  t.shape_ = std::move(shape);
  t.view_ = data;
  return t;
}

Tensor::Tensor(const Tensor& other)
    : shape_(other.shape_), data_(other.data(), other.data() + other.size()) {}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this == &other) return *this;
  if (view_) {
    if (other.size() != size())
      throw std::logic_error("Tensor: assigning to a view of another size");
    std::copy(other.data(), other.data() + other.size(), view_);
    shape_ = other.shape_;
    return *this;
  }
  shape_ = other.shape_;
  data_.assign(other.data(), other.data() + other.size());
  return *this;
}

void Tensor::Resize(const Shape& shape) {
  if (view_) {
    if (shape.num_elements() != view_size_) {
      throw std::logic_error("Tensor: resizing a view of " + std::to_string(view_size_) +
                             " elements to " + shape.ToString());
    }
    shape_ = shape;
    return;
  }
  shape_ = shape;
  data_.resize(static_cast<size_t>(shape.num_elements()));
}

void Tensor::Reshape(const Shape& shape) {
  assert(shape.num_elements() == size());
  shape_ = shape;
}

void Tensor::SetZero() { std::fill(data(), data() + size(), 0.0f); }
void Tensor::Fill(float value) { std::fill(data(), data() + size(), value); }

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
