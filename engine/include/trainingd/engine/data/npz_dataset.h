// NumPy .npz datasets in the layout of Keras's mnist.npz: arrays x_train, y_train, x_test,
// y_test, and optionally x_val, y_val (both or neither) (docs/data.md).
//
// The file is a zip archive of .npy files, stored (np.savez) or deflated (np.savez_compressed),
// zip64 included, read through its central directory; every member's CRC-32 is verified. Any
// member besides those six is an error naming it (a stray array is more likely a mistake than
// something to ignore). .npy format versions 1.0 to 3.0, C order only; the header dict is parsed,
// never evaluated, and object (pickled) arrays are refused.
//
// x arrays: uint8, int8, int16, uint16, float32 or float64 (either byte order; converted to
// float32), one dtype for all x arrays of a file; shapes [N, H, W] (examples [H, W, 1]),
// [N, H, W, C] with C in 1..4, or [N, F] (a table: examples [F]), one example shape for all; every
// value finite. y arrays: any integer type, shape [N] matching its x array, values in
// [0, kMaxClasses); num_classes is the largest label of all y arrays plus one. At most
// kMaxIdxElements elements in all arrays together.
//
// uint8 x arrays are scaled to [0, 1] (Preprocessing::kScale255), others used as they are
// (kNone), unless DatasetSource::standardize: then a table's features are standardized with the
// train split's mean and population standard deviation (kStandard; a uint8 table from its raw
// values), and images are refused.
//
// Splits: validation is x_val when the file has one (DatasetOptions::validation_size must then
// be kAutoValidationSize or 0, none), else the first validation_size examples of x_train
// (kAutoValidationSize: a tenth, rounded down); train is the rest of x_train; test is x_test;
// max_train_examples and max_test_examples as for IDX (LoadMnistDirectory).
//
// Errors, each naming the file and the array ("f.npz: y_train.npy: 59999 labels for 60000 images
// in x_train.npy"):
//   NotFound         the file does not exist.
//   IoError          it cannot be opened or read.
//   InvalidArgument  not a zip archive; missing, unknown or duplicated members; a malformed or
//                    unsupported .npy header, dtype or shape; arrays that disagree (counts,
//                    example shapes, dtypes); a label out of range or a non-finite value (with
//                    its index); standardize on images; options out of range.
//   DataLoss         a truncated or corrupt archive (CRC, deflate data, records past the end);
//                    a .npy header whose shape does not account for exactly its member's bytes.
//
// Memory: sizes are checked against the file before anything is allocated (zip_reader.h); a
// probe never holds an array, a load allocates the splits and streams the values into them.
//
// Thread-safe: no state between calls.
#pragma once

#include <string>
#include <string_view>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"

namespace trainingd::engine {

// ProbeDataset and LoadDataset for a source of Format::kNpz. kHeaders reads the central
// directory, the .npy headers and the labels; kFull also decodes and checks every value (and
// computes kStandard's statistics) in chunks, in memory that does not grow with the file.
Result<DatasetInfo> ProbeNpz(const DatasetSource& source, const DatasetOptions& options,
                             ProbeDepth depth);
Result<Datasets> LoadNpz(const DatasetSource& source, const DatasetOptions& options);

// ReadTestExamples for an npz: examples [offset, offset + limit) of x_test and y_test, as stored
// (converted to float32). The archive's headers and labels are checked as a probe checks them.
Result<RawExamples> ReadNpzTestExamples(const DatasetSource& source, int64_t offset, int64_t limit);

// LoadNpz's parse of a whole file already in memory (`name` stands for the path in messages):
// what the npz fuzzer calls.
Result<Datasets> ParseNpz(std::string_view bytes, const std::string& name,
                          const DatasetOptions& options, bool standardize);

}  // namespace trainingd::engine
