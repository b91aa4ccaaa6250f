// Tensor: a dense, row-major float array with a shape.
//
// Images are stored NHWC (batch, height, width, channels), as TensorFlow does by default. The
// buffer is 64-byte aligned for SIMD. Resize() keeps the allocation when it is large enough, so
// layers can reuse their buffers from step to step without allocating. Not thread-safe; a tensor is
// owned by one layer or one caller at a time.
//
// A view (Tensor::View) is a tensor over memory it does not own, e.g. one parameter's gradient
// inside a model's flat gradient buffer (Model::FlatGradients): its element count is fixed, and a
// copy of a view owns its own copy of the data.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <string>
#include <vector>

namespace trainingd::engine {

// Dimensions of a tensor, outermost first. An empty shape is a scalar.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t& operator[](int i) { return dims_[static_cast<size_t>(i)]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  // Product of all dimensions (1 for a scalar).
  int64_t num_elements() const;
  // The shape without its first dimension (the per-example shape of a batch).
  Shape drop_front() const;
  // The same shape with `n` prepended (a batch of this shape).
  Shape with_batch(int64_t n) const;
  // "[28,28,1]"
  std::string ToString() const;

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::vector<int64_t> dims_;
};

// The engine's buffers (tensors, FloatBuffer below): `bytes` aligned to 64 bytes, and from 2 MiB
// up on whole 2 MiB pages that the kernel is asked to back with transparent huge pages
// (madvise(MADV_HUGEPAGE), as PyTorch's THP_MEM_ALLOC_ENABLE does). Fresh memory costs a page
// fault per 4 KiB page on first touch; under some hypervisors that is ~3.6 ms per MiB, more than
// a training step's arithmetic on the same bytes (docs/engine.md#memory). Free with the same
// size.
void* AllocateBuffer(size_t bytes);
void FreeBuffer(void* p, size_t bytes) noexcept;
// The memory a buffer of `bytes` from AllocateBuffer takes once written: from 2 MiB up, whole huge
// pages (a touched huge page is resident whole). What the admission estimate counts per tensor.
int64_t BufferBytes(int64_t bytes);

// Storage aligned to 64 bytes (a cache line, and AVX-512's vector), whatever the CPU: Eigen's own
// aligned_allocator aligns only to EIGEN_MAX_ALIGN_BYTES, which is 32 on an AVX2 build, while the
// maps below promise 64. Large ones on huge pages (AllocateBuffer).
template <typename T>
struct Align64Allocator {
  using value_type = T;
  Align64Allocator() = default;
  template <typename U>
  Align64Allocator(const Align64Allocator<U>&) {}  // NOLINT: rebinding is implicit
  T* allocate(size_t n) { return static_cast<T*>(AllocateBuffer(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { FreeBuffer(p, n * sizeof(T)); }
  friend bool operator==(const Align64Allocator&, const Align64Allocator&) { return true; }
};

// Floats on the engine's allocation (AllocateBuffer), for scratch that can be large.
using FloatBuffer = std::vector<float, Align64Allocator<float>>;

using MatrixRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<MatrixRM, Eigen::Aligned64>;
using ConstMatrixMap = Eigen::Map<const MatrixRM, Eigen::Aligned64>;
using VectorMap = Eigen::Map<Eigen::VectorXf, Eigen::Aligned64>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXf, Eigen::Aligned64>;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape, float fill = 0.0f);
  // A view of shape.num_elements() floats at `data`, which must be 64-byte aligned and outlive
  // the view.
  static Tensor View(Shape shape, float* data);
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  // Out of line, so that it is compiled with the engine's optimisation wherever a tensor dies:
  // unoptimised (the sanitizer builds' daemon code), std::vector with an allocator of its own
  // destroys a float at a time -- 1.3 s for Fashion-MNIST's 47M under ThreadSanitizer.
  ~Tensor();

  const Shape& shape() const { return shape_; }
  int64_t size() const { return view_ ? view_size_ : static_cast<int64_t>(data_.size()); }
  float* data() { return view_ ? view_ : data_.data(); }
  const float* data() const { return view_ ? view_ : data_.data(); }
  float& operator[](int64_t i) { return data()[i]; }
  float operator[](int64_t i) const { return data()[i]; }
  bool is_view() const { return view_ != nullptr; }

  // Changes the shape; contents are unspecified afterwards unless the element count is unchanged.
  // A view only takes shapes of its own element count (std::logic_error otherwise).
  void Resize(const Shape& shape);
  // Same element count, new shape; contents kept.
  void Reshape(const Shape& shape);
  void SetZero();
  void Fill(float value);

  // Views. matrix() views the tensor as [dim0, rest] row-major; vector() as a flat column vector.
  MatrixMap matrix();
  ConstMatrixMap matrix() const;
  MatrixMap matrix(int64_t rows, int64_t cols);
  ConstMatrixMap matrix(int64_t rows, int64_t cols) const;
  VectorMap vector() { return VectorMap(data(), size()); }
  ConstVectorMap vector() const { return ConstVectorMap(data(), size()); }

 private:
  Shape shape_;
  FloatBuffer data_;
  float* view_ = nullptr;  // set for a view; data_ is empty then
  int64_t view_size_ = 0;
};

}  // namespace trainingd::engine
