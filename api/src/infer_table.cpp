// ResolveTableRequest (infer_json.h): a table's rows by column name, or KServe v2's two inputs,
// as the float rows TrainedModel::Predict takes.
#include <cmath>
#include <limits>

#include "trainingd/api/infer_json.h"
#include "trainingd/api/strict_json.h"

namespace trainingd::api {
namespace {

using engine::Status;
namespace sj = strict_json;

std::string ColumnList(const engine::ModelInput& m) {
  std::string out;
  size_t n = 0;
  const auto add = [&](const std::string& name) {
    if (n++ < 20) out += (out.empty() ? "" : ", ") + sj::Quote(name);
  };
  for (const std::string& name : m.feature_names) add(name);
  for (const engine::CategoricalFeature& c : m.categorical) add(c.name);
  if (n > 20) out += ", ... (" + std::to_string(n) + " in all)";
  return out;
}

// A JSON number as the text a CSV cell of a categorical column would hold: an integer in decimal.
bool IntegerText(double v, std::string* out) {
  if (!(std::fabs(v) < 9007199254740992.0) || v != std::floor(v)) return false;
  *out = std::to_string(static_cast<int64_t>(v));
  return true;
}

Status FromRows(const engine::ModelInput& m, InferRequest* r) {
  if (m.feature_names.empty() && m.categorical.empty()) {
    return sj::Bad("instances",
                   "objects keyed by column name need a model of a CSV table; this model takes "
                   "arrays of numbers");
  }
  const auto numbers = static_cast<int64_t>(m.feature_names.size());
  const int64_t width = numbers + static_cast<int64_t>(m.categorical.size());
  const auto batch = static_cast<int64_t>(r->rows.size());
  r->data.assign(static_cast<size_t>(batch * width), std::numeric_limits<float>::quiet_NaN());
  using Kind = InferRequest::Cell::Kind;
  for (int64_t i = 0; i < batch; ++i) {
    float* row = r->data.data() + i * width;
    for (int64_t c = 0; c < static_cast<int64_t>(m.categorical.size()); ++c) {
      row[numbers + c] = static_cast<float>(engine::CategoricalFeature::kMissingLevel);
    }
    for (const auto& [column, cell] : r->rows[static_cast<size_t>(i)]) {
      const std::string path = sj::Index("instances", static_cast<size_t>(i)) + "." + column;
      int64_t k = 0;
      while (k < numbers && m.feature_names[static_cast<size_t>(k)] != column) ++k;
      if (k < numbers) {
        if (cell.kind == Kind::kText) {
          return sj::Bad(path, "must be a number or null (a number column), got the string " +
                                   sj::Quote(cell.text));
        }
        if (cell.kind == Kind::kNumber) {
          if (!std::isfinite(cell.number) ||
              std::fabs(cell.number) > std::numeric_limits<float>::max()) {
            return sj::Bad(path, "must be a finite FP32 value");
          }
          row[k] = static_cast<float>(cell.number);
        }
        continue;
      }
      size_t c = 0;
      while (c < m.categorical.size() && m.categorical[c].name != column) ++c;
      if (c == m.categorical.size()) {
        return sj::Bad(path, "the model has no column " + sj::Quote(column) + "; its columns are " +
                                 ColumnList(m));
      }
      std::string text = cell.text;
      if (cell.kind == Kind::kNumber && !IntegerText(cell.number, &text)) {
        return sj::Bad(path, "must be a string, an integer or null (a categorical column)");
      }
      if (cell.kind != Kind::kMissing) {
        row[numbers + static_cast<int64_t>(c)] =
            static_cast<float>(engine::CategoricalCode(m.categorical[c], text, m.missing_values));
      }
    }
  }
  r->rows.clear();
  r->shape = {batch, width};
  return Status::Ok();
}

Status FromTwoInputs(const engine::ModelInput& m, InferRequest* r) {
  const int64_t numbers =
      m.example_shape.num_elements() - static_cast<int64_t>(m.categorical.size());
  const auto columns = static_cast<int64_t>(m.categorical.size());
  if (columns == 0) {
    return sj::Bad("inputs", "the model has no categorical columns: give 'input' alone");
  }
  const int64_t batch = r->shape.empty() ? 0 : r->shape[0];
  if (r->shape != std::vector<int64_t>{batch, numbers}) {
    return sj::Bad(r->shape_field,
                   "must be [batch, " + std::to_string(numbers) + "]: the model's number columns");
  }
  if (r->categorical_shape != std::vector<int64_t>{batch, columns}) {
    return sj::Bad("inputs", "'categorical' must have shape [" + std::to_string(batch) + ", " +
                                 std::to_string(columns) +
                                 "]: the batch of 'input' and the model's categorical columns");
  }
  const int64_t width = numbers + columns;
  std::vector<float> data(static_cast<size_t>(batch * width));
  for (int64_t i = 0; i < batch; ++i) {
    float* row = data.data() + i * width;
    std::copy_n(r->data.data() + i * numbers, numbers, row);
    for (int64_t c = 0; c < columns; ++c) {
      const std::optional<std::string>& v = r->categorical[static_cast<size_t>(i * columns + c)];
      row[numbers + c] = static_cast<float>(
          v ? engine::CategoricalCode(m.categorical[static_cast<size_t>(c)], *v, m.missing_values)
            : engine::CategoricalFeature::kMissingLevel);
    }
  }
  r->data = std::move(data);
  r->categorical.clear();
  r->categorical_shape.clear();
  r->shape = {batch, width};
  return Status::Ok();
}

}  // namespace

Status ResolveTableRequest(const engine::ModelInput& m, InferRequest* r) {
  if (!r->rows.empty()) return FromRows(m, r);
  if (!r->categorical_shape.empty()) return FromTwoInputs(m, r);
  if (!m.categorical.empty()) {
    return sj::Bad(r->shape_field,
                   "the model has categorical columns: send the rows as objects keyed by column "
                   "name (instances), or 'input' (FP32, the " +
                       std::to_string(m.feature_names.size()) +
                       " number columns) with 'categorical' (BYTES, the " +
                       std::to_string(m.categorical.size()) + " categorical columns)");
  }
  return Status::Ok();
}

}  // namespace trainingd::api
