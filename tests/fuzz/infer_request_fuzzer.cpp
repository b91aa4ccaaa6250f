// Fuzz target: an inference request's body through the two parsers of the model routes,
// api::ParseInferRequest (KServe v2) and api::ParsePredictRequest (TF Serving). The input's first
// byte picks the parser; the rest is the body.
//
// Properties checked: a refusal is InvalidArgument; unless the body is not JSON at all (whose
// message names the member the syntax error is in, as its raw text) or has a member whose name
// is no identifier ("unknown field 'a b'; ..."), its message starts with a field (no space before
// the first ": "); a request that parses has a shape of positive dimensions
// whose product is the number of values, at most kMaxInferValues, every value finite (and, for
// UINT8, an integer in [0, 255]); the outputs asked for are logits or probabilities.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "trainingd/api/infer_json.h"

namespace api = trainingd::api;
namespace engine = trainingd::engine;
using trainingd::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool predict = (data[0] & 1) != 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto r = predict ? api::ParsePredictRequest(body) : api::ParseInferRequest(body);
  if (!r.ok()) {
    Check(r.status().code() == engine::StatusCode::kInvalidArgument, "an undocumented code",
          r.status().ToString());
    const std::string& m = r.status().message();
    Check(!m.empty(), "a refusal without a message");
    if (m.find("invalid JSON") == std::string::npos &&
        m.find("unknown field '") == std::string::npos) {
      const size_t colon = m.find(": ");
      Check(colon != std::string::npos && m.find(' ') > colon, "a refusal that names no field", m);
    }
    return 0;
  }
  Check(!r->shape.empty(), "no shape");
  int64_t n = 1;
  for (int64_t d : r->shape) {
    Check(d >= 1, "a dimension below 1");
    Check(n <= api::kMaxInferValues / d, "a shape over the limit");
    n *= d;
  }
  Check(static_cast<int64_t>(r->data.size()) == n, "values and shape disagree");
  for (float v : r->data) Check(std::isfinite(v), "a value that is not finite");
  for (const std::string& o : r->outputs) {
    Check(o == "logits" || o == "probabilities", "an unknown output", o);
  }
  return 0;
}
