// Helpers shared by the engine tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sanitized.h"
#include "trainingd/engine/base/random.h"
#include "trainingd/engine/base/status.h"
#include "trainingd/engine/data/dataset.h"
#include "trainingd/engine/io/event_file_writer.h"
#include "trainingd/engine/nn/tensor.h"

namespace trainingd::engine::testing {

// A tensor of `shape` with elements uniform in [lo, hi) from `rng`.
inline Tensor RandomTensor(const Shape& shape, Rng& rng, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.size(); ++i) t[i] = rng.Uniform(lo, hi);
  return t;
}

// Succeeds when `status` is InvalidArgument and its message starts with `field`.
inline ::testing::AssertionResult FailsNaming(const Status& status, const std::string& field) {
  if (status.ok()) return ::testing::AssertionFailure() << "expected an error naming " << field;
  if (status.code() != StatusCode::kInvalidArgument) {
    return ::testing::AssertionFailure() << "expected InvalidArgument, got " << status.ToString();
  }
  if (status.message().rfind(field, 0) != 0) {
    return ::testing::AssertionFailure()
           << "message does not start with '" << field << "': " << status.message();
  }
  return ::testing::AssertionSuccess();
}

using test_support::kSanitized;

// A table of two classes ("left", "right") of 3 features, apart enough to learn: the feature of
// an example's label is 2 plus unit normal noise, the others the noise alone.
inline std::shared_ptr<Datasets> TwoClassTable(uint64_t seed, int64_t train, int64_t test) {
  auto data = std::make_shared<Datasets>();
  Rng rng(seed);
  const auto split = [&](int64_t n) {
    Split s;
    s.images = Tensor(Shape{n, 3});
    for (int64_t e = 0; e < n; ++e) {
      const int label = static_cast<int>(rng.UniformInt(2));
      s.labels.push_back(label);
      for (int f = 0; f < 3; ++f) s.images[e * 3 + f] = (f == label ? 2.0f : 0.0f) + rng.Normal();
    }
    return s;
  };
  data->train = split(train);
  data->test = split(test);
  data->num_classes = 2;
  data->class_names = {"left", "right"};
  return data;
}

// Real Fashion-MNIST, cut down for fast tests: 5000 training, 1000 validation and 2000 test
// examples; loaded once per test binary.
inline const Datasets& SmallFashionMnist() {
  static const Datasets* data = [] {
    DatasetOptions o;
    o.validation_size = 1000;
    o.max_train_examples = 5000;
    o.max_test_examples = 2000;
    auto d = LoadMnistDirectory(TRAININGD_FASHION_MNIST_DIR, o);
    if (!d.ok()) {
      ADD_FAILURE() << d.status().ToString();
      return new Datasets();
    }
    return new Datasets(std::move(d).value());
  }();
  return *data;
}

// A file's bytes ("" if it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Reads every record of an event file, checking lengths and both CRCs, and returns the payloads.
// A torn or misframed record fails the test.
inline std::vector<std::string> ReadRecords(const std::string& path) {
  const std::string data = ReadFile(path);
  std::vector<std::string> payloads;
  size_t pos = 0;
  while (pos < data.size()) {
    if (data.size() - pos < 16) {
      ADD_FAILURE() << path << ": " << data.size() - pos << " bytes of a torn record at " << pos;
      break;
    }
    uint64_t len = 0;
    for (int i = 0; i < 8; ++i) len |= uint64_t(uint8_t(data[pos + i])) << (8 * i);
    if (len > data.size() - pos - 16) {
      ADD_FAILURE() << path << ": the record at " << pos << " claims " << len << " bytes";
      break;
    }
    const std::string payload = data.substr(pos + 12, len);
    // Re-framing the payload must reproduce the bytes on disk, CRCs included.
    EXPECT_EQ(EventFileWriter::FrameRecord(payload), data.substr(pos, 16 + len))
        << path << ": the record at " << pos;
    payloads.push_back(payload);
    pos += 16 + len;
  }
  return payloads;
}

}  // namespace trainingd::engine::testing
