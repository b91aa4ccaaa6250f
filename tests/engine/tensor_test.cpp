#include "trainingd/engine/nn/tensor.h"

#include <gtest/gtest.h>

#include "trainingd/engine/base/random.h"

namespace trainingd::engine {
namespace {

TEST(ShapeTest, ElementsAndBatch) {
  Shape s{28, 28, 1};
  EXPECT_EQ(s.num_elements(), 784);
  EXPECT_EQ(s.with_batch(50), (Shape{50, 28, 28, 1}));
  EXPECT_EQ(s.with_batch(50).drop_front(), s);
  EXPECT_EQ(s.ToString(), "[28,28,1]");
  EXPECT_EQ(Shape{}.num_elements(), 1);
}

TEST(TensorTest, MatrixViewIsRowMajor) {
  Tensor t(Shape{2, 3});
  for (int i = 0; i < 6; ++i) t[i] = static_cast<float>(i);
  auto m = t.matrix();
  EXPECT_EQ(m.rows(), 2);
  EXPECT_EQ(m.cols(), 3);
  EXPECT_EQ(m(1, 0), 3.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
}

TEST(RngTest, SameSeedSameStreamAndStateRoundTrips) {
  Rng a(7), b(7), c(8);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.Next(), b.Next());
  EXPECT_NE(a.Next(), c.Next());
  Rng d(1);
  auto saved = d.state();
  const float x = d.Uniform();
  d.set_state(saved);
  EXPECT_EQ(d.Uniform(), x);
}

TEST(RngTest, TruncatedNormalStaysWithinTwoSigmaAndHasTheRightSpread) {
  Rng r(3);
  double sum = 0, sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const float v = r.TruncatedNormal(0.1f);
    ASSERT_LE(std::fabs(v), 0.2f);
    sum += v;
    sq += double(v) * v;
  }
  EXPECT_NEAR(sum / n, 0.0, 2e-3);
  // Variance of a normal truncated at +-2 sigma is 0.774 sigma^2.
  EXPECT_NEAR(std::sqrt(sq / n), 0.1 * std::sqrt(0.774), 2e-3);
}

TEST(RngTest, UniformIntIsInRange) {
  Rng r(5);
  std::vector<int> counts(10);
  for (int i = 0; i < 100000; ++i) {
    auto v = r.UniformInt(10);
    ASSERT_LT(v, 10u);
    counts[v]++;
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
}

}  // namespace
}  // namespace trainingd::engine
