#include "data/npy_header.h"

#include <cstring>

namespace trainingd::engine {
namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;
constexpr int64_t kMaxDim = int64_t{1} << 62;

// A cursor over the dict's text.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& label) : s_(text), label_(label) {}

  Status Parse(NpyHeader* h);

 private:
  void SkipSpace() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n')) ++at_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (at_ < s_.size() && s_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  Status Error(const std::string& what) const {
    return Status::InvalidArgument(label_ + ": malformed .npy header: " + what + " at offset " +
                                   std::to_string(at_) + " of the header dict");
  }
  Status String(std::string* out);
  Status Bool(bool* out);
  Status Shape(std::vector<int64_t>* out);
  Status Dtype(const std::string& descr, NpyDtype* out) const;

  std::string_view s_;
  const std::string& label_;
  size_t at_ = 0;
};

Status DictParser::String(std::string* out) {
  SkipSpace();
  if (at_ >= s_.size() || (s_[at_] != '\'' && s_[at_] != '"')) return Error("expected a string");
  const char quote = s_[at_++];
  out->clear();
  while (at_ < s_.size() && s_[at_] != quote) {
    const char c = s_[at_++];
    if (c == '\\' || static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) {
      return Error("unexpected character in a string");
    }
    if (out->size() >= 64) return Error("string too long");
    out->push_back(c);
  }
  if (at_ >= s_.size()) return Error("unterminated string");
  ++at_;
  return Status::Ok();
}

Status DictParser::Bool(bool* out) {
  SkipSpace();
  const std::string_view rest = s_.substr(at_);
  if (rest.substr(0, 4) == "True") {
    *out = true;
    at_ += 4;
  } else if (rest.substr(0, 5) == "False") {
    *out = false;
    at_ += 5;
  } else {
    return Error("expected True or False");
  }
  return Status::Ok();
}

Status DictParser::Shape(std::vector<int64_t>* out) {
  if (!Eat('(')) return Error("expected a tuple for 'shape'");
  out->clear();
  while (true) {
    if (Eat(')')) return Status::Ok();
    SkipSpace();
    if (at_ >= s_.size() || s_[at_] < '0' || s_[at_] > '9') return Error("expected an integer");
    int64_t v = 0;
    while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') {
      const int digit = s_[at_++] - '0';
      if (v > (kMaxDim - 1 - digit) / 10) return Error("dimension too large");
      v = v * 10 + digit;
    }
    if (at_ < s_.size() && s_[at_] == 'L') ++at_;  // Python 2's long
    if (out->size() >= 32) return Error("more than 32 dimensions");
    out->push_back(v);
    if (Eat(',')) continue;
    if (Eat(')')) return Status::Ok();
    return Error("expected ',' or ')' in the shape");
  }
}

Status DictParser::Dtype(const std::string& descr, NpyDtype* out) const {
  out->descr = descr;
  const std::string msg = label_ + ": dtype '" + descr + "' ";
  if (descr.size() >= 2 && descr[1] == 'O') {
    return Status::InvalidArgument(msg + "is an object array, which .npy stores as a pickle; " +
                                   "trainingd never unpickles: save numeric arrays");
  }
  if (descr.size() < 3 || std::strchr("<>|=", descr[0]) == nullptr) {
    return Status::InvalidArgument(msg + "is not a numeric type this reader takes");
  }
  const char kind = descr[1];
  const std::string digits = descr.substr(2);
  int size = 0;
  if (digits == "1") size = 1;
  if (digits == "2") size = 2;
  if (digits == "4") size = 4;
  if (digits == "8") size = 8;
  if (std::strchr("uif", kind) == nullptr || size == 0 || (kind == 'f' && size < 4)) {
    return Status::InvalidArgument(msg + "is not supported: x arrays take uint8, int8, int16, " +
                                   "uint16, float32 or float64, y arrays integers");
  }
  out->kind = kind;
  out->size = size;
  out->big_endian = descr[0] == '>' && size > 1;
  return Status::Ok();
}

Status DictParser::Parse(NpyHeader* h) {
  if (!Eat('{')) return Error("expected '{'");
  bool have_descr = false, have_order = false, have_shape = false;
  std::string descr;
  bool fortran = false;
  while (!Eat('}')) {
    std::string key;
    TRAININGD_RETURN_IF_ERROR(String(&key));
    if (!Eat(':')) return Error("expected ':'");
    bool* seen = nullptr;
    if (key == "descr") {
      seen = &have_descr;
      SkipSpace();
      if (at_ < s_.size() && s_[at_] == '[') {
        return Status::InvalidArgument(label_ + ": structured dtypes (a list 'descr') are not " +
                                       "supported: save plain numeric arrays");
      }
      TRAININGD_RETURN_IF_ERROR(String(&descr));
    } else if (key == "fortran_order") {
      seen = &have_order;
      TRAININGD_RETURN_IF_ERROR(Bool(&fortran));
    } else if (key == "shape") {
      seen = &have_shape;
      TRAININGD_RETURN_IF_ERROR(Shape(&h->shape));
    } else {
      return Error("unexpected key '" + key + "'");
    }
    if (*seen) return Error("duplicate key '" + key + "'");
    *seen = true;
    if (Eat(',')) continue;
    if (Eat('}')) break;
    return Error("expected ',' or '}'");
  }
  SkipSpace();
  if (at_ != s_.size()) return Error("unexpected text after the dict");
  if (!have_descr || !have_order || !have_shape) {
    return Error(std::string("missing key '") +
                 (!have_descr   ? "descr"
                  : !have_order ? "fortran_order"
                                : "shape") +
                 "'");
  }
  if (fortran) {
    return Status::InvalidArgument(label_ + ": fortran_order is True; C order only (save " +
                                   "np.ascontiguousarray(x))");
  }
  return Dtype(descr, &h->dtype);
}

}  // namespace

std::string NpyDtype::Name() const {
  const std::string bits = std::to_string(size * 8);
  switch (kind) {
    case 'u':
      return "uint" + bits;
    case 'i':
      return "int" + bits;
    case 'f':
      return "float" + bits;
    default:
      return descr;
  }
}

Result<size_t> ParseNpyPreamble(const uint8_t* bytes, size_t n, const std::string& label) {
  if (n < kMagicBytes + 4 || std::memcmp(bytes, kNpyMagic, kMagicBytes) != 0) {
    return Status::InvalidArgument(label + ": not an .npy array (no \\x93NUMPY magic string)");
  }
  const int major = bytes[6], minor = bytes[7];
  size_t dict = 0, preamble = 0;
  if (major == 1 && minor == 0) {
    dict = size_t{bytes[8]} | (size_t{bytes[9]} << 8);
    preamble = 10;
  } else if ((major == 2 || major == 3) && minor == 0) {
    if (n < 12) return Status::DataLoss(label + ": truncated .npy header");
    dict = size_t{bytes[8]} | (size_t{bytes[9]} << 8) | (size_t{bytes[10]} << 16) |
           (size_t{bytes[11]} << 24);
    preamble = 12;
  } else {
    return Status::InvalidArgument(label + ": .npy format version " + std::to_string(major) + "." +
                                   std::to_string(minor) + " is not supported (1.0, 2.0, 3.0)");
  }
  if (dict > kMaxNpyHeaderBytes) {
    return Status::InvalidArgument(label + ": a .npy header of " + std::to_string(dict) +
                                   " bytes; at most " + std::to_string(kMaxNpyHeaderBytes) +
                                   " are read");
  }
  return preamble + dict;
}

Result<NpyHeader> ParseNpyHeader(std::string_view bytes, const std::string& label) {
  Result<size_t> total =
      ParseNpyPreamble(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), label);
  if (!total.ok()) return total.status();
  if (bytes.size() != *total) return Status::DataLoss(label + ": truncated .npy header");
  const size_t preamble = bytes[6] == 1 ? 10 : 12;
  NpyHeader h;
  h.header_bytes = *total;
  DictParser parser(bytes.substr(preamble), label);
  TRAININGD_RETURN_IF_ERROR(parser.Parse(&h));
  return h;
}

}  // namespace trainingd::engine
