#include "trainingd/engine/data/dataset.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace trainingd::engine {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> IdxBytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(d >> shift));
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void WriteFile(const fs::path& path, const std::vector<uint8_t>& bytes, bool gzip) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr) << path;
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
    ASSERT_EQ(gzclose(f), Z_OK);
    return;
  }
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

// A synthetic MNIST-format dataset: 10 training and 4 test images of 3x2 pixels.
constexpr int kHeight = 3;
constexpr int kWidth = 2;
constexpr int kPixels = kHeight * kWidth;
constexpr int kNumTrain = 10;
constexpr int kNumTest = 4;

// Pixel `p` of training example `i`: distinct per example; example 0 holds 0 and 255.
uint8_t TrainPixel(int i, int p) {
  return i == 0 && p == 1 ? 255 : static_cast<uint8_t>(i * 20 + p);
}
uint8_t TestPixel(int i, int p) { return static_cast<uint8_t>(200 + i * 6 + p); }
uint8_t TrainLabel(int i) { return static_cast<uint8_t>(i % 3); }
constexpr std::array<uint8_t, kNumTest> kTestLabels = {2, 4, 0, 1};  // max label 4: 5 classes

std::vector<uint8_t> TrainImages(int n = kNumTrain) {
  std::vector<uint8_t> d;
  for (int i = 0; i < n; ++i) {
    for (int p = 0; p < kPixels; ++p) d.push_back(TrainPixel(i, p));
  }
  return IdxBytes({static_cast<uint32_t>(n), kHeight, kWidth}, d);
}
std::vector<uint8_t> TrainLabels(int n = kNumTrain) {
  std::vector<uint8_t> d;
  for (int i = 0; i < n; ++i) d.push_back(TrainLabel(i));
  return IdxBytes({static_cast<uint32_t>(n)}, d);
}
std::vector<uint8_t> TestImages() {
  std::vector<uint8_t> d;
  for (int i = 0; i < kNumTest; ++i) {
    for (int p = 0; p < kPixels; ++p) d.push_back(TestPixel(i, p));
  }
  return IdxBytes({kNumTest, kHeight, kWidth}, d);
}
std::vector<uint8_t> TestLabels() {
  return IdxBytes({kNumTest}, std::vector<uint8_t>(kTestLabels.begin(), kTestLabels.end()));
}

class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "trainingd_dataset_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Writes the four files under the canonical names, or gzipped with ".gz", or with the dotted
  // spelling ("train-images.idx3-ubyte").
  void WriteDataset(bool gzip, bool dotted = false) {
    const std::string sep = dotted ? "." : "-";
    const std::string ext = gzip ? ".gz" : "";
    WriteFile(dir_ / ("train-images" + sep + "idx3-ubyte" + ext), TrainImages(), gzip);
    WriteFile(dir_ / ("train-labels" + sep + "idx1-ubyte" + ext), TrainLabels(), gzip);
    WriteFile(dir_ / ("t10k-images" + sep + "idx3-ubyte" + ext), TestImages(), gzip);
    WriteFile(dir_ / ("t10k-labels" + sep + "idx1-ubyte" + ext), TestLabels(), gzip);
  }

  Result<Datasets> Load(int64_t validation_size, int64_t max_train = 0, int64_t max_test = 0) {
    DatasetOptions options;
    options.validation_size = validation_size;
    options.max_train_examples = max_train;
    options.max_test_examples = max_test;
    return LoadMnistDirectory(dir_.string(), options);
  }

  static bool Contains(const Status& s, const std::string& part) {
    return s.message().find(part) != std::string::npos;
  }

  fs::path dir_;
};

// Expects example `k` of `split` to be training example `i` of the synthetic file.
void ExpectTrainExample(const Split& split, int64_t k, int i) {
  EXPECT_EQ(split.labels[static_cast<size_t>(k)], TrainLabel(i)) << "example " << k;
  for (int p = 0; p < kPixels; ++p) {
    EXPECT_EQ(split.images[k * kPixels + p], static_cast<float>(TrainPixel(i, p)) / 255.0f)
        << "example " << k << " pixel " << p;
  }
}

TEST_F(DatasetTest, ValidationIsTheFirstTrainingExamplesAndTrainIsTheRest) {
  WriteDataset(/*gzip=*/false);
  auto ds = Load(/*validation_size=*/3);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->validation.size(), 3);
  EXPECT_EQ(ds->train.size(), 7);
  EXPECT_EQ(ds->test.size(), 4);
  EXPECT_EQ(ds->validation.images.shape(), (Shape{3, kHeight, kWidth, 1}));
  EXPECT_EQ(ds->train.images.shape(), (Shape{7, kHeight, kWidth, 1}));
  EXPECT_EQ(ds->test.images.shape(), (Shape{4, kHeight, kWidth, 1}));
  EXPECT_EQ(ds->train.example_shape(), (Shape{kHeight, kWidth, 1}));
  EXPECT_EQ(ds->num_classes, 5);
  for (int k = 0; k < 3; ++k) ExpectTrainExample(ds->validation, k, k);
  for (int k = 0; k < 7; ++k) ExpectTrainExample(ds->train, k, 3 + k);
  EXPECT_EQ(ds->test.labels, (std::vector<int32_t>{2, 4, 0, 1}));
  EXPECT_EQ(ds->test.images[kPixels * 3 + 5], static_cast<float>(TestPixel(3, 5)) / 255.0f);
}

TEST_F(DatasetTest, PixelsAreScaledToUnitInterval) {
  WriteDataset(/*gzip=*/false);
  auto ds = Load(/*validation_size=*/1);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  const Tensor& v = ds->validation.images;  // training example 0: pixels 0, 255, 2, 3, 4, 5
  EXPECT_EQ(v[0], 0.0f);
  EXPECT_EQ(v[1], 1.0f);
  EXPECT_FLOAT_EQ(v[2], 2.0f / 255.0f);
  // Example 1 of the file (train[0]) has pixel 0 = 20 -> 0.0784...
  EXPECT_FLOAT_EQ(ds->train.images[0], 20.0f / 255.0f);
  for (const Split* s : {&ds->train, &ds->validation, &ds->test}) {
    for (int64_t i = 0; i < s->images.size(); ++i) {
      ASSERT_GE(s->images[i], 0.0f);
      ASSERT_LE(s->images[i], 1.0f);
    }
  }
}

TEST_F(DatasetTest, GzipAndDottedNamesLoadTheSameData) {
  WriteDataset(/*gzip=*/false);
  auto raw = Load(2);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  for (const auto& e : fs::directory_iterator(dir_)) fs::remove(e.path());
  WriteDataset(/*gzip=*/true, /*dotted=*/true);
  ASSERT_TRUE(fs::exists(dir_ / "train-images.idx3-ubyte.gz"));
  auto gz = Load(2);
  ASSERT_TRUE(gz.ok()) << gz.status().ToString();
  EXPECT_EQ(gz->num_classes, raw->num_classes);
  for (auto [a, b] :
       {std::pair{&raw->train, &gz->train}, std::pair{&raw->validation, &gz->validation},
        std::pair{&raw->test, &gz->test}}) {
    EXPECT_EQ(a->labels, b->labels);
    ASSERT_EQ(a->images.shape(), b->images.shape());
    for (int64_t i = 0; i < a->images.size(); ++i) ASSERT_EQ(a->images[i], b->images[i]);
  }
}

TEST_F(DatasetTest, ValidationSizeOutOfRangeIsInvalidArgument) {
  WriteDataset(/*gzip=*/false);
  // -1 is kAutoValidationSize.
  for (int64_t bad : {int64_t{10}, int64_t{11}, int64_t{-2}}) {
    auto ds = Load(bad);
    ASSERT_FALSE(ds.ok()) << bad;
    EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(ds.status(), "validation_size")) << ds.status().ToString();
    EXPECT_TRUE(Contains(ds.status(), std::to_string(bad))) << ds.status().ToString();
  }
  auto all_train = Load(0);
  ASSERT_TRUE(all_train.ok()) << all_train.status().ToString();
  EXPECT_EQ(all_train->validation.size(), 0);
  EXPECT_EQ(all_train->train.size(), 10);
  auto one_train = Load(9);
  ASSERT_TRUE(one_train.ok()) << one_train.status().ToString();
  ExpectTrainExample(one_train->train, 0, 9);
}

TEST_F(DatasetTest, MaxExamplesApplyAfterTheValidationSplit) {
  WriteDataset(/*gzip=*/false);
  auto ds = Load(/*validation_size=*/4, /*max_train=*/2, /*max_test=*/3);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->validation.size(), 4);
  EXPECT_EQ(ds->train.size(), 2);
  EXPECT_EQ(ds->test.size(), 3);
  EXPECT_EQ(ds->train.images.shape(), (Shape{2, kHeight, kWidth, 1}));
  ExpectTrainExample(ds->train, 0, 4);
  ExpectTrainExample(ds->train, 1, 5);
  EXPECT_EQ(ds->num_classes, 5);  // from the whole files, although label 4 was cut from test
  auto bigger = Load(4, /*max_train=*/100);
  ASSERT_TRUE(bigger.ok()) << bigger.status().ToString();
  EXPECT_EQ(bigger->train.size(), 6);
  auto negative = Load(4, /*max_train=*/-1);
  ASSERT_FALSE(negative.ok());
  EXPECT_TRUE(Contains(negative.status(), "max_train_examples"));
}

// With max_*_examples only the rows the splits take are read: image files cut short after those
// rows still load (raw and gzip), and a load of every example finds the cut.
TEST_F(DatasetTest, MaxExamplesReadOnlyTheRowsTheSplitsTake) {
  for (bool gzip : {false, true}) {
    SCOPED_TRACE(gzip ? "gzip" : "raw");
    WriteDataset(gzip);
    const std::string ext = gzip ? ".gz" : "";
    std::vector<uint8_t> train = TrainImages();
    train.resize(train.size() - 3 * kPixels);  // rows 7-9 gone
    WriteFile(dir_ / ("train-images-idx3-ubyte" + ext), train, gzip);
    std::vector<uint8_t> test = TestImages();
    test.resize(test.size() - kPixels);  // row 3 gone
    WriteFile(dir_ / ("t10k-images-idx3-ubyte" + ext), test, gzip);

    auto ds = Load(/*validation_size=*/4, /*max_train=*/3, /*max_test=*/3);
    ASSERT_TRUE(ds.ok()) << ds.status().ToString();
    EXPECT_EQ(ds->train.size(), 3);
    ExpectTrainExample(ds->train, 2, 6);
    EXPECT_EQ(ds->test.size(), 3);
    EXPECT_EQ(ds->num_classes, 5);
    EXPECT_EQ(Load(4).status().code(), StatusCode::kDataLoss);
    EXPECT_EQ(Load(4, /*max_train=*/4).status().code(), StatusCode::kDataLoss);
    EXPECT_EQ(Load(4, 3, /*max_test=*/4).status().code(), StatusCode::kDataLoss);
  }
}

TEST_F(DatasetTest, CountMismatchNamesBothFilesAndCounts) {
  WriteDataset(/*gzip=*/false);
  WriteFile(dir_ / "train-labels-idx1-ubyte", TrainLabels(9), false);
  auto ds = Load(2);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  const std::string images = (dir_ / "train-images-idx3-ubyte").string();
  const std::string labels = (dir_ / "train-labels-idx1-ubyte").string();
  EXPECT_TRUE(Contains(ds.status(), images + " has 10 images")) << ds.status().ToString();
  EXPECT_TRUE(Contains(ds.status(), labels + " has 9 labels")) << ds.status().ToString();
}

TEST_F(DatasetTest, WrongRanksAndMismatchedImageSizesAreInvalidArgument) {
  WriteDataset(/*gzip=*/false);
  WriteFile(dir_ / "train-labels-idx1-ubyte", IdxBytes({5, 2}, std::vector<uint8_t>(10)), false);
  auto ds = Load(2);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(ds.status(), "rank 1")) << ds.status().ToString();

  WriteDataset(/*gzip=*/false);
  WriteFile(dir_ / "t10k-images-idx3-ubyte", IdxBytes({4, 6}, std::vector<uint8_t>(24)), false);
  ds = Load(2);
  ASSERT_FALSE(ds.ok());
  EXPECT_TRUE(Contains(ds.status(), "rank 3")) << ds.status().ToString();

  WriteDataset(/*gzip=*/false);
  WriteFile(dir_ / "t10k-images-idx3-ubyte", IdxBytes({4, 2, 3}, std::vector<uint8_t>(24)), false);
  ds = Load(2);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(ds.status(), "3x2")) << ds.status().ToString();
  EXPECT_TRUE(Contains(ds.status(), "2x3")) << ds.status().ToString();
}

TEST_F(DatasetTest, MissingFileOrDirectoryIsNotFound) {
  WriteDataset(/*gzip=*/true);
  fs::remove(dir_ / "t10k-labels-idx1-ubyte.gz");
  auto ds = Load(2);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(ds.status(), dir_.string())) << ds.status().ToString();
  EXPECT_TRUE(Contains(ds.status(), "t10k-labels-idx1-ubyte")) << ds.status().ToString();

  const std::string missing = (dir_ / "no-such-dir").string();
  auto nodir = LoadMnistDirectory(missing, {});
  ASSERT_FALSE(nodir.ok());
  EXPECT_EQ(nodir.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(nodir.status(), missing)) << nodir.status().ToString();
}

TEST_F(DatasetTest, CorruptFileErrorIsPassedThrough) {
  WriteDataset(/*gzip=*/false);
  auto bytes = TestImages();
  bytes.pop_back();
  WriteFile(dir_ / "t10k-images-idx3-ubyte", bytes, false);
  auto ds = Load(2);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(Contains(ds.status(), (dir_ / "t10k-images-idx3-ubyte").string()));
}

// The real Fashion-MNIST, loaded once for the suite.
class FashionMnistTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto r = LoadMnistDirectory(TRAININGD_FASHION_MNIST_DIR, {});
    if (r.ok()) {
      data_ = std::make_unique<Datasets>(std::move(r).value());
    } else {
      error_ = r.status();
    }
  }
  static void TearDownTestSuite() { data_.reset(); }
  void SetUp() override { ASSERT_NE(data_, nullptr) << error_.ToString(); }

  static inline std::unique_ptr<Datasets> data_;
  static inline Status error_;
};

TEST_F(FashionMnistTest, SplitSizesShapesAndClasses) {
  EXPECT_EQ(data_->train.size(), 55000);
  EXPECT_EQ(data_->validation.size(), 5000);
  EXPECT_EQ(data_->test.size(), 10000);
  EXPECT_EQ(data_->train.example_shape(), (Shape{28, 28, 1}));
  EXPECT_EQ(data_->train.images.shape(), (Shape{55000, 28, 28, 1}));
  EXPECT_EQ(data_->validation.images.shape(), (Shape{5000, 28, 28, 1}));
  EXPECT_EQ(data_->test.images.shape(), (Shape{10000, 28, 28, 1}));
  EXPECT_EQ(data_->num_classes, 10);
}

TEST_F(FashionMnistTest, KnownLabelsAndStatistics) {
  // The training file starts 9 (ankle boot), 0, 0, 3; validation holds those first examples.
  EXPECT_EQ(
      std::vector<int32_t>(data_->validation.labels.begin(), data_->validation.labels.begin() + 4),
      (std::vector<int32_t>{9, 0, 0, 3}));
  // Example 5000 of the training file is the first of the train split.
  EXPECT_EQ(std::vector<int32_t>(data_->train.labels.begin(), data_->train.labels.begin() + 4),
            (std::vector<int32_t>{4, 0, 7, 9}));
  EXPECT_EQ(std::vector<int32_t>(data_->test.labels.begin(), data_->test.labels.begin() + 3),
            (std::vector<int32_t>{9, 2, 1}));
  // The test set is balanced: 1000 examples per class.
  std::vector<int> counts(10);
  for (int32_t l : data_->test.labels) {
    ASSERT_GE(l, 0);
    ASSERT_LT(l, 10);
    counts[static_cast<size_t>(l)]++;
  }
  EXPECT_EQ(counts, std::vector<int>(10, 1000));
  // Mean test pixel: 0.286849 (computed independently from the file).
  double sum = 0;
  const Tensor& t = data_->test.images;
  for (int64_t i = 0; i < t.size(); ++i) sum += t[i];
  EXPECT_NEAR(sum / static_cast<double>(t.size()), 0.286849, 1e-5);
  // The first test image's pixels sum to 33456 / 255.
  double first = 0;
  for (int64_t i = 0; i < 784; ++i) first += t[i];
  EXPECT_NEAR(first, 33456.0 / 255.0, 1e-3);
}

}  // namespace
}  // namespace trainingd::engine
