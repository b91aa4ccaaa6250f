// DatasetStore on a real directory: uploads kept only whole and valid, never over another, nothing
// left by a failure; the records survive a restart; deletes refused while jobs use a dataset;
// a job's dataset resolved to the exact upload.
#include "trainingd/daemon/datasets/dataset_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trainingd/engine/base/sha256.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/data/idx_file.h"
#include "trainingd/engine/job/job_runner.h"

namespace trainingd::daemon {
namespace {

namespace fs = std::filesystem;
using engine::StatusCode;

// A small table: two features, three string classes.
std::string Csv(int rows = 40) {
  std::string text = "x,y,label\n";
  const char* names[] = {"cat", "dog", "emu"};
  for (int i = 0; i < rows; ++i) {
    text += std::to_string(i) + "," + std::to_string(i % 7) + "," + names[i % 3] + "\n";
  }
  return text;
}

std::string Sha(const std::string& bytes) {
  engine::Sha256 h;
  h.Update(bytes);
  return h.HexDigest();
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

class DatasetStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/trainingd_dataset_store_XXXXXX";
    root_ = mkdtemp(tmpl);
    dir_ = root_ + "/datasets";
    fs::create_directories(root_ + "/data_root/fashion-mnist");
    for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                          "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
      fs::create_symlink(std::string("/usr/share/datasets/fashion-mnist/") + f,
                         root_ + "/data_root/fashion-mnist/" + f);
    }
    Open();
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(root_);
  }
  void Open() {
    store_.reset();
    DatasetStoreOptions o;
    o.dir = dir_;
    o.data_root = root_ + "/data_root";
    o.max_upload_bytes = 1 << 20;
    o.jobs_using = [this](const std::string& name) {
      return name == busy_ ? std::vector<std::string>{"job-1"} : std::vector<std::string>{};
    };
    auto s = DatasetStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }
  engine::Result<api::DatasetRecord> Upload(const std::string& name, const std::string& body,
                                            const std::string& normalize = "none",
                                            const std::string& format = "csv") {
    api::DatasetUploadOptions o;
    o.name = name;
    o.format = format;
    o.normalize = normalize;
    return UploadWith(o, body);
  }
  engine::Result<api::DatasetRecord> UploadWith(const api::DatasetUploadOptions& o,
                                                const std::string& body) {
    auto upload = store_->BeginUpload(o, static_cast<int64_t>(body.size()));
    if (!upload.ok()) return upload.status();
    // In pieces, as the server feeds it.
    for (size_t at = 0; at < body.size(); at += 100) {
      auto st = (*upload)->Append(std::string_view(body).substr(at, 100));
      if (!st.ok()) return st;
    }
    return (*upload)->Commit();
  }

  std::string root_, dir_;
  std::string busy_;
  std::unique_ptr<DatasetStore> store_;
};

TEST_F(DatasetStoreTest, AnUploadIsKeptWholeAndSurvivesARestart) {
  const std::string body = Csv();
  auto r = Upload("animals", body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->sha256, Sha(body));
  EXPECT_EQ(r->bytes, static_cast<int64_t>(body.size()));
  EXPECT_EQ(r->example_shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(r->num_classes, 3);
  EXPECT_EQ(r->class_names, (std::vector<std::string>{"cat", "dog", "emu"}));
  EXPECT_GT(r->created_at, 1e9);
  EXPECT_EQ(Entries(dir_), std::vector<std::string>{"animals"});
  std::vector<std::string> files = {r->sha256 + ".csv", "dataset.json"};
  std::sort(files.begin(), files.end());
  EXPECT_EQ(Entries(dir_ + "/animals"), files);
  Open();  // a restart reads the record back
  auto again = store_->GetDataset("animals");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->sha256, r->sha256);
  EXPECT_EQ(again->class_names, r->class_names);
  EXPECT_EQ(again->train_examples, r->train_examples);
  auto list = store_->ListDatasets();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);  // and the data root's IDX directory, read-only
  EXPECT_EQ((*list)[0].name, "animals");
  EXPECT_EQ((*list)[1].name, "fashion-mnist");
  EXPECT_TRUE((*list)[1].read_only);
  EXPECT_EQ((*list)[1].example_shape, (std::vector<int64_t>{28, 28, 1}));
}

// A CSV with its own test file, fed as UploadBody feeds a multipart body (test part first).
TEST_F(DatasetStoreTest, ACsvKeepsItsOwnTestFile) {
  const std::string train = Csv(40), test = Csv(10);
  api::DatasetUploadOptions o;
  o.name = "animals";
  o.format = "csv";
  auto upload = store_->BeginUpload(o, -1);
  ASSERT_TRUE(upload.ok());
  ASSERT_TRUE((*upload)->Begin(api::DatasetFile::kTest).ok());
  ASSERT_TRUE((*upload)->Append(test).ok());
  ASSERT_TRUE((*upload)->Begin(api::DatasetFile::kMain).ok());
  ASSERT_TRUE((*upload)->Append(train).ok());
  auto r = (*upload)->Commit();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->upload.test_file);
  EXPECT_EQ(r->train_examples + r->validation_examples, 40);  // no test rows split off
  EXPECT_EQ(r->test_examples, 10);
  EXPECT_EQ(r->train_file.sha256, Sha(train));
  EXPECT_EQ(r->test_file.sha256, Sha(test));
  EXPECT_EQ(r->sha256, Sha(Sha(train) + "\n" + Sha(test) + "\n"));
  EXPECT_EQ(r->bytes, static_cast<int64_t>(train.size() + test.size()));
  std::vector<std::string> files = {r->sha256 + ".csv", r->sha256 + ".test.csv", "dataset.json"};
  std::sort(files.begin(), files.end());
  EXPECT_EQ(Entries(dir_ + "/animals"), files);
  Open();  // the record keeps both files
  auto again = store_->GetDataset("animals");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->upload.test_file);
  EXPECT_EQ(again->test_file.sha256, Sha(test));
  EXPECT_EQ(again->train_file.sha256, Sha(train));

  engine::DatasetSpec d;  // a job reads both files
  d.name = "animals";
  ASSERT_TRUE(store_->ResolveJobDataset(&d).ok());
  EXPECT_TRUE(d.test_file);
  auto info = engine::ProbeJobDataset(d, "", dir_);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->test_examples, 10);
}

TEST_F(DatasetStoreTest, ATestFileIsCheckedAndOnlyForCsv) {
  api::DatasetUploadOptions o;
  o.name = "bad";
  o.format = "csv";
  {  // a test file whose columns are not the training file's: named as the test file's fault
    auto upload = store_->BeginUpload(o, -1);
    ASSERT_TRUE(upload.ok());
    ASSERT_TRUE((*upload)->Append(Csv()).ok());
    ASSERT_TRUE((*upload)->Begin(api::DatasetFile::kTest).ok());
    ASSERT_TRUE((*upload)->Append("x,z,label\n1,2,cat\n").ok());
    auto r = (*upload)->Commit();
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind("test: ", 0), 0u) << r.status().message();
    EXPECT_EQ(r.status().message().find(dir_), std::string::npos) << r.status().message();
  }
  {  // an empty test part
    auto upload = store_->BeginUpload(o, -1);
    ASSERT_TRUE((*upload)->Append(Csv()).ok());
    ASSERT_TRUE((*upload)->Begin(api::DatasetFile::kTest).ok());
    EXPECT_EQ((*upload)->Commit().status().message().rfind("test: ", 0), 0u);
  }
  o.test_fraction = 0.3;  // a split asked for, and a test file given
  {
    auto upload = store_->BeginUpload(o, -1);
    EXPECT_EQ((*upload)->Begin(api::DatasetFile::kTest).message().rfind("test_fraction: ", 0), 0u);
  }
  o = {};
  o.name = "arrays";
  o.format = "npz";
  {
    auto upload = store_->BeginUpload(o, -1);
    EXPECT_EQ((*upload)->Begin(api::DatasetFile::kTest).message().rfind("test: ", 0), 0u);
  }
  EXPECT_TRUE(Entries(dir_).empty());
}

TEST_F(DatasetStoreTest, ANameIsNeverTakenOver) {
  ASSERT_TRUE(Upload("animals", Csv()).ok());
  auto again = Upload("animals", Csv(50));
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(Upload("fashion-mnist", Csv()).status().code(), StatusCode::kFailedPrecondition);
  // Two uploads of one name at once: the second is refused while the first goes on.
  api::DatasetUploadOptions o;
  o.name = "twice";
  o.format = "csv";
  auto first = store_->BeginUpload(o, -1);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(store_->BeginUpload(o, -1).status().code(), StatusCode::kFailedPrecondition);
  first->reset();  // abandoned: the name is free again, and nothing is left
  EXPECT_TRUE(store_->BeginUpload(o, -1).ok());
  EXPECT_EQ(Entries(dir_), std::vector<std::string>{"animals"});
}

TEST_F(DatasetStoreTest, AFailedUploadLeavesNothing) {
  auto bad = Upload("ragged", Csv() + "1,2\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message().rfind("body: ragged", 0), 0u) << bad.status().message();
  auto big = Upload("big", std::string(2 << 20, 'x'));
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  api::DatasetUploadOptions o;
  o.name = "chunked";
  o.format = "csv";
  auto chunked = store_->BeginUpload(o, -1);  // no Content-Length: counted as it comes
  ASSERT_TRUE(chunked.ok());
  EXPECT_TRUE((*chunked)->Append(std::string(1 << 19, 'x')).ok());
  EXPECT_EQ((*chunked)->Append(std::string(1 << 19, 'x')).code(), StatusCode::kOk);
  EXPECT_EQ((*chunked)->Append("x").code(), StatusCode::kResourceExhausted);
  chunked->reset();
  EXPECT_TRUE(Entries(dir_).empty());
  EXPECT_EQ(store_->GetDataset("ragged").status().code(), StatusCode::kNotFound);
}

TEST_F(DatasetStoreTest, OpenRemovesWhatInterruptedUploadsAndDeletesLeft) {
  fs::create_directories(dir_ + "/.upload-abc");
  std::ofstream(dir_ + "/.upload-abc/upload") << "half";
  fs::create_directories(dir_ + "/.delete-def");
  Open();
  EXPECT_TRUE(Entries(dir_).empty());
}

TEST_F(DatasetStoreTest, DeleteIsRefusedWhileAJobUsesIt) {
  ASSERT_TRUE(Upload("animals", Csv()).ok());
  busy_ = "animals";
  auto st = store_->DeleteDataset("animals");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("job-1"), std::string::npos) << st.message();
  busy_.clear();
  EXPECT_TRUE(store_->DeleteDataset("animals").ok());
  EXPECT_TRUE(Entries(dir_).empty());
  EXPECT_EQ(store_->DeleteDataset("animals").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->DeleteDataset("fashion-mnist").code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Upload("animals", Csv(50)).ok());  // the name is free again
}

// A CSV's columns: typed and summarized at upload, kept in the record across a restart, and
// its column options handed to the jobs that name it (a spec with others is refused).
TEST_F(DatasetStoreTest, ACsvsColumnsAreTypedSummarizedAndGivenToItsJobs) {
  api::DatasetUploadOptions o;
  o.name = "churn";
  o.format = "csv";
  o.columns.ignore = {"id"};
  o.columns.impute = engine::Impute::kMedian;
  std::string body = "age,city,id,label\n";
  for (int i = 0; i < 40; ++i) {
    body += (i % 5 == 0 ? std::string("NA") : std::to_string(20 + i)) + "," +
            (i % 2 ? "paris" : "rome") + ",c" + std::to_string(i) + "," + (i % 3 ? "a" : "b") +
            "\n";
  }
  auto r = UploadWith(o, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->columns.size(), 4u);
  EXPECT_EQ(r->columns[0].type, engine::ColumnType::kNumber);
  EXPECT_EQ(r->columns[0].missing, 8);
  EXPECT_EQ(r->columns[1].type, engine::ColumnType::kCategorical);
  EXPECT_EQ(r->columns[1].levels, 2);
  EXPECT_EQ(r->columns[2].type, engine::ColumnType::kIgnored);
  EXPECT_EQ(r->feature_names, (std::vector<std::string>{"age"}));
  Open();  // a restart reads the record back
  auto again = store_->GetDataset("churn");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->columns, r->columns);
  EXPECT_EQ(again->upload.columns, o.columns);
  engine::DatasetSpec d;
  d.name = "churn";
  ASSERT_TRUE(store_->ResolveJobDataset(&d).ok());
  EXPECT_EQ(d.columns, o.columns);
  engine::DatasetSpec other;
  other.name = "churn";
  other.columns.ignore = {"city"};
  const engine::Status st = store_->ResolveJobDataset(&other);
  EXPECT_EQ(st.message().rfind("dataset.columns: ", 0), 0u) << st.message();
  // An option naming a column the file lacks: 400 naming the option, nothing kept.
  o.name = "churn2";
  o.columns.ignore = {"nope"};
  auto bad = UploadWith(o, body);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("ignore: churn2 has no column 'nope'", 0), 0u)
      << bad.status().message();
  EXPECT_FALSE(store_->GetDataset("churn2").ok());
}

// A "was missing" indicator (data.md#missing-indicators): marked in the column summary, kept in
// the record and the options handed to jobs; an option naming a column that is not a number
// column, or none, is a 400 naming the option, nothing kept.
TEST_F(DatasetStoreTest, MissingIndicatorsAreRecordedAndBadOnesRefused) {
  api::DatasetUploadOptions o;
  o.name = "blanks";
  o.format = "csv";
  o.columns.missing_indicator = {"*"};
  std::string body = "age,size,city,label\n";
  for (int i = 0; i < 40; ++i) {
    body += (i % 5 == 0 ? std::string("NA") : std::to_string(20 + i)) + "," +
            std::to_string(i % 7) + "," + (i % 2 ? "paris" : "") + "," + (i % 3 ? "a" : "b") + "\n";
  }
  auto r = UploadWith(o, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->columns[0].missing_indicator);            // age has blanks
  EXPECT_FALSE(r->columns[1].missing_indicator);           // size has none
  EXPECT_FALSE(r->columns[2].missing_indicator);           // city is categorical
  EXPECT_EQ(r->example_shape, (std::vector<int64_t>{4}));  // age, size, age missing, city
  Open();
  auto again = store_->GetDataset("blanks");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->columns, r->columns);
  engine::DatasetSpec d;
  d.name = "blanks";
  ASSERT_TRUE(store_->ResolveJobDataset(&d).ok());
  EXPECT_EQ(d.columns.missing_indicator, (std::vector<std::string>{"*"}));
  for (const auto& [names, message] :
       {std::pair<std::vector<std::string>, std::string>{
            {"nope"}, "missing_indicator: bad1 has no column 'nope'"},
        {{"city"}, "missing_indicator: column 'city' is categorical, not a number column"}}) {
    o.name = "bad1";
    o.columns.missing_indicator = names;
    auto bad = UploadWith(o, body);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(bad.status().message().rfind(message, 0), 0u) << bad.status().message();
    EXPECT_FALSE(store_->GetDataset("bad1").ok());
  }
}

// A categorical column over max_levels: refused naming the column and the cap, unless hashed
// into buckets (data.md#hashed-columns), which the summary and the options handed to jobs say.
TEST_F(DatasetStoreTest, AColumnOverTheLevelCapIsRefusedUnlessHashed) {
  api::DatasetUploadOptions o;
  o.name = "cities";
  o.format = "csv";
  o.columns.max_levels = 5;
  std::string body = "x,city,label\n";
  for (int i = 0; i < 40; ++i) {
    body += std::to_string(i) + ",c" + std::to_string(i % 12) + "," + (i % 3 ? "a" : "b") + "\n";
  }
  auto refused = UploadWith(o, body);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      refused.status().message().find("column 'city': more than 5 distinct values (max_levels)"),
      std::string::npos)
      << refused.status().message();
  EXPECT_FALSE(store_->GetDataset("cities").ok());
  o.columns.hash_buckets = {{"city", 4}};
  auto r = UploadWith(o, body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->columns[1].levels, 12);
  EXPECT_EQ(r->columns[1].hash_buckets, 4);
  engine::DatasetSpec d;
  d.name = "cities";
  ASSERT_TRUE(store_->ResolveJobDataset(&d).ok());
  EXPECT_EQ(d.columns.hash_buckets, (std::map<std::string, int64_t>{{"city", 4}}));
  o.name = "cities2";
  o.columns.hash_buckets = {{"x", 4}};
  auto number = UploadWith(o, body);
  ASSERT_FALSE(number.ok());
  EXPECT_EQ(number.status().message().rfind("hash_buckets: column 'x' is number", 0), 0u)
      << number.status().message();
}

TEST_F(DatasetStoreTest, AJobsDatasetIsResolvedToTheExactUpload) {
  auto r = Upload("animals", Csv(), "standard");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  engine::DatasetSpec d;
  d.name = "animals";
  ASSERT_TRUE(store_->ResolveJobDataset(&d).ok());
  EXPECT_EQ(d.format, "csv");
  EXPECT_EQ(d.sha256, r->sha256);
  EXPECT_EQ(d.normalize, "standard");
  EXPECT_EQ(d.label_column, "label");

  engine::DatasetSpec pinned;
  pinned.name = "animals";
  pinned.sha256 = std::string(64, 'a');
  auto st = store_->ResolveJobDataset(&pinned);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("dataset.sha256: ", 0), 0u) << st.message();

  engine::DatasetSpec other;
  other.name = "animals";
  other.normalize = "none";  // the default: taken from the upload
  EXPECT_TRUE(store_->ResolveJobDataset(&other).ok());
  other = engine::DatasetSpec();
  other.name = "animals";
  other.label_column = "kind";
  st = store_->ResolveJobDataset(&other);
  EXPECT_EQ(st.message().rfind("dataset.label_column: ", 0), 0u) << st.message();

  engine::DatasetSpec idx;  // not an upload: left as it is
  idx.name = "fashion-mnist";
  ASSERT_TRUE(store_->ResolveJobDataset(&idx).ok());
  EXPECT_EQ(idx.format, "idx");
  EXPECT_TRUE(idx.sha256.empty());
  engine::DatasetSpec missing;
  missing.name = "nothing";
  missing.format = "npz";
  EXPECT_EQ(store_->ResolveJobDataset(&missing).message().rfind("dataset.name: ", 0), 0u);
}

// The test split's examples in raw units, for the dashboard's "try the model": a CSV (its
// test_fraction rows, never standardized), an npz and the data root's Fashion-MNIST.
TEST_F(DatasetStoreTest, TestExamplesOfACsvAreItsRawRows) {
  ASSERT_TRUE(Upload("animals", Csv(), "standard").ok());
  auto page = store_->TestExamples("animals", 0, 100);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->split_examples, 8);  // round(0.2 * 40)
  ASSERT_EQ(page->labels.size(), 8u);
  EXPECT_EQ(page->example_shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(page->class_names, (std::vector<std::string>{"cat", "dog", "emu"}));
  EXPECT_FALSE(page->integer_values);
  for (size_t i = 0; i < page->labels.size(); ++i) {
    // Row r of Csv() is r, r % 7, names[r % 3]: as in the file, not standardized.
    const float x = page->values[2 * i], y = page->values[2 * i + 1];
    EXPECT_EQ(x, std::floor(x));
    EXPECT_EQ(y, static_cast<float>(static_cast<int>(x) % 7));
    EXPECT_EQ(page->labels[i], static_cast<int>(x) % 3);
  }
  auto later = store_->TestExamples("animals", 6, 5);  // from the kept split
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->first, 6);
  ASSERT_EQ(later->labels.size(), 2u);
  EXPECT_EQ(later->values[0], page->values[12]);
  EXPECT_EQ(store_->TestExamples("animals", 9, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->TestExamples("animals", 9, 1).status().message().rfind("offset: ", 0), 0u);
  EXPECT_EQ(store_->TestExamples("animals", 0, 101).status().message().rfind("limit: ", 0), 0u);
  EXPECT_EQ(store_->TestExamples("nothing", 0, 1).status().code(), StatusCode::kNotFound);
}

TEST_F(DatasetStoreTest, TestExamplesOfAnNpzAreItsStoredValues) {
  std::ifstream in(std::string(TRAININGD_NPZ_CORPUS_DIR) + "/img_u1_s.npz", std::ios::binary);
  const std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(body.empty());
  auto record = Upload("pixels", body, "none", "npz");
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  // What a job loads: value / 255 of the same bytes.
  engine::DatasetSpec spec;
  spec.name = "pixels";
  ASSERT_TRUE(store_->ResolveJobDataset(&spec).ok());
  auto loaded = engine::LoadJobDatasets(spec, "", dir_);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const engine::Split& test = (*loaded)->test;
  auto page = store_->TestExamples("pixels", 1, 100);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_TRUE(page->integer_values);
  EXPECT_EQ(page->split_examples, test.size());
  ASSERT_EQ(static_cast<int64_t>(page->labels.size()), test.size() - 1);
  EXPECT_EQ(page->example_shape, test.example_shape().dims());
  const int64_t per = test.example_shape().num_elements();
  for (int64_t i = 0; i < per * static_cast<int64_t>(page->labels.size()); ++i) {
    EXPECT_EQ(page->values[static_cast<size_t>(i)] / 255.0f, test.images.data()[per + i]) << i;
  }
  for (int64_t i = 0; i < static_cast<int64_t>(page->labels.size()); ++i) {
    EXPECT_EQ(page->labels[static_cast<size_t>(i)], test.labels[static_cast<size_t>(i + 1)]);
  }
}

TEST_F(DatasetStoreTest, TestExamplesOfFashionMnistAreT10kBytes) {
  auto page = store_->TestExamples("fashion-mnist", 9998, 100);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->split_examples, 10000);
  EXPECT_EQ(page->first, 9998);
  ASSERT_EQ(page->labels.size(), 2u);  // the split's end
  EXPECT_EQ(page->example_shape, (std::vector<int64_t>{28, 28, 1}));
  EXPECT_TRUE(page->integer_values);
  EXPECT_EQ(page->class_names.size(), 10u);
  auto images = engine::ReadIdxFile(root_ + "/data_root/fashion-mnist/t10k-images-idx3-ubyte.gz");
  auto labels = engine::ReadIdxFile(root_ + "/data_root/fashion-mnist/t10k-labels-idx1-ubyte.gz");
  ASSERT_TRUE(images.ok() && labels.ok());
  for (size_t i = 0; i < 2 * 784; ++i) {
    ASSERT_EQ(page->values[i], images->data[9998 * 784 + i]) << i;
  }
  EXPECT_EQ(page->labels[0], labels->data[9998]);
  EXPECT_EQ(page->labels[1], labels->data[9999]);
  auto first = store_->TestExamples("fashion-mnist", 0, 1);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->labels[0], labels->data[0]);
  EXPECT_TRUE(std::equal(first->values.begin(), first->values.end(), images->data.begin()));
  EXPECT_EQ(store_->TestExamples("fashion-mnist", 10001, 1).status().message().rfind("offset: ", 0),
            0u);
}

}  // namespace
}  // namespace trainingd::daemon
