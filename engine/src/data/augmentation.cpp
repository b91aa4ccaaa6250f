#include "trainingd/engine/data/augmentation.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/float_format.h"
#include "trainingd/engine/base/random.h"

namespace trainingd::engine {
namespace {

using internal::FloatToString;

Status BadField(const std::string& field, const std::string& message) {
  return Status::InvalidArgument("augmentation." + field + ": " + message);
}

// round(fraction * size): the largest translation, in pixels.
int64_t MaxTranslation(float fraction, int64_t size) {
  return static_cast<int64_t>(std::lround(static_cast<double>(fraction) * size));
}

}  // namespace

Status CheckAugmentationValues(const AugmentationSpec& spec) {
  if (spec.random_crop_padding < 0 || spec.random_crop_padding > kMaxCropPadding) {
    return BadField("random_crop.padding", "must be in [1, " + std::to_string(kMaxCropPadding) +
                                               "] pixels, got " +
                                               std::to_string(spec.random_crop_padding));
  }
  if (!(spec.translate >= 0.0f && spec.translate <= 0.5f)) {
    return BadField("translate", "must be a fraction of the height and width in [0, 0.5], got " +
                                     FloatToString(spec.translate));
  }
  if (!(spec.brightness >= 0.0f && spec.brightness <= 1.0f)) {
    return BadField("brightness", "must be in [0, 1] (a fraction of the image's range), got " +
                                      FloatToString(spec.brightness));
  }
  if (!(spec.contrast >= 0.0f && spec.contrast < 1.0f)) {
    return BadField("contrast", "must be in [0, 1), got " + FloatToString(spec.contrast));
  }
  return Status::Ok();
}

Status CheckAugmentationFits(const AugmentationSpec& spec, const Shape& example_shape) {
  if (!spec.enabled()) return Status::Ok();
  if (example_shape.rank() != 3) {
    const char* field = spec.random_crop_padding > 0 ? "random_crop"
                        : spec.horizontal_flip       ? "horizontal_flip"
                        : spec.translate > 0         ? "translate"
                        : spec.brightness > 0        ? "brightness"
                                                     : "contrast";
    return BadField(field, "applies to images [H, W, C], and this dataset's examples are " +
                               example_shape.ToString() +
                               " (a table's rows have no axes to crop, shift or mirror)");
  }
  const int64_t side = std::min(example_shape[0], example_shape[1]);
  if (spec.random_crop_padding > side / 2) {
    return BadField("random_crop.padding",
                    std::to_string(spec.random_crop_padding) + " pixels is more than half of the " +
                        example_shape.ToString() +
                        " images' height or width: a crop could hold little of the image; use at "
                        "most " +
                        std::to_string(side / 2));
  }
  return Status::Ok();
}

AugmentationDraw DrawAugmentation(const AugmentationSpec& spec, const Shape& example_shape,
                                  uint64_t seed, int64_t epoch, int64_t index) {
  Rng rng = Rng::ForStream(Rng::ForStream(seed, static_cast<uint64_t>(epoch)).Next(),
                           static_cast<uint64_t>(index));
  const int64_t p = spec.random_crop_padding;
  const int64_t ty = MaxTranslation(spec.translate, example_shape[0]);
  const int64_t tx = MaxTranslation(spec.translate, example_shape[1]);
  const auto uniform_int = [&rng](int64_t n) {  // in [0, n), n >= 1
    return static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(n)));
  };
  AugmentationDraw d;
  // The crop's window starts at oy, ox of the padded image: output(y, x) = input(y + oy - p, ...).
  const int64_t oy = uniform_int(2 * p + 1);
  const int64_t ox = uniform_int(2 * p + 1);
  d.shift_y = p - oy;
  d.shift_x = p - ox;
  d.shift_y += uniform_int(2 * ty + 1) - ty;
  d.shift_x += uniform_int(2 * tx + 1) - tx;
  const bool flip = (rng.Next() >> 63) != 0;
  d.flip = spec.horizontal_flip && flip;
  const float b = rng.Uniform(-spec.brightness, spec.brightness);
  d.brightness = spec.brightness > 0 ? b : 0.0f;
  const float c = rng.Uniform(1.0f - spec.contrast, 1.0f + spec.contrast);
  d.contrast = spec.contrast > 0 ? c : 1.0f;
  return d;
}

void ApplyAugmentation(const AugmentationDraw& draw, const Shape& example_shape,
                       const ChannelUnits& units, const float* src, float* dst) {
  const int64_t h = example_shape[0], w = example_shape[1], c = example_shape[2];
  const bool normalized = !units.mean.empty();
  const auto black = [&](int64_t k) {
    return normalized ? -units.mean[static_cast<size_t>(k)] / units.std[static_cast<size_t>(k)]
                      : 0.0f;
  };
  for (int64_t y = 0; y < h; ++y) {
    const int64_t sy = y - draw.shift_y;
    for (int64_t x = 0; x < w; ++x) {
      const int64_t sx = (draw.flip ? w - 1 - x : x) - draw.shift_x;
      float* out = dst + (y * w + x) * c;
      if (sy < 0 || sy >= h || sx < 0 || sx >= w) {
        for (int64_t k = 0; k < c; ++k) out[k] = black(k);
      } else {
        std::copy_n(src + (sy * w + sx) * c, c, out);
      }
    }
  }
  const int64_t pixels = h * w;
  if (draw.brightness != 0.0f) {
    for (int64_t k = 0; k < c; ++k) {
      const float delta =
          normalized ? draw.brightness / units.std[static_cast<size_t>(k)] : draw.brightness;
      for (int64_t i = 0; i < pixels; ++i) dst[i * c + k] += delta;
    }
  }
  if (draw.contrast != 1.0f) {
    for (int64_t k = 0; k < c; ++k) {
      double sum = 0;
      for (int64_t i = 0; i < pixels; ++i) sum += dst[i * c + k];
      const auto mean = static_cast<float>(sum / static_cast<double>(pixels));
      for (int64_t i = 0; i < pixels; ++i) {
        dst[i * c + k] = (dst[i * c + k] - mean) * draw.contrast + mean;
      }
    }
  }
}

Result<Augmenter> Augmenter::Create(const AugmentationSpec& spec, const Shape& example_shape,
                                    uint64_t seed, ChannelUnits units) {
  TRAININGD_RETURN_IF_ERROR(CheckAugmentationValues(spec));
  TRAININGD_RETURN_IF_ERROR(CheckAugmentationFits(spec, example_shape));
  if (!units.mean.empty() || !units.std.empty()) {
    const size_t channels =
        example_shape.rank() == 3 ? static_cast<size_t>(example_shape[2]) : size_t{0};
    if (units.mean.size() != channels || units.std.size() != channels) {
      return Status::InvalidArgument("augmentation: the per-channel normalization has " +
                                     std::to_string(units.mean.size()) + " means and " +
                                     std::to_string(units.std.size()) + " deviations for " +
                                     example_shape.ToString() + " images");
    }
    for (size_t k = 0; k < channels; ++k) {
      if (!std::isfinite(units.mean[k]) || !std::isfinite(units.std[k]) || !(units.std[k] > 0)) {
        return Status::InvalidArgument(
            "augmentation: channel " + std::to_string(k) +
            "'s normalization is not a finite mean and a positive deviation");
      }
    }
  }
  Augmenter a;
  a.spec_ = spec;
  a.example_shape_ = example_shape;
  a.seed_ = seed;
  a.units_ = std::move(units);
  return a;
}

void Augmenter::Apply(int64_t epoch, int64_t index, const float* src, float* dst) const {
  ApplyAugmentation(DrawAugmentation(spec_, example_shape_, seed_, epoch, index), example_shape_,
                    units_, src, dst);
}

}  // namespace trainingd::engine
