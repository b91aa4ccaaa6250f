// NumPy .npz datasets in the layout of Keras's mnist.npz: arrays x_train, y_train, x_test,
// y_test, and optionally x_val, y_val (docs/data.md).
//
// The file is a zip archive of .npy files, stored (np.savez) or deflated (np.savez_compressed),
// zip64 included; .npy format versions 1.0 to 3.0, C order only. x arrays: uint8, int8, int16,
// uint16, float32 or float64 (converted to float32); shapes [N, H, W] (one channel),
// [N, H, W, C] with C in 1..4, or [N, F] (a table). y arrays: any integer type, shape [N], values
// in [0, kMaxClasses). uint8 x arrays are scaled to [0, 1] (Preprocessing::kScale255); others
// are used as they are, or standardized (tables, DatasetSource::standardize).
//
// Thread-safe: no state between calls.
#pragma once

#include <string>
#include <string_view>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"

namespace trainingd::engine {

// ProbeDataset and LoadDataset for a source of Format::kNpz.
Result<DatasetInfo> ProbeNpz(const DatasetSource& source, const DatasetOptions& options,
                             ProbeDepth depth);
Result<Datasets> LoadNpz(const DatasetSource& source, const DatasetOptions& options);

// LoadNpz's parse of a whole file already in memory (`name` stands for the path in messages):
// what the npz fuzzer calls.
Result<Datasets> ParseNpz(std::string_view bytes, const std::string& name,
                          const DatasetOptions& options, bool standardize);

}  // namespace trainingd::engine
