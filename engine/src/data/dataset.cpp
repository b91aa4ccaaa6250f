#include "trainingd/engine/data/dataset.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "trainingd/engine/data/csv_dataset.h"
#include "trainingd/engine/data/idx_file.h"
#include "trainingd/engine/data/npz_dataset.h"

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;

// One of the four files of an MNIST-format directory.
struct FileKind {
  const char* stem;  // "train-images"
  const char* idx;   // "idx3"
  const char* what;  // "training images", for messages
};

constexpr FileKind kTrainImages{"train-images", "idx3", "training images"};
constexpr FileKind kTrainLabels{"train-labels", "idx1", "training labels"};
constexpr FileKind kTestImages{"t10k-images", "idx3", "test images"};
constexpr FileKind kTestLabels{"t10k-labels", "idx1", "test labels"};

// Finds the file for `kind` in `dir`: the first existing name in order of preference.
Result<std::string> FindFile(const fs::path& dir, const FileKind& kind) {
  const std::string stem = kind.stem;
  const std::string idx = kind.idx;
  const std::array<std::string, 4> names = {
      stem + "-" + idx + "-ubyte",
      stem + "-" + idx + "-ubyte.gz",
      stem + "." + idx + "-ubyte",
      stem + "." + idx + "-ubyte.gz",
  };
  for (const std::string& name : names) {
    std::error_code ec;
    const fs::path path = dir / name;
    if (fs::is_regular_file(path, ec)) return path.string();
  }
  return Status::NotFound(dir.string() + ": no " + kind.what + " file; looked for " + names[0] +
                          ", " + names[1] + ", " + names[2] + ", " + names[3]);
}

// One images file (rank 3: N, H, W) by its header and its labels file (rank 1: N), read whole:
// labels are small, and the class count needs them.
struct FilePair {
  std::string images_path;
  std::vector<int64_t> image_dims;
  IdxArray labels;
};

// Finds and reads the pair for `images_kind` and `labels_kind` and checks that they agree.
Status ReadPair(const fs::path& dir, const FileKind& images_kind, const FileKind& labels_kind,
                FilePair* pair) {
  Result<std::string> ip = FindFile(dir, images_kind);
  if (!ip.ok()) return ip.status();
  Result<std::string> lp = FindFile(dir, labels_kind);
  if (!lp.ok()) return lp.status();
  pair->images_path = *ip;

  Result<std::vector<int64_t>> dims = ReadIdxDims(*ip);
  if (!dims.ok()) return dims.status();
  if (dims->size() != 3) {
    return Status::InvalidArgument(*ip + ": " + images_kind.what +
                                   " must have rank 3 (count, height, width), got dimensions " +
                                   Shape(*dims).ToString());
  }
  Result<IdxArray> lb = ReadIdxFile(*lp);
  if (!lb.ok()) return lb.status();
  if (lb->dims.size() != 1) {
    return Status::InvalidArgument(*lp + ": " + labels_kind.what +
                                   " must have rank 1 (count), got dimensions " +
                                   Shape(lb->dims).ToString());
  }
  if ((*dims)[0] != lb->dims[0]) {
    return Status::InvalidArgument("example counts differ: " + *ip + " has " +
                                   std::to_string((*dims)[0]) + " images but " + *lp + " has " +
                                   std::to_string(lb->dims[0]) + " labels");
  }
  pair->image_dims = std::move(*dims);
  pair->labels = std::move(*lb);
  return Status::Ok();
}

// The first `rows` images of `pair`. All of them are read and verified whole (to the gzip
// stream's checksum and the file's last byte); fewer -- a job with max_train_examples or
// max_test_examples -- are read up to the last row asked for, and the rest of the file is neither
// decompressed nor verified (a 3,500-example job on Fashion-MNIST decodes 2.7 MB, not 47). The
// images must still have the dimensions their header had.
Result<IdxArray> ReadImages(const FilePair& pair, int64_t rows) {
  const bool whole = rows >= pair.image_dims[0];
  Result<IdxArray> images =
      whole ? ReadIdxFile(pair.images_path) : ReadIdxRows(pair.images_path, 0, rows);
  std::vector<int64_t> expected = pair.image_dims;
  if (!whole) expected[0] = rows;
  if (images.ok() && images->dims != expected) {
    return Status::DataLoss(pair.images_path + ": changed while being read (dimensions " +
                            Shape(expected).ToString() + ", then " +
                            Shape(images->dims).ToString() + ")");
  }
  return images;
}

int MaxLabel(const IdxArray& labels) {
  const auto it = std::max_element(labels.data.begin(), labels.data.end());
  return it == labels.data.end() ? -1 : *it;
}

// Fills `split` with examples [begin, begin + count) of the images and labels arrays.
void FillSplit(const IdxArray& images, const IdxArray& labels, int64_t begin, int64_t count,
               Split* split) {
  const int64_t height = images.dims[1];
  const int64_t width = images.dims[2];
  const int64_t per_example = height * width;
  // pixel / 255 by table: exact division, and no per-pixel int-to-float conversion.
  std::array<float, 256> scale;
  for (int p = 0; p < 256; ++p) scale[static_cast<size_t>(p)] = static_cast<float>(p) / 255.0f;

  split->images.Resize(Shape{count, height, width, 1});
  const uint8_t* src = images.data.data() + begin * per_example;
  float* dst = split->images.data();
  const int64_t n = count * per_example;
  for (int64_t i = 0; i < n; ++i) dst[i] = scale[src[i]];

  split->labels.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    split->labels[static_cast<size_t>(i)] = labels.data[static_cast<size_t>(begin + i)];
  }
}

// What both ProbeMnistDirectory and LoadMnistDirectory check and work out from the files' headers
// and labels.
struct Directory {
  FilePair train, test;
  DatasetInfo info;
};

Status OpenDirectory(const std::string& dir, DatasetOptions options, Directory* d) {
  TRAININGD_RETURN_IF_ERROR(CheckDatasetOptions(options));
  if (options.validation_size == kAutoValidationSize) options.validation_size = 5000;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status::NotFound(dir + ": dataset directory does not exist or is not a directory");
  }
  TRAININGD_RETURN_IF_ERROR(ReadPair(dir, kTrainImages, kTrainLabels, &d->train));
  TRAININGD_RETURN_IF_ERROR(ReadPair(dir, kTestImages, kTestLabels, &d->test));
  const std::vector<int64_t>& train = d->train.image_dims;
  const std::vector<int64_t>& test = d->test.image_dims;
  if (train[1] != test[1] || train[2] != test[2]) {
    return Status::InvalidArgument("image sizes differ: " + d->train.images_path + " has " +
                                   std::to_string(train[1]) + "x" + std::to_string(train[2]) +
                                   " images but " + d->test.images_path + " has " +
                                   std::to_string(test[1]) + "x" + std::to_string(test[2]));
  }
  const int64_t num_train = train[0];
  if (options.validation_size >= num_train) {
    return Status::InvalidArgument("validation_size = " + std::to_string(options.validation_size) +
                                   " must be less than the " + std::to_string(num_train) +
                                   " training examples in " + d->train.images_path);
  }
  DatasetInfo& info = d->info;
  info.example_shape = Shape{train[1], train[2], 1};
  // Labels are bytes, so num_classes <= kMaxClasses always holds.
  info.num_classes = std::max(MaxLabel(d->train.labels), MaxLabel(d->test.labels)) + 1;
  info.file_train_examples = num_train;
  info.file_test_examples = test[0];
  info.validation_examples = options.validation_size;
  info.train_examples = num_train - options.validation_size;
  if (options.max_train_examples > 0) {
    info.train_examples = std::min(info.train_examples, options.max_train_examples);
  }
  info.test_examples = test[0];
  if (options.max_test_examples > 0) {
    info.test_examples = std::min(info.test_examples, options.max_test_examples);
  }
  return Status::Ok();
}

}  // namespace

Status CheckDatasetOptions(const DatasetOptions& options) {
  if (options.validation_size < 0 && options.validation_size != kAutoValidationSize) {
    return Status::InvalidArgument("validation_size must be >= 0, got " +
                                   std::to_string(options.validation_size));
  }
  if (options.max_train_examples < 0) {
    return Status::InvalidArgument("max_train_examples must be >= 0 (0 = all), got " +
                                   std::to_string(options.max_train_examples));
  }
  if (options.max_test_examples < 0) {
    return Status::InvalidArgument("max_test_examples must be >= 0 (0 = all), got " +
                                   std::to_string(options.max_test_examples));
  }
  return Status::Ok();
}

const char* TaskName(Task t) { return t == Task::kRegression ? "regression" : "classification"; }

const char* PreprocessingName(Preprocessing p) {
  switch (p) {
    case Preprocessing::kNone:
      return "none";
    case Preprocessing::kScale255:
      return "scale_255";
    case Preprocessing::kStandard:
      return "standard";
    case Preprocessing::kPerChannel:
      return "per_channel";
  }
  return "none";
}

const char* DatasetFormatName(DatasetSource::Format f) {
  switch (f) {
    case DatasetSource::Format::kIdx:
      return "idx";
    case DatasetSource::Format::kNpz:
      return "npz";
    case DatasetSource::Format::kCsv:
      return "csv";
  }
  return "idx";
}

int64_t DatasetInfo::LoadedBytes() const {
  const int64_t examples = train_examples + validation_examples + test_examples;
  return examples *
         (example_shape.num_elements() * int64_t{sizeof(float)} + int64_t{sizeof(int32_t)});
}

int64_t DatasetInfo::PeakLoadBytes() const {
  if (format == DatasetSource::Format::kNpz) {
    // LoadNpz allocates the splits, then decodes the file into them a chunk at a time (a few
    // MiB of buffers and zlib's window); standardizing adds two doubles per feature.
    constexpr int64_t kNpzBuffers = int64_t{8} << 20;
    const int64_t stats = preprocessing == Preprocessing::kStandard
                              ? example_shape.num_elements() * int64_t{2 * sizeof(double)}
                              : 0;
    return LoadedBytes() + kNpzBuffers + stats;
  }
  if (format == DatasetSource::Format::kCsv) {
    // LoadCsv counts the rows first, then parses each straight into its split.
    return LoadedBytes() + CsvLoadOverheadBytes(example_shape.num_elements());
  }
  // LoadMnistDirectory reads the training images, then the test images, then fills the float
  // splits from them. A file read whole goes into a buffer that grows with the data that arrives
  // (ReadIdx), so while it is read it may briefly hold its old and new storage: up to twice the
  // file's bytes; the first rows of a file only go into one buffer of their size (ReadIdxRows),
  // counted twice here all the same. Once read, only the bytes written are resident. The labels
  // are read first and kept throughout.
  const int64_t pixels = example_shape.num_elements();
  const int64_t train =
      std::min(file_train_examples, validation_examples + train_examples) * pixels;
  const int64_t test = test_examples * pixels;
  const int64_t labels = file_train_examples + file_test_examples;
  return labels + std::max({2 * train, train + 2 * test, LoadedBytes() + train + test});
}

Result<DatasetInfo> ProbeMnistDirectory(const std::string& dir, const DatasetOptions& options) {
  Directory d;
  TRAININGD_RETURN_IF_ERROR(OpenDirectory(dir, options, &d));
  return d.info;
}

Result<Datasets> LoadMnistDirectory(const std::string& dir, const DatasetOptions& options) {
  Directory d;
  TRAININGD_RETURN_IF_ERROR(OpenDirectory(dir, options, &d));
  const DatasetInfo& info = d.info;
  Result<IdxArray> train_images =
      ReadImages(d.train, info.validation_examples + info.train_examples);
  if (!train_images.ok()) return train_images.status();
  Result<IdxArray> test_images = ReadImages(d.test, info.test_examples);
  if (!test_images.ok()) return test_images.status();

  Datasets ds;
  ds.num_classes = info.num_classes;
  FillSplit(*train_images, d.train.labels, 0, info.validation_examples, &ds.validation);
  FillSplit(*train_images, d.train.labels, info.validation_examples, info.train_examples,
            &ds.train);
  FillSplit(*test_images, d.test.labels, 0, info.test_examples, &ds.test);
  return ds;
}

Result<DatasetInfo> ProbeDataset(const DatasetSource& source, const DatasetOptions& options,
                                 ProbeDepth depth) {
  switch (source.format) {
    case DatasetSource::Format::kNpz:
      return ProbeNpz(source, options, depth);
    case DatasetSource::Format::kCsv:
      return ProbeCsv(source, options, depth);
    case DatasetSource::Format::kIdx:
      break;
  }
  // An IDX directory's probe reads the labels whole, which is all kFull would add a check of:
  // the images are bytes, every value is valid.
  return ProbeMnistDirectory(source.path, options);
}

Result<Datasets> LoadDataset(const DatasetSource& source, const DatasetOptions& options) {
  switch (source.format) {
    case DatasetSource::Format::kNpz:
      return LoadNpz(source, options);
    case DatasetSource::Format::kCsv:
      return LoadCsv(source, options);
    case DatasetSource::Format::kIdx:
      break;
  }
  return LoadMnistDirectory(source.path, options);
}

Status NormalizePerChannel(Datasets* data) {
  const Shape example = data->train.example_shape();
  if (data->preprocessing != Preprocessing::kScale255 || example.rank() != 3) {
    return Status::InvalidArgument(
        std::string("normalize: per_channel applies to uint8 images [H, W, C]; these examples "
                    "are ") +
        example.ToString() + " with preprocessing " + PreprocessingName(data->preprocessing));
  }
  const auto channels = static_cast<size_t>(example[2]);
  // Sums in double, in example order: the same statistics on every run and every rank.
  std::vector<double> sum(channels, 0.0), squares(channels, 0.0);
  const float* x = data->train.images.data();
  const int64_t values = data->train.images.size();
  for (int64_t i = 0; i < values; ++i) sum[static_cast<size_t>(i) % channels] += x[i];
  const double count = static_cast<double>(values / static_cast<int64_t>(channels));
  data->feature_mean.assign(channels, 0.0f);
  data->feature_std.assign(channels, 1.0f);
  for (size_t k = 0; k < channels; ++k) {
    data->feature_mean[k] = count > 0 ? static_cast<float>(sum[k] / count) : 0.0f;
  }
  for (int64_t i = 0; i < values; ++i) {
    const size_t k = static_cast<size_t>(i) % channels;
    const double d = double{x[i]} - data->feature_mean[k];
    squares[k] += d * d;
  }
  for (size_t k = 0; k < channels; ++k) {
    const double sd = count > 0 ? std::sqrt(squares[k] / count) : 0.0;
    // A constant channel maps to 0, as a constant table feature does.
    data->feature_std[k] = sd > 0 ? static_cast<float>(sd) : 1.0f;
  }
  for (Split* s : {&data->train, &data->validation, &data->test}) {
    float* v = s->images.data();
    const int64_t n = s->images.size();
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(i) % channels;
      v[i] = (v[i] - data->feature_mean[k]) / data->feature_std[k];
    }
  }
  data->preprocessing = Preprocessing::kPerChannel;
  return Status::Ok();
}

namespace {

// The checks every format's ReadTestExamples makes of the range.
Status CheckTestRange(int64_t offset, int64_t limit, int64_t split_examples) {
  if (offset < 0 || offset > split_examples) {
    return Status::InvalidArgument("offset: must be from 0 to " + std::to_string(split_examples) +
                                   ", the test examples");
  }
  if (limit < 0) return Status::InvalidArgument("limit: must not be negative");
  return Status::Ok();
}

Result<RawExamples> ReadIdxTestExamples(const std::string& dir, int64_t offset, int64_t limit) {
  FilePair test;
  TRAININGD_RETURN_IF_ERROR(ReadPair(dir, kTestImages, kTestLabels, &test));
  RawExamples out;
  out.example_shape = Shape{test.image_dims[1], test.image_dims[2], 1};
  out.split_examples = test.image_dims[0];
  out.first = offset;
  TRAININGD_RETURN_IF_ERROR(CheckTestRange(offset, limit, out.split_examples));
  Result<IdxArray> images = ReadIdxRows(test.images_path, offset, limit);
  if (!images.ok()) return images.status();
  out.values.assign(images->data.begin(), images->data.end());
  const int64_t count = images->dims[0];
  out.labels.assign(test.labels.data.begin() + offset, test.labels.data.begin() + offset + count);
  return out;
}

Result<RawExamples> ReadCsvTestExamples(DatasetSource source, int64_t offset, int64_t limit) {
  DatasetOptions options;
  options.validation_size = kAutoValidationSize;
  // The values as in the file: a missing one stays NaN, for the model to fill in.
  Result<Datasets> ds = LoadCsv(source, options, /*raw=*/true);
  if (!ds.ok()) return ds.status();
  const Split& test = ds->test;
  RawExamples out;
  // A row's numbers, then its categorical codes (every value a level: raw), which become the
  // values again.
  const auto columns = static_cast<int64_t>(ds->categorical.size());
  const int64_t width = test.example_shape().num_elements(), numbers = width - columns;
  out.example_shape = Shape{numbers};
  out.split_examples = test.size();
  out.first = offset;
  out.feature_names = ds->feature_names;
  for (const CategoricalFeature& c : ds->categorical) out.categorical_names.push_back(c.name);
  TRAININGD_RETURN_IF_ERROR(CheckTestRange(offset, limit, out.split_examples));
  const int64_t count = std::min(limit, out.split_examples - offset);
  for (int64_t i = offset; i < offset + count; ++i) {
    const float* row = test.images.data() + i * width;
    out.values.insert(out.values.end(), row, row + numbers);
    for (int64_t c = 0; c < columns; ++c) {
      const auto code = static_cast<int64_t>(row[numbers + c]);
      const std::vector<std::string>& levels = ds->categorical[static_cast<size_t>(c)].levels;
      out.categorical.push_back(
          code >= CategoricalFeature::kFirstLevel
              ? levels[static_cast<size_t>(code - CategoricalFeature::kFirstLevel)]
              : std::string());
    }
  }
  if (!test.labels.empty()) {
    out.labels.assign(test.labels.begin() + offset, test.labels.begin() + offset + count);
  }
  if (!test.targets.empty()) {
    out.targets.assign(test.targets.begin() + offset, test.targets.begin() + offset + count);
  }
  return out;
}

}  // namespace

Result<RawExamples> ReadTestExamples(const DatasetSource& source, int64_t offset, int64_t limit) {
  switch (source.format) {
    case DatasetSource::Format::kNpz:
      return ReadNpzTestExamples(source, offset, limit);
    case DatasetSource::Format::kCsv:
      return ReadCsvTestExamples(source, offset, limit);
    case DatasetSource::Format::kIdx:
      break;
  }
  return ReadIdxTestExamples(source.path, offset, limit);
}

}  // namespace trainingd::engine
