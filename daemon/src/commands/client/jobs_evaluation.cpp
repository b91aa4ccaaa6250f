// `trainingd jobs evaluation ID [--split S]`: a job's latest evaluation of a split -- its
// metrics, per-class precision/recall/F1 and confusion matrix (docs/cli.md#jobs).
#include <cstdio>
#include <string>
#include <vector>

#include "commands/client/client.h"
#include "trainingd/api/evaluation_json.h"
#include "trainingd/daemon/commands/client_commands.h"

namespace trainingd::daemon {
namespace jobs_verbs {
using namespace client;  // NOLINT: this file is the client's
using nlohmann::json;

int Evaluation(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> ids;
  std::string split;
  Flags flags("jobs evaluation", "ID [--split S]",
              "The job's latest evaluation of a split: its metrics, each class's precision,\n"
              "recall, F1 and support, and the confusion matrix (rows: the true class, columns:\n"
              "the predicted one). Without --split: the latest evaluation of any split.\n");
  flags.Positionals("job id", 1, &ids).String("--split", "S", "train, validation or test", &split);
  AddClientFlags(flags, &o);
  return WithClient("jobs evaluation", flags, o, args, [&](Client& c) -> int {
    if (ids.size() != 1) return NeedOne("jobs evaluation", "job id", ids, flags);
    if (!split.empty() && split != "train" && split != "validation" && split != "test") {
      return c.Fail(
          {kExitUsage, "--split: must be train, validation or test, got '" + split + "'"});
    }
    Failure f;
    std::string path = JobPath(ids[0]) + "/evaluation";
    if (!split.empty()) path += "?split=" + split;
    auto doc = c.Call("GET", path, &f);
    if (!doc) return c.Fail(f);
    auto e = api::EvaluationFromJson(*doc, nullptr);
    if (!e.ok()) return c.Fail({kExitFailed, "the daemon's answer: " + e.status().message()});
    if (c.mode() == OutputMode::kJson || c.mode() == OutputMode::kJsonl) {
      PrintJson(*doc, json::array({*doc}), c.mode());
      return 0;
    }
    if (c.mode() == OutputMode::kQuiet) {
      std::printf("%lld\n", static_cast<long long>(e->step));
      return 0;
    }
    if (e->task == engine::Task::kRegression) {
      // Its metrics and how many points its scatter holds (the points: --output json).
      const engine::RegressionMetrics& r = e->regression;
      std::printf("%s split at global step %lld, %s examples\n", e->split.c_str(),
                  static_cast<long long>(e->step), FormatNumber(r.weight_sum).c_str());
      Table metrics{{"METRIC", "VALUE"}, {}, -1};
      for (const auto& [name, value] : {std::pair{"loss", e->loss}, std::pair{"rmse", r.rmse},
                                        std::pair{"mae", r.mae}, std::pair{"r2", r.r2}}) {
        metrics.rows.push_back({name, FormatNumber(value)});
      }
      PrintTable(c, metrics);
      std::printf("\nscatter: %zu (actual, predicted) pairs (--output json lists them)\n",
                  e->actual.size());
      return 0;
    }
    const engine::ClassificationMetrics& m = e->metrics;
    std::printf("%s split at global step %lld, %s examples\n", e->split.c_str(),
                static_cast<long long>(e->step), FormatNumber(m.weight_sum).c_str());
    Table metrics{{"METRIC", "VALUE"}, {}, -1};
    for (const engine::EvaluationMetric& metric : engine::kClassificationMetrics) {
      metrics.rows.push_back(
          {metric.name, FormatNumber(engine::MetricValue(m, e->loss, metric.name))});
    }
    PrintTable(c, metrics);
    std::printf("\n");
    Table classes{{"CLASS", "PRECISION", "RECALL", "F1", "SUPPORT"}, {}, -1};
    for (size_t k = 0; k < e->class_names.size(); ++k) {
      classes.rows.push_back({e->class_names[k], FormatNumber(m.precision[k]),
                              FormatNumber(m.recall[k]), FormatNumber(m.f1[k]),
                              FormatNumber(m.support[k])});
    }
    PrintTable(c, classes);
    std::printf("\nconfusion matrix (rows: true class, columns: predicted)\n");
    Table matrix{{"TRUE\\PREDICTED"}, {}, -1};
    const size_t n = e->class_names.size();
    for (const std::string& name : e->class_names) matrix.header.push_back(name);
    for (size_t k = 0; k < n; ++k) {
      std::vector<std::string> row = {e->class_names[k]};
      for (size_t j = 0; j < n; ++j) row.push_back(FormatNumber(m.confusion[k * n + j]));
      matrix.rows.push_back(std::move(row));
    }
    PrintTable(c, matrix);
    return 0;
  });
}

}  // namespace jobs_verbs
}  // namespace trainingd::daemon
