#include "trainingd/engine/io/onnx_writer.h"

#include <algorithm>
#include <bit>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "base/float_format.h"
#include "io/protobuf_writer.h"
#include "trainingd/engine/base/version.h"
#include "trainingd/engine/nn/batch_norm_layer.h"
#include "trainingd/engine/nn/categorical_encoding_layer.h"
#include "trainingd/engine/nn/layer.h"

namespace trainingd::engine {
namespace {

using internal::ProtoWriter;

// onnx.proto's field numbers and enum values (ONNX 1.12; unchanged since IR version 7).
// The name of a table's string input, its categorical values (one column each).
constexpr const char* kCategoricalInput = "categorical";

namespace onnx {
constexpr int64_t kIrVersion = 7;
constexpr int64_t kOpsetVersion = 13;
// ModelProto
constexpr uint32_t kModelIrVersion = 1, kModelProducerName = 2, kModelProducerVersion = 3,
                   kModelDocString = 6, kModelGraph = 7, kModelOpsetImport = 8,
                   kModelMetadataProps = 14;
// OperatorSetIdProto, StringStringEntryProto
constexpr uint32_t kOpsetDomain = 1, kOpsetVersionField = 2;
constexpr uint32_t kEntryKey = 1, kEntryValue = 2;
// GraphProto
constexpr uint32_t kGraphNode = 1, kGraphName = 2, kGraphInitializer = 5, kGraphInput = 11,
                   kGraphOutput = 12;
// NodeProto
constexpr uint32_t kNodeInput = 1, kNodeOutput = 2, kNodeName = 3, kNodeOpType = 4,
                   kNodeAttribute = 5, kNodeDomain = 7;
// AttributeProto and its AttributeType
constexpr uint32_t kAttrName = 1, kAttrF = 2, kAttrI = 3, kAttrInts = 8, kAttrStrings = 9,
                   kAttrType = 20;
constexpr int64_t kAttrTypeFloat = 1, kAttrTypeInt = 2, kAttrTypeInts = 7, kAttrTypeStrings = 8;
// TensorProto and its DataType
constexpr uint32_t kTensorDims = 1, kTensorDataType = 2, kTensorName = 8, kTensorRawData = 9;
constexpr int64_t kFloat = 1, kString = 8, kInt64 = 7;
// The traditional-ML operators' domain (LabelEncoder) and the version of it the file imports.
constexpr const char* kMlDomain = "ai.onnx.ml";
constexpr int64_t kMlOpsetVersion = 2;
// ValueInfoProto, TypeProto, TypeProto.Tensor, TensorShapeProto, its Dimension
constexpr uint32_t kValueInfoName = 1, kValueInfoType = 2;
constexpr uint32_t kTypeTensorType = 1;
constexpr uint32_t kTensorTypeElemType = 1, kTensorTypeShape = 2;
constexpr uint32_t kShapeDim = 1;
constexpr uint32_t kDimValue = 1, kDimParam = 2;
}  // namespace onnx

static_assert(std::endian::native == std::endian::little,
              "raw_data is little-endian; a big-endian host would have to swap the bytes");

ProtoWriter IntAttribute(std::string_view name, int64_t value) {
  ProtoWriter a;
  a.Bytes(onnx::kAttrName, name).Int(onnx::kAttrI, value).Int(onnx::kAttrType, onnx::kAttrTypeInt);
  return a;
}

ProtoWriter FloatAttribute(std::string_view name, float value) {
  ProtoWriter a;
  a.Bytes(onnx::kAttrName, name)
      .Float(onnx::kAttrF, value)
      .Int(onnx::kAttrType, onnx::kAttrTypeFloat);
  return a;
}

ProtoWriter IntsAttribute(std::string_view name, const std::vector<int64_t>& values) {
  ProtoWriter a;
  a.Bytes(onnx::kAttrName, name);
  for (int64_t v : values) a.Int(onnx::kAttrInts, v);
  a.Int(onnx::kAttrType, onnx::kAttrTypeInts);
  return a;
}

ProtoWriter StringsAttribute(std::string_view name, const std::vector<std::string>& values) {
  ProtoWriter a;
  a.Bytes(onnx::kAttrName, name);
  for (const std::string& v : values) a.Bytes(onnx::kAttrStrings, v);
  a.Int(onnx::kAttrType, onnx::kAttrTypeStrings);
  return a;
}

// A value of `dims` (float32, or `elem_type`), with one symbolic dimension name where dims
// holds -1.
ProtoWriter ValueInfo(std::string_view name, const std::vector<int64_t>& dims,
                      int64_t elem_type = onnx::kFloat) {
  ProtoWriter shape;
  for (int64_t d : dims) {
    ProtoWriter dim;
    if (d < 0) {
      dim.Bytes(onnx::kDimParam, "batch");
    } else {
      dim.Int(onnx::kDimValue, d);
    }
    shape.Message(onnx::kShapeDim, dim);
  }
  ProtoWriter tensor_type;
  tensor_type.Int(onnx::kTensorTypeElemType, elem_type).Message(onnx::kTensorTypeShape, shape);
  ProtoWriter type;
  type.Message(onnx::kTypeTensorType, tensor_type);
  ProtoWriter info;
  info.Bytes(onnx::kValueInfoName, name).Message(onnx::kValueInfoType, type);
  return info;
}

// `s` as a JSON string, with bytes that are not UTF-8 replaced by U+FFFD (protobuf strings must
// be UTF-8, and class names come from users' CSV files).
std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c < 0x20) {
        static const char kHex[] = "0123456789abcdef";
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A well-formed multi-byte sequence (no overlong forms, surrogates or values past U+10FFFF).
    const size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                       : c >= 0xe0 && c <= 0xef ? 3
                       : c >= 0xf0 && c <= 0xf4 ? 4
                                                : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    }
    if (ok && len >= 3) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0) && !(c == 0xf0 && c1 < 0x90) &&
           !(c == 0xf4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out + "\"";
}

// The graph as it is built: nodes and initializers in order.
class GraphBuilder {
 public:
  // A float32 initializer of `dims` from `values` (dims' product of them).
  void Initializer(const std::string& name, const std::vector<int64_t>& dims, const float* values) {
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    ProtoWriter t;
    for (int64_t d : dims) t.Int(onnx::kTensorDims, d);
    t.Int(onnx::kTensorDataType, onnx::kFloat).Bytes(onnx::kTensorName, name);
    t.Bytes(onnx::kTensorRawData, std::string_view(reinterpret_cast<const char*>(values),
                                                   static_cast<size_t>(count) * sizeof(float)));
    initializers_.push_back(t.Take());
  }
  // A 1-D int64 initializer of `values`.
  void Int64Initializer(const std::string& name, const std::vector<int64_t>& values) {
    ProtoWriter t;
    t.Int(onnx::kTensorDims, static_cast<int64_t>(values.size()));
    t.Int(onnx::kTensorDataType, onnx::kInt64).Bytes(onnx::kTensorName, name);
    t.Bytes(onnx::kTensorRawData, std::string_view(reinterpret_cast<const char*>(values.data()),
                                                   values.size() * sizeof(int64_t)));
    initializers_.push_back(t.Take());
  }
  // An int64 scalar initializer.
  void ScalarInitializer(const std::string& name, int64_t value) {
    ProtoWriter t;
    t.Int(onnx::kTensorDataType, onnx::kInt64).Bytes(onnx::kTensorName, name);
    t.Bytes(onnx::kTensorRawData,
            std::string_view(reinterpret_cast<const char*>(&value), sizeof(value)));
    initializers_.push_back(t.Take());
  }

  // Adds a node of `op` on `inputs`, named `name` (unique in the graph), whose one output has
  // the same name; returns it.
  std::string Node(const std::string& op, const std::string& name,
                   const std::vector<std::string>& inputs, std::vector<ProtoWriter> attributes = {},
                   std::string domain = "") {
    nodes_.push_back({op, name, inputs, name, std::move(attributes), std::move(domain)});
    return name;
  }

  // Names the last node's output `name` (a graph output). The caller knows there is a node and
  // that its output is the graph's last value.
  void RenameLastOutput(const std::string& name) { nodes_.back().output = name; }
  // The last node's output ("" before the first node).
  std::string LastOutput() const { return nodes_.empty() ? std::string() : nodes_.back().output; }

  ProtoWriter Graph(const std::vector<ProtoWriter>& inputs,
                    const std::vector<ProtoWriter>& outputs) const {
    ProtoWriter g;
    for (const NodeSpec& n : nodes_) {
      ProtoWriter node;
      for (const std::string& in : n.inputs) node.Bytes(onnx::kNodeInput, in);
      node.Bytes(onnx::kNodeOutput, n.output).Bytes(onnx::kNodeName, n.name);
      node.Bytes(onnx::kNodeOpType, n.op);
      for (const ProtoWriter& a : n.attributes) node.Message(onnx::kNodeAttribute, a);
      if (!n.domain.empty()) node.Bytes(onnx::kNodeDomain, n.domain);
      g.Message(onnx::kGraphNode, node);
    }
    g.Bytes(onnx::kGraphName, "trainingd");
    for (const std::string& t : initializers_) g.Bytes(onnx::kGraphInitializer, t);
    for (const ProtoWriter& in : inputs) g.Message(onnx::kGraphInput, in);
    for (const ProtoWriter& o : outputs) g.Message(onnx::kGraphOutput, o);
    return g;
  }

 private:
  struct NodeSpec {
    std::string op, name;
    std::vector<std::string> inputs;
    std::string output;
    std::vector<ProtoWriter> attributes;
    std::string domain;
  };
  std::vector<NodeSpec> nodes_;
  std::vector<std::string> initializers_;
};

constexpr const char* kPositiveOutput = "positive_probability";
constexpr const char* kLabelOutput = "label";

// A classifier's predicted class, int64 [batch], from its "probabilities", as TrainedModel::
// PredictedClasses computes it: ArgMax (the first on a tie), or for a two-class model Gather of
// column 1 (the positive class's probability, [batch], an output of its own) and, with a
// decision threshold other than 0.5, Cast(Greater(p1, threshold)) to int64.
void AddLabel(GraphBuilder& g, const ModelInput& in) {
  const bool two = in.num_classes == 2;
  if (two) {
    g.ScalarInitializer("positive_class", 1);
    std::vector<ProtoWriter> pick;
    pick.push_back(IntAttribute("axis", 1));
    g.Node("Gather", kPositiveOutput, {"probabilities", "positive_class"}, std::move(pick));
  }
  if (two && in.decision_threshold != 0.5) {
    const auto t = static_cast<float>(in.decision_threshold);
    g.Initializer("decision_threshold", {}, &t);
    g.Node("Greater", "label/positive", {kPositiveOutput, "decision_threshold"});
    std::vector<ProtoWriter> cast;
    cast.push_back(IntAttribute("to", onnx::kInt64));
    g.Node("Cast", kLabelOutput, {"label/positive"}, std::move(cast));
    return;
  }
  std::vector<ProtoWriter> attrs;
  attrs.push_back(IntAttribute("axis", 1));
  attrs.push_back(IntAttribute("keepdims", 0));
  g.Node("ArgMax", kLabelOutput, {"probabilities"}, std::move(attrs));
}

// The Conv kernel: TF's HWIO [k, k, in, out] as ONNX's OIHW [out, in, k, k].
std::vector<float> HwioToOihw(const Tensor& kernel) {
  const Shape& s = kernel.shape();
  const int64_t kh = s[0], kw = s[1], ci = s[2], co = s[3];
  std::vector<float> out(static_cast<size_t>(kernel.size()));
  const float* in = kernel.data();
  for (int64_t h = 0; h < kh; ++h) {
    for (int64_t w = 0; w < kw; ++w) {
      for (int64_t i = 0; i < ci; ++i) {
        for (int64_t o = 0; o < co; ++o) {
          out[static_cast<size_t>(((o * ci + i) * kh + h) * kw + w)] =
              in[((h * kw + w) * ci + i) * co + o];
        }
      }
    }
  }
  return out;
}

// The categorical_encoding layer: the numbers `numbers` (preprocessed) joined with each column's
// encoding of its string, column c of the "categorical" input: Gather picks the column,
// LabelEncoder maps a level to its code (the empty string and the missing markers to
// kMissingLevel, any other string to kUnknownLevel), and Gather takes the code's row of the
// column's table, the one-hot identity or the learned embedding.
std::string EncodeCategorical(GraphBuilder& g, const ModelInput& in,
                              const CategoricalEncodingLayer& layer, const std::string& numbers) {
  const std::string& name = layer.name();
  std::vector<std::string> parts = {numbers};
  for (size_t c = 0; c < layer.columns(); ++c) {
    const CategoricalFeature& f = in.categorical[c];
    const std::string col = name + "/" + std::to_string(c);
    g.ScalarInitializer(col + "/index", static_cast<int64_t>(c));
    std::vector<ProtoWriter> pick;
    pick.push_back(IntAttribute("axis", 1));
    const std::string text =
        g.Node("Gather", col + "/value", {kCategoricalInput, col + "/index"}, std::move(pick));
    std::vector<std::string> keys = f.levels;
    std::vector<int64_t> codes;
    // A hashed column's table: each level of the train split to its bucket's code (ONNX has no
    // string hash; an unseen value takes the default, unknown).
    for (size_t k = 0; k < f.levels.size(); ++k) codes.push_back(f.LevelCode(k));
    for (const std::string& missing : CategoricalMissingTexts(in.missing_values)) {
      keys.push_back(missing);
      codes.push_back(CategoricalFeature::kMissingLevel);
    }
    std::vector<ProtoWriter> encode;
    encode.push_back(StringsAttribute("keys_strings", keys));
    encode.push_back(IntsAttribute("values_int64s", codes));
    encode.push_back(IntAttribute("default_int64", CategoricalFeature::kUnknownLevel));
    const std::string code =
        g.Node("LabelEncoder", col + "/code", {text}, std::move(encode), onnx::kMlDomain);
    const Parameter* table = layer.table(c);
    std::string table_name;
    if (table) {
      table_name = table->name;
      g.Initializer(table_name, {table->value.shape()[0], table->value.shape()[1]},
                    table->value.data());
    } else {
      const int64_t n = layer.codes(c);
      std::vector<float> identity(static_cast<size_t>(n * n), 0.0f);
      for (int64_t k = 0; k < n; ++k) identity[static_cast<size_t>(k * n + k)] = 1.0f;
      table_name = col + "/one_hot";
      g.Initializer(table_name, {n, n}, identity.data());
    }
    std::vector<ProtoWriter> row;
    row.push_back(IntAttribute("axis", 0));
    parts.push_back(g.Node("Gather", col + "/encoded", {table_name, code}, std::move(row)));
  }
  std::vector<ProtoWriter> join;
  join.push_back(IntAttribute("axis", 1));
  return g.Node("Concat", name, parts, std::move(join));
}

}  // namespace

SamePadding TfSamePadding(int64_t in, int64_t kernel, int64_t stride) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>((out - 1) * stride + kernel - in, 0);
  return {total / 2, total - total / 2};
}

Result<std::string> ExportOnnx(const TrainedModel& trained, const OnnxMetadata& metadata) {
  const ModelInput& in = trained.input();
  const Model& model = trained.model();
  GraphBuilder g;
  std::string x = "input";
  enum class Layout { kNhwc, kNchw, kFlat };
  Layout layout = in.example_shape.rank() == 3 ? Layout::kNhwc : Layout::kFlat;

  // A missing value (NaN) becomes its feature's recorded value first, as in TrainedModel.
  if (!in.feature_impute.empty()) {
    const int64_t features = static_cast<int64_t>(in.feature_impute.size());
    g.Initializer("feature_impute", {features}, in.feature_impute.data());
    const std::string missing = g.Node("IsNaN", "missing", {x});
    x = g.Node("Where", "imputed", {missing, "feature_impute", x});
  }
  switch (in.preprocessing) {
    case Preprocessing::kNone:
      break;
    case Preprocessing::kScale255: {
      const float scale = 255.0f;
      g.Initializer("scale_255", {}, &scale);
      x = g.Node("Div", "scaled", {x, "scale_255"});
      break;
    }
    case Preprocessing::kStandard: {
      const int64_t features = static_cast<int64_t>(in.feature_mean.size());
      g.Initializer("feature_mean", {features}, in.feature_mean.data());
      g.Initializer("feature_std", {features}, in.feature_std.data());
      x = g.Node("Sub", "centered", {x, "feature_mean"});
      x = g.Node("Div", "standardized", {x, "feature_std"});
      break;
    }
    case Preprocessing::kPerChannel: {
      // The input is NHWC: [C] initializers broadcast over its last axis, the channels.
      const float scale = 255.0f;
      const int64_t channels = static_cast<int64_t>(in.feature_mean.size());
      g.Initializer("scale_255", {}, &scale);
      g.Initializer("channel_mean", {channels}, in.feature_mean.data());
      g.Initializer("channel_std", {channels}, in.feature_std.data());
      x = g.Node("Div", "scaled", {x, "scale_255"});
      x = g.Node("Sub", "centered", {x, "channel_mean"});
      x = g.Node("Div", "standardized", {x, "channel_std"});
      break;
    }
  }

  // The "was missing" indicators, as TrainedModel::Predict computes them: 1.0 where a raw number
  // of missing_indicators is NaN (before imputation), else 0.0, after the preprocessed numbers.
  if (!in.missing_indicators.empty()) {
    g.Int64Initializer("missing_indicator/index", MissingIndicatorPositions(in));
    std::vector<ProtoWriter> pick;
    pick.push_back(IntAttribute("axis", 1));
    const std::string value = g.Node("Gather", "missing_indicator/value",
                                     {"input", "missing_indicator/index"}, std::move(pick));
    const std::string nan = g.Node("IsNaN", "missing_indicator/nan", {value});
    std::vector<ProtoWriter> to_float;
    to_float.push_back(IntAttribute("to", onnx::kFloat));
    const std::string flag = g.Node("Cast", "missing_indicator/flag", {nan}, std::move(to_float));
    std::vector<ProtoWriter> join;
    join.push_back(IntAttribute("axis", 1));
    x = g.Node("Concat", "with_missing_indicators", {x, flag}, std::move(join));
  }

  // Every layer's output as a value of the graph, in a layout: the engine's NHWC, ONNX's NCHW
  // (Conv, the pools and BatchNormalization read and write it) or flat. A value is transposed
  // where a layer needs the other image layout, once per value and layout.
  struct Value {
    std::string name;
    Layout layout;
  };
  std::vector<Value> values;  // values[i]: layer i's output
  std::map<std::pair<std::string, Layout>, std::string> converted;
  const Value model_input{x, layout};
  const auto as = [&](const Value& v, Layout want) -> std::string {
    if (v.layout == want || v.layout == Layout::kFlat || want == Layout::kFlat) return v.name;
    const auto key = std::make_pair(v.name, want);
    const auto it = converted.find(key);
    if (it != converted.end()) return it->second;
    std::vector<ProtoWriter> attrs;
    const bool to_nchw = want == Layout::kNchw;
    attrs.push_back(IntsAttribute(
        "perm", to_nchw ? std::vector<int64_t>{0, 3, 1, 2} : std::vector<int64_t>{0, 2, 3, 1}));
    const std::string name = g.Node("Transpose", v.name + (to_nchw ? "/to_nchw" : "/to_nhwc"),
                                    {v.name}, std::move(attrs));
    converted.emplace(key, name);
    return name;
  };
  const auto image_layout = [](const Value& v) {
    return v.layout == Layout::kFlat ? Layout::kFlat : Layout::kNchw;
  };
  std::string gelu_constants;  // "" until the first gelu writes them

  const auto& layers = model.layers();
  if (layers.size() != in.model.layers.size()) {
    return Status::Internal("the model has " + std::to_string(layers.size()) +
                            " layers but its spec " + std::to_string(in.model.layers.size()));
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    Layer& layer = *layers[i];
    const LayerSpec& spec = in.model.layers[i];
    const std::string& name = layer.name();
    std::vector<Value> ins;
    for (const int j : model.layer_inputs()[i]) {
      ins.push_back(j < 0 ? model_input : values[static_cast<size_t>(j)]);
    }
    const Shape& shape_in =
        model.layer_inputs()[i][0] < 0
            ? ModelExampleShape(in)
            : model.output_shapes()[static_cast<size_t>(model.layer_inputs()[i][0])];
    const std::vector<Parameter*> params = layer.parameters();
    Value out = ins[0];
    switch (spec.type) {
      case LayerType::kConv2d: {
        const std::string x_in = as(ins[0], Layout::kNchw);
        const Tensor& kernel = params[0]->value;
        const std::vector<float> oihw = HwioToOihw(kernel);
        const Shape& ks = kernel.shape();
        g.Initializer(params[0]->name, {ks[3], ks[2], ks[0], ks[1]}, oihw.data());
        g.Initializer(params[1]->name, {params[1]->value.size()}, params[1]->value.data());
        std::vector<int64_t> pads = {0, 0, 0, 0};  // top, left, bottom, right
        if (spec.padding == Padding::kSame) {
          const SamePadding ph = TfSamePadding(shape_in[0], spec.kernel, spec.stride);
          const SamePadding pw = TfSamePadding(shape_in[1], spec.kernel, spec.stride);
          pads = {ph.begin, pw.begin, ph.end, pw.end};
        }
        std::vector<ProtoWriter> attrs;
        attrs.push_back(IntsAttribute("kernel_shape", {spec.kernel, spec.kernel}));
        attrs.push_back(IntsAttribute("strides", {spec.stride, spec.stride}));
        attrs.push_back(IntsAttribute("pads", pads));
        out = {g.Node("Conv", name, {x_in, params[0]->name, params[1]->name}, std::move(attrs)),
               Layout::kNchw};
        if (spec.activation == Activation::kRelu) {
          out.name = g.Node("Relu", name + "/relu", {out.name});
        }
        break;
      }
      case LayerType::kMaxPool2d:
      case LayerType::kAvgPool2d: {
        const std::string x_in = as(ins[0], Layout::kNchw);
        const int64_t stride = spec.stride > 0 ? spec.stride : spec.pool;
        std::vector<ProtoWriter> attrs;
        attrs.push_back(IntsAttribute("kernel_shape", {spec.pool, spec.pool}));
        attrs.push_back(IntsAttribute("strides", {stride, stride}));
        const char* op = spec.type == LayerType::kMaxPool2d ? "MaxPool" : "AveragePool";
        out = {g.Node(op, name, {x_in}, std::move(attrs)), Layout::kNchw};
        break;
      }
      case LayerType::kGlobalAvgPool: {
        const std::string pooled =
            g.Node("GlobalAveragePool", name + "/pool", {as(ins[0], Layout::kNchw)});
        std::vector<ProtoWriter> attrs;
        attrs.push_back(IntAttribute("axis", 1));
        out = {g.Node("Flatten", name, {pooled}, std::move(attrs)), Layout::kFlat};
        break;
      }
      case LayerType::kBatchNorm: {
        // Inference: the moving statistics (ONNX's BatchNormalization with training_mode 0).
        const std::string x_in = as(ins[0], image_layout(ins[0]));
        const std::vector<Parameter*> vars = layer.variables();
        for (Parameter* p : {params[0], params[1], vars[0], vars[1]}) {
          g.Initializer(p->name, {p->value.size()}, p->value.data());
        }
        const auto* bn = static_cast<const BatchNormLayer*>(&layer);
        std::vector<ProtoWriter> attrs;
        attrs.push_back(FloatAttribute("epsilon", bn->epsilon()));
        out = {g.Node("BatchNormalization", name,
                      {x_in, params[0]->name, params[1]->name, vars[0]->name, vars[1]->name},
                      std::move(attrs)),
               image_layout(ins[0])};
        break;
      }
      case LayerType::kDense: {
        if (ins[0].layout != Layout::kFlat) {
          return Status::InvalidArgument("model.layers[" + std::to_string(i) +
                                         "] (dense): needs a flat input");
        }
        const Tensor& kernel = params[0]->value;
        g.Initializer(params[0]->name, {kernel.shape()[0], kernel.shape()[1]}, kernel.data());
        g.Initializer(params[1]->name, {params[1]->value.size()}, params[1]->value.data());
        out = {g.Node("Gemm", name, {ins[0].name, params[0]->name, params[1]->name}),
               Layout::kFlat};
        if (spec.activation == Activation::kRelu) {
          out.name = g.Node("Relu", name + "/relu", {out.name});
        }
        break;
      }
      case LayerType::kRelu:
        out.name = g.Node("Relu", name, {ins[0].name});
        break;
      case LayerType::kSigmoid:
        out.name = g.Node("Sigmoid", name, {ins[0].name});
        break;
      case LayerType::kTanh:
        out.name = g.Node("Tanh", name, {ins[0].name});
        break;
      case LayerType::kGelu: {
        // Opset 13 has no Gelu: x * (1 + erf(x / sqrt 2)) / 2, as the engine computes it.
        if (gelu_constants.empty()) {
          const float sqrt2 = 1.41421356237309505f, one = 1.0f, half = 0.5f;
          g.Initializer("gelu/sqrt2", {}, &sqrt2);
          g.Initializer("gelu/one", {}, &one);
          g.Initializer("gelu/half", {}, &half);
          gelu_constants = "gelu";
        }
        const std::string scaled = g.Node("Div", name + "/scaled", {ins[0].name, "gelu/sqrt2"});
        const std::string erf = g.Node("Erf", name + "/erf", {scaled});
        const std::string plus = g.Node("Add", name + "/plus_one", {erf, "gelu/one"});
        const std::string times = g.Node("Mul", name + "/times_x", {ins[0].name, plus});
        out.name = g.Node("Mul", name, {times, "gelu/half"});
        break;
      }
      case LayerType::kCategoricalEncoding:
        out = {EncodeCategorical(g, in, dynamic_cast<const CategoricalEncodingLayer&>(layer),
                                 ins[0].name),
               Layout::kFlat};
        break;
      case LayerType::kDropout:
        break;  // the identity at inference
      case LayerType::kFlatten: {
        if (ins[0].layout == Layout::kFlat) break;  // a table row [F] is flat already
        // The engine's activations are NHWC: its dense layers read features in that order.
        std::vector<ProtoWriter> attrs;
        attrs.push_back(IntAttribute("axis", 1));
        out = {g.Node("Flatten", name, {as(ins[0], Layout::kNhwc)}, std::move(attrs)),
               Layout::kFlat};
        break;
      }
      case LayerType::kAdd:
      case LayerType::kConcat: {
        // Every input in the first one's layout; concat along the channels, which NCHW has on
        // axis 1 and NHWC on axis 3.
        const Layout common = ins[0].layout;
        std::vector<std::string> names;
        for (const Value& v : ins) names.push_back(as(v, common));
        if (spec.type == LayerType::kAdd) {
          std::string sum = names[0];
          for (size_t k = 1; k < names.size(); ++k) {
            sum = g.Node("Add", k + 1 == names.size() ? name : name + "/" + std::to_string(k),
                         {sum, names[k]});
          }
          out = {sum, common};
        } else {
          std::vector<ProtoWriter> attrs;
          attrs.push_back(IntAttribute("axis", common == Layout::kNhwc ? 3 : 1));
          out = {g.Node("Concat", name, names, std::move(attrs)), common};
        }
        break;
      }
    }
    values.push_back(out);
  }
  const Value& last = values.back();
  if (last.layout != Layout::kFlat) {
    return Status::InvalidArgument("the model's last layer is not flat: its output is " +
                                   model.output_shapes().back().ToString());
  }
  // The last value becomes "logits": the last node's output renamed, or an Identity of it when
  // it is not the last node's (the input itself, or a value a dropout at the end passed on).
  if (g.LastOutput() == last.name) {
    g.RenameLastOutput("logits");
  } else {
    g.Node("Identity", "logits", {last.name});
  }
  // A classifier's probabilities, or a regression model's prediction in the target's units:
  // target_mean + target_std * logits, in float as TrainedModel::Predict computes it.
  const bool regression = in.task == Task::kRegression;
  const char* output = regression ? "prediction" : "probabilities";
  if (regression) {
    g.Initializer("target_std", {}, &in.target.std);
    g.Initializer("target_mean", {}, &in.target.mean);
    g.Node("Mul", "prediction/scaled", {"logits", "target_std"});
    g.Node("Add", output, {"prediction/scaled", "target_mean"});
  } else {
    std::vector<ProtoWriter> softmax_attrs;
    softmax_attrs.push_back(IntAttribute("axis", 1));
    g.Node("Softmax", output, {"logits"}, std::move(softmax_attrs));
    AddLabel(g, in);
  }

  // A table's categorical values are a string input of their own, the rest stay "input".
  const auto categoricals = static_cast<int64_t>(in.categorical.size());
  std::vector<int64_t> input_dims = {-1};
  for (int64_t d : in.example_shape.dims()) input_dims.push_back(d);
  std::vector<ProtoWriter> inputs;
  if (categoricals > 0) {
    input_dims.back() -= categoricals;
    inputs.push_back(ValueInfo("input", input_dims));
    inputs.push_back(ValueInfo(kCategoricalInput, {-1, categoricals}, onnx::kString));
  } else {
    inputs.push_back(ValueInfo("input", input_dims));
  }
  std::vector<ProtoWriter> outputs;
  outputs.push_back(ValueInfo("logits", {-1, in.num_classes}));
  outputs.push_back(ValueInfo(output, {-1, in.num_classes}));
  if (!regression) {
    if (in.num_classes == 2) outputs.push_back(ValueInfo(kPositiveOutput, {-1}));
    outputs.push_back(ValueInfo(kLabelOutput, {-1}, onnx::kInt64));
  }
  const ProtoWriter graph = g.Graph(inputs, outputs);

  ProtoWriter m;
  m.Int(onnx::kModelIrVersion, onnx::kIrVersion);
  m.Bytes(onnx::kModelProducerName, "trainingd")
      .Bytes(onnx::kModelProducerVersion, TrainingdVersion());
  m.Bytes(onnx::kModelDocString,
          "A trainingd model: input in the dataset's raw units, preprocessing inside the graph "
          "(docs/models.md)");
  m.Message(onnx::kModelGraph, graph);
  ProtoWriter opset;
  opset.Bytes(onnx::kOpsetDomain, "").Int(onnx::kOpsetVersionField, onnx::kOpsetVersion);
  m.Message(onnx::kModelOpsetImport, opset);
  if (categoricals > 0) {
    ProtoWriter ml;
    ml.Bytes(onnx::kOpsetDomain, onnx::kMlDomain)
        .Int(onnx::kOpsetVersionField, onnx::kMlOpsetVersion);
    m.Message(onnx::kModelOpsetImport, ml);
  }
  std::string class_names = "[";
  for (size_t c = 0; c < in.class_names.size(); ++c) {
    class_names += (c ? ", " : "") + JsonString(in.class_names[c]);
  }
  class_names += "]";
  std::vector<std::pair<std::string, std::string>> props;
  if (!metadata.job_id.empty()) props.emplace_back("job_id", metadata.job_id);
  props.emplace_back("step", std::to_string(trained.step()));
  if (!metadata.checkpoint.empty()) props.emplace_back("checkpoint", metadata.checkpoint);
  props.emplace_back("dataset", in.dataset_name);
  props.emplace_back("dataset_format", in.dataset_format);
  if (!in.dataset_sha256.empty()) props.emplace_back("dataset_sha256", in.dataset_sha256);
  props.emplace_back("preprocessing", PreprocessingName(in.preprocessing));
  props.emplace_back("class_names", class_names);
  props.emplace_back("task", TaskName(in.task));
  if (in.task == Task::kClassification && in.num_classes == 2) {
    props.emplace_back("decision_threshold", internal::DoubleToString(in.decision_threshold));
  }
  props.emplace_back("trainingd_version", TrainingdVersion());
  for (const auto& [key, value] : props) {
    ProtoWriter entry;
    entry.Bytes(onnx::kEntryKey, key).Bytes(onnx::kEntryValue, value);
    m.Message(onnx::kModelMetadataProps, entry);
  }
  return m.Take();
}

}  // namespace trainingd::engine
