// CSV tables as datasets (docs/data.md): a header row, numeric feature columns and one label
// column (DatasetSource::label_column). Labels are integers in [0, kMaxClasses) or strings;
// strings map to class ids in sorted (byte) order and the names are kept (class_names). The test
// split is a second file, or `test_fraction` of the rows split off with `split_seed`.
//
// Thread-safe: no state between calls.
#pragma once

#include <string>
#include <string_view>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"

namespace trainingd::engine {

// ProbeDataset and LoadDataset for a source of Format::kCsv.
Result<DatasetInfo> ProbeCsv(const DatasetSource& source, const DatasetOptions& options,
                             ProbeDepth depth);
Result<Datasets> LoadCsv(const DatasetSource& source, const DatasetOptions& options);

// LoadCsv's parse of a training file already in memory, the test split cut off by
// source.test_fraction (source.path stands for the file in messages): what the CSV fuzzer calls.
Result<Datasets> ParseCsv(std::string_view bytes, const DatasetSource& source,
                          const DatasetOptions& options);

}  // namespace trainingd::engine
