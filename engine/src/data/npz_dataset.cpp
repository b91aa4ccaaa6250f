#include "trainingd/engine/data/npz_dataset.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>

#include "data/byte_source.h"
#include "data/feature_stats.h"
#include "data/npy_header.h"
#include "data/zip_reader.h"
#include "trainingd/engine/data/idx_file.h"

namespace trainingd::engine {
namespace {

// Elements decoded per step: at most 2 MiB of float64 input and 1 MiB of floats.
constexpr size_t kChunkElements = size_t{1} << 18;
// A deflated member may declare up to this many times its compressed size (plus kRatioSlack)
// before LoadNpz trusts the declaration enough to allocate for it; above, the member is
// inflated and verified once (in bounded memory) before anything is allocated.
constexpr uint64_t kTrustedDeflateRatio = 64;
constexpr uint64_t kRatioSlack = uint64_t{1} << 16;
// Standardizing keeps two doubles per feature.
constexpr int64_t kMaxStandardizedFeatures = int64_t{1} << 20;

enum Role { kXTrain, kYTrain, kXTest, kYTest, kXVal, kYVal, kRoles };
constexpr std::array<const char*, kRoles> kMemberNames = {
    "x_train.npy", "y_train.npy", "x_test.npy", "y_test.npy", "x_val.npy", "y_val.npy"};
constexpr const char* kLayout =
    "an npz dataset holds x_train, y_train, x_test, y_test and optionally x_val, y_val";

bool IsX(int role) { return role % 2 == 0; }
// "x_train" for kXTrain.
std::string ArrayName(int role) {
  const std::string member = kMemberNames[static_cast<size_t>(role)];
  return member.substr(0, member.size() - 4);
}

// One array of the file: its zip member and .npy header.
struct Array {
  const ZipMember* member = nullptr;
  NpyHeader header;
  std::string label;        // "<file>: x_train.npy"
  int64_t count = 0;        // shape[0]
  int64_t per_example = 1;  // product of the other dimensions
  int64_t elements() const { return count * per_example; }
};

// What every entry point checks and works out from the directory, the headers and the labels.
struct Archive {
  std::unique_ptr<ByteSource> source;
  std::vector<ZipMember> members;
  std::array<Array, kRoles> arrays;
  bool has_val = false;
  int64_t val_from_train = 0;  // validation examples taken from the start of x_train
  DatasetInfo info;
  bool present(int role) const { return arrays[static_cast<size_t>(role)].member != nullptr; }
  const Array& at(int role) const { return arrays[static_cast<size_t>(role)]; }
};

std::string Dims(const std::vector<int64_t>& shape) { return Shape(shape).ToString(); }

// Reads and checks the .npy header of `a`'s member; leaves `reader` positioned at the data.
Status ReadNpyHeader(ZipMemberReader& reader, Array* a) {
  uint8_t pre[kNpyPreambleBytes];
  const size_t want =
      static_cast<size_t>(std::min<uint64_t>(kNpyPreambleBytes, a->member->uncompressed_size));
  size_t got = 0;
  TRAININGD_RETURN_IF_ERROR(reader.Read(pre, want, &got));
  if (got < 10) return Status::DataLoss(a->label + ": truncated .npy header");
  Result<size_t> total = ParseNpyPreamble(pre, got, a->label);
  if (!total.ok()) return total.status();
  if (*total > a->member->uncompressed_size) {
    return Status::DataLoss(a->label + ": truncated .npy header: it declares " +
                            std::to_string(*total) + " bytes, the member holds " +
                            std::to_string(a->member->uncompressed_size));
  }
  std::string bytes(*total, '\0');
  std::memcpy(bytes.data(), pre, std::min(got, *total));
  if (*total > got) {
    TRAININGD_RETURN_IF_ERROR(
        reader.Read(reinterpret_cast<uint8_t*>(bytes.data()) + got, *total - got, &got));
  } else if (*total < got) {
    return Status::InvalidArgument(a->label + ": malformed .npy header (too short)");
  }
  Result<NpyHeader> h = ParseNpyHeader(bytes, a->label);
  if (!h.ok()) return h.status();
  a->header = std::move(*h);
  return Status::Ok();
}

// Checks `a`'s dtype and shape for its role and that the member holds exactly the data the
// header declares; `*elements` accumulates the file's element count.
Status CheckArray(int role, Array* a, int64_t* elements) {
  const NpyHeader& h = a->header;
  const NpyDtype& t = h.dtype;
  const std::vector<int64_t>& s = h.shape;
  if (IsX(role)) {
    const bool ok = (t.kind == 'u' && (t.size == 1 || t.size == 2)) ||
                    (t.kind == 'i' && (t.size == 1 || t.size == 2)) ||
                    (t.kind == 'f' && (t.size == 4 || t.size == 8));
    if (!ok) {
      return Status::InvalidArgument(a->label + ": dtype " + t.Name() + " ('" + t.descr +
                                     "') is not supported for x arrays: uint8, int8, int16, " +
                                     "uint16, float32 or float64");
    }
    if (s.size() < 2 || s.size() > 4 || (s.size() == 4 && (s[3] < 1 || s[3] > 4))) {
      return Status::InvalidArgument(a->label + ": shape " + Dims(s) +
                                     " is not [N, H, W], [N, H, W, C] with C in 1..4, or [N, F]");
    }
  } else {
    if (t.kind == 'f') {
      return Status::InvalidArgument(a->label + ": labels must be integers, got dtype " + t.Name() +
                                     " ('" + t.descr + "')");
    }
    if (s.size() != 1) {
      return Status::InvalidArgument(a->label + ": labels must have shape [N], got " + Dims(s));
    }
  }
  int64_t n = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == 0) {
      return Status::InvalidArgument(a->label + ": dimension " + std::to_string(i) + " of " +
                                     Dims(s) + " is 0");
    }
    // Each dimension is < 2^62 and the running product <= kMaxIdxElements: no overflow.
    if (s[i] > kMaxIdxElements || n * s[i] > kMaxIdxElements - *elements) {
      return Status::InvalidArgument(a->label + ": shape " + Dims(s) + " brings the file over " +
                                     "the supported maximum of " + std::to_string(kMaxIdxElements) +
                                     " elements");
    }
    n *= s[i];
  }
  *elements += n;
  a->count = s[0];
  a->per_example = n / s[0];
  const uint64_t data = static_cast<uint64_t>(n) * static_cast<uint64_t>(t.size);
  const uint64_t member = a->member->uncompressed_size;
  if (member != h.header_bytes + data) {
    return Status::DataLoss(a->label + ": the .npy header declares shape " + Dims(s) + " of " +
                            t.Name() + ", " + std::to_string(data) + " data bytes after its " +
                            std::to_string(h.header_bytes) + "-byte header, but the zip member " +
                            "holds " + std::to_string(member) + " bytes");
  }
  return Status::Ok();
}

// The example shape of an x array: [H, W, 1] for [N, H, W], [H, W, C], or [F].
Shape ExampleShape(const Array& a) {
  const std::vector<int64_t>& s = a.header.shape;
  if (s.size() == 3) return Shape{s[1], s[2], 1};
  return Shape(std::vector<int64_t>(s.begin() + 1, s.end()));
}

template <typename T>
T LoadLE(const uint8_t* p, bool big_endian) {
  T v;
  if (!big_endian) {
    std::memcpy(&v, p, sizeof(T));
    return v;
  }
  uint8_t b[sizeof(T)];
  for (size_t i = 0; i < sizeof(T); ++i) b[i] = p[sizeof(T) - 1 - i];
  std::memcpy(&v, b, sizeof(T));
  return v;
}

// Decodes `n` elements of type `t` at `raw` into doubles (exact for every supported type but
// 64-bit integers beyond 2^53, which only labels have and which are range-checked as such).
template <typename Out>
void Decode(const NpyDtype& t, const uint8_t* raw, size_t n, Out* out) {
  const bool be = t.big_endian;
  const int s = t.size;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = raw + i * static_cast<size_t>(s);
    Out v = 0;
    if (t.kind == 'u') {
      if (s == 1) v = static_cast<Out>(p[0]);
      if (s == 2) v = static_cast<Out>(LoadLE<uint16_t>(p, be));
      if (s == 4) v = static_cast<Out>(LoadLE<uint32_t>(p, be));
      if (s == 8) {
        const uint64_t u = LoadLE<uint64_t>(p, be);
        v = u > uint64_t{INT64_MAX} ? Out(-1) : static_cast<Out>(u);
      }
    } else if (t.kind == 'i') {
      if (s == 1) v = static_cast<Out>(static_cast<int8_t>(p[0]));
      if (s == 2) v = static_cast<Out>(LoadLE<int16_t>(p, be));
      if (s == 4) v = static_cast<Out>(LoadLE<int32_t>(p, be));
      if (s == 8) v = static_cast<Out>(LoadLE<int64_t>(p, be));
    } else {
      if (s == 4) v = static_cast<Out>(LoadLE<float>(p, be));
      if (s == 8) v = static_cast<Out>(LoadLE<double>(p, be));
    }
    out[i] = v;
  }
}

// Reads `a`'s data in chunks of kChunkElements and hands each to `sink(first, raw, n)`, then
// verifies the member's end and CRC.
template <typename Sink>
Status StreamRaw(const ByteSource& source, const Array& a, Sink&& sink) {
  ZipMemberReader reader(source, *a.member, a.label);
  TRAININGD_RETURN_IF_ERROR(reader.Open());
  Array fresh = a;
  TRAININGD_RETURN_IF_ERROR(ReadNpyHeader(reader, &fresh));
  if (fresh.header.header_bytes != a.header.header_bytes || fresh.header.shape != a.header.shape ||
      fresh.header.dtype.descr != a.header.dtype.descr) {
    return Status::DataLoss(a.label + ": changed while being read (its .npy header differs)");
  }
  const size_t item = static_cast<size_t>(a.header.dtype.size);
  std::vector<uint8_t> raw(std::min<size_t>(kChunkElements, static_cast<size_t>(a.elements())) *
                           item);
  const int64_t total = a.elements();
  for (int64_t first = 0; first < total;) {
    const size_t n = static_cast<size_t>(std::min<int64_t>(total - first, kChunkElements));
    size_t got = 0;
    TRAININGD_RETURN_IF_ERROR(reader.Read(raw.data(), n * item, &got));
    if (got != n * item) return Status::Internal(a.label + ": short read");
    TRAININGD_RETURN_IF_ERROR(sink(first, raw.data(), n));
    first += static_cast<int64_t>(n);
  }
  return reader.Finish();
}

// Streams the labels of y array `a` as int32 class ids in [0, kMaxClasses):
// sink(first, labels, n).
template <typename Sink>
Status StreamLabels(const ByteSource& source, const Array& a, Sink&& sink) {
  std::vector<int64_t> values;
  std::vector<int32_t> labels;
  return StreamRaw(source, a, [&](int64_t first, const uint8_t* raw, size_t n) -> Status {
    values.resize(n);
    labels.resize(n);
    Decode(a.header.dtype, raw, n, values.data());
    for (size_t i = 0; i < n; ++i) {
      if (values[i] < 0 || values[i] >= kMaxClasses) {
        // Decode maps uint64 values over INT64_MAX to -1; say what the file holds.
        std::string v = std::to_string(values[i]);
        if (values[i] == -1 && a.header.dtype.kind == 'u') v = "over 2^63";
        return Status::InvalidArgument(a.label + ": label " + v + " at index " +
                                       std::to_string(first + static_cast<int64_t>(i)) +
                                       " is outside [0, " + std::to_string(kMaxClasses) + ")");
      }
      labels[i] = static_cast<int32_t>(values[i]);
    }
    return sink(first, labels.data(), n);
  });
}

// Streams x array `a` as the floats a model sees before standardization (value / 255 for
// kScale255, the value otherwise), every one checked finite: sink(first, values, n).
template <typename Sink>
Status StreamFeatures(const ByteSource& source, const Array& a, Preprocessing p, Sink&& sink) {
  std::array<float, 256> scale;
  for (int v = 0; v < 256; ++v) scale[static_cast<size_t>(v)] = static_cast<float>(v) / 255.0f;
  std::vector<double> wide;
  std::vector<float> values;
  const NpyDtype& t = a.header.dtype;
  return StreamRaw(source, a, [&](int64_t first, const uint8_t* raw, size_t n) -> Status {
    values.resize(n);
    if (p == Preprocessing::kScale255) {
      for (size_t i = 0; i < n; ++i) values[i] = scale[raw[i]];
      return sink(first, values.data(), n);
    }
    if (t.kind == 'f' && t.size == 4 && !t.big_endian) {
      std::memcpy(values.data(), raw, n * sizeof(float));
    } else {
      wide.resize(n);
      Decode(t, raw, n, wide.data());
      for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(wide[i]);
    }
    for (size_t i = 0; i < n; ++i) {
      if (std::isfinite(values[i])) continue;
      const int64_t index = first + static_cast<int64_t>(i);
      std::string what = std::isnan(values[i]) ? "NaN" : values[i] > 0 ? "+inf" : "-inf";
      if (t.kind == 'f' && t.size == 8 && std::isfinite(wide[i])) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", wide[i]);
        what = std::string(buf) + ", beyond float32's range";
      }
      return Status::InvalidArgument(a.label + ": element " + std::to_string(index) + " (example " +
                                     std::to_string(index / a.per_example) + ") is " + what +
                                     "; features must be finite");
    }
    return sink(first, values.data(), n);
  });
}

Status OpenArchive(std::unique_ptr<ByteSource> source, const DatasetOptions& options,
                   bool standardize, Archive* ar) {
  ar->source = std::move(source);
  const std::string& file = ar->source->name();
  Result<std::vector<ZipMember>> members = ReadZipDirectory(*ar->source);
  if (!members.ok()) return members.status();
  ar->members = std::move(*members);
  for (const ZipMember& m : ar->members) {
    const auto it = std::find(kMemberNames.begin(), kMemberNames.end(), m.name);
    if (it == kMemberNames.end()) {
      return Status::InvalidArgument(file + ": unexpected member '" + m.name + "'; " + kLayout);
    }
    Array& a = ar->arrays[static_cast<size_t>(it - kMemberNames.begin())];
    if (a.member) return Status::InvalidArgument(file + ": member '" + m.name + "' appears twice");
    a.member = &m;
    a.label = file + ": " + m.name;
  }
  for (int role : {kXTrain, kYTrain, kXTest, kYTest}) {
    if (!ar->present(role)) {
      return Status::InvalidArgument(file + ": no array " + ArrayName(role) + " (member " +
                                     kMemberNames[static_cast<size_t>(role)] + "); " + kLayout);
    }
  }
  if (ar->present(kXVal) != ar->present(kYVal)) {
    return Status::InvalidArgument(file + ": " + (ar->present(kXVal) ? "x_val" : "y_val") +
                                   " without " + (ar->present(kXVal) ? "y_val" : "x_val") +
                                   "; a validation split needs both");
  }
  ar->has_val = ar->present(kXVal);

  int64_t elements = 0;
  for (int role = 0; role < kRoles; ++role) {
    if (!ar->present(role)) continue;
    Array& a = ar->arrays[static_cast<size_t>(role)];
    ZipMemberReader reader(*ar->source, *a.member, a.label);
    TRAININGD_RETURN_IF_ERROR(reader.Open());
    TRAININGD_RETURN_IF_ERROR(ReadNpyHeader(reader, &a));
    TRAININGD_RETURN_IF_ERROR(CheckArray(role, &a, &elements));
  }

  const Array& xt = ar->at(kXTrain);
  const Shape example = ExampleShape(xt);
  const bool table = example.rank() == 1;
  for (int role : {kXTest, kXVal}) {
    if (!ar->present(role)) continue;
    const Array& x = ar->at(role);
    if (ExampleShape(x) != example) {
      return Status::InvalidArgument(x.label + ": examples of shape " + ExampleShape(x).ToString() +
                                     ", but x_train.npy's are " + example.ToString());
    }
    if (x.header.dtype.Name() != xt.header.dtype.Name()) {
      return Status::InvalidArgument(x.label + ": dtype " + x.header.dtype.Name() +
                                     ", but x_train.npy's is " + xt.header.dtype.Name() +
                                     "; every x array must have the same");
    }
  }
  for (int role : {kYTrain, kYTest, kYVal}) {
    if (!ar->present(role)) continue;
    const Array& x = ar->at(role - 1);
    const Array& y = ar->at(role);
    if (x.count != y.count) {
      const std::string xname = kMemberNames[static_cast<size_t>(role - 1)];
      return Status::InvalidArgument(y.label + ": " + std::to_string(y.count) + " labels for " +
                                     std::to_string(x.count) + (table ? " rows" : " images") +
                                     " in " + xname);
    }
  }

  // Splits.
  TRAININGD_RETURN_IF_ERROR(CheckDatasetOptions(options));
  int64_t validation = options.validation_size;
  if (ar->has_val) {
    if (validation != kAutoValidationSize && validation != 0) {
      return Status::InvalidArgument("validation_size: " + std::to_string(validation) + ", but " +
                                     file + " has its own validation split (x_val); use 0 (none) " +
                                     "or leave it out");
    }
  } else {
    if (validation == kAutoValidationSize) validation = xt.count / 10;
    if (validation >= xt.count) {
      return Status::InvalidArgument("validation_size = " + std::to_string(validation) +
                                     " must be less than the " + std::to_string(xt.count) +
                                     " training examples in " + file);
    }
    ar->val_from_train = validation;
  }

  DatasetInfo& info = ar->info;
  info.format = DatasetSource::Format::kNpz;
  info.example_shape = example;
  info.element_type = xt.header.dtype.Name();
  info.file_train_examples = xt.count;
  info.file_test_examples = ar->at(kXTest).count;
  info.validation_examples =
      ar->has_val ? (validation == 0 ? 0 : ar->at(kXVal).count) : ar->val_from_train;
  info.train_examples = xt.count - ar->val_from_train;
  if (options.max_train_examples > 0) {
    info.train_examples = std::min(info.train_examples, options.max_train_examples);
  }
  info.test_examples = info.file_test_examples;
  if (options.max_test_examples > 0) {
    info.test_examples = std::min(info.test_examples, options.max_test_examples);
  }
  const bool uint8 = xt.header.dtype.kind == 'u' && xt.header.dtype.size == 1;
  if (standardize) {
    if (!table) {
      return Status::InvalidArgument("normalize: standard applies to tables ([N, F] arrays); " +
                                     file + " holds images of shape " + example.ToString());
    }
    if (example[0] > kMaxStandardizedFeatures) {
      return Status::InvalidArgument("normalize: standard takes at most " +
                                     std::to_string(kMaxStandardizedFeatures) + " features; " +
                                     file + " has " + std::to_string(example[0]));
    }
    info.preprocessing = Preprocessing::kStandard;
  } else {
    info.preprocessing = uint8 ? Preprocessing::kScale255 : Preprocessing::kNone;
  }

  // The labels: every one in range, and the class count.
  int max_label = -1;
  for (int role : {kYTrain, kYTest, kYVal}) {
    if (!ar->present(role)) continue;
    TRAININGD_RETURN_IF_ERROR(StreamLabels(*ar->source, ar->at(role),
                                           [&](int64_t, const int32_t* labels, size_t n) -> Status {
                                             for (size_t i = 0; i < n; ++i)
                                               max_label = std::max(max_label, labels[i]);
                                             return Status::Ok();
                                           }));
  }
  info.num_classes = max_label + 1;
  return Status::Ok();
}

// Where the rows [begin, end) of an array go: to dst (rows from `begin`), and whether they are
// the train split's (for the statistics).
struct RowRange {
  int64_t begin = 0, end = 0;
  float* features = nullptr;
  int32_t* labels = nullptr;
  bool train = false;
};

// The row ranges of each x array: where LoadNpz puts them (null destinations for a probe).
std::vector<RowRange> Ranges(const Archive& ar, int x_role, Datasets* ds) {
  const DatasetInfo& info = ar.info;
  auto f = [&](Split& s) { return ds ? s.images.data() : nullptr; };
  auto l = [&](Split& s) { return ds ? s.labels.data() : nullptr; };
  Split none;
  Split& train = ds ? ds->train : none;
  Split& validation = ds ? ds->validation : none;
  Split& test = ds ? ds->test : none;
  switch (x_role) {
    case kXTrain: {
      const int64_t v = ar.val_from_train;
      return {{0, v, f(validation), l(validation), false},
              {v, v + info.train_examples, f(train), l(train), true}};
    }
    case kXTest:
      return {{0, info.test_examples, f(test), l(test), false}};
    default:
      return {{0, info.validation_examples, f(validation), l(validation), false}};
  }
}

// Reads every x and y array once, checking each value; copies them into `ds` when given and
// accumulates the train split's statistics into `stats` when given.
Status ReadAll(const Archive& ar, Datasets* ds, FeatureStats* stats) {
  const int64_t per = ar.info.example_shape.num_elements();
  for (int x_role : {kXTrain, kXTest, kXVal}) {
    if (!ar.present(x_role)) continue;
    const std::vector<RowRange> ranges = Ranges(ar, x_role, ds);
    TRAININGD_RETURN_IF_ERROR(
        StreamFeatures(*ar.source, ar.at(x_role), ar.info.preprocessing,
                       [&](int64_t first, const float* values, size_t n) -> Status {
                         const int64_t last = first + static_cast<int64_t>(n);
                         for (const RowRange& r : ranges) {
                           const int64_t b = std::max(first, r.begin * per);
                           const int64_t e = std::min(last, r.end * per);
                           if (b >= e) continue;
                           if (r.features) {
                             std::copy(values + (b - first), values + (e - first),
                                       r.features + (b - r.begin * per));
                           }
                           if (r.train && stats)
                             stats->Add(b - r.begin * per, values + (b - first), e - b);
                         }
                         return Status::Ok();
                       }));
    if (!ds) continue;
    TRAININGD_RETURN_IF_ERROR(StreamLabels(
        *ar.source, ar.at(x_role + 1), [&](int64_t first, const int32_t* labels, size_t n) {
          const int64_t last = first + static_cast<int64_t>(n);
          for (const RowRange& r : ranges) {
            const int64_t b = std::max(first, r.begin), e = std::min(last, r.end);
            if (b < e)
              std::copy(labels + (b - first), labels + (e - first), r.labels + (b - r.begin));
          }
          return Status::Ok();
        }));
  }
  return Status::Ok();
}

// A deflated member declaring much more than its compressed bytes is inflated once, in bounded
// memory, before LoadNpz allocates what it declares.
Status VerifyUnlikelyRatios(const Archive& ar) {
  for (int role = 0; role < kRoles; ++role) {
    if (!ar.present(role)) continue;
    const ZipMember& m = *ar.at(role).member;
    if (m.method != 8 ||
        m.uncompressed_size <= kTrustedDeflateRatio * m.compressed_size + kRatioSlack) {
      continue;
    }
    TRAININGD_RETURN_IF_ERROR(StreamRaw(
        *ar.source, ar.at(role), [](int64_t, const uint8_t*, size_t) { return Status::Ok(); }));
  }
  return Status::Ok();
}

Result<Datasets> LoadArchive(std::unique_ptr<ByteSource> source, const DatasetOptions& options,
                             bool standardize) {
  Archive ar;
  TRAININGD_RETURN_IF_ERROR(OpenArchive(std::move(source), options, standardize, &ar));
  TRAININGD_RETURN_IF_ERROR(VerifyUnlikelyRatios(ar));
  const DatasetInfo& info = ar.info;
  Datasets ds;
  ds.num_classes = info.num_classes;
  ds.preprocessing = info.preprocessing;
  auto size = [&](Split& s, int64_t n) {
    s.images.Resize(info.example_shape.with_batch(n));
    s.labels.resize(static_cast<size_t>(n));
  };
  size(ds.train, info.train_examples);
  size(ds.validation, info.validation_examples);
  size(ds.test, info.test_examples);
  const bool standard = info.preprocessing == Preprocessing::kStandard;
  FeatureStats stats(standard ? info.example_shape[0] : 0);
  TRAININGD_RETURN_IF_ERROR(ReadAll(ar, &ds, standard ? &stats : nullptr));
  if (standard) {
    stats.Finish(&ds.feature_mean, &ds.feature_std);
    for (Split* s : {&ds.train, &ds.validation, &ds.test}) {
      StandardizeRows(ds.feature_mean, ds.feature_std, s->images.data(), s->size());
    }
  }
  return ds;
}

}  // namespace

Result<DatasetInfo> ProbeNpz(const DatasetSource& source, const DatasetOptions& options,
                             ProbeDepth depth) {
  Result<std::unique_ptr<ByteSource>> file = OpenFileSource(source.path);
  if (!file.ok()) return file.status();
  Archive ar;
  TRAININGD_RETURN_IF_ERROR(OpenArchive(std::move(*file), options, source.standardize, &ar));
  if (depth == ProbeDepth::kFull) {
    const bool standard = ar.info.preprocessing == Preprocessing::kStandard;
    FeatureStats stats(standard ? ar.info.example_shape[0] : 0);
    TRAININGD_RETURN_IF_ERROR(ReadAll(ar, nullptr, standard ? &stats : nullptr));
    if (standard) stats.Finish(&ar.info.feature_mean, &ar.info.feature_std);
  }
  return ar.info;
}

Result<Datasets> LoadNpz(const DatasetSource& source, const DatasetOptions& options) {
  Result<std::unique_ptr<ByteSource>> file = OpenFileSource(source.path);
  if (!file.ok()) return file.status();
  return LoadArchive(std::move(*file), options, source.standardize);
}

Result<RawExamples> ReadNpzTestExamples(const DatasetSource& source, int64_t offset,
                                        int64_t limit) {
  Result<std::unique_ptr<ByteSource>> file = OpenFileSource(source.path);
  if (!file.ok()) return file.status();
  Archive ar;
  DatasetOptions options;
  options.validation_size = kAutoValidationSize;
  TRAININGD_RETURN_IF_ERROR(OpenArchive(std::move(*file), options, false, &ar));
  RawExamples out;
  out.example_shape = ar.info.example_shape;
  out.split_examples = ar.at(kXTest).count;
  if (offset < 0 || offset > out.split_examples) {
    return Status::InvalidArgument("offset: must be from 0 to " +
                                   std::to_string(out.split_examples) + ", the test examples");
  }
  if (limit < 0) return Status::InvalidArgument("limit: must not be negative");
  out.first = offset;
  const int64_t count = std::min(limit, out.split_examples - offset);
  if (count == 0) return out;
  const int64_t per = out.example_shape.num_elements();
  out.values.resize(static_cast<size_t>(count * per));
  out.labels.resize(static_cast<size_t>(count));
  const int64_t begin = offset * per, end = (offset + count) * per;
  TRAININGD_RETURN_IF_ERROR(StreamFeatures(
      *ar.source, ar.at(kXTest), Preprocessing::kNone,
      [&](int64_t first, const float* values, size_t n) -> Status {
        const int64_t b = std::max(first, begin);
        const int64_t e = std::min(first + static_cast<int64_t>(n), end);
        if (b < e)
          std::copy(values + (b - first), values + (e - first), out.values.data() + (b - begin));
        return Status::Ok();
      }));
  TRAININGD_RETURN_IF_ERROR(StreamLabels(
      *ar.source, ar.at(kYTest), [&](int64_t first, const int32_t* labels, size_t n) -> Status {
        const int64_t b = std::max(first, offset);
        const int64_t e = std::min(first + static_cast<int64_t>(n), offset + count);
        if (b < e)
          std::copy(labels + (b - first), labels + (e - first), out.labels.data() + (b - offset));
        return Status::Ok();
      }));
  return out;
}

Result<Datasets> ParseNpz(std::string_view bytes, const std::string& name,
                          const DatasetOptions& options, bool standardize) {
  return LoadArchive(MemorySource(bytes, name), options, standardize);
}

}  // namespace trainingd::engine
