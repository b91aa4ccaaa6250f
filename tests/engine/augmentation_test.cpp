// Augmentation (augmentation.h): each transform on hand-made tiny images with exact expected
// pixels, the draws a function of (seed, epoch, example) alone, the input pipeline's augmented
// batches equal to the example-by-example transform whatever the slice or the restore, and the
// checks naming the field. Per-channel normalization (NormalizePerChannel) on a tiny dataset.
#include "trainingd/engine/data/augmentation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <tuple>
#include <vector>

#include "trainingd/engine/data/batch_iterator.h"
#include "trainingd/engine/data/dataset.h"

namespace trainingd::engine {
namespace {

bool RefusesNaming(const Status& s, const std::string& prefix) {
  return !s.ok() && s.message().rfind(prefix, 0) == 0;
}

// A [3, 4, 1] image whose pixel (y, x) is 10 y + x + 1, so no pixel is 0 (black).
std::vector<float> RampImage() {
  std::vector<float> v;
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 4; ++x) v.push_back(static_cast<float>(10 * y + x + 1));
  }
  return v;
}

std::vector<float> Transformed(const AugmentationDraw& d, const Shape& shape,
                               const std::vector<float>& in, const ChannelUnits& units = {}) {
  std::vector<float> out(in.size(), -99.0f);
  ApplyAugmentation(d, shape, units, in.data(), out.data());
  return out;
}

TEST(AugmentationTest, AShiftReadsTheShiftedPixelsAndFillsBlack) {
  const Shape shape{3, 4, 1};
  AugmentationDraw d;
  EXPECT_EQ(Transformed(d, shape, RampImage()), RampImage());                    // the identity
  d.shift_y = 1;                                                                 // down one row
  d.shift_x = -1;                                                                // left one column
  EXPECT_EQ(Transformed(d, shape, RampImage()), (std::vector<float>{0, 0, 0, 0,  //
                                                                    2, 3, 4, 0,  //
                                                                    12, 13, 14, 0}));
}

TEST(AugmentationTest, AFlipMirrorsTheShiftedImage) {
  const Shape shape{3, 4, 1};
  AugmentationDraw d;
  d.flip = true;
  EXPECT_EQ(Transformed(d, shape, RampImage()), (std::vector<float>{4, 3, 2, 1,      //
                                                                    14, 13, 12, 11,  //
                                                                    24, 23, 22, 21}));
  d.shift_y = 1;
  d.shift_x = -1;
  EXPECT_EQ(Transformed(d, shape, RampImage()), (std::vector<float>{0, 0, 0, 0,  //
                                                                    0, 4, 3, 2,  //
                                                                    0, 14, 13, 12}));
}

TEST(AugmentationTest, ChannelsMoveTogether) {
  const Shape shape{1, 3, 2};  // pixels (1, -1), (2, -2), (3, -3)
  const std::vector<float> in{1, -1, 2, -2, 3, -3};
  AugmentationDraw d;
  d.shift_x = 1;
  EXPECT_EQ(Transformed(d, shape, in), (std::vector<float>{0, 0, 1, -1, 2, -2}));
  d.flip = true;
  EXPECT_EQ(Transformed(d, shape, in), (std::vector<float>{2, -2, 1, -1, 0, 0}));
}

TEST(AugmentationTest, BrightnessAddsAndContrastScalesAboutEachChannelsMean) {
  const Shape shape{1, 2, 2};  // pixels (0.2, 0.5), (0.4, 0.9)
  const std::vector<float> in{0.2f, 0.5f, 0.4f, 0.9f};
  AugmentationDraw d;
  d.brightness = 0.1f;
  std::vector<float> out = Transformed(d, shape, in);
  EXPECT_FLOAT_EQ(out[0], 0.3f);
  EXPECT_FLOAT_EQ(out[1], 0.6f);
  EXPECT_FLOAT_EQ(out[2], 0.5f);
  EXPECT_FLOAT_EQ(out[3], 1.0f);
  d.contrast = 2.0f;  // after the brightness: channel means 0.4 and 0.8
  out = Transformed(d, shape, in);
  EXPECT_FLOAT_EQ(out[0], 0.2f);
  EXPECT_FLOAT_EQ(out[1], 0.4f);
  EXPECT_FLOAT_EQ(out[2], 0.6f);
  EXPECT_FLOAT_EQ(out[3], 1.2f);
}

// With per-channel normalization the fill is black in the image's units, (0 - mean) / std, and
// a brightness delta is in those units too: delta / std in the values.
TEST(AugmentationTest, NormalizedValuesAreFilledAndBrightenedInTheImagesUnits) {
  const Shape shape{1, 2, 2};
  const std::vector<float> in{1.0f, 2.0f, 3.0f, 4.0f};
  const ChannelUnits units{{0.5f, 0.25f}, {0.5f, 0.25f}};
  AugmentationDraw d;
  d.shift_x = 1;
  EXPECT_EQ(Transformed(d, shape, in, units), (std::vector<float>{-1, -1, 1, 2}));
  d.shift_x = 0;
  d.brightness = 0.1f;
  const std::vector<float> out = Transformed(d, shape, in, units);
  EXPECT_FLOAT_EQ(out[0], 1.2f);
  EXPECT_FLOAT_EQ(out[1], 2.4f);
  EXPECT_FLOAT_EQ(out[2], 3.2f);
  EXPECT_FLOAT_EQ(out[3], 4.4f);
}

TEST(AugmentationTest, TheDrawsAreAFunctionOfSeedEpochAndExampleAlone) {
  AugmentationSpec spec;
  spec.random_crop_padding = 2;
  spec.horizontal_flip = true;
  spec.translate = 0.25f;  // round(0.25 * 8) = 2 more pixels each way
  spec.brightness = 0.2f;
  spec.contrast = 0.3f;
  const Shape shape{8, 8, 3};
  std::set<std::tuple<int64_t, int64_t, bool>> seen;
  std::set<int64_t> shifts;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    for (int64_t i = 0; i < 200; ++i) {
      const AugmentationDraw a = DrawAugmentation(spec, shape, 7, epoch, i);
      const AugmentationDraw b = DrawAugmentation(spec, shape, 7, epoch, i);
      EXPECT_EQ(a.shift_y, b.shift_y);
      EXPECT_EQ(a.shift_x, b.shift_x);
      EXPECT_EQ(a.flip, b.flip);
      EXPECT_EQ(a.brightness, b.brightness);
      EXPECT_EQ(a.contrast, b.contrast);
      EXPECT_LE(std::abs(a.shift_y), 4);
      EXPECT_LE(std::abs(a.shift_x), 4);
      EXPECT_LE(std::fabs(a.brightness), 0.2f);
      EXPECT_LE(std::fabs(a.contrast - 1.0f), 0.3f + 1e-6f);
      seen.insert({a.shift_y, a.shift_x, a.flip});
      shifts.insert(a.shift_y);
    }
  }
  EXPECT_EQ(shifts.size(), 9u);  // every shift in [-4, 4]
  EXPECT_GT(seen.size(), 100u);  // of 9 x 9 x 2 = 162
  // Another epoch, example or seed draws anew.
  const AugmentationDraw d = DrawAugmentation(spec, shape, 7, 0, 0);
  EXPECT_NE(d.brightness, DrawAugmentation(spec, shape, 7, 1, 0).brightness);
  EXPECT_NE(d.brightness, DrawAugmentation(spec, shape, 7, 0, 1).brightness);
  EXPECT_NE(d.brightness, DrawAugmentation(spec, shape, 8, 0, 0).brightness);
  // A transform that is off draws its identity, and the others' draws do not change.
  AugmentationSpec flip_only = spec;
  flip_only.random_crop_padding = 0;
  flip_only.translate = 0;
  flip_only.brightness = 0;
  flip_only.contrast = 0;
  for (int64_t i = 0; i < 20; ++i) {
    const AugmentationDraw all = DrawAugmentation(spec, shape, 7, 2, i);
    const AugmentationDraw one = DrawAugmentation(flip_only, shape, 7, 2, i);
    EXPECT_EQ(one.shift_y, 0);
    EXPECT_EQ(one.shift_x, 0);
    EXPECT_EQ(one.brightness, 0.0f);
    EXPECT_EQ(one.contrast, 1.0f);
    EXPECT_EQ(one.flip, all.flip);
  }
}

// n examples of [4, 4, 1], example i's pixels i * 100 + p, label i.
Split RampSplit(int64_t n) {
  Split s;
  s.images.Resize(Shape{n, 4, 4, 1});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t p = 0; p < 16; ++p) s.images[i * 16 + p] = static_cast<float>(i * 100 + p + 1);
    s.labels.push_back(static_cast<int32_t>(i));
  }
  return s;
}

// The input pipeline applies the transform of (epoch, example index) to each example it copies:
// batches across an epoch boundary, any rank's slice of a batch, and a restored position give the
// example-by-example transform of the same examples.
TEST(AugmentationTest, TheInputPipelineAugmentsEachExampleByItsEpochAndIndex) {
  const Split split = RampSplit(10);
  AugmentationSpec spec;
  spec.random_crop_padding = 1;
  spec.horizontal_flip = true;
  spec.brightness = 0.5f;
  const uint64_t seed = 3;
  auto augmenter = Augmenter::Create(spec, Shape{4, 4, 1}, seed, {});
  ASSERT_TRUE(augmenter.ok()) << augmenter.status().ToString();
  auto it = BatchIterator::Create(split, 4, 11);
  ASSERT_TRUE(it.ok());
  it->set_augmenter(*augmenter);
  auto plain = BatchIterator::Create(split, 4, 11);  // the same order, not augmented
  ASSERT_TRUE(plain.ok());
  Tensor images, raw;
  std::vector<int32_t> labels, raw_labels;
  std::vector<BatchIterator::State> states;
  std::vector<std::vector<float>> batches;
  int changed = 0;
  for (int b = 0; b < 6; ++b) {  // 24 examples: epochs 0, 1 and into 2
    states.push_back(it->state());
    const int64_t epoch_before = it->state().index_in_epoch == 10 ? it->epoch() + 1 : it->epoch();
    it->Next(images, labels);
    plain->Next(raw, raw_labels);
    ASSERT_EQ(labels, raw_labels);
    batches.emplace_back(images.data(), images.data() + images.size());
    for (int64_t k = 0; k < 4; ++k) {
      // The epoch this slot's example was taken from: the batch may cross into the next one.
      const int64_t first_index = states.back().index_in_epoch % 10;
      const int64_t epoch = epoch_before + (first_index + k >= 10 ? 1 : 0);
      const int64_t example = labels[static_cast<size_t>(k)];
      std::vector<float> want(16);
      ApplyAugmentation(DrawAugmentation(spec, Shape{4, 4, 1}, seed, epoch, example),
                        Shape{4, 4, 1}, {}, split.images.data() + example * 16, want.data());
      for (int64_t p = 0; p < 16; ++p) {
        EXPECT_EQ(images[k * 16 + p], want[static_cast<size_t>(p)])
            << "batch " << b << " slot " << k;
        changed += images[k * 16 + p] != raw[k * 16 + p];
      }
    }
  }
  EXPECT_GT(changed, 100);
  // Any slice of a batch, from any restored position, is that part of the whole batch.
  for (size_t b = 0; b < states.size(); ++b) {
    for (const auto& [begin, count] : {std::pair<int64_t, int64_t>{0, 1}, {1, 2}, {3, 1}, {0, 4}}) {
      ASSERT_TRUE(it->Restore(states[b]).ok());
      it->Next(images, labels, begin, count);
      for (int64_t v = 0; v < count * 16; ++v) {
        EXPECT_EQ(images[v], batches[b][static_cast<size_t>(begin * 16 + v)]) << "batch " << b;
      }
    }
  }
}

TEST(AugmentationTest, ValuesOutOfRangeAreRefusedNamingTheField) {
  AugmentationSpec a;
  EXPECT_TRUE(CheckAugmentationValues(a).ok());
  a.random_crop_padding = -1;
  EXPECT_TRUE(RefusesNaming(CheckAugmentationValues(a), "augmentation.random_crop.padding: "));
  a.random_crop_padding = 65;
  EXPECT_TRUE(RefusesNaming(CheckAugmentationValues(a), "augmentation.random_crop.padding: "));
  a = {};
  a.translate = 0.6f;
  EXPECT_TRUE(RefusesNaming(CheckAugmentationValues(a), "augmentation.translate: "));
  a.translate = NAN;
  EXPECT_TRUE(RefusesNaming(CheckAugmentationValues(a), "augmentation.translate: "));
  a = {};
  a.brightness = -0.1f;
  EXPECT_TRUE(RefusesNaming(CheckAugmentationValues(a), "augmentation.brightness: "));
  a = {};
  a.contrast = 1.0f;
  EXPECT_TRUE(RefusesNaming(CheckAugmentationValues(a), "augmentation.contrast: "));
}

TEST(AugmentationTest, AnAugmentationThatDoesNotFitTheExamplesIsRefusedNamingTheField) {
  AugmentationSpec a;
  EXPECT_TRUE(CheckAugmentationFits(a, Shape{12}).ok());  // none: fits anything
  a.horizontal_flip = true;
  EXPECT_TRUE(RefusesNaming(CheckAugmentationFits(a, Shape{12}), "augmentation.horizontal_flip: "));
  EXPECT_TRUE(CheckAugmentationFits(a, Shape{28, 28, 1}).ok());
  a = {};
  a.random_crop_padding = 4;
  EXPECT_TRUE(RefusesNaming(CheckAugmentationFits(a, Shape{12}), "augmentation.random_crop: "));
  EXPECT_TRUE(CheckAugmentationFits(a, Shape{8, 30, 3}).ok());
  EXPECT_TRUE(RefusesNaming(CheckAugmentationFits(a, Shape{7, 30, 3}),
                            "augmentation.random_crop.padding: "));
  a = {};
  a.brightness = 0.1f;
  EXPECT_TRUE(RefusesNaming(CheckAugmentationFits(a, Shape{5}), "augmentation.brightness: "));
}

TEST(NormalizePerChannelTest, EveryChannelOfTheTrainSplitGetsMeanZeroAndDeviationOne) {
  Datasets d;
  d.preprocessing = Preprocessing::kScale255;
  d.train.images = Tensor(Shape{2, 1, 2, 2});  // channel 0: 0.1 0.3 0.5 0.7; channel 1: 0.4
  const float train[] = {0.1f, 0.4f, 0.3f, 0.4f, 0.5f, 0.4f, 0.7f, 0.4f};
  std::copy(std::begin(train), std::end(train), d.train.images.data());
  d.train.labels = {0, 1};
  d.test.images = Tensor(Shape{1, 1, 2, 2});
  const float test[] = {0.4f, 0.4f, 0.0f, 1.0f};
  std::copy(std::begin(test), std::end(test), d.test.images.data());
  d.test.labels = {0};
  ASSERT_TRUE(NormalizePerChannel(&d).ok());
  EXPECT_EQ(d.preprocessing, Preprocessing::kPerChannel);
  ASSERT_EQ(d.feature_mean.size(), 2u);
  EXPECT_FLOAT_EQ(d.feature_mean[0], 0.4f);
  EXPECT_FLOAT_EQ(d.feature_mean[1], 0.4f);
  EXPECT_FLOAT_EQ(d.feature_std[0], std::sqrt(0.05f));  // (0.09 + 0.01 + 0.01 + 0.09) / 4
  EXPECT_EQ(d.feature_std[1], 1.0f);                    // a constant channel
  // The values are (x - mean) / std in float arithmetic.
  for (int i = 0; i < 8; ++i) {
    const size_t k = static_cast<size_t>(i % 2);
    EXPECT_EQ(d.train.images[i], (train[i] - d.feature_mean[k]) / d.feature_std[k]) << i;
  }
  EXPECT_EQ(d.test.images[0], (0.4f - d.feature_mean[0]) / d.feature_std[0]);
  EXPECT_EQ(d.test.images[3], (1.0f - d.feature_mean[1]) / d.feature_std[1]);
  // A table, or images already normalized, are refused.
  EXPECT_TRUE(RefusesNaming(NormalizePerChannel(&d), "normalize: "));
  Datasets table;
  table.preprocessing = Preprocessing::kStandard;
  table.train.images = Tensor(Shape{1, 3});
  table.train.labels = {0};
  EXPECT_TRUE(RefusesNaming(NormalizePerChannel(&table), "normalize: "));
}

}  // namespace
}  // namespace trainingd::engine
