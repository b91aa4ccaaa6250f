// Fuzz target: a config file's text through daemon::ParseConfigText (what LoadConfigFile does with
// the file's contents). A config that parses has every field in its documented range.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "trainingd/daemon/service/config.h"

namespace daemon = trainingd::daemon;
namespace engine = trainingd::engine;
using trainingd::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  daemon::ServeConfig config;
  const engine::Status st = daemon::ParseConfigText(text, "fuzz.json", config);
  if (!st.ok()) {
    Check(st.code() == engine::StatusCode::kInvalidArgument,
          "ParseConfigText failed with a code other than InvalidArgument", st.ToString());
    Check(st.message().rfind("fuzz.json: ", 0) == 0, "the message does not name the file",
          st.message());
    return 0;
  }
  Check(config.listen_port >= 0 && config.listen_port <= 65535, "listen port out of range");
  Check(config.max_concurrent_jobs >= 1 && config.max_concurrent_jobs <= 64,
        "max_concurrent_jobs out of range");
  Check(config.threads_per_job >= 0 && config.threads_per_job <= 256,
        "threads_per_job out of range");
  Check(config.http_threads >= 1 && config.http_threads <= 64, "http_threads out of range");
  Check(config.http_handler_threads >= 1 && config.http_handler_threads <= 64,
        "http_handler_threads out of range");
  Check(config.token.empty(), "the config file set the token itself");
  return 0;
}
