// Datasets: image classification data held in memory, split into train, validation and test.
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
#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine {

// The largest number of classes a dataset may have. MNIST-format labels are bytes, so 256.
inline constexpr int kMaxClasses = 256;

// One split of a dataset: N examples, in file order.
struct Split {
  Tensor images;                // [N, H, W, 1], NHWC floats in [0, 1]
  std::vector<int32_t> labels;  // N class ids in [0, num_classes)

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  // The shape of one example, [H, W, 1]; empty for a default-constructed split.
  Shape example_shape() const { return images.shape().drop_front(); }
};

struct Datasets {
  Split train;
  Split validation;  // may be empty (validation_size = 0)
  Split test;
  int num_classes = 0;  // max label over the training and test files, plus one
};

struct DatasetOptions {
  // Examples taken from the start of the training file for validation; the rest are for training.
  // Must be in [0, number of training examples). Default 5000, as in TensorFlow's tutorials.
  int64_t validation_size = 5000;
  // When > 0, keep only the first this many training examples (applied after the validation
  // split). Default 0: keep all. Meant for fast tests and smoke runs.
  int64_t max_train_examples = 0;
  // When > 0, keep only the first this many test examples. Default 0: keep all.
  int64_t max_test_examples = 0;
};

// What a dataset directory holds under some DatasetOptions, known from the IDX headers and the
// label files without loading an image (ProbeMnistDirectory).
struct DatasetInfo {
  Shape example_shape;  // [H, W, 1]
  int num_classes = 0;
  int64_t train_examples = 0;  // in each split, after the options
  int64_t validation_examples = 0;
  int64_t test_examples = 0;
  int64_t file_train_examples = 0;  // in the training and test files
  int64_t file_test_examples = 0;

  // The bytes of the Datasets LoadMnistDirectory returns.
  int64_t LoadedBytes() const;
  // The most LoadMnistDirectory holds at once while it loads: the splits and the raw files.
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
// not depend on the options. Errors, each naming the directory or file concerned:
//   NotFound         `dir` is not a directory, or one of the four files is missing (the message
//                    lists the names tried).
//   InvalidArgument  options out of range (the message names the option and the valid range);
//                    images that are not rank 3 (N, H, W) or labels that are not rank 1; image and
//                    label files that disagree on the number of examples (names both files and both
//                    counts); train and test images of different sizes.
//   anything ReadIdxFile() returns for a malformed file (DataLoss, InvalidArgument, IoError).
Result<Datasets> LoadMnistDirectory(const std::string& dir, const DatasetOptions& options = {});

}  // namespace trainingd::engine
