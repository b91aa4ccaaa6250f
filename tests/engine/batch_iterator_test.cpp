#include "trainingd/engine/data/batch_iterator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "trainingd/engine/base/random.h"

namespace trainingd::engine {
namespace {

constexpr int64_t kPixelsPerExample = 2 * 2;

// Pixel p of example i; distinct for every (i, p), so an image identifies its example.
float PixelOf(int64_t i, int64_t p) { return static_cast<float>(i * 10 + p); }

// A split of n examples of shape [2, 2, 1]; example i has label i.
Split MakeSplit(int64_t n) {
  Split s;
  s.images.Resize(Shape{n, 2, 2, 1});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t p = 0; p < kPixelsPerExample; ++p)
      s.images[i * kPixelsPerExample + p] = PixelOf(i, p);
    s.labels.push_back(static_cast<int32_t>(i));
  }
  return s;
}

// Checks every image in the batch is the example its label names, and returns the labels.
std::vector<int32_t> CheckedLabels(const Tensor& images, const std::vector<int32_t>& labels) {
  const auto b = static_cast<int64_t>(labels.size());
  EXPECT_EQ(images.shape(), (Shape{b, 2, 2, 1}));
  for (int64_t k = 0; k < b; ++k) {
    for (int64_t p = 0; p < kPixelsPerExample; ++p) {
      EXPECT_EQ(images[k * kPixelsPerExample + p], PixelOf(labels[static_cast<size_t>(k)], p))
          << "batch slot " << k;
    }
  }
  return labels;
}

// Draws `batches` batches and returns all their labels, in order, checking the images.
std::vector<int32_t> Draw(BatchIterator& it, int batches) {
  std::vector<int32_t> all;
  Tensor images;
  std::vector<int32_t> labels;
  for (int i = 0; i < batches; ++i) {
    it.Next(images, labels);
    EXPECT_EQ(static_cast<int64_t>(labels.size()), it.batch_size());
    const auto l = CheckedLabels(images, labels);
    all.insert(all.end(), l.begin(), l.end());
  }
  return all;
}

// The documented order of epoch e: Fisher-Yates over Rng::ForStream(seed, e).
std::vector<int32_t> DocumentedOrder(int64_t n, uint64_t seed, uint64_t epoch) {
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Rng rng = Rng::ForStream(seed, epoch);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<size_t>(rng.UniformInt(static_cast<uint64_t>(i + 1)));
    std::swap(order[static_cast<size_t>(i)], order[j]);
  }
  return order;
}

BatchIterator MustCreate(const Split& split, int64_t batch_size, uint64_t seed,
                         bool shuffle = true) {
  auto r = BatchIterator::Create(split, batch_size, seed, shuffle);
  if (!r.ok()) {
    ADD_FAILURE() << r.status().ToString();
    std::abort();
  }
  return std::move(r).value();
}

TEST(BatchIteratorTest, CreateValidatesBatchSizeAndSplit) {
  const Split split = MakeSplit(10);
  for (int64_t bad : {int64_t{0}, int64_t{-3}, int64_t{11}}) {
    auto r = BatchIterator::Create(split, bad, 1);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("batch_size = " + std::to_string(bad)), std::string::npos)
        << r.status().ToString();
  }
  EXPECT_TRUE(BatchIterator::Create(split, 10, 1).ok());
  Split broken = MakeSplit(10);
  broken.labels.pop_back();
  EXPECT_EQ(BatchIterator::Create(broken, 2, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(BatchIterator::Create(Split{}, 1, 1).ok());
}

TEST(BatchIteratorTest, SameSeedSameBatchesDifferentSeedDifferentBatches) {
  const Split split = MakeSplit(50);
  auto a = MustCreate(split, 7, 42);
  auto b = MustCreate(split, 7, 42);
  auto c = MustCreate(split, 7, 43);
  const auto la = Draw(a, 20);
  EXPECT_EQ(la, Draw(b, 20));
  EXPECT_NE(la, Draw(c, 20));
}

TEST(BatchIteratorTest, EpochOrderIsTheDocumentedPermutation) {
  const Split split = MakeSplit(10);
  auto it = MustCreate(split, 5, 9);
  const auto got = Draw(it, 6);  // three epochs
  for (uint64_t e = 0; e < 3; ++e) {
    const std::vector<int32_t> epoch(got.begin() + static_cast<int64_t>(e) * 10,
                                     got.begin() + static_cast<int64_t>(e + 1) * 10);
    EXPECT_EQ(epoch, DocumentedOrder(10, 9, e)) << "epoch " << e;
  }
  // Shuffling does something, and each epoch is drawn afresh.
  EXPECT_NE(DocumentedOrder(10, 9, 0), DocumentedOrder(10, 9, 1));
  std::vector<int32_t> identity(10);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(std::vector<int32_t>(got.begin(), got.begin() + 10), identity);
}

TEST(BatchIteratorTest, EveryExampleOncePerEpoch) {
  const Split split = MakeSplit(1000);
  auto it = MustCreate(split, 40, 3);
  for (int epoch = 0; epoch < 3; ++epoch) {
    auto labels = Draw(it, 25);
    std::sort(labels.begin(), labels.end());
    std::vector<int32_t> all(1000);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(labels, all) << "epoch " << epoch;
  }
}

TEST(BatchIteratorTest, BatchCrossingAnEpochBoundaryTakesTheRestThenTheNextEpoch) {
  const Split split = MakeSplit(10);
  auto it = MustCreate(split, 4, 5);
  const auto e0 = DocumentedOrder(10, 5, 0);
  const auto e1 = DocumentedOrder(10, 5, 1);
  Draw(it, 2);
  EXPECT_EQ(it.epoch(), 0);
  EXPECT_EQ(it.state().index_in_epoch, 8);
  const auto third = Draw(it, 1);
  EXPECT_EQ(third, (std::vector<int32_t>{e0[8], e0[9], e1[0], e1[1]}));
  EXPECT_EQ(it.epoch(), 1);
  EXPECT_EQ(it.state().index_in_epoch, 2);
  EXPECT_EQ(Draw(it, 1), (std::vector<int32_t>{e1[2], e1[3], e1[4], e1[5]}));
}

TEST(BatchIteratorTest, BatchEndingExactlyAtEpochEndStaysInThatEpoch) {
  const Split split = MakeSplit(10);
  auto it = MustCreate(split, 5, 5);
  Draw(it, 2);
  EXPECT_EQ(it.state().epoch, 0);
  EXPECT_EQ(it.state().index_in_epoch, 10);
  const auto next = Draw(it, 1);
  const auto e1 = DocumentedOrder(10, 5, 1);
  EXPECT_EQ(next, std::vector<int32_t>(e1.begin(), e1.begin() + 5));
  EXPECT_EQ(it.state().epoch, 1);
  EXPECT_EQ(it.state().index_in_epoch, 5);
}

TEST(BatchIteratorTest, RestoreResumesTheIdenticalSequence) {
  const Split split = MakeSplit(23);
  auto it = MustCreate(split, 6, 77);
  Draw(it, 9);  // into epoch 2
  const BatchIterator::State saved = it.state();
  EXPECT_EQ(saved.epoch, 2);
  Tensor expected_images;
  std::vector<int32_t> expected_labels;
  std::vector<std::vector<float>> images_after;
  std::vector<std::vector<int32_t>> labels_after;
  for (int i = 0; i < 8; ++i) {
    it.Next(expected_images, expected_labels);
    images_after.emplace_back(expected_images.data(),
                              expected_images.data() + expected_images.size());
    labels_after.push_back(expected_labels);
  }

  // A fresh iterator (as after a restart) and the same iterator rewound both replay it.
  auto fresh = MustCreate(split, 6, 77);
  ASSERT_TRUE(fresh.Restore(saved).ok());
  ASSERT_TRUE(it.Restore(saved).ok());
  for (BatchIterator* r : {&fresh, &it}) {
    EXPECT_EQ(r->state().epoch, saved.epoch);
    EXPECT_EQ(r->state().index_in_epoch, saved.index_in_epoch);
    Tensor images;
    std::vector<int32_t> labels;
    for (int i = 0; i < 8; ++i) {
      r->Next(images, labels);
      EXPECT_EQ(labels, labels_after[static_cast<size_t>(i)]) << "batch " << i;
      EXPECT_EQ(std::vector<float>(images.data(), images.data() + images.size()),
                images_after[static_cast<size_t>(i)])
          << "batch " << i;
    }
  }
}

TEST(BatchIteratorTest, RestoreRejectsOutOfRangeStateAndKeepsPosition) {
  const Split split = MakeSplit(10);
  auto it = MustCreate(split, 3, 1);
  Draw(it, 2);
  for (BatchIterator::State bad :
       {BatchIterator::State{-1, 0}, BatchIterator::State{0, -1}, BatchIterator::State{0, 11}}) {
    const Status s = it.Restore(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad.epoch << "/" << bad.index_in_epoch;
  }
  EXPECT_EQ(it.state().epoch, 0);
  EXPECT_EQ(it.state().index_in_epoch, 6);
  ASSERT_TRUE(it.Restore({4, 10}).ok());  // the end of epoch 4 is a valid position
  const auto e5 = DocumentedOrder(10, 1, 5);
  EXPECT_EQ(Draw(it, 1), (std::vector<int32_t>{e5[0], e5[1], e5[2]}));
}

TEST(BatchIteratorTest, WithoutShuffleBatchesFollowFileOrderAcrossEpochs) {
  const Split split = MakeSplit(7);
  auto it = MustCreate(split, 3, 123, /*shuffle=*/false);
  EXPECT_EQ(Draw(it, 4), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4}));
  EXPECT_EQ(it.epoch(), 1);
}

TEST(BatchIteratorTest, NextReusesCallerBuffersOfAnyShape) {
  const Split split = MakeSplit(10);
  auto it = MustCreate(split, 4, 2, /*shuffle=*/false);
  Tensor images(Shape{100, 3});
  std::vector<int32_t> labels(50, -1);
  it.Next(images, labels);
  EXPECT_EQ(images.shape(), (Shape{4, 2, 2, 1}));
  EXPECT_EQ(CheckedLabels(images, labels), (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(CopyRangeTest, CopiesExamplesInOrderIncludingAShortLastBatch) {
  const Split split = MakeSplit(10);
  Tensor images;
  std::vector<int32_t> labels;
  CopyRange(split, 3, 4, images, labels);
  EXPECT_EQ(CheckedLabels(images, labels), (std::vector<int32_t>{3, 4, 5, 6}));
  CopyRange(split, 8, 2, images, labels);
  EXPECT_EQ(CheckedLabels(images, labels), (std::vector<int32_t>{8, 9}));
  CopyRange(split, 10, 0, images, labels);
  EXPECT_EQ(images.shape(), (Shape{0, 2, 2, 1}));
  EXPECT_TRUE(labels.empty());
}

}  // namespace
}  // namespace trainingd::engine
