// A split's whole evaluation as JSON (api/evaluation_json.h): written, read back equal, carried
// by the run report, and refused naming the field when malformed.
#include "trainingd/api/evaluation_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "trainingd/api/run_report.h"

namespace trainingd::api {
namespace {

namespace eng = trainingd::engine;
using nlohmann::json;

eng::EvaluationSummary ThreeClasses() {
  eng::EvaluationSummary e;
  e.split = "test";
  e.step = 42;
  e.loss = 0.5;
  e.class_names = {"setosa", "versicolor", "virginica"};
  const std::vector<double> p = {0.7, 0.2, 0.1, 0.2, 0.5, 0.3, 0.1, 0.3, 0.6, 0.4, 0.4, 0.2};
  e.metrics = eng::ComputeClassificationMetrics(p, 3, std::vector<int32_t>{0, 1, 2, 1});
  return e;
}

TEST(EvaluationJsonTest, WritesAndReadsBackEqual) {
  const eng::EvaluationSummary e = ThreeClasses();
  const json j = EvaluationToJson(e, 1.5e9);
  EXPECT_EQ(j["split"], "test");
  EXPECT_EQ(j["step"], 42);
  EXPECT_EQ(j["examples"], 4);
  EXPECT_EQ(j["confusion_matrix"], json::parse("[[1,0,0],[1,1,0],[0,0,1]]"));
  EXPECT_EQ(j["classes"][2]["name"], "virginica");
  double wall = 0;
  auto back = EvaluationFromJson(j, &wall);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(wall, 1.5e9);
  EXPECT_EQ(back->split, e.split);
  EXPECT_EQ(back->step, e.step);
  EXPECT_EQ(back->loss, e.loss);
  EXPECT_EQ(back->class_names, e.class_names);
  EXPECT_EQ(back->metrics.confusion, e.metrics.confusion);
  EXPECT_EQ(back->metrics.precision, e.metrics.precision);
  EXPECT_EQ(back->metrics.f1, e.metrics.f1);
  EXPECT_EQ(back->metrics.auc, e.metrics.auc);  // doubles are written to round-trip
  EXPECT_EQ(back->metrics.log_loss, e.metrics.log_loss);
  EXPECT_EQ(back->metrics.num_classes, 3);
}

TEST(EvaluationJsonTest, NonFiniteValuesAndWeightedCountsRoundTrip) {
  eng::EvaluationSummary e = ThreeClasses();
  e.metrics.auc = std::nan("");   // a split of one class
  e.metrics.confusion[0] = 0.75;  // a weighted count
  const json j = EvaluationToJson(e, 1);
  EXPECT_EQ(j["auc"], "NaN");
  EXPECT_EQ(j["confusion_matrix"][0][0], 0.75);
  auto back = EvaluationFromJson(j, nullptr);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(std::isnan(back->metrics.auc));
  EXPECT_EQ(back->metrics.confusion[0], 0.75);
}

TEST(EvaluationJsonTest, MalformedIsRefusedNamingTheField) {
  const json good = EvaluationToJson(ThreeClasses(), 1);
  const auto fails = [](const json& j, const std::string& prefix) {
    auto r = EvaluationFromJson(j, nullptr);
    EXPECT_FALSE(r.ok()) << j.dump();
    if (!r.ok()) {
      EXPECT_EQ(r.status().message().rfind(prefix, 0), 0u) << r.status().message();
    }
  };
  json j = good;
  j["split"] = "dev";
  fails(j, "evaluation.split");
  j = good;
  j.erase("auc");
  fails(j, "evaluation.auc: required");
  j = good;
  j["step"] = -1;
  fails(j, "evaluation.step");
  j = good;
  j["confusion_matrix"][1] = json::array({1, 2});
  fails(j, "evaluation.confusion_matrix[1]");
  j = good;
  j["confusion_matrix"].erase(0);
  fails(j, "evaluation.confusion_matrix");
  j = good;
  j["classes"][0].erase("recall");
  fails(j, "evaluation.classes[0].recall");
  j = good;
  j["classes"] = json::array();
  fails(j, "evaluation.classes");
  fails(json::array(), "evaluation");
}

TEST(EvaluationJsonTest, TheRunReportCarriesIt) {
  const eng::EvaluationSummary e = ThreeClasses();
  const std::string line = FormatRunReport(eng::EvaluationRecorded{e, 2.5});
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  auto parsed = ParseRunReport(line);
  ASSERT_TRUE(parsed.has_value()) << line;
  const auto& got = std::get<eng::EvaluationRecorded>(*parsed);
  EXPECT_EQ(got.wall_time, 2.5);
  EXPECT_EQ(got.evaluation.class_names, e.class_names);
  EXPECT_EQ(got.evaluation.metrics.confusion, e.metrics.confusion);
  // A malformed evaluation line is not a report (the supervisor shows it as a console line).
  EXPECT_FALSE(ParseRunReport(R"({"event":"evaluation","split":"test"})").has_value());
}

// A regression evaluation: its metrics and scatter sample, written, read back equal, carried by
// the run report; a malformed scatter refused naming it.
TEST(EvaluationJsonTest, ARegressionEvaluationCarriesItsScatter) {
  eng::EvaluationSummary e;
  e.split = "validation";
  e.step = 7;
  e.loss = 0.25;
  e.task = eng::Task::kRegression;
  e.regression = {3, 1.5, 1.25, 0.875};
  e.actual = {100.5, 200, 0.1};
  e.predicted = {101.25, 199.5, std::nan("")};
  const json j = EvaluationToJson(e, 2);
  EXPECT_EQ(j["task"], "regression");
  EXPECT_EQ(j["rmse"], 1.5);
  EXPECT_EQ(j["r2"], 0.875);
  EXPECT_FALSE(j.contains("confusion_matrix"));
  EXPECT_EQ(j["scatter"]["actual"], json({100.5, 200, 0.1}));
  EXPECT_EQ(j["scatter"]["predicted"][2], "NaN");
  auto back = EvaluationFromJson(j, nullptr);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->task, eng::Task::kRegression);
  EXPECT_EQ(back->regression.rmse, 1.5);
  EXPECT_EQ(back->regression.mae, 1.25);
  EXPECT_EQ(back->regression.weight_sum, 3);
  EXPECT_EQ(back->actual, e.actual);
  ASSERT_EQ(back->predicted.size(), 3u);
  EXPECT_TRUE(std::isnan(back->predicted[2]));
  const std::string line = FormatRunReport(eng::EvaluationRecorded{e, 2.5});
  auto parsed = ParseRunReport(line);
  ASSERT_TRUE(parsed.has_value()) << line;
  EXPECT_EQ(std::get<eng::EvaluationRecorded>(*parsed).evaluation.actual, e.actual);
  const auto fails = [](json v, const std::string& field) {
    auto r = EvaluationFromJson(v, nullptr);
    ASSERT_FALSE(r.ok()) << v.dump();
    EXPECT_EQ(r.status().message().rfind(field + ":", 0), 0u) << r.status().ToString();
  };
  json bad = j;
  bad["scatter"]["predicted"].erase(0);
  fails(bad, "evaluation.scatter.predicted");
  bad = j;
  bad["scatter"]["actual"][1] = "x";
  fails(bad, "evaluation.scatter.actual[1]");
  bad = j;
  bad["scatter"]["actual"] = json(std::vector<double>(1001, 1.0));
  fails(bad, "evaluation.scatter.actual");
  bad = j;
  bad.erase("rmse");
  fails(bad, "evaluation.rmse");
}

}  // namespace
}  // namespace trainingd::api
