// CSV tables as datasets (docs/data.md, "CSV tables"): a header row, numeric feature columns and
// one label column (DatasetSource::label_column). Examples are rows [F], F = the feature columns
// in header order, float32.
//
// The file: RFC 4180 (commas; fields may be double-quoted, "" is a quote inside one, and a quoted
// field may span lines); LF or CRLF line ends; a UTF-8 byte order mark at the start is skipped;
// empty lines are skipped; the last line needs no line end. The whole file must be valid UTF-8.
// Spaces and tabs around a field are not part of it (inside quotes they are). Column names must be
// non-empty and distinct. A feature is a decimal number (std::from_chars: "3", "-0.5", "1e-3",
// "+2"), finite ("nan" and "inf" are refused) and within float32's range.
//
// Labels: when every label (of the training and test files) is an optional '-' and digits, they
// are class ids and must be in [0, kMaxClasses) ("-1" is an error); num_classes is the largest
// plus one. Otherwise every label is a name: the distinct names, sorted by their bytes, are the
// classes 0..k-1 (class_names), at most kMaxClasses of them, each at most 256 bytes; with a test
// file the classes are those of both files, so a name only the test file has is a class too.
// An empty label is an error.
//
// Splits: with source.test_path, the test split is that file, which must have the same header
// (the same columns in the same order). Otherwise source.test_fraction (in (0, 1)) of the N rows
// are test rows: round(test_fraction * N), at least 1 and at most N - 1, chosen by selection
// sampling over an Rng seeded with source.split_seed (the same rows for the same file and seed on
// every machine); each split keeps file order. Validation is the first validation_size training
// rows (kAutoValidationSize: a tenth of them, rounded down), train the rest; max_*_examples as
// for IDX. DatasetInfo's file_train_examples and file_test_examples are the rows on each side of
// the test split, before validation and the options.
//
// source.standardize: Preprocessing::kStandard with the mean and population standard deviation
// of each feature over the train split (after validation is taken off, before
// max_train_examples), in double and row order over the float32 values; a constant feature's std
// is 1. Every split becomes (x - mean) / std with the reported float mean and std.
//
// Reading is streamed in chunks in memory bounded by the longest row, whatever the file's size:
// a first pass checks the rows' field counts and the labels and counts the rows, a second parses
// every feature (and computes the statistics), storing them straight into the splits for LoadCsv.
//
// Errors name the file, the line (a row's first line) and the column:
//   NotFound         a file does not exist.
//   InvalidArgument  an option out of range; the file: not UTF-8, a malformed quote, a row with a
//                    different number of fields than the header ("train.csv: line 17: 5 fields,
//                    the header has 4"), a row over 1 MiB or 65536 fields, a duplicate or empty
//                    column name, no label column (the message lists the columns), no feature
//                    column, no rows, a bad feature or label, a test header that differs.
//   DataLoss         a file changed between the passes.
//   IoError          a file cannot be opened or read.
//
// Thread-safe: no state between calls.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"

namespace trainingd::engine {

// ProbeDataset and LoadDataset for a source of Format::kCsv. ProbeCsv with kHeaders makes the
// first pass only (no features parsed, no statistics); with kFull both, and it reports exactly
// what LoadCsv does, statistics included, with the same errors.
Result<DatasetInfo> ProbeCsv(const DatasetSource& source, const DatasetOptions& options,
                             ProbeDepth depth);
// With `raw`, a missing value stays NaN (no imputation), nothing is standardized, and a
// categorical column's levels are every value of the file (none is unknown), so each code gives
// back the value as in the file: what ReadTestExamples serves.
Result<Datasets> LoadCsv(const DatasetSource& source, const DatasetOptions& options,
                         bool raw = false);

// LoadCsv's parse of a training file already in memory, the test split cut off by
// source.test_fraction (source.path stands for the file in messages; test_path is not read):
// what the CSV fuzzer calls.
Result<Datasets> ParseCsv(std::string_view bytes, const DatasetSource& source,
                          const DatasetOptions& options);

// What LoadCsv holds besides the Datasets it returns, at most (DatasetInfo::PeakLoadBytes).
int64_t CsvLoadOverheadBytes(int64_t num_features);

}  // namespace trainingd::engine
