#include "trainingd/engine/data/csv_dataset.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "largest_allocation.h"

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;

DatasetSource Source(const std::string& path = "train.csv") {
  DatasetSource s;
  s.format = DatasetSource::Format::kCsv;
  s.path = path;
  return s;
}

DatasetOptions Options(int64_t validation_size = 0) {
  DatasetOptions o;
  o.validation_size = validation_size;
  return o;
}

// ParseCsv's error message for `csv` ("" when it parses).
std::string ParseError(const std::string& csv, const DatasetSource& source = Source(),
                       const DatasetOptions& options = Options()) {
  auto d = ParseCsv(csv, source, options);
  if (d.ok()) return "";
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << d.status().ToString();
  return d.status().message();
}

std::vector<float> Row(const Split& split, int64_t i) {
  const int64_t f = split.images.shape()[1];
  return std::vector<float>(split.images.data() + i * f, split.images.data() + (i + 1) * f);
}

// A fresh directory for one test's files, removed after it.
class CsvFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("csv_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << bytes;
    EXPECT_TRUE(f.good()) << path;
    return path;
  }

  fs::path dir_;
};

TEST_F(CsvFiles, IntegerLabelsWithATestFile) {
  std::string train = "x1,x2,label\n";
  for (int i = 0; i < 10; ++i) {
    train += std::to_string(i) + "," + std::to_string(i * 2) + ".5," + std::to_string(i % 3) + "\n";
  }
  DatasetSource s = Source(Write("train.csv", train));
  s.test_path = Write("test.csv", "x1,x2,label\n-1,1e-3,4\n7,8,0\n");
  auto d = LoadCsv(s, Options(2));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->num_classes, 5);
  EXPECT_TRUE(d->class_names.empty());
  EXPECT_EQ(d->preprocessing, Preprocessing::kNone);
  EXPECT_TRUE(d->feature_mean.empty());
  ASSERT_EQ(d->validation.size(), 2);
  ASSERT_EQ(d->train.size(), 8);
  ASSERT_EQ(d->test.size(), 2);
  EXPECT_EQ(d->train.example_shape(), Shape({2}));
  EXPECT_EQ(Row(d->validation, 1), (std::vector<float>{1, 2.5f}));
  EXPECT_EQ(Row(d->train, 0), (std::vector<float>{2, 4.5f}));
  EXPECT_EQ(Row(d->train, 7), (std::vector<float>{9, 18.5f}));
  EXPECT_EQ(d->train.labels, (std::vector<int32_t>{2, 0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(Row(d->test, 0), (std::vector<float>{-1, 1e-3f}));
  EXPECT_EQ(d->test.labels, (std::vector<int32_t>{4, 0}));

  for (ProbeDepth depth : {ProbeDepth::kHeaders, ProbeDepth::kFull}) {
    auto info = ProbeDataset(s, Options(2), depth);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->format, DatasetSource::Format::kCsv);
    EXPECT_EQ(info->example_shape, Shape({2}));
    EXPECT_EQ(info->element_type, "float32");
    EXPECT_EQ(info->num_classes, 5);
    EXPECT_EQ(info->preprocessing, Preprocessing::kNone);
    EXPECT_EQ(info->file_train_examples, 10);
    EXPECT_EQ(info->file_test_examples, 2);
    EXPECT_EQ(info->validation_examples, 2);
    EXPECT_EQ(info->train_examples, 8);
    EXPECT_EQ(info->test_examples, 2);
    EXPECT_EQ(info->LoadedBytes(), 12 * (2 * 4 + 4));
    EXPECT_EQ(info->PeakLoadBytes(), info->LoadedBytes() + CsvLoadOverheadBytes(2));
  }
  // The same through LoadDataset, and the options as for IDX.
  DatasetOptions o = Options(kAutoValidationSize);
  o.max_train_examples = 3;
  o.max_test_examples = 1;
  auto small = LoadDataset(s, o);
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(small->validation.size(), 1);  // a tenth of 10
  EXPECT_EQ(small->train.size(), 3);
  EXPECT_EQ(Row(small->train, 0), (std::vector<float>{1, 2.5f}));
  EXPECT_EQ(small->test.size(), 1);
}

TEST_F(CsvFiles, StringLabelsAreSortedNamesOverBothFiles) {
  DatasetSource s = Source(Write("train.csv",
                                 "f,species\n1,virginica\n2,setosa\n3,Versicolor\n4,setosa\n"
                                 "5,\xC3\xA4pfel\n"));
  s.label_column = "species";
  s.test_path = Write("test.csv", "f,species\n6,zebra\n7,virginica\n");
  auto d = LoadCsv(s, Options(0));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  // Byte order: upper case before lower case, UTF-8's multi-byte characters last.
  const std::vector<std::string> names = {"Versicolor", "setosa", "virginica", "zebra",
                                          "\xC3\xA4pfel"};
  EXPECT_EQ(d->class_names, names);
  EXPECT_EQ(d->num_classes, 5);
  EXPECT_EQ(d->train.labels, (std::vector<int32_t>{2, 1, 0, 1, 4}));
  EXPECT_EQ(d->test.labels, (std::vector<int32_t>{3, 2}));
  auto info = ProbeCsv(s, Options(0), ProbeDepth::kHeaders);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->class_names, names);
}

TEST(CsvDatasetTest, LabelsWithAnyNonIntegerAreAllNames) {
  auto d = ParseCsv("f,label\n1,10\n2,cat\n3,2\n4,1\n5,-1\n", Source(), Options());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->class_names, (std::vector<std::string>{"-1", "1", "10", "2", "cat"}));
  std::vector<int32_t> all = d->train.labels;
  all.insert(all.end(), d->test.labels.begin(), d->test.labels.end());
  EXPECT_EQ(std::set<int32_t>(all.begin(), all.end()), (std::set<int32_t>{0, 1, 2, 3, 4}));
}

TEST_F(CsvFiles, IntegerOrNamesIsDecidedOverBothFiles) {
  DatasetSource s = Source(Write("train.csv", "f,label\n1,0\n2,1\n"));
  s.test_path = Write("test.csv", "f,label\n3,x\n");
  auto d = LoadCsv(s, Options(0));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->class_names, (std::vector<std::string>{"0", "1", "x"}));
  EXPECT_EQ(d->test.labels, (std::vector<int32_t>{2}));
}

TEST(CsvDatasetTest, IntegerLabelsOutsideTheRangeAreErrors) {
  EXPECT_EQ(ParseError("f,label\n1,0\n2,-1\n"),
            "train.csv: line 3: column 'label': label '-1' is outside [0, 256): integer labels are "
            "class ids (labels with any non-integer are names)");
  EXPECT_EQ(ParseError("f,label\n1,256\n2,3\n"),
            "train.csv: line 2: column 'label': label '256' is outside [0, 256): integer labels "
            "are class ids (labels with any non-integer are names)");
  EXPECT_EQ(ParseError("f,label\n1,99999999999999999999999\n2,3\n")
                .rfind("train.csv: line 2: column 'label': label '99999999999999999999999' is", 0),
            0u);
  // 255 is the largest class id.
  auto d = ParseCsv("f,label\n1,255\n2,0\n", Source(), Options());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->num_classes, 256);
}

TEST(CsvDatasetTest, AtMost256Classes) {
  std::string csv = "f,label\n";
  for (int i = 0; i < 256; ++i) csv += "1,c" + std::to_string(i) + "\n";
  EXPECT_EQ(ParseError(csv), "");
  csv += "1,c256\n";
  EXPECT_EQ(ParseError(csv),
            "train.csv: line 258: column 'label': more than 256 distinct labels (at most 256 "
            "classes)");
  // Integer labels may be spelled more ways than there are classes.
  std::string ints = "f,label\n";
  for (int i = 0; i < 500; ++i) {
    ints += "1," + std::string(static_cast<size_t>(i / 250), '0') + std::to_string(i % 250) + "\n";
  }
  EXPECT_EQ(ParseError(ints), "");
  // ... but not once one is a name: the message names the row of the 257th spelling.
  EXPECT_EQ(ParseError(ints + "1,x\n"),
            "train.csv: line 258: column 'label': more than 256 distinct labels (at most 256 "
            "classes)");
}

TEST(CsvDatasetTest, BadLabels) {
  EXPECT_EQ(ParseError("f,label\n1,a\n2,\n"), "train.csv: line 3: column 'label': empty label");
  EXPECT_EQ(ParseError("f,label\n1,a\n2,\"\"\n"), "train.csv: line 3: column 'label': empty label");
  EXPECT_EQ(ParseError("f,label\n1,a\n2," + std::string(257, 'x') + "\n"),
            "train.csv: line 3: column 'label': a label of 257 bytes (at most 256)");
}

TEST(CsvDatasetTest, TestFractionSplitIsSeededAndKeepsFileOrder) {
  std::string csv = "row,label\n";
  for (int i = 0; i < 100; ++i) csv += std::to_string(i) + "," + std::to_string(i % 2) + "\n";
  DatasetSource s = Source();
  s.test_fraction = 0.25;
  s.split_seed = 7;
  const auto rows = [](const Split& split) {
    std::vector<int> r;
    for (int64_t i = 0; i < split.size(); ++i) {
      r.push_back(static_cast<int>(split.images[i]));
      EXPECT_EQ(split.labels[static_cast<size_t>(i)], r.back() % 2);
    }
    return r;
  };
  auto a = ParseCsv(csv, s, Options(kAutoValidationSize));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_EQ(a->test.size(), 25);
  ASSERT_EQ(a->validation.size(), 7);  // a tenth of 75, rounded down
  ASSERT_EQ(a->train.size(), 68);
  std::vector<int> train = rows(a->validation);
  for (int r : rows(a->train)) train.push_back(r);
  const std::vector<int> test = rows(a->test);
  EXPECT_TRUE(std::is_sorted(train.begin(), train.end()));
  EXPECT_TRUE(std::is_sorted(test.begin(), test.end()));
  std::vector<int> all = train;
  all.insert(all.end(), test.begin(), test.end());
  std::sort(all.begin(), all.end());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(all[static_cast<size_t>(i)], i);

  auto again = ParseCsv(csv, s, Options(kAutoValidationSize));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(rows(again->test), test);
  s.split_seed = 8;
  auto other = ParseCsv(csv, s, Options(kAutoValidationSize));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->test.size(), 25);
  EXPECT_NE(rows(other->test), test);
  // The split does not depend on the machine: seed 7's first test rows are fixed.
  EXPECT_EQ(std::vector<int>(test.begin(), test.begin() + 5), (std::vector<int>{6, 7, 9, 16, 18}));
}

TEST(CsvDatasetTest, TestFractionRoundsAndLeavesARowEachWay) {
  DatasetSource s = Source();
  s.test_fraction = 0.1;
  auto d = ParseCsv("f,label\n1,0\n2,0\n3,1\n", s, Options());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->test.size(), 1);  // round(0.3) = 0, at least 1
  EXPECT_EQ(d->train.size(), 2);
  s.test_fraction = 0.9;
  d = ParseCsv("f,label\n1,0\n2,1\n", s, Options());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->test.size(), 1);  // round(1.8) = 2, at most N - 1
  EXPECT_EQ(d->train.size(), 1);
  EXPECT_EQ(ParseError("f,label\n1,0\n"),
            "train.csv: 1 row; splitting off test_fraction needs at least 2 (one to train, one "
            "to test)");
  for (double bad : {0.0, 1.0, -0.5, std::nan("")}) {
    s.test_fraction = bad;
    EXPECT_EQ(
        ParseError("f,label\n1,0\n2,1\n", s).rfind("test_fraction must be in (0, 1), got ", 0), 0u)
        << bad;
  }
}

TEST_F(CsvFiles, StandardizeUsesTheTrainSplitsStatistics) {
  // Feature a: train rows 1, 2, 3, 4 (mean 2.5, variance 1.25); b: constant (std 1);
  // c: -3, 1, 1, 1 (mean 0, variance 3).
  DatasetSource s =
      Source(Write("train.csv", "a,b,c,label\n1,5,-3,0\n2,5,1,1\n3,5,1,0\n4,5,1,1\n"));
  s.test_path = Write("test.csv", "a,b,c,label\n6.5,7,0,1\n");
  s.standardize = true;
  auto d = LoadCsv(s, Options(0));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  const float sa = static_cast<float>(std::sqrt(1.25));
  const float sc = static_cast<float>(std::sqrt(3.0));
  EXPECT_EQ(d->preprocessing, Preprocessing::kStandard);
  EXPECT_EQ(d->feature_mean, (std::vector<float>{2.5f, 5, 0}));
  EXPECT_EQ(d->feature_std, (std::vector<float>{sa, 1, sc}));
  const auto z = [](double x, double mean, float std) {
    return static_cast<float>((x - mean) / static_cast<double>(std));
  };
  EXPECT_EQ(Row(d->train, 0), (std::vector<float>{z(1, 2.5, sa), 0, z(-3, 0, sc)}));
  EXPECT_EQ(Row(d->train, 3), (std::vector<float>{z(4, 2.5, sa), 0, z(1, 0, sc)}));
  EXPECT_EQ(Row(d->test, 0), (std::vector<float>{z(6.5, 2.5, sa), 2, 0}));

  auto full = ProbeCsv(s, Options(0), ProbeDepth::kFull);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(full->feature_mean, d->feature_mean);
  EXPECT_EQ(full->feature_std, d->feature_std);
  auto headers = ProbeCsv(s, Options(0), ProbeDepth::kHeaders);
  ASSERT_TRUE(headers.ok());
  EXPECT_EQ(headers->preprocessing, Preprocessing::kStandard);
  EXPECT_TRUE(headers->feature_mean.empty());

  // Validation is taken off first (a: 2, 3, 4: mean 3, variance 2/3); max_train_examples does
  // not change the statistics.
  DatasetOptions o = Options(1);
  o.max_train_examples = 1;
  auto v = LoadCsv(s, o);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->train.size(), 1);
  EXPECT_EQ(v->feature_mean, (std::vector<float>{3, 5, 1}));
  EXPECT_EQ(v->feature_std, (std::vector<float>{static_cast<float>(std::sqrt(2.0 / 3.0)), 1, 1}));
  EXPECT_EQ(Row(v->validation, 0)[0], z(1, 3, static_cast<float>(std::sqrt(2.0 / 3.0))));
  auto vp = ProbeCsv(s, o, ProbeDepth::kFull);
  ASSERT_TRUE(vp.ok());
  EXPECT_EQ(vp->feature_mean, v->feature_mean);
  EXPECT_EQ(vp->feature_std, v->feature_std);
}

TEST(CsvDatasetTest, StandardizedValuesStayFinite) {
  // A tiny spread in training, a huge value in test: clamped to float's range.
  DatasetSource s = Source();
  s.standardize = true;
  s.test_fraction = 0.5;
  auto d = ParseCsv("f,label\n0,0\n1e-30,0\n3e38,0\n-3e38,0\n", s, Options());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  for (const Split* split : {&d->train, &d->test}) {
    for (int64_t i = 0; i < split->images.size(); ++i) EXPECT_TRUE(std::isfinite(split->images[i]));
  }
}

TEST(CsvDatasetTest, QuotedFields) {
  const std::string csv =
      "\"x \"\"one\"\"\",x2,\"label\"\n"
      "\"1.5\", 2 ,\"a,b\"\n"
      "  -3 ,\t\"4\" ,\"two\nlines\"\n"
      "5,6,\"a,b\"\n";
  auto d = ParseCsv(csv, Source(), Options());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->class_names, (std::vector<std::string>{"a,b", "two\nlines"}));
  // A row that spans lines counts them: the row after it is line 6.
  EXPECT_EQ(ParseError(csv + "1,2\n"), "train.csv: line 6: 2 fields, the header has 3");
  DatasetSource number = Source();
  number.columns.number = {"x \"one\""};
  EXPECT_EQ(ParseError("\"x \"\"one\"\"\",label\nz,0\n1,1\n", number),
            "train.csv: line 2: column 'x \"one\"': 'z' is not a number (the column is typed "
            "number)");
}

TEST(CsvDatasetTest, CrlfBomBlankLinesAndNoFinalNewline) {
  auto d = ParseCsv("\xEF\xBB\xBFx,label\r\n1,0\r\n\r\n2,1\r\n3,1", Source(), Options());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->train.size() + d->test.size(), 3);
  EXPECT_TRUE(d->class_names.empty());  // the header's first name is "x", not a BOM and "x"
  d = ParseCsv("x,label\n1,0\n2,1\n\n\r\n\n", Source(), Options());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->train.size() + d->test.size(), 2);
  // A BOM anywhere else is a character like any other.
  DatasetSource number = Source();
  number.columns.number = {"x"};
  EXPECT_EQ(ParseError("x,label\n\xEF\xBB\xBF"
                       "1,0\n2,1\n",
                       number),
            "train.csv: line 2: column 'x': '\xEF\xBB\xBF"
            "1' is not a number (the column is typed number)");
}

TEST(CsvDatasetTest, NumbersInEveryForm) {
  auto d =
      ParseCsv("a,b,c,d,e,label\n1,-2.5,1e3,+4,.5,0\n 7 ,3.,-1E-2,0,-0,1\n", Source(), Options());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  std::vector<float> all;
  for (const Split* split : {&d->train, &d->test}) {
    for (int64_t i = 0; i < split->size(); ++i) {
      const std::vector<float> r = Row(*split, i);
      all.insert(all.end(), r.begin(), r.end());
    }
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<float>{-2.5f, -0.01f, 0, 0, 0.5f, 1, 3, 4, 7, 1000}));
}

TEST(CsvDatasetTest, BadFeatures) {
  // A column typed number: text is an error in the first pass; a number a float cannot hold in
  // the second. Missing values (an empty cell, a marker, a NaN) are not errors.
  DatasetSource number = Source();
  number.columns.number = {"a"};
  const auto error = [&](const std::string& value) {
    return ParseError("a,label\n1,0\n" + value + ",1\n", number);
  };
  const std::string typed = " is not a number (the column is typed number)";
  EXPECT_EQ(error("abc"), "train.csv: line 3: column 'a': 'abc'" + typed);
  EXPECT_EQ(error("1.2.3"), "train.csv: line 3: column 'a': '1.2.3'" + typed);
  EXPECT_EQ(error("0x10"), "train.csv: line 3: column 'a': '0x10'" + typed);
  EXPECT_EQ(error("1 2"), "train.csv: line 3: column 'a': '1 2'" + typed);
  EXPECT_EQ(error("--1"), "train.csv: line 3: column 'a': '--1'" + typed);
  EXPECT_EQ(error("+-1"), "train.csv: line 3: column 'a': '+-1'" + typed);
  for (const char* missing : {"", "\"\"", "nan", "NaN", "-nan", "NA", "?", "null", " NA "}) {
    EXPECT_EQ(error(missing), "") << missing;
  }
  EXPECT_EQ(error("inf"), "train.csv: line 3: column 'a': 'inf' is not a finite number");
  EXPECT_EQ(error("-Infinity"),
            "train.csv: line 3: column 'a': '-Infinity' is not a finite number");
  EXPECT_EQ(error("1e999"),
            "train.csv: line 3: column 'a': '1e999' is too large or too small in magnitude for a "
            "double");
  EXPECT_EQ(error("1e39"),
            "train.csv: line 3: column 'a': '1e39' is outside float32's range (±3.4e38)");
  EXPECT_EQ(error(std::string(100, '7') + "x"),
            "train.csv: line 3: column 'a': '" + std::string(64, '7') + "...'" + typed);
  // Untyped, an infinity is still a number (an error), not a category.
  EXPECT_EQ(ParseError("a,label\n1,0\ninf,1\n"),
            "train.csv: line 3: column 'a': 'inf' is not a finite number");
}

TEST(CsvDatasetTest, MalformedRows) {
  EXPECT_EQ(ParseError("a,b,label\n1,2,0\n1,2,3,4\n5,6,1\n"),
            "train.csv: line 3: 4 fields, the header has 3");
  EXPECT_EQ(ParseError("a,b,label\n1,2,0\n1,2\n"), "train.csv: line 3: 2 fields, the header has 3");
  EXPECT_EQ(ParseError("a,b,label\n1,2,0\n \n"), "train.csv: line 3: 1 field, the header has 3");
  EXPECT_EQ(ParseError("a,label\n1,0\n2,\"x\n"), "train.csv: line 3: a quoted field is not closed");
  EXPECT_EQ(ParseError("a,label\n1,0\n2,x\"y\"\n"),
            "train.csv: line 3: a quote inside unquoted field 2 (quote the whole field; \"\" is a "
            "quote inside it)");
  EXPECT_EQ(ParseError("a,label\n1,0\n2,\"x\"y\n"),
            "train.csv: line 3: text after the closing quote of field 2 (a field is quoted whole; "
            "\"\" is a quote inside it)");
  EXPECT_EQ(ParseError("a,label\n1,0\r2,1\n"),
            "train.csv: line 2: a carriage return not followed by a line feed");
  EXPECT_EQ(ParseError("a,label\n1,0\n2,caf\xE9\n"),
            "train.csv: line 3: field 2 is not valid UTF-8");
  EXPECT_EQ(ParseError("a,label\n1,0\n\xC0\xAF,1\n"),  // an overlong '/'
            "train.csv: line 3: field 1 is not valid UTF-8");
  EXPECT_EQ(ParseError("a,label\n1,0\n2,\xED\xA0\x80\n"),  // a surrogate
            "train.csv: line 3: field 2 is not valid UTF-8");
  EXPECT_EQ(ParseError("a\xFF,label\n1,0\n"), "train.csv: line 1: field 1 is not valid UTF-8");
}

TEST(CsvDatasetTest, BadHeaders) {
  EXPECT_EQ(ParseError(""), "train.csv: empty: no header row");
  EXPECT_EQ(ParseError("\n\n"), "train.csv: empty: no header row");
  EXPECT_EQ(ParseError("a,label\n"), "train.csv: no rows after the header");
  EXPECT_EQ(ParseError("a,b,a,label\n1,2,3,0\n"),
            "train.csv: line 1: column 'a' appears twice (columns 1 and 3)");
  EXPECT_EQ(ParseError("a,,label\n1,2,0\n"), "train.csv: line 1: column 2 has no name");
  EXPECT_EQ(ParseError("a,b,class\n1,2,0\n"),
            "train.csv: line 1: no label column 'label'; the columns are 'a', 'b', 'class'");
  EXPECT_EQ(ParseError("label\n0\n1\n"),
            "train.csv: line 1: no feature columns: the header has only the label column 'label'");
  std::string wide;
  for (int i = 0; i < 25; ++i) wide += "c" + std::to_string(i) + ",";
  EXPECT_EQ(ParseError(wide + "y\n"),
            "train.csv: line 1: no label column 'label'; the columns are 'c0', 'c1', 'c2', 'c3', "
            "'c4', 'c5', 'c6', 'c7', 'c8', 'c9', 'c10', 'c11', 'c12', 'c13', 'c14', 'c15', 'c16', "
            "'c17', 'c18', 'c19', ... (26 in all)");
}

TEST(CsvDatasetTest, LimitsOnRowsAndColumns) {
  std::string header;
  for (int i = 0; i < 65536; ++i) header += "c" + std::to_string(i) + ",";
  EXPECT_EQ(ParseError(header + "label\n"),
            "train.csv: line 1: more than 65536 fields (the limit)");
  const std::string long_row = "a,label\n1,0\n" + std::string(1 << 20, '1') + ",0\n";
  {
    testing::LargestAllocation largest;
    EXPECT_EQ(ParseError(long_row),
              "train.csv: line 3: a row longer than 1048576 bytes (the limit)");
    EXPECT_LE(largest.bytes(), size_t{3} << 20);
  }
  // Just under the limit is fine.
  auto d =
      ParseCsv("a,label\n1,0\n" + std::string((1 << 20) - 3, '1') + ",0\n", Source(), Options());
  ASSERT_FALSE(d.ok());  // 1048573 digits are too large for a double, but the row was read whole
  EXPECT_NE(d.status().message().find("line 3: column 'a': '1111"), std::string::npos)
      << d.status().message();
}

TEST(CsvDatasetTest, OptionsOutOfRange) {
  const std::string csv = "a,label\n1,0\n2,1\n3,0\n";
  EXPECT_EQ(ParseError(csv, Source(), Options(2)),
            "validation_size = 2 must be less than the 2 training examples in train.csv");
  EXPECT_EQ(ParseError(csv, Source(), Options(-2)), "validation_size must be >= 0, got -2");
  DatasetOptions o = Options();
  o.max_train_examples = -1;
  EXPECT_EQ(ParseError(csv, Source(), o), "max_train_examples must be >= 0 (0 = all), got -1");
}

TEST_F(CsvFiles, TestFileErrors) {
  DatasetSource s = Source(Write("train.csv", "a,b,label\n1,2,0\n"));
  s.test_path = Write("test.csv", "a,c,label\n1,2,0\n");
  auto d = LoadCsv(s, Options());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), s.test_path + ": line 1: the header differs from " + s.path +
                                      "'s: column 2 is 'c', there 'b'");
  s.test_path = Write("test.csv", "a,b\n1,2\n");
  d = LoadCsv(s, Options());
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), s.test_path +
                                      ": line 1: no label column 'label'; the columns "
                                      "are 'a', 'b'");
  // Text in the test file makes the column categorical: typed over both files.
  s.test_path = Write("test.csv", "a,b,label\n1,2,0\n1,x,0\n");
  auto info = ProbeCsv(s, Options(), ProbeDepth::kFull);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->columns[1].type, ColumnType::kCategorical);
  EXPECT_EQ(info->columns[1].levels, 2);
  s.columns.number = {"b"};
  info = ProbeCsv(s, Options(), ProbeDepth::kHeaders);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().message(),
            s.test_path + ": line 3: column 'b': 'x' is not a number (the column is typed number)");
  s.columns.number.clear();
  s.test_path = (dir_ / "missing.csv").string();
  d = LoadCsv(s, Options());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(d.status().message(), s.test_path + ": no such file");
  s.path = dir_.string();
  EXPECT_EQ(LoadCsv(s, Options()).status().code(), StatusCode::kIoError);
}

TEST_F(CsvFiles, LoadAndParseAgree) {
  std::string csv = "a,b,label\n";
  for (int i = 0; i < 50; ++i) {
    csv += std::to_string(i * 0.37) + "," + std::to_string(i % 7 - 3) + "," +
           (i % 3 == 0 ? "yes" : "no") + "\n";
  }
  DatasetSource s = Source(Write("t.csv", csv));
  s.standardize = true;
  s.split_seed = 3;
  auto loaded = LoadCsv(s, Options(kAutoValidationSize));
  auto parsed = ParseCsv(csv, s, Options(kAutoValidationSize));
  ASSERT_TRUE(loaded.ok() && parsed.ok());
  EXPECT_EQ(loaded->class_names, parsed->class_names);
  EXPECT_EQ(loaded->feature_mean, parsed->feature_mean);
  EXPECT_EQ(loaded->feature_std, parsed->feature_std);
  for (auto [x, y] : {std::pair{&loaded->train, &parsed->train},
                      std::pair{&loaded->validation, &parsed->validation},
                      std::pair{&loaded->test, &parsed->test}}) {
    EXPECT_EQ(x->labels, y->labels);
    ASSERT_EQ(x->images.size(), y->images.size());
    for (int64_t i = 0; i < x->images.size(); ++i) EXPECT_EQ(x->images[i], y->images[i]);
  }
  EXPECT_EQ(loaded->test.size(), 10);
  EXPECT_EQ(loaded->validation.size(), 4);
}

// The probe streams: its largest buffer is the reader's chunk or a row, whatever the file's size.
TEST_F(CsvFiles, ProbeReadsInBoundedMemory) {
  std::string row;
  for (int j = 0; j < 20; ++j) row += std::to_string(j * 1.25) + ",";
  std::string csv;
  for (int j = 0; j < 20; ++j) csv += "f" + std::to_string(j) + ",";
  csv += "label\n";
  while (csv.size() < (size_t{8} << 20)) csv += row + "cat\n" + row + "dog\n";
  DatasetSource s = Source(Write("big.csv", csv));
  s.standardize = true;
  testing::LargestAllocation largest;
  auto info = ProbeCsv(s, Options(kAutoValidationSize), ProbeDepth::kFull);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_LE(largest.bytes(), size_t{128} << 10);
  EXPECT_EQ(info->class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(info->file_train_examples + info->file_test_examples, 42800);
}

}  // namespace
}  // namespace trainingd::engine
