// The JSON of datasets: the API's answers (docs/openapi.yaml, Dataset) and the record the daemon
// keeps beside each upload, which is the same object.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string_view>
#include <vector>

#include "trainingd/api/dataset_service.h"
#include "trainingd/engine/base/status.h"

namespace trainingd::api {

// {"name","format","read_only","sha256","bytes","example_shape","num_classes","class_names",
//  "splits":{"train","validation","test"},"element_type",
//  "preprocessing":{"kind"[,"mean","std"]},"upload":{...} (uploads only),"created_at"}.
// class_names is always full ("0".."n-1" for integer labels); created_at is Unix seconds, null
// for an IDX directory.
nlohmann::json DatasetToJson(const DatasetRecord& d);
// {"datasets":[...]}.
nlohmann::json DatasetListToJson(const std::vector<DatasetRecord>& datasets);
// {"offset","total","examples":[{"index","label","class_name","shape","data":[...]}]}: data in
// raw units, whole numbers for uint8 data.
nlohmann::json DatasetExamplesToJson(const DatasetExamples& examples);
// DatasetToJson's text back (the record file of an upload); InvalidArgument naming the field.
engine::Result<DatasetRecord> DatasetFromJson(std::string_view text);

}  // namespace trainingd::api
