// The ONNX writer's pieces: the protobuf encoder's bytes for known messages (the examples of the
// protobuf encoding guide, https://protobuf.dev/programming-guides/encoding/), TF's SAME padding
// against Conv2dLayer's own geometry, and an exported file's framing. Whole files are checked by
// onnx.checker and run in onnxruntime in e2e.onnx_export.
#include "trainingd/engine/io/onnx_writer.h"

#include <gtest/gtest.h>

#include <string>

#include "io/protobuf_writer.h"
#include "session_test_util.h"
#include "trainingd/engine/io/checkpoint_manager.h"
#include "trainingd/engine/nn/conv2d_layer.h"
#include "trainingd/engine/nn/model.h"

namespace trainingd::engine {
namespace {

using internal::ProtoWriter;
using testing::ScopedDir;

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

TEST(ProtoWriterTest, EncodesTheGuidesExamples) {
  // message Test1 { int32 a = 1; } with a = 150.
  EXPECT_EQ(ProtoWriter().Int(1, 150).bytes(), Bytes({0x08, 0x96, 0x01}));
  // message Test2 { string b = 2; } with b = "testing".
  EXPECT_EQ(ProtoWriter().Bytes(2, "testing").bytes(), Bytes({0x12, 0x07}) + "testing");
  // message Test3 { Test1 c = 3; }
  ProtoWriter inner;
  inner.Int(1, 150);
  EXPECT_EQ(ProtoWriter().Message(3, inner).bytes(), Bytes({0x1a, 0x03, 0x08, 0x96, 0x01}));
  // A negative int64 takes ten bytes, two's complement.
  EXPECT_EQ(ProtoWriter().Int(1, -2).bytes(),
            Bytes({0x08, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  // 0 and a field number past 15 (a two-byte tag): AttributeProto.type = INTS (20, 7).
  EXPECT_EQ(ProtoWriter().Int(1, 0).bytes(), Bytes({0x08, 0x00}));
  EXPECT_EQ(ProtoWriter().Int(20, 7).bytes(), Bytes({0xa0, 0x01, 0x07}));
  // float: fixed32, little-endian.
  EXPECT_EQ(ProtoWriter().Float(2, 1.0f).bytes(), Bytes({0x15, 0x00, 0x00, 0x80, 0x3f}));
  // A length past 127 is a two-byte varint; an empty string is just its tag and 0.
  EXPECT_EQ(ProtoWriter().Bytes(9, std::string(300, 'x')).bytes().substr(0, 3),
            Bytes({0x4a, 0xac, 0x02}));
  EXPECT_EQ(ProtoWriter().Bytes(1, "").bytes(), Bytes({0x0a, 0x00}));
  // Fields in the order written.
  EXPECT_EQ(ProtoWriter().Int(1, 1).Bytes(2, "a").bytes(), Bytes({0x08, 0x01, 0x12, 0x01, 'a'}));
}

TEST(OnnxWriterTest, TfSamePaddingPutsTheOddPixelAtTheEnd) {
  struct Case {
    int64_t in, kernel, stride, begin, end;
  };
  for (const Case& c :
       {Case{28, 5, 1, 2, 2}, Case{28, 4, 1, 1, 2}, Case{7, 3, 2, 1, 1}, Case{8, 3, 2, 0, 1},
        Case{5, 1, 3, 0, 0}, Case{14, 5, 1, 2, 2}, Case{10, 4, 3, 1, 2}, Case{3, 7, 1, 3, 3}}) {
    const SamePadding p = TfSamePadding(c.in, c.kernel, c.stride);
    EXPECT_EQ(p.begin, c.begin) << c.in << " " << c.kernel << " " << c.stride;
    EXPECT_EQ(p.end, c.end) << c.in << " " << c.kernel << " " << c.stride;
  }
  // Whatever the sizes, the pads give the output Conv2dLayer computes: ceil(in / stride).
  for (int64_t in = 1; in <= 12; ++in) {
    for (int64_t k = 1; k <= 6; ++k) {
      for (int64_t s = 1; s <= 4; ++s) {
        Conv2dLayer conv("conv2d", LayerSpec::Conv2d(1, k, Padding::kSame, Activation::kNone, s));
        auto out = conv.Configure(Shape{in, in, 1});
        ASSERT_TRUE(out.ok());
        const SamePadding p = TfSamePadding(in, k, s);
        ASSERT_EQ((in + p.begin + p.end - k) / s + 1, (*out)[0]) << in << " " << k << " " << s;
        ASSERT_LE(p.end - p.begin, 1);
      }
    }
  }
}

TEST(OnnxWriterTest, WritesAModelProtoWithItsMetadata) {
  ScopedDir dir("onnx_writer");
  ModelInput in;
  in.example_shape = Shape{8, 8, 1};
  in.num_classes = 2;
  in.class_names = {"cat \"x\"", "dog\xff"};  // escaped; the bad byte replaced
  in.preprocessing = Preprocessing::kScale255;
  in.dataset_name = "pets";
  in.dataset_format = "npz";
  in.dataset_sha256 = std::string(64, 'f');
  in.model.layers = {LayerSpec::Conv2d(2, 3, Padding::kSame, Activation::kRelu),
                     LayerSpec::Flatten(), LayerSpec::Dense(2, Activation::kNone)};
  auto model = Model::Build(in.model, in.example_shape, in.num_classes, 1);
  ASSERT_TRUE(model.ok());
  auto manager = CheckpointManager::Create(dir.path());
  ASSERT_TRUE(manager.ok());
  CheckpointData data;
  data.global_step = 12;
  for (const Parameter* p : (*model)->parameters()) data.tensors.emplace_back(p->name, p->value);
  ASSERT_TRUE((*manager)->Save(data).ok());
  auto trained = LoadTrainedModel(dir.path(), std::nullopt, in);
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  auto bytes = ExportOnnx(*trained, {.job_id = "j-1"});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  // ModelProto.ir_version = 7 comes first.
  EXPECT_EQ(bytes->substr(0, 2), Bytes({0x08, 0x07}));
  const auto has = [&](const std::string& s) { return bytes->find(s) != std::string::npos; };
  for (const char* s :
       {"input", "logits", "probabilities", "Softmax", "Transpose", "Conv", "Flatten", "Gemm",
        "scale_255", "conv2d/kernel", "dense/bias", "j-1", "pets", "trainingd_version"}) {
    EXPECT_TRUE(has(s)) << s;
  }
  EXPECT_TRUE(has(R"(["cat \"x\"", "dog)"
                  "\xef\xbf\xbd"
                  R"("])"));
  EXPECT_FALSE(has("MaxPool"));
  // The conv kernel's values follow OIHW: 2 * 1 * 3 * 3 floats, then the bias' 2.
  EXPECT_GT(bytes->size(), static_cast<size_t>(4 * (18 + 2 + 128 * 2 + 2)));
}

// A two-class model with a decision threshold: its graph's "label" is Cast(Greater(
// positive_probability, threshold)), and TrainedModel::PredictedClasses counts class 1 where
// p1 > float(threshold); without one, ArgMax and the arg-max.
TEST(OnnxWriterTest, ATwoClassModelsLabelUsesItsDecisionThreshold) {
  ScopedDir dir("onnx_threshold");
  ModelInput in;
  in.example_shape = Shape{3};
  in.num_classes = 2;
  in.class_names = {"no", "yes"};
  in.preprocessing = Preprocessing::kNone;
  in.dataset_name = "churn";
  in.dataset_format = "csv";
  in.model.layers = {LayerSpec::Dense(2, Activation::kNone)};
  in.decision_threshold = 0.3;
  auto model = Model::Build(in.model, in.example_shape, in.num_classes, 1);
  ASSERT_TRUE(model.ok());
  auto manager = CheckpointManager::Create(dir.path());
  ASSERT_TRUE(manager.ok());
  CheckpointData data;
  for (const Parameter* p : (*model)->parameters()) data.tensors.emplace_back(p->name, p->value);
  ASSERT_TRUE((*manager)->Save(data).ok());
  auto trained = LoadTrainedModel(dir.path(), std::nullopt, in);
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  auto bytes = ExportOnnx(*trained, {});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  const auto has = [&](const std::string& s) { return bytes->find(s) != std::string::npos; };
  for (const char* s : {"positive_probability", "positive_class", "Gather", "Greater", "Cast",
                        "label", "decision_threshold", "0.3"}) {
    EXPECT_TRUE(has(s)) << s;
  }
  EXPECT_FALSE(has("ArgMax"));
  // p1 = 0.35 and 0.3000001 are above 0.3 (class 1 though not the arg-max); 0.3 itself is not.
  const float probs[] = {0.65f, 0.35f, 0.7f, 0.3f, 0.2f, 0.8f, 0.6999999f, 0.3000001f};
  int64_t classes[4] = {-1, -1, -1, -1};
  trained->PredictedClasses(probs, 4, classes);
  EXPECT_EQ(std::vector<int64_t>(classes, classes + 4), (std::vector<int64_t>{1, 0, 1, 1}));
  // The default: the arg-max (the first class on a tie), and ArgMax in the graph.
  in.decision_threshold = 0.5;
  auto plain = LoadTrainedModel(dir.path(), std::nullopt, in);
  ASSERT_TRUE(plain.ok());
  const float tie[] = {0.5f, 0.5f, 0.35f, 0.65f};
  plain->PredictedClasses(tie, 2, classes);
  EXPECT_EQ(classes[0], 0);
  EXPECT_EQ(classes[1], 1);
  auto plain_bytes = ExportOnnx(*plain, {});
  ASSERT_TRUE(plain_bytes.ok());
  EXPECT_NE(plain_bytes->find("ArgMax"), std::string::npos);
  EXPECT_EQ(plain_bytes->find("Greater"), std::string::npos);
  EXPECT_NE(plain_bytes->find("positive_probability"), std::string::npos);
}

}  // namespace
}  // namespace trainingd::engine
