#include "trainingd/engine/io/onnx_writer.h"

#include <algorithm>
#include <bit>
#include <string_view>
#include <utility>
#include <vector>

#include "io/protobuf_writer.h"
#include "trainingd/engine/base/version.h"
#include "trainingd/engine/nn/layer.h"

namespace trainingd::engine {
namespace {

using internal::ProtoWriter;

// onnx.proto's field numbers and enum values (ONNX 1.12; unchanged since IR version 7).
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
                   kNodeAttribute = 5;
// AttributeProto and its AttributeType
constexpr uint32_t kAttrName = 1, kAttrI = 3, kAttrInts = 8, kAttrType = 20;
constexpr int64_t kAttrTypeInt = 2, kAttrTypeInts = 7;
// TensorProto and its DataType
constexpr uint32_t kTensorDims = 1, kTensorDataType = 2, kTensorName = 8, kTensorRawData = 9;
constexpr int64_t kFloat = 1;
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

ProtoWriter IntsAttribute(std::string_view name, const std::vector<int64_t>& values) {
  ProtoWriter a;
  a.Bytes(onnx::kAttrName, name);
  for (int64_t v : values) a.Int(onnx::kAttrInts, v);
  a.Int(onnx::kAttrType, onnx::kAttrTypeInts);
  return a;
}

// A float32 value of `dims`, with one symbolic dimension name where dims holds -1.
ProtoWriter ValueInfo(std::string_view name, const std::vector<int64_t>& dims) {
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
  tensor_type.Int(onnx::kTensorTypeElemType, onnx::kFloat).Message(onnx::kTensorTypeShape, shape);
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

  // Adds a node of `op` on `inputs`, named `name` (unique in the graph), whose one output has
  // the same name; returns it.
  std::string Node(const std::string& op, const std::string& name,
                   const std::vector<std::string>& inputs,
                   std::vector<ProtoWriter> attributes = {}) {
    nodes_.push_back({op, name, inputs, name, std::move(attributes)});
    return name;
  }

  // Names the last node's output `name` (a graph output). The caller knows there is a node and
  // that its output is the graph's last value.
  void RenameLastOutput(const std::string& name) { nodes_.back().output = name; }

  ProtoWriter Graph(const ProtoWriter& input, const std::vector<ProtoWriter>& outputs) const {
    ProtoWriter g;
    for (const NodeSpec& n : nodes_) {
      ProtoWriter node;
      for (const std::string& in : n.inputs) node.Bytes(onnx::kNodeInput, in);
      node.Bytes(onnx::kNodeOutput, n.output).Bytes(onnx::kNodeName, n.name);
      node.Bytes(onnx::kNodeOpType, n.op);
      for (const ProtoWriter& a : n.attributes) node.Message(onnx::kNodeAttribute, a);
      g.Message(onnx::kGraphNode, node);
    }
    g.Bytes(onnx::kGraphName, "trainingd");
    for (const std::string& t : initializers_) g.Bytes(onnx::kGraphInitializer, t);
    g.Message(onnx::kGraphInput, input);
    for (const ProtoWriter& o : outputs) g.Message(onnx::kGraphOutput, o);
    return g;
  }

 private:
  struct NodeSpec {
    std::string op, name;
    std::vector<std::string> inputs;
    std::string output;
    std::vector<ProtoWriter> attributes;
  };
  std::vector<NodeSpec> nodes_;
  std::vector<std::string> initializers_;
};

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
  }

  const auto transpose = [&](const std::string& name, std::vector<int64_t> perm) {
    std::vector<ProtoWriter> attrs;
    attrs.push_back(IntsAttribute("perm", perm));
    x = g.Node("Transpose", name, {x}, std::move(attrs));
  };
  const auto relu = [&](const std::string& name) { x = g.Node("Relu", name, {x}); };

  const auto& layers = model.layers();
  if (model.is_graph()) {
    return Status::FailedPrecondition(
        "model.layers: a model graph (layers with inputs) cannot be exported to ONNX yet");
  }
  if (layers.size() != in.model.layers.size()) {
    return Status::Internal("the model has " + std::to_string(layers.size()) +
                            " layers but its spec " + std::to_string(in.model.layers.size()));
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    Layer& layer = *layers[i];
    const LayerSpec& spec = in.model.layers[i];
    const std::string& name = layer.name();
    const Shape& shape_in = i == 0 ? in.example_shape : model.output_shapes()[i - 1];
    const std::vector<Parameter*> params = layer.parameters();
    switch (spec.type) {
      case LayerType::kConv2d: {
        if (layout == Layout::kNhwc) transpose(name + "/to_nchw", {0, 3, 1, 2});
        layout = Layout::kNchw;
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
        x = g.Node("Conv", name, {x, params[0]->name, params[1]->name}, std::move(attrs));
        if (spec.activation == Activation::kRelu) relu(name + "/relu");
        break;
      }
      case LayerType::kMaxPool2d: {
        if (layout == Layout::kNhwc) transpose(name + "/to_nchw", {0, 3, 1, 2});
        layout = Layout::kNchw;
        const int64_t stride = spec.stride > 0 ? spec.stride : spec.pool;
        std::vector<ProtoWriter> attrs;
        attrs.push_back(IntsAttribute("kernel_shape", {spec.pool, spec.pool}));
        attrs.push_back(IntsAttribute("strides", {stride, stride}));
        x = g.Node("MaxPool", name, {x}, std::move(attrs));
        break;
      }
      case LayerType::kDense: {
        if (layout != Layout::kFlat) {
          return Status::InvalidArgument("model.layers[" + std::to_string(i) +
                                         "] (dense): needs a flat input");
        }
        const Tensor& kernel = params[0]->value;
        g.Initializer(params[0]->name, {kernel.shape()[0], kernel.shape()[1]}, kernel.data());
        g.Initializer(params[1]->name, {params[1]->value.size()}, params[1]->value.data());
        x = g.Node("Gemm", name, {x, params[0]->name, params[1]->name});
        if (spec.activation == Activation::kRelu) relu(name + "/relu");
        break;
      }
      case LayerType::kRelu:
        relu(name);
        break;
      case LayerType::kDropout:
        break;  // the identity at inference
      case LayerType::kFlatten: {
        if (layout == Layout::kFlat) break;  // a table row [F] is flat already
        // The engine's activations are NHWC: its dense layers read features in that order.
        if (layout == Layout::kNchw) transpose(name + "/to_nhwc", {0, 2, 3, 1});
        std::vector<ProtoWriter> attrs;
        attrs.push_back(IntAttribute("axis", 1));
        x = g.Node("Flatten", name, {x}, std::move(attrs));
        layout = Layout::kFlat;
        break;
      }
      case LayerType::kAdd:
      case LayerType::kConcat:
      case LayerType::kAvgPool2d:
      case LayerType::kGlobalAvgPool:
      case LayerType::kSigmoid:
      case LayerType::kTanh:
      case LayerType::kGelu:
        return Status::FailedPrecondition("model.layers[" + std::to_string(i) +
                                          "]: " + LayerTypeName(spec.type) +
                                          " layers cannot be exported to ONNX yet");
    }
  }
  if (layout != Layout::kFlat) {
    return Status::InvalidArgument("the model's last layer is not flat: its output is " +
                                   model.output_shapes().back().ToString());
  }
  // The last value becomes "logits": the last node's output, or an Identity of the input for a
  // model with no node at all.
  if (x == "input") {
    x = g.Node("Identity", "logits", {x});
  } else {
    g.RenameLastOutput("logits");
  }
  std::vector<ProtoWriter> softmax_attrs;
  softmax_attrs.push_back(IntAttribute("axis", 1));
  g.Node("Softmax", "probabilities", {"logits"}, std::move(softmax_attrs));

  std::vector<int64_t> input_dims = {-1};
  for (int64_t d : in.example_shape.dims()) input_dims.push_back(d);
  const ProtoWriter graph =
      g.Graph(ValueInfo("input", input_dims), {ValueInfo("logits", {-1, in.num_classes}),
                                               ValueInfo("probabilities", {-1, in.num_classes})});

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
  std::string class_names = "[";
  for (size_t c = 0; c < in.class_names.size(); ++c) {
    class_names += (c ? ", " : "") + JsonString(in.class_names[c]);
  }
  class_names += "]";
  std::vector<std::pair<std::string, std::string>> props;
  if (!metadata.job_id.empty()) props.emplace_back("job_id", metadata.job_id);
  props.emplace_back("step", std::to_string(trained.step()));
  props.emplace_back("dataset", in.dataset_name);
  props.emplace_back("dataset_format", in.dataset_format);
  if (!in.dataset_sha256.empty()) props.emplace_back("dataset_sha256", in.dataset_sha256);
  props.emplace_back("preprocessing", PreprocessingName(in.preprocessing));
  props.emplace_back("class_names", class_names);
  props.emplace_back("trainingd_version", TrainingdVersion());
  for (const auto& [key, value] : props) {
    ProtoWriter entry;
    entry.Bytes(onnx::kEntryKey, key).Bytes(onnx::kEntryValue, value);
    m.Message(onnx::kModelMetadataProps, entry);
  }
  return m.Take();
}

}  // namespace trainingd::engine
