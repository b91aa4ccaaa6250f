// The JSON of a table's columns (engine/data/table_columns.h), shared by the dataset record
// (its upload's options and its column summaries) and the job spec's dataset (the options):
//   options: {"categorical": [names], "number": [names], "ignore": [names],
//             "missing_values": [markers], "impute": "mean" | "median", "max_levels": N,
//             "missing_indicator": [names] or ["*"]}
//   summary: {"name", "type", "typed_by_user", "missing", "present",
//             number: "mean", "std", "min", "max" (null when no value is present),
//             categorical: "levels", "top_levels": [{"value", "count"}],
//             "dropped" and "note" when they say something,
//             "missing_indicator": true for a number column with a "was missing" feature}
#pragma once

#include <string>

#include "trainingd/api/strict_json.h"
#include "trainingd/engine/data/table_columns.h"

namespace trainingd::api {

// Only the fields that differ from the defaults; an empty object for the defaults.
strict_json::json ColumnOptionsToJson(const engine::TableColumnOptions& o);
// Strict: unknown keys, a name that is not a string, an impute other than mean or median, a
// max_levels outside [1, kMaxMaxLevels] are InvalidArgument naming `path` and the member.
engine::Status ColumnOptionsFromJson(const strict_json::json& v, const std::string& path,
                                     engine::TableColumnOptions* out);

// With `numbers`, the label column's statistics too (labels that are numbers: a regression
// job's targets).
strict_json::json ColumnSummaryToJson(const engine::ColumnSummary& c, bool numbers = false);
// The record's own summaries read back (json exceptions are the caller's).
engine::ColumnSummary ColumnSummaryFromJson(const strict_json::json& v);

}  // namespace trainingd::api
