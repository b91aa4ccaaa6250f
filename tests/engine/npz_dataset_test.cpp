#include "trainingd/engine/data/npz_dataset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "largest_allocation.h"
#include "trainingd/engine/data/dataset.h"

// The files come from tests/engine/write_npz_files.py, run with Debian's NumPy by the CTest
// fixture engine.npz_cases (or by SetUpTestSuite when the binary is run by hand).
#ifndef TRAININGD_NPZ_CASES_DIR
#error "TRAININGD_NPZ_CASES_DIR must name the directory write_npz_files.py fills"
#endif

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;
using testing::LargestAllocation;

std::string Case(const std::string& name) {
  return std::string(TRAININGD_NPZ_CASES_DIR "/") + name;
}

DatasetSource Npz(const std::string& name, bool standardize = false) {
  DatasetSource s;
  s.format = DatasetSource::Format::kNpz;
  s.path = Case(name);
  s.standardize = standardize;
  return s;
}

DatasetOptions NpzOptions(int64_t validation_size = kAutoValidationSize) {
  DatasetOptions o;
  o.validation_size = validation_size;
  return o;
}

std::string FileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The generator's values: element i of an x array, and label n of each split.
double XValue(const std::string& dtype, int64_t i) {
  if (dtype[0] == 'f') return static_cast<double>(i) * 0.5 - 3;
  const int64_t v = i % 251;
  return dtype == "i1" ? static_cast<double>(v % 128) : static_cast<double>(v);
}
int NpzTrainLabel(int64_t n) { return static_cast<int>(n % 7); }
int TestLabel(int64_t n) { return static_cast<int>((n + 3) % 7); }
int ValLabel(int64_t n) { return static_cast<int>((n + 5) % 7); }

class NpzDatasetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (fs::exists(Case(".complete"))) return;
    const std::string cmd = std::string("/usr/bin/python3 ") + TRAININGD_NPZ_WRITER + " " +
                            TRAININGD_NPZ_CASES_DIR + " > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  static void ExpectError(const Status& s, StatusCode code, const std::vector<std::string>& parts) {
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), code) << s.ToString();
    for (const auto& p : parts) {
      EXPECT_NE(s.message().find(p), std::string::npos)
          << "missing '" << p << "' in " << s.ToString();
    }
  }
  // LoadNpz, ProbeNpz (both depths) and ParseNpz all fail alike on `name`.
  static void ExpectBad(const std::string& name, StatusCode code,
                        const std::vector<std::string>& parts, bool standardize = false,
                        bool headers_too = true) {
    SCOPED_TRACE(name);
    std::vector<std::string> with_file = parts;
    with_file.push_back(Case(name));
    auto load = LoadNpz(Npz(name, standardize), NpzOptions());
    ASSERT_FALSE(load.ok());
    ExpectError(load.status(), code, with_file);
    auto full = ProbeNpz(Npz(name, standardize), NpzOptions(), ProbeDepth::kFull);
    ASSERT_FALSE(full.ok());
    ExpectError(full.status(), code, with_file);
    if (headers_too) {
      auto headers = ProbeNpz(Npz(name, standardize), NpzOptions(), ProbeDepth::kHeaders);
      ASSERT_FALSE(headers.ok());
      ExpectError(headers.status(), code, with_file);
    }
    const std::string bytes = FileBytes(Case(name));
    auto parsed = ParseNpz(bytes, "mem.npz", NpzOptions(), standardize);
    ASSERT_FALSE(parsed.ok());
    ExpectError(parsed.status(), code, parts);
  }
};

TEST_F(NpzDatasetTest, EveryXDtypeStoredAndDeflated) {
  for (const std::string dtype : {"u1", "i1", "i2", "u2", "f4", "f8"}) {
    for (const std::string tag : {"s", "z"}) {
      const std::string name = "img_" + dtype + "_" + tag + ".npz";
      SCOPED_TRACE(name);
      auto ds = LoadNpz(Npz(name), NpzOptions());
      ASSERT_TRUE(ds.ok()) << ds.status().ToString();
      // 20 training examples of 4x5: a tenth (2) for validation, from the start.
      EXPECT_EQ(ds->train.images.shape(), (Shape{18, 4, 5, 1}));
      EXPECT_EQ(ds->validation.images.shape(), (Shape{2, 4, 5, 1}));
      EXPECT_EQ(ds->test.images.shape(), (Shape{6, 4, 5, 1}));
      EXPECT_EQ(ds->num_classes, 7);
      const bool u1 = dtype == "u1";
      EXPECT_EQ(ds->preprocessing, u1 ? Preprocessing::kScale255 : Preprocessing::kNone);
      for (int64_t i = 0; i < ds->train.images.size(); ++i) {
        const double v = XValue(dtype, 40 + i);
        ASSERT_EQ(ds->train.images[i], u1 ? static_cast<float>(v) / 255.0f : static_cast<float>(v))
            << "train element " << i;
      }
      for (int64_t i = 0; i < ds->validation.images.size(); ++i) {
        const double v = XValue(dtype, i);
        ASSERT_EQ(ds->validation.images[i],
                  u1 ? static_cast<float>(v) / 255.0f : static_cast<float>(v));
      }
      for (int64_t i = 0; i < ds->test.images.size(); ++i) {
        const double v = XValue(dtype, i);
        ASSERT_EQ(ds->test.images[i], u1 ? static_cast<float>(v) / 255.0f : static_cast<float>(v));
      }
      for (int64_t n = 0; n < 18; ++n)
        EXPECT_EQ(ds->train.labels[static_cast<size_t>(n)], NpzTrainLabel(n + 2));
      for (int64_t n = 0; n < 2; ++n)
        EXPECT_EQ(ds->validation.labels[static_cast<size_t>(n)], NpzTrainLabel(n));
      for (int64_t n = 0; n < 6; ++n)
        EXPECT_EQ(ds->test.labels[static_cast<size_t>(n)], TestLabel(n));

      for (ProbeDepth depth : {ProbeDepth::kHeaders, ProbeDepth::kFull}) {
        auto info = ProbeNpz(Npz(name), NpzOptions(), depth);
        ASSERT_TRUE(info.ok()) << info.status().ToString();
        const std::map<std::string, std::string> names = {{"u1", "uint8"},   {"i1", "int8"},
                                                          {"i2", "int16"},   {"u2", "uint16"},
                                                          {"f4", "float32"}, {"f8", "float64"}};
        EXPECT_EQ(info->element_type, names.at(dtype));
        EXPECT_EQ(info->example_shape, (Shape{4, 5, 1}));
        EXPECT_EQ(info->num_classes, 7);
        EXPECT_EQ(info->train_examples, 18);
        EXPECT_EQ(info->validation_examples, 2);
        EXPECT_EQ(info->test_examples, 6);
        EXPECT_EQ(info->file_train_examples, 20);
        EXPECT_EQ(info->file_test_examples, 6);
        EXPECT_EQ(info->preprocessing, ds->preprocessing);
        EXPECT_EQ(info->format, DatasetSource::Format::kNpz);
        EXPECT_EQ(info->LoadedBytes(), 26 * (20 * 4 + 4));
        EXPECT_EQ(info->PeakLoadBytes(), info->LoadedBytes() + (int64_t{8} << 20));
      }
    }
  }
}

TEST_F(NpzDatasetTest, ChannelsAndTables) {
  for (int c : {1, 3, 4}) {
    auto ds = LoadNpz(Npz("chw" + std::to_string(c) + ".npz"), NpzOptions(0));
    ASSERT_TRUE(ds.ok()) << ds.status().ToString();
    EXPECT_EQ(ds->train.images.shape(), (Shape{20, 4, 5, c}));
    EXPECT_EQ(ds->train.example_shape(), (Shape{4, 5, c}));
    EXPECT_EQ(ds->train.images[20 * c + 1], static_cast<float>((20 * c + 1) % 251) / 255.0f);
  }
  auto t = LoadNpz(Npz("table_f4.npz"), NpzOptions());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->train.images.shape(), (Shape{27, 3}));
  EXPECT_EQ(t->validation.images.shape(), (Shape{3, 3}));
  EXPECT_EQ(t->test.images.shape(), (Shape{8, 3}));
  EXPECT_EQ(t->preprocessing, Preprocessing::kNone);
  EXPECT_EQ(t->train.images[0], static_cast<float>(XValue("f4", 9)));
  auto u = LoadNpz(Npz("table_u1.npz"), NpzOptions());
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->preprocessing, Preprocessing::kScale255);
  auto f8 = ProbeNpz(Npz("table_f8_z.npz"), NpzOptions(), ProbeDepth::kFull);
  ASSERT_TRUE(f8.ok()) << f8.status().ToString();
  EXPECT_EQ(f8->example_shape, (Shape{3}));
  EXPECT_EQ(f8->element_type, "float64");
}

TEST_F(NpzDatasetTest, OwnValidationSplit) {
  auto ds = LoadNpz(Npz("with_val.npz"), NpzOptions());
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->train.size(), 20);
  EXPECT_EQ(ds->validation.size(), 4);
  EXPECT_EQ(ds->test.size(), 6);
  for (int64_t n = 0; n < 4; ++n)
    EXPECT_EQ(ds->validation.labels[static_cast<size_t>(n)], ValLabel(n));
  EXPECT_EQ(ds->train.labels[0], NpzTrainLabel(0));
  EXPECT_EQ(ds->validation.images[21], static_cast<float>(21 % 251) / 255.0f);

  auto none = LoadNpz(Npz("with_val.npz"), NpzOptions(0));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->validation.size(), 0);
  EXPECT_EQ(none->train.size(), 20);
  auto info = ProbeNpz(Npz("with_val.npz"), NpzOptions(0), ProbeDepth::kHeaders);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->validation_examples, 0);

  auto bad = LoadNpz(Npz("with_val.npz"), NpzOptions(3));
  ASSERT_FALSE(bad.ok());
  ExpectError(bad.status(), StatusCode::kInvalidArgument,
              {"validation_size: 3", "has its own validation split (x_val)"});

  auto table = ProbeNpz(Npz("with_val_table.npz"), NpzOptions(), ProbeDepth::kFull);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->validation_examples, 5);
  EXPECT_EQ(table->train_examples, 30);
}

TEST_F(NpzDatasetTest, SplitOptionsAsIdx) {
  DatasetOptions o = NpzOptions(5);
  o.max_train_examples = 4;
  o.max_test_examples = 2;
  auto ds = LoadNpz(Npz("img_u1_z.npz"), o);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->validation.size(), 5);
  EXPECT_EQ(ds->train.size(), 4);
  EXPECT_EQ(ds->test.size(), 2);
  EXPECT_EQ(ds->train.labels[0], NpzTrainLabel(5));
  EXPECT_EQ(ds->train.images[0], static_cast<float>(100) / 255.0f);
  auto info = ProbeNpz(Npz("img_u1_z.npz"), o, ProbeDepth::kHeaders);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->train_examples, 4);
  EXPECT_EQ(info->test_examples, 2);

  auto too_many = LoadNpz(Npz("img_u1_z.npz"), NpzOptions(20));
  ASSERT_FALSE(too_many.ok());
  ExpectError(too_many.status(), StatusCode::kInvalidArgument,
              {"validation_size = 20", "less than the 20 training examples"});
  auto negative = LoadNpz(Npz("img_u1_z.npz"), NpzOptions(-2));
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(NpzDatasetTest, EveryLabelWidthAndVersion) {
  for (const std::string dtype : {"i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"}) {
    auto ds = LoadNpz(Npz("labels_" + dtype + ".npz"), NpzOptions(0));
    ASSERT_TRUE(ds.ok()) << dtype << ": " << ds.status().ToString();
    for (int64_t n = 0; n < 20; ++n)
      EXPECT_EQ(ds->train.labels[static_cast<size_t>(n)], NpzTrainLabel(n));
    for (int64_t n = 0; n < 6; ++n)
      EXPECT_EQ(ds->test.labels[static_cast<size_t>(n)], TestLabel(n));
  }
  for (const std::string v : {"1", "2", "3"}) {
    for (const std::string tag : {"s", "z"}) {
      auto ds = LoadNpz(Npz("version_" + v + "_" + tag + ".npz"), NpzOptions(0));
      ASSERT_TRUE(ds.ok()) << v << tag << ": " << ds.status().ToString();
      EXPECT_EQ(ds->train.images.shape(), (Shape{20, 4, 5, 1}));
      EXPECT_EQ(ds->train.images[399], static_cast<float>(399 % 251) / 255.0f);
      EXPECT_EQ(ds->test.labels[5], TestLabel(5));
    }
  }
}

TEST_F(NpzDatasetTest, Zip64EndRecords) {
  auto a = LoadNpz(Npz("zip64_end.npz"), NpzOptions(0));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  auto b = LoadNpz(Npz("img_u1_s.npz"), NpzOptions(0));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(a->train.images.shape(), b->train.images.shape());
  for (int64_t i = 0; i < a->train.images.size(); ++i)
    ASSERT_EQ(a->train.images[i], b->train.images[i]);
  EXPECT_EQ(a->test.labels, b->test.labels);
}

TEST_F(NpzDatasetTest, ConversionExtremesAndBigEndian) {
  auto u2 = LoadNpz(Npz("u2_max.npz"), NpzOptions(0));
  ASSERT_TRUE(u2.ok()) << u2.status().ToString();
  EXPECT_EQ(u2->train.images[0], 65535.0f);
  EXPECT_EQ(u2->train.images[1], 0.0f);
  auto u1 = LoadNpz(Npz("u1_max.npz"), NpzOptions(0));
  ASSERT_TRUE(u1.ok()) << u1.status().ToString();
  EXPECT_EQ(u1->train.images[0], 1.0f);
  EXPECT_EQ(u1->train.images[3], 1.0f);
  auto labels = ProbeNpz(Npz("label_255.npz"), NpzOptions(0), ProbeDepth::kHeaders);
  ASSERT_TRUE(labels.ok()) << labels.status().ToString();
  EXPECT_EQ(labels->num_classes, 256);
  auto be = LoadNpz(Npz("big_endian.npz"), NpzOptions(0));
  ASSERT_TRUE(be.ok()) << be.status().ToString();
  for (int64_t i = 0; i < 30; ++i)
    ASSERT_EQ(be->train.images[i], static_cast<float>(XValue("f4", i)));
  for (int64_t n = 0; n < 10; ++n)
    EXPECT_EQ(be->train.labels[static_cast<size_t>(n)], NpzTrainLabel(n));
}

TEST_F(NpzDatasetTest, StandardizationUsesTheTrainSplit) {
  // Feature 0 of the training rows: 1 2 3 4 10 20 30 40 50 60; feature 1 is always 5.
  auto ds = LoadNpz(Npz("standard.npz", true), NpzOptions(0));
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->preprocessing, Preprocessing::kStandard);
  const std::vector<double> f0 = {1, 2, 3, 4, 10, 20, 30, 40, 50, 60};
  double mean = 0, var = 0;
  for (double v : f0) mean += v / 10;
  for (double v : f0) var += (v - mean) * (v - mean) / 10;
  ASSERT_EQ(ds->feature_mean.size(), 2u);
  EXPECT_FLOAT_EQ(ds->feature_mean[0], static_cast<float>(mean));
  EXPECT_FLOAT_EQ(ds->feature_std[0], static_cast<float>(std::sqrt(var)));
  EXPECT_EQ(ds->feature_mean[1], 5.0f);
  EXPECT_EQ(ds->feature_std[1], 1.0f);  // constant
  EXPECT_FLOAT_EQ(ds->train.images[0], static_cast<float>((1 - mean) / std::sqrt(var)));
  EXPECT_EQ(ds->train.images[1], 0.0f);
  EXPECT_EQ(ds->test.images[3], 1.0f);  // (6 - 5) / 1

  auto probe = ProbeNpz(Npz("standard.npz", true), NpzOptions(0), ProbeDepth::kFull);
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  EXPECT_EQ(probe->feature_mean, ds->feature_mean);
  EXPECT_EQ(probe->feature_std, ds->feature_std);
  auto headers = ProbeNpz(Npz("standard.npz", true), NpzOptions(0), ProbeDepth::kHeaders);
  ASSERT_TRUE(headers.ok());
  EXPECT_EQ(headers->preprocessing, Preprocessing::kStandard);
  EXPECT_TRUE(headers->feature_mean.empty());

  // With the automatic validation split, the first row is validation's and not in the stats.
  auto auto_split = LoadNpz(Npz("standard.npz", true), NpzOptions());
  ASSERT_TRUE(auto_split.ok());
  EXPECT_FLOAT_EQ(auto_split->feature_mean[0], static_cast<float>((mean * 10 - 1) / 9));
}

TEST_F(NpzDatasetTest, StandardizationMatchesNumPyOverManyChunks) {
  auto ds = LoadNpz(Npz("table_big_z.npz", true), NpzOptions());
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  auto probe = ProbeNpz(Npz("table_big_z.npz", true), NpzOptions(), ProbeDepth::kFull);
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  EXPECT_EQ(probe->feature_mean, ds->feature_mean);
  EXPECT_EQ(probe->feature_std, ds->feature_std);
  std::ifstream stats(Case("table_big_stats.txt"));
  for (size_t k = 0; k < 30; ++k) {
    double m = 0, s = 0;
    ASSERT_TRUE(stats >> m >> s);
    EXPECT_NEAR(ds->feature_mean[k], m, 1e-6 * std::abs(m) + 1e-7) << k;
    EXPECT_NEAR(ds->feature_std[k], s, 1e-6 * s) << k;
  }
  // The standardized train split has mean 0 and deviation 1 per feature.
  double sum = 0, sq = 0;
  for (int64_t r = 0; r < ds->train.size(); ++r) {
    const double v = ds->train.images[r * 30 + 7];
    sum += v;
    sq += v * v;
  }
  const double n = static_cast<double>(ds->train.size());
  EXPECT_NEAR(sum / n, 0, 1e-5);
  EXPECT_NEAR(sq / n, 1, 1e-4);
}

TEST_F(NpzDatasetTest, LargeFilesStreamAndMatchNumPy) {
  auto z = LoadNpz(Npz("big_z.npz"), NpzOptions(0));
  ASSERT_TRUE(z.ok()) << z.status().ToString();
  auto s = LoadNpz(Npz("big_s.npz"), NpzOptions(0));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(z->train.images.shape(), (Shape{500, 32, 32, 3}));
  ASSERT_EQ(z->train.images.size(), s->train.images.size());
  for (int64_t i = 0; i < z->train.images.size(); ++i)
    ASSERT_EQ(z->train.images[i], s->train.images[i]);
  EXPECT_EQ(z->train.labels, s->train.labels);
  const std::string npy = FileBytes(Case("big_x_train.npy"));
  const size_t data = npy.size() - 500 * 32 * 32 * 3;
  for (int64_t i = 0; i < z->train.images.size(); i += 997) {
    ASSERT_EQ(
        z->train.images[i],
        static_cast<float>(static_cast<uint8_t>(npy[data + static_cast<size_t>(i)])) / 255.0f);
  }
  // A probe holds no array: its largest allocation is a chunk buffer.
  for (ProbeDepth depth : {ProbeDepth::kHeaders, ProbeDepth::kFull}) {
    LargestAllocation largest;
    auto info = ProbeNpz(Npz("big_z.npz"), NpzOptions(), depth);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_LE(largest.bytes(), size_t{1} << 20);
  }
  // ParseNpz reads the same from memory.
  const std::string bytes = FileBytes(Case("big_z.npz"));
  auto parsed = ParseNpz(bytes, "mem", NpzOptions(0), false);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->test.labels, z->test.labels);
  for (int64_t i = 0; i < z->test.images.size(); ++i)
    ASSERT_EQ(parsed->test.images[i], z->test.images[i]);
}

TEST_F(NpzDatasetTest, DispatchThroughProbeAndLoadDataset) {
  auto info = ProbeDataset(Npz("chw3.npz"), NpzOptions(), ProbeDepth::kFull);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->example_shape, (Shape{4, 5, 3}));
  auto ds = LoadDataset(Npz("chw3.npz"), NpzOptions());
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->train.size(), 18);
  auto missing = LoadNpz(Npz("no-such.npz"), NpzOptions());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST_F(NpzDatasetTest, BadArraysAreRejectedByName) {
  const auto kInvalid = StatusCode::kInvalidArgument;
  ExpectBad("bad_fortran.npz", kInvalid, {"x_train.npy", "C order only"});
  ExpectBad("bad_object.npz", kInvalid, {"x_train.npy", "'|O'", "pickle"});
  ExpectBad("bad_counts.npz", kInvalid, {"y_train.npy: 19 labels for 20 images in x_train.npy"});
  ExpectBad("bad_counts_table.npz", kInvalid, {"y_test.npy: 5 labels for 6 rows in x_test.npy"});
  ExpectBad("bad_nan.npz", kInvalid, {"x_train.npy", "element 23", "example 7", "NaN"}, false,
            false);
  ExpectBad("bad_inf.npz", kInvalid, {"x_test.npy", "element 4", "-inf"}, false, false);
  ExpectBad("bad_f8_range.npz", kInvalid, {"x_train.npy", "element 6", "float32"}, false, false);
  ExpectBad("bad_negative_label.npz", kInvalid, {"y_train.npy", "label -1 at index 4", "[0, 256)"});
  ExpectBad("bad_huge_label.npz", kInvalid, {"y_test.npy", "label 256 at index 2"});
  ExpectBad("bad_u8_label.npz", kInvalid, {"y_train.npy", "at index 0"});
  ExpectBad("bad_missing.npz", kInvalid, {"no array y_test"});
  ExpectBad("bad_extra.npz", kInvalid, {"unexpected member 'extra.npy'"});
  ExpectBad("bad_half_val.npz", kInvalid, {"x_val without y_val"});
  ExpectBad("bad_shapes.npz", kInvalid, {"x_test.npy", "[5,4,1]", "[4,5,1]"});
  ExpectBad("bad_mixed_dtypes.npz", kInvalid, {"x_test.npy", "float32", "uint8"});
  ExpectBad("bad_channels.npz", kInvalid, {"x_train.npy", "C in 1..4"});
  ExpectBad("bad_x_int32.npz", kInvalid, {"x_train.npy", "int32"});
  ExpectBad("bad_float_labels.npz", kInvalid, {"y_train.npy", "integers"});
  ExpectBad("bad_image_standardize.npz", kInvalid,
            {"normalize: standard applies to tables ([N, F] arrays)"}, true);
}

TEST_F(NpzDatasetTest, CorruptAndTruncatedArchivesAreDataLoss) {
  const auto kLoss = StatusCode::kDataLoss;
  for (const std::string tag : {"s", "z"}) {
    ExpectBad("bad_lying_short_" + tag + ".npz", kLoss,
              {"x_train.npy", "[20,4,5]", "400 data bytes"});
    ExpectBad("bad_lying_long_" + tag + ".npz", kLoss,
              {"x_train.npy", "[20,4,5]", "400 data bytes"});
  }
  ExpectBad("bad_truncated_half.npz", kLoss, {"truncated"});
  ExpectBad("bad_truncated_end.npz", kLoss, {"truncated"});
  ExpectBad("bad_crc.npz", kLoss, {"CRC-32"}, false, false);
  ExpectBad("bad_not_zip.npz", StatusCode::kInvalidArgument, {"not a zip archive"});
}

TEST_F(NpzDatasetTest, ZipBombsAreRefusedWithoutInflatingThem) {
  {
    // 1 GB declared from a 2 KB deflate stream: refused before inflating anything.
    LargestAllocation largest;
    ExpectBad("bomb_declared.npz", StatusCode::kDataLoss, {"x_train.npy", "cannot hold"});
    EXPECT_LE(largest.bytes(), size_t{1} << 20);
  }
  // The zip entry's size and the .npy header disagree: refused before the data is inflated.
  ExpectBad("bomb_mismatch.npz", StatusCode::kDataLoss, {"x_train.npy", "400 data bytes", "holds"});
  // Both say 20 examples, the stream holds 32 MB: reading stops at the declared size.
  ExpectBad("bomb_stream.npz", StatusCode::kDataLoss, {"x_train.npy", "more than"}, false, false);
  {
    // A valid 20 MB stream of zeros at ~1000:1: a probe streams it in bounded memory.
    LargestAllocation largest;
    auto info = ProbeNpz(Npz("bomb_valid_ratio.npz"), NpzOptions(), ProbeDepth::kFull);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    EXPECT_EQ(info->example_shape, (Shape{1000}));
    EXPECT_LE(largest.bytes(), size_t{1} << 20);
  }
  {
    // The same with a wrong CRC: LoadNpz verifies such a stream before allocating 80 MB.
    LargestAllocation largest;
    auto ds = LoadNpz(Npz("bomb_bad_crc.npz"), NpzOptions());
    ASSERT_FALSE(ds.ok());
    ExpectError(ds.status(), StatusCode::kDataLoss, {"x_train.npy", "CRC-32"});
    EXPECT_LE(largest.bytes(), size_t{1} << 20);
  }
}

// Fuzz finds (tests/fuzz/regressions/npz, docs/fuzzing.md).
TEST_F(NpzDatasetTest, FuzzRegressions) {
  // A shape dimension of 19 digits: the parser multiplied before checking (signed overflow).
  const std::string overflow =
      FileBytes(TRAININGD_FUZZ_REGRESSIONS_DIR "/npz/shape-dimension-overflows-int64");
  ASSERT_FALSE(overflow.empty());
  auto r = ParseNpz(overflow, "f.npz", NpzOptions(), false);
  ASSERT_FALSE(r.ok());
  ExpectError(r.status(), StatusCode::kInvalidArgument,
              {"f.npz: x_train.npy", "dimension too large"});
}

}  // namespace
}  // namespace trainingd::engine
