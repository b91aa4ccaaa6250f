// onnx_predict CHECKPOINT_DIR JOB.json DATA_ROOT DATASETS_DIR OUT: the engine's side of the ONNX
// equivalence test (onnx_export_test.py). Loads the directory's model the way `trainingd export`
// does (model.json, LoadTrainedModel), reads the job's whole test split in the dataset's raw
// units (the loader without its scaling: uint8 values 0..255, a table's values as in its file),
// runs TrainedModel::Predict over it and writes
//   OUT.input.f32  the raw examples, row-major float32 [n, example_shape...]; for a table with
//                  categorical columns its numbers only, [n, numbers]
//   OUT.categorical.json  (a table with categorical columns) each example's categorical values
//                  as strings, [[...], ...]: as in the file, "" or a missing_values marker (taken
//                  in turn) for a missing one; Predict gets the codes the model gives them
//   OUT.probs.f32  the engine's probabilities, float32 [n, classes]; a regression model's
//                  predictions, [n, 1]
//   OUT.json       {"n", "example_shape", "categorical", "classes", "labels", "step", "accuracy",
//                  "predicted", "not_argmax"} (example_shape: the numbers' [numbers] for such a
//                  table; predicted: TrainedModel::PredictedClasses, which the accuracy counts,
//                  not_argmax: how many of them a decision threshold moved off the arg-max); a
//                  regression model's "task": "regression", "targets" and "rmse" instead of the
//                  labels and the accuracy
// for onnx_equivalence.mjs to feed the same examples to onnxruntime. Exit 1 on any error.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "trainingd/api/job_spec_json.h"
#include "trainingd/api/model_json.h"
#include "trainingd/engine/base/parallel.h"
#include "trainingd/engine/data/csv_dataset.h"
#include "trainingd/engine/job/job_runner.h"
#include "trainingd/engine/job/trained_model.h"

namespace eng = trainingd::engine;
namespace api = trainingd::api;

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "onnx_predict: %s\n", what.c_str());
  return 1;
}

bool WriteFile(const std::string& path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr,
                 "usage: onnx_predict CHECKPOINT_DIR JOB.json DATA_ROOT DATASETS_DIR OUT\n");
    return 2;
  }
  // As the engine's compute threads (and so the daemon's model server) run: denormals flushed
  // to zero, so that serving_test.py can ask /infer for these very bits.
  eng::SetComputeThreads(1);
  const std::string dir = argv[1], out = argv[5];
  std::ifstream spec_file(argv[2]);
  std::stringstream spec_text;
  spec_text << spec_file.rdbuf();
  auto spec = api::ParseJobSpec(spec_text.str());
  if (!spec.ok()) return Fail(spec.status().ToString());

  auto input = api::ReadModelJson(dir);
  if (!input.ok()) return Fail(input.status().ToString());
  auto model = eng::LoadTrainedModel(dir, std::nullopt, *input);
  if (!model.ok()) return Fail(model.status().ToString());

  // The raw test split: the job's own source, without standardization; uint8 values come back
  // from the loader's v / 255 exactly by rounding.
  auto source = eng::JobDatasetSource(spec->dataset, argv[3], argv[4], eng::LabelUseOf(spec->task));
  if (!source.ok()) return Fail(source.status().ToString());
  source->standardize = false;
  // A table's missing values stay NaN: the model fills them in (Predict, the ONNX graph).
  auto data = source->format == eng::DatasetSource::Format::kCsv
                  ? eng::LoadCsv(*source, eng::JobDatasetOptions(spec->dataset), /*raw=*/true)
                  : eng::LoadDataset(*source, eng::JobDatasetOptions(spec->dataset));
  if (!data.ok()) return Fail(data.status().ToString());
  eng::Split& test = data->test;
  if (data->preprocessing == eng::Preprocessing::kScale255) {
    for (int64_t i = 0; i < test.images.size(); ++i) {
      test.images.data()[i] = std::round(test.images.data()[i] * 255.0f);
    }
  }
  if (test.example_shape() != input->example_shape) {
    return Fail("the test split's examples are " + test.example_shape().ToString() +
                ", model.json says " + input->example_shape.ToString());
  }
  // A table's categorical values: the raw load's codes give back the values as in the file
  // (every value is one of its levels), which the model codes as it will when served.
  const auto columns = static_cast<int64_t>(input->categorical.size());
  const int64_t n = test.size(), classes = model->num_classes();
  const int64_t width = test.example_shape().num_elements(), numbers = width - columns;
  std::vector<float> raw, rows(test.images.data(), test.images.data() + test.images.size());
  nlohmann::json categorical = nlohmann::json::array();
  for (int64_t i = 0; i < n; ++i) {
    float* row = rows.data() + i * width;
    raw.insert(raw.end(), row, row + numbers);
    if (columns == 0) continue;
    nlohmann::json values = nlohmann::json::array();
    for (int64_t c = 0; c < columns; ++c) {
      const auto code = static_cast<int64_t>(row[numbers + c]);
      const std::vector<std::string>& levels = data->categorical[static_cast<size_t>(c)].levels;
      std::string value;
      if (code >= eng::CategoricalFeature::kFirstLevel) {
        value = levels[static_cast<size_t>(code - eng::CategoricalFeature::kFirstLevel)];
      } else {
        // Missing: "" or one of the markers, in turn.
        const std::vector<std::string>& markers = input->missing_values;
        const size_t turn = static_cast<size_t>(i) % (markers.size() + 1);
        if (turn < markers.size()) value = markers[turn];
      }
      row[numbers + c] = static_cast<float>(eng::CategoricalCode(
          input->categorical[static_cast<size_t>(c)], value, input->missing_values));
      values.push_back(value);
    }
    categorical.push_back(std::move(values));
  }
  std::vector<float> probs(static_cast<size_t>(n * classes));
  if (auto st = model->Predict(rows.data(), n, nullptr, probs.data()); !st.ok()) {
    return Fail(st.ToString());
  }
  const bool regression = spec->task == eng::Task::kRegression;
  int64_t correct = 0;
  double squared_error = 0;
  for (int64_t i = 0; i < n && regression; ++i) {
    const double e = double{probs[static_cast<size_t>(i)]} - test.targets[static_cast<size_t>(i)];
    squared_error += e * e;
  }
  // The predicted classes (a two-class model's decision threshold applied), and how many of
  // them differ from the probabilities' arg-max.
  std::vector<int64_t> predicted(regression ? 0 : static_cast<size_t>(n));
  model->PredictedClasses(probs.data(), n, predicted.data());
  int64_t not_argmax = 0;
  for (int64_t i = 0; i < n && !regression; ++i) {
    const float* p = probs.data() + i * classes;
    int64_t arg = 0;
    for (int64_t c = 1; c < classes; ++c) {
      if (p[c] > p[arg]) arg = c;
    }
    const int64_t y = predicted[static_cast<size_t>(i)];
    if (y != arg) ++not_argmax;
    if (y == test.labels[static_cast<size_t>(i)]) ++correct;
  }
  if (columns > 0) std::ofstream(out + ".categorical.json") << categorical.dump() << "\n";
  if (!WriteFile(out + ".input.f32", raw.data(), raw.size() * sizeof(float)) ||
      !WriteFile(out + ".probs.f32", probs.data(), probs.size() * sizeof(float))) {
    return Fail("cannot write " + out + ".*");
  }
  nlohmann::json meta = {
      {"n", n},
      {"example_shape", columns > 0 ? std::vector<int64_t>{numbers} : test.example_shape().dims()},
      {"categorical", columns},
      {"classes", classes},
      {"step", model->step()}};
  if (regression) {
    meta["task"] = "regression";
    meta["targets"] = test.targets;
    meta["rmse"] = n ? std::sqrt(squared_error / static_cast<double>(n)) : 0.0;
  } else {
    meta["labels"] = test.labels;
    meta["predicted"] = predicted;
    meta["not_argmax"] = not_argmax;
    meta["accuracy"] = n ? static_cast<double>(correct) / n : 0.0;
  }
  std::ofstream(out + ".json") << meta.dump() << "\n";
  return 0;
}
