// ProtoWriter: the protocol buffers wire format, written by hand -- enough of it for an ONNX file
// (onnx_writer.cpp), so the engine needs neither libprotobuf nor generated code.
//
// A message is built field by field into a byte string; a nested message is another ProtoWriter
// written as a length-delimited field. Repeated scalars are written one field each (proto2's
// unpacked encoding, which every parser reads); tensors carry their values as raw bytes.
// Encoding: https://protobuf.dev/programming-guides/encoding/.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace trainingd::engine::internal {

class ProtoWriter {
 public:
  enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

  // int32, int64, uint64, enum and bool fields: a varint; negative values take ten bytes (two's
  // complement as uint64), as protobuf writes int32 and int64.
  ProtoWriter& Int(uint32_t field, int64_t value) {
    Tag(field, kVarint);
    Varint(static_cast<uint64_t>(value));
    return *this;
  }
  // A float field: four little-endian bytes.
  ProtoWriter& Float(uint32_t field, float value) {
    Tag(field, kFixed32);
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    return *this;
  }
  // string and bytes fields.
  ProtoWriter& Bytes(uint32_t field, std::string_view value) {
    Tag(field, kLengthDelimited);
    Varint(value.size());
    bytes_.append(value);
    return *this;
  }
  // A nested message.
  ProtoWriter& Message(uint32_t field, const ProtoWriter& message) {
    return Bytes(field, message.bytes_);
  }

  const std::string& bytes() const { return bytes_; }
  std::string Take() { return std::move(bytes_); }

 private:
  void Tag(uint32_t field, WireType type) { Varint((uint64_t{field} << 3) | type); }
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      bytes_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    bytes_.push_back(static_cast<char>(v));
  }

  std::string bytes_;
};

}  // namespace trainingd::engine::internal
