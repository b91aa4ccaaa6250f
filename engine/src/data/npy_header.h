// The header of a .npy file (NumPy's array format, versions 1.0, 2.0 and 3.0): the element type,
// the shape and the byte order of what follows.
//
// The header is a Python dict literal, {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)},
// parsed strictly as that: exactly those three keys, a string, True or False, and a tuple of
// non-negative integers. Nothing is evaluated; object arrays (pickles) and structured dtypes are
// refused with a message that says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainingd/engine/base/status.h"

namespace trainingd::engine {

// The largest header ParseNpyHeader accepts, in bytes (NumPy itself refuses more than 10000 by
// default).
inline constexpr size_t kMaxNpyHeaderBytes = 65536;

// A simple numeric element type: kind 'u' or 'i' of 1, 2, 4 or 8 bytes, or 'f' of 4 or 8.
struct NpyDtype {
  char kind = 'u';
  int size = 1;
  bool big_endian = false;
  std::string descr;  // as written, for messages: "<f4"

  // "uint8", "int16", "float32", ...
  std::string Name() const;
};

struct NpyHeader {
  NpyDtype dtype;
  std::vector<int64_t> shape;
  size_t header_bytes = 0;  // the magic string, version, length and dict: where the data starts
};

// The bytes to read before ParseNpyHeader can tell the header's length: magic, version, length.
// ParseNpyPreamble returns the total header size (those and the dict) from them, or an error
// (InvalidArgument: not an .npy file, an unknown version, a header over kMaxNpyHeaderBytes).
inline constexpr size_t kNpyPreambleBytes = 12;
Result<size_t> ParseNpyPreamble(const uint8_t* bytes, size_t n, const std::string& label);

// Parses the whole header `bytes` (as long as ParseNpyPreamble said). InvalidArgument naming
// `label` for anything but the dict above, for fortran_order True ("C order only"), object,
// structured and other non-numeric dtypes; the shape is returned unchecked beyond being
// non-negative integers below 2^62.
Result<NpyHeader> ParseNpyHeader(std::string_view bytes, const std::string& label);

}  // namespace trainingd::engine
