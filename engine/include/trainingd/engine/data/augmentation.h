// Augmentation: random transforms of the training split's images, applied by the input pipeline
// (BatchIterator) as each example is copied into its batch. Evaluations, Predict, the ONNX export
// and serving never see them, as Keras' RandomCrop and RandomFlip are the identity at inference.
//
// The transforms, in this order (docs/data.md#augmentation):
//   random_crop     pad the image by `padding` pixels of black on every side and crop a window of
//                   its own size at a uniform offset (torchvision's RandomCrop(size, padding)):
//                   a shift of up to `padding` pixels each way.
//   translate       a further shift of up to round(translate * H) rows and round(translate * W)
//                   columns each way (Keras' RandomTranslation with fill_mode="constant").
//   horizontal_flip mirror left to right with probability 1/2 (Keras' RandomFlip("horizontal")).
//   brightness      add a uniform delta in [-brightness, brightness] to every value, in the units
//                   of the image's range [0, 1] (Keras' RandomBrightness; not clipped).
//   contrast        scale each channel's deviation from the image's own channel mean by a uniform
//                   factor in [1 - contrast, 1 + contrast] (Keras' RandomContrast; not clipped).
// Pixels shifted in from outside the image are black (0 before any normalization).
//
// Determinism: the draws for an example are a pure function of (seed, epoch, example index in
// the split) (DrawAugmentation), never of the rank, the batch or the time, so a resumed run and
// an N-rank run train on exactly the augmented examples of a straight one-process run.
#pragma once

#include <cstdint>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

struct AugmentationSpec {
  int64_t random_crop_padding = 0;  // pixels; 0 = no random crop
  bool horizontal_flip = false;
  float translate = 0.0f;   // a fraction of the height and width, in [0, 0.5]; 0 = none
  float brightness = 0.0f;  // in [0, 1]; 0 = none
  float contrast = 0.0f;    // in [0, 1); 0 = none

  bool enabled() const {
    return random_crop_padding > 0 || horizontal_flip || translate > 0 || brightness > 0 ||
           contrast > 0;
  }
  friend bool operator==(const AugmentationSpec&, const AugmentationSpec&) = default;
};

inline constexpr int64_t kMaxCropPadding = 64;

// The values' ranges, whatever the data: InvalidArgument "augmentation.<field>: ..." naming the
// field as the job spec writes it (random_crop's padding as "augmentation.random_crop.padding").
Status CheckAugmentationValues(const AugmentationSpec& spec);

// Whether `spec` fits examples of `example_shape`: every transform needs images [H, W, C] (a
// table's rows have no axes to shift or mirror, nor pixels to brighten), and the padding at most
// half the image's height and width. InvalidArgument naming the field otherwise; OK for a spec
// that is not enabled.
Status CheckAugmentationFits(const AugmentationSpec& spec, const Shape& example_shape);

// One example's draws.
struct AugmentationDraw {
  int64_t shift_y = 0, shift_x = 0;  // output(y, x) reads input(y - shift_y, x - shift_x)
  bool flip = false;                 // then mirrored: output(y, x) reads shifted(y, W - 1 - x)
  float brightness = 0.0f;           // the delta, in the image's [0, 1] units
  float contrast = 1.0f;             // the factor
};

// The draws for example `index` of epoch `epoch`: from Rng::ForStream(Rng::ForStream(seed,
// epoch).Next(), index), always the same seven draws in the same order (crop y, crop x, translate
// y, translate x, flip, brightness, contrast), so that turning one transform on or off does not
// change the others' draws. A transform that is off draws its identity.
AugmentationDraw DrawAugmentation(const AugmentationSpec& spec, const Shape& example_shape,
                                  uint64_t seed, int64_t epoch, int64_t index);

// How the split's values relate to the image's [0, 1] units: value = (u - mean[c]) / std[c] per
// channel c (Preprocessing::kPerChannel), or value = u when empty. So black is -mean[c] / std[c]
// and a brightness delta d adds d / std[c].
struct ChannelUnits {
  std::vector<float> mean, std;
};

// Writes the transformed copy of the [H, W, C] image `src` to `dst` (not overlapping).
void ApplyAugmentation(const AugmentationDraw& draw, const Shape& example_shape,
                       const ChannelUnits& units, const float* src, float* dst);

// What the input pipeline holds: the spec, the seed and the units, checked once.
class Augmenter {
 public:
  // InvalidArgument when the spec's values are out of range or do not fit the examples, or the
  // units are not one finite mean and positive std per channel (or none).
  static Result<Augmenter> Create(const AugmentationSpec& spec, const Shape& example_shape,
                                  uint64_t seed, ChannelUnits units);
  // Writes example `index`'s augmented copy for epoch `epoch` to `dst`. Thread-safe.
  void Apply(int64_t epoch, int64_t index, const float* src, float* dst) const;

 private:
  Augmenter() = default;
  AugmentationSpec spec_;
  Shape example_shape_;
  uint64_t seed_ = 0;
  ChannelUnits units_;
};

}  // namespace trainingd::engine
