// Datasets: data held in memory, split into train, validation and test. Examples are images
// [H, W, C] (C = 1..4) or rows of a table [F]; labels are class ids (classification) or, for a
// table's regression job, numbers (targets).
//
// Three formats (docs/data.md): MNIST-format IDX directories (below), NumPy .npz files
// (npz_dataset.h) and CSV tables (csv_dataset.h). ProbeDataset and LoadDataset take any of them.
//
// LoadMnistDirectory() reads any directory laid out like MNIST (MNIST, Fashion-MNIST, KMNIST, ...):
// four IDX files, raw or gzip-compressed. Images become floats in [0, 1] (pixel / 255) in NHWC
// layout with one channel; labels become int32 class ids. Following TensorFlow's
// mnist.read_data_sets, the validation split is the first `validation_size` examples of the
// training file and the train split is the rest, so the split is the same on every run.
//
// A loaded Datasets is immutable in practice and may be read from several threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/table_columns.h"
#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

// The largest number of classes a dataset may have. MNIST-format labels are bytes, so 256.
inline constexpr int kMaxClasses = 256;

// How a file's values become the floats a model sees. Recorded with the dataset, and later with
// the model (an exported model applies it inside its graph).
enum class Preprocessing {
  kNone,      // float data as is
  kScale255,  // uint8 images: value / 255, into [0, 1]
  kStandard,  // tables: (value - mean) / std per feature, both of the train split
  // uint8 images: (value / 255 - mean) / std per channel, both of the train split's value / 255
  // (the job spec's dataset.normalize "per_channel", NormalizePerChannel).
  kPerChannel,
};
// "none", "scale_255", "standard", "per_channel"
const char* PreprocessingName(Preprocessing p);

// What a job learns to predict from a dataset's labels (the job spec's `task`).
enum class Task {
  kClassification,  // labels are classes: ids, or names (a CSV's)
  kRegression,      // a CSV's label column read as numbers, the targets
};
const char* TaskName(Task t);  // "classification", "regression"

// How a CSV's label column is read: as classes, as numbers, or (an upload, which serves jobs of
// either task) as whichever of the two its values allow, classes when both do.
enum class LabelUse { kClasses, kNumbers, kClassesOrNumbers };

// One split of a dataset: N examples, in file order.
struct Split {
  Tensor images;                // [N, H, W, C] NHWC or [N, F], after preprocessing
  std::vector<int32_t> labels;  // classification: N class ids in [0, num_classes); else empty
  // Regression: N targets as in the file (float32, finite); empty for classification.
  std::vector<float> targets;
  // N sample weights (a CSV's weight column: finite, >= 0); empty = every example weighs 1.
  std::vector<float> weights;

  int64_t size() const {
    return static_cast<int64_t>(targets.empty() ? labels.size() : targets.size());
  }
  // The shape of one example, [H, W, C] or [F]; empty for a default-constructed split.
  Shape example_shape() const { return images.shape().drop_front(); }
};

struct Datasets {
  Split train;
  Split validation;  // may be empty (validation_size = 0)
  Split test;
  int num_classes = 0;  // max label over the training and test files, plus one; 1 for regression
  // Names of the classes when the file has them (CSV string labels, sorted); empty = "0".."n-1".
  std::vector<std::string> class_names;
  Task task = Task::kClassification;
  // Regression: the train split's targets' mean and population standard deviation (1 when they
  // are constant), in double over the float targets in row order: a model learns the
  // standardized target (y - mean) / std and predicts mean + std * output, in float.
  float target_mean = 0, target_std = 1;
  Preprocessing preprocessing = Preprocessing::kScale255;
  // kStandard: per feature, the train split's mean and standard deviation (a constant feature's
  // is 1, so it maps to 0). kPerChannel: the same per channel. Empty otherwise.
  std::vector<float> feature_mean, feature_std;
  // Tables: the name of each feature (a CSV's number columns that are features, in header order;
  // an npz's none), and the value a missing feature (NaN in the file) became in every split: the
  // train split's mean or median of its present values (CSV only; empty for a table without
  // missing values handling, npz).
  std::vector<std::string> feature_names;
  std::vector<float> feature_impute;
  // A CSV's number features with a "was missing" indicator (TableColumnOptions::
  // missing_indicator), named as in feature_names and in its order: a row's feature_names.size()
  // numbers are followed by missing_indicators.size() values, 1 where that feature was missing
  // in the file (before imputation), else 0; neither imputed nor standardized.
  std::vector<std::string> missing_indicators;
  // A CSV's categorical features (table_columns.h), in header order: the last
  // categorical.size() values of a row are their codes, after the numbers and the indicators.
  std::vector<CategoricalFeature> categorical;
};

// Where a dataset's files are and how to read them: what the format needs besides the job's
// DatasetOptions. For IDX, `path` is the directory; for npz the file; for CSV the training file
// (and `test_path` the test file, or empty to split `test_fraction` off with `split_seed`).
struct DatasetSource {
  enum class Format { kIdx, kNpz, kCsv };
  Format format = Format::kIdx;
  std::string path;
  std::string test_path;                    // CSV only
  std::string label_column = "label";       // CSV only
  LabelUse label_use = LabelUse::kClasses;  // CSV only
  // CSV only: a number column read as each row's sample weight (finite, >= 0), not a feature;
  // empty = none.
  std::string weight_column;
  double test_fraction = 0.2;  // CSV without a test file: in (0, 1)
  uint64_t split_seed = 0;     // CSV without a test file
  bool standardize = false;    // tables ([F] examples) only: Preprocessing::kStandard
  TableColumnOptions columns;  // CSV only: the columns' types and missing values
};
const char* DatasetFormatName(DatasetSource::Format f);  // "idx", "npz", "csv"

// validation_size's "the dataset decides": 5000 for IDX (TensorFlow's tutorials); for npz and
// CSV, the file's own validation split (x_val, y_val) when it has one, else a tenth of the
// training examples.
inline constexpr int64_t kAutoValidationSize = -1;

struct DatasetOptions {
  // Examples taken from the start of the training file for validation; the rest are for training.
  // kAutoValidationSize, or in [0, number of training examples). Default 5000, as in
  // TensorFlow's tutorials. An npz file with x_val accepts only kAutoValidationSize and 0.
  int64_t validation_size = 5000;
  // When > 0, keep only the first this many training examples (applied after the validation
  // split). Default 0: keep all. Meant for fast tests and smoke runs.
  int64_t max_train_examples = 0;
  // When > 0, keep only the first this many test examples. Default 0: keep all.
  int64_t max_test_examples = 0;
};

// What a dataset holds under some DatasetOptions (ProbeDataset): for IDX known from the headers
// and the label files without loading an image.
struct DatasetInfo {
  DatasetSource::Format format = DatasetSource::Format::kIdx;  // how PeakLoadBytes reads
  Shape example_shape;                                         // [H, W, C] or [F]
  // 0 when the labels cannot be classes (LabelUse::kClassesOrNumbers: numbers that are not all
  // class ids, more than kMaxClasses of them); 1 for kNumbers.
  int num_classes = 0;
  std::vector<std::string> class_names;  // as Datasets::class_names
  // kClassesOrNumbers and kNumbers: every label is a finite number, so a regression job can read
  // them (ColumnSummary of the label then has their statistics).
  bool numeric_labels = false;
  // kClassesOrNumbers: why the labels cannot be classes (num_classes 0), or empty.
  std::string not_classes;
  Preprocessing preprocessing = Preprocessing::kScale255;
  std::vector<float> feature_mean, feature_std;  // kStandard only; filled by a kFull probe
  std::string element_type = "uint8";            // the file's element type: "uint8", "float32", ...
  int64_t train_examples = 0;                    // in each split, after the options
  int64_t validation_examples = 0;
  int64_t test_examples = 0;
  int64_t file_train_examples = 0;  // in the training and test files
  int64_t file_test_examples = 0;
  // CSV: every column of the header, typed (after the first pass), with what it holds (after a
  // kFull probe: its missing values, a number's statistics, a categorical column's levels).
  std::vector<ColumnSummary> columns;
  std::vector<std::string> feature_names;  // as Datasets::feature_names
  // As Datasets::categorical; a probe of a CSV with categorical columns reads it whole for them.
  std::vector<CategoricalFeature> categorical;

  // The bytes of the Datasets LoadDataset returns.
  int64_t LoadedBytes() const;
  // The most LoadDataset holds at once while it loads. IDX: the splits and the raw files. npz:
  // the splits, which the file's values stream into, and a few MiB of buffers. CSV: the splits
  // and the reader's bounded buffers (CsvLoadOverheadBytes).
  int64_t PeakLoadBytes() const;
};

// Checks `dir` and `options` exactly as LoadMnistDirectory does and with the same errors, reading
// only the images' IDX headers and the (small) label files: what admission needs to check and
// size a job before anything is loaded.
Result<DatasetInfo> ProbeMnistDirectory(const std::string& dir, const DatasetOptions& options = {});

// Loads train-images, train-labels, t10k-images and t10k-labels from `dir`. For each, the first of
// these names that exists is read (shown for train-images; likewise train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte):
//   train-images-idx3-ubyte, train-images-idx3-ubyte.gz,
//   train-images.idx3-ubyte, train-images.idx3-ubyte.gz
// Whether a file is gzip-compressed is decided by its content, not its name. num_classes is
// computed over the whole training and test files, before max_*_examples are applied, so it does
// not depend on the options. Only the images the splits take are read: with max_*_examples, a
// file is decompressed up to its last row used, and its rest is not verified. Errors, each
// naming the directory or file concerned:
//   NotFound         `dir` is not a directory, or one of the four files is missing (the message
//                    lists the names tried).
//   InvalidArgument  options out of range (the message names the option and the valid range);
//                    images that are not rank 3 (N, H, W) or labels that are not rank 1; image and
//                    label files that disagree on the number of examples (names both files and both
//                    counts); train and test images of different sizes.
//   anything ReadIdxFile() returns for a malformed file (DataLoss, InvalidArgument, IoError).
Result<Datasets> LoadMnistDirectory(const std::string& dir, const DatasetOptions& options = {});

// InvalidArgument naming the option when `options` are out of range whatever the data:
// validation_size below 0 (other than kAutoValidationSize), max_*_examples below 0. Every
// format's reader checks them first.
Status CheckDatasetOptions(const DatasetOptions& options);

// How much of a dataset ProbeDataset reads.
enum class ProbeDepth {
  // Headers and labels only (what admission needs; a few reads, whatever the data's size).
  kHeaders,
  // Every value, checked as LoadDataset would use it (finite features, labels in range, counts
  // that match), in bounded memory: what an upload is validated with before it is kept.
  kFull,
};

// Any format's probe and load; errors name the file and the array or column that is wrong
// ("y_train: 59999 labels for 60000 images").
Result<DatasetInfo> ProbeDataset(const DatasetSource& source, const DatasetOptions& options,
                                 ProbeDepth depth = ProbeDepth::kHeaders);
Result<Datasets> LoadDataset(const DatasetSource& source, const DatasetOptions& options);

// Preprocessing::kPerChannel: each channel's mean and population standard deviation over the
// train split's values (value / 255; a constant channel's deviation is 1), into feature_mean and
// feature_std, and every split's values become (value - mean) / std in float arithmetic, as
// TrainedModel::Predict and the ONNX export compute them from raw pixels. InvalidArgument
// "normalize: ..." unless the data is uint8 images (kScale255, [H, W, C] examples).
Status NormalizePerChannel(Datasets* data);

// Examples of a dataset's test split in its raw units: what an exported model and the model
// server take (uint8 pixels as 0..255, a table's values as in its file, never standardized).
struct RawExamples {
  Shape example_shape;          // [H, W, C] or [F]
  int64_t split_examples = 0;   // in the whole test split
  int64_t first = 0;            // the index of the first example here
  std::vector<float> values;    // size() * example_shape.num_elements(), row-major
  std::vector<int32_t> labels;  // class ids (classification)
  std::vector<float> targets;   // the label column's numbers (a CSV read for regression)
  // A CSV: its number columns' names (example_shape is [F] of them), and its categorical
  // columns' names with each example's values of them as in the file ("" where missing),
  // row-major, size() * categorical_names.size().
  std::vector<std::string> feature_names;
  std::vector<std::string> categorical_names;
  std::vector<std::string> categorical;
  int64_t size() const {
    return static_cast<int64_t>(targets.empty() ? labels.size() : targets.size());
  }
};

// Examples [offset, offset + limit) of the test split of `source` (fewer at its end; none when
// offset is the split's size), with the split as a job sees it with max_test_examples 0: IDX's
// t10k files, an npz's x_test, a CSV's test file or its test_fraction rows. IDX reads the
// labels and only the image bytes up to the last example; npz streams x_test and y_test in
// bounded memory; CSV loads the table (without standardizing), so its callers cache. Errors
// are the format's (ProbeDataset), and InvalidArgument "offset: ..." for an offset past the
// split or a negative one, "limit: ..." for a negative limit.
Result<RawExamples> ReadTestExamples(const DatasetSource& source, int64_t offset, int64_t limit);

}  // namespace trainingd::engine
