// The CSV table tests' fixture: a churn table as people export it -- five training rows and one
// test row, with blanks, markers (NA, ?), a categorical city, an id and a yes/no label -- written
// as a training and a test file into a directory of the test's own.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "trainingd/engine/data/csv_dataset.h"

namespace trainingd::engine {

// age is missing in training row 2 and the test row, income in training rows 2 and 4; city is
// paris, berlin, paris, "?", rome, then tokyo; id has no missing value.
inline constexpr const char* kChurnTrain =
    "age,city,income,id,churn\n"
    "30,paris,100,1,yes\n"
    ",berlin,NA,2,no\n"
    "50,paris,400,3,yes\n"
    "40,?,,4,no\n"
    "10,rome,200,5,no\n";
inline constexpr const char* kChurnTest =
    "age,city,income,id,churn\n"
    "NA,tokyo,150,6,yes\n";

class ChurnCsvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        std::filesystem::temp_directory_path() / ("churn_csv_" + std::to_string(::getpid()) + "_" +
                                                  test->test_suite_name() + "_" + test->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    source_.format = DatasetSource::Format::kCsv;
    source_.path = Write("train.csv", kChurnTrain);
    source_.test_path = Write("test.csv", kChurnTest);
    source_.label_column = "churn";
    options_.validation_size = 0;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return path;
  }
  // The message of the full probe's refusal, "" when it accepts the files.
  std::string ProbeError() {
    auto info = ProbeCsv(source_, options_, ProbeDepth::kFull);
    return info.ok() ? "" : info.status().message();
  }

  std::filesystem::path dir_;
  DatasetSource source_;
  DatasetOptions options_;
};

}  // namespace trainingd::engine
