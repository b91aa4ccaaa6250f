// Fuzz target: raw bytes from a client through the server's request path. Beast's request parser
// with the server's limits (LimitRequestParser), the server's conversion (ToHttpRequest), then
// Router::Handle over an in-memory FakeJobService, request after request while the connection
// would stay open (pipelining), as HttpSession does.
//
// Properties checked on every answer: the status is a real HTTP status, every error (>= 400) has
// the documented JSON error body, and no answer carries the content of a file outside the web
// root (the fuzzer plants one beside the root and a symlink to it inside).
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "beast_request.h"
#include "fake_job_service.h"
#include "fuzz_util.h"
#include "trainingd/api/http_server.h"
#include "trainingd/api/router.h"
#include "trainingd/api/sse.h"

namespace api = trainingd::api;
namespace fs = std::filesystem;
using trainingd::fuzz::Check;

namespace {

constexpr std::string_view kToken = "fuzz-token-0123456789";
constexpr std::string_view kSecret = "SECRET-OUTSIDE-THE-WEB-ROOT";

fs::path g_dir;  // <tmp>/trainingd-fuzz-http-XXXXXX: secret.txt and root/

void Put(const fs::path& path, std::string_view content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  Check(out.good(), "cannot write", path.string());
}

void RemoveDir() {
  std::error_code ec;
  if (!g_dir.empty()) fs::remove_all(g_dir, ec);
}

// The jobs and events every input starts from: one job in each state that changes what a route
// does, and a little history on the job-list and job streams.
void Populate(api::FakeJobService& service) {
  service.AddJob("queued", api::JobState::kQueued);        // job-1
  service.AddJob("running", api::JobState::kRunning);      // job-2
  service.AddJob("stopped", api::JobState::kStopped);      // job-3
  service.AddJob("completed", api::JobState::kCompleted);  // job-4
  service.AddJob("failed", api::JobState::kFailed);        // job-5
  service.Publish("", api::EventKind::kJob, api::JobStateEvent{"job-1", "queued"});
  service.Publish("job-2", api::EventKind::kLog, api::LogEvent{"hello"});
  service.Publish("job-2", api::EventKind::kScalar, api::ScalarEvent{"loss", 10, 0.5, 1.0});
}

// `echoes`: the input itself holds the secret, so an answer may quote it (a 421 names the Host
// it was given) without having read the file.
void CheckResponse(const api::HttpResponse& response, bool echoes) {
  Check(response.status >= 100 && response.status <= 599, "status out of range",
        std::to_string(response.status));
  Check(echoes || response.body.find(kSecret) == std::string::npos,
        "a response carries a file from outside the web root");
  if (response.status < 400) return;
  Check(!response.event_stream, "an error answer is an event stream");
  Check(response.Header("Content-Type").rfind("application/json", 0) == 0,
        "an error answer is not JSON", std::string(response.Header("Content-Type")));
  const nlohmann::json body = nlohmann::json::parse(response.body, nullptr, false);
  Check(body.is_object() && body.contains("error") && body["error"].is_object() &&
            body["error"].value("code", nlohmann::json()).is_string() &&
            body["error"].value("message", nlohmann::json()).is_string(),
        "an error answer lacks {\"error\":{\"code\",\"message\"}}", response.body);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::string tmpl = (fs::temp_directory_path() / "trainingd-fuzz-http-XXXXXX").string();
  Check(::mkdtemp(tmpl.data()) != nullptr, "mkdtemp failed", tmpl);
  g_dir = tmpl;
  std::atexit(RemoveDir);
  fs::create_directories(g_dir / "root" / "sub");
  Put(g_dir / "secret.txt", kSecret);
  Put(g_dir / "root" / "index.html", "<!doctype html><title>trainingd</title>");
  Put(g_dir / "root" / "app.js", "console.log('app');");
  Put(g_dir / "root" / "app.js.gz", "not really gzip, but newer than app.js");
  Put(g_dir / "root" / "sub" / "index.html", "<p>sub</p>");
  Put(g_dir / "root" / ".hidden", "hidden");
  fs::create_symlink(g_dir / "secret.txt", g_dir / "root" / "link.txt");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  api::FakeJobService service;
  Populate(service);
  api::RouterOptions router_options;
  router_options.api_token = std::string(kToken);
  router_options.web_root = (g_dir / "root").string();
  api::Router router(service, router_options);
  const api::HttpServerOptions server_options;  // the server's default limits

  const bool echoes = std::string_view(reinterpret_cast<const char*>(data), size).find(kSecret) !=
                      std::string_view::npos;
  boost::asio::const_buffer input(data, size);
  while (input.size() > 0) {
    api::BeastRequestParser parser;
    api::LimitRequestParser(parser, server_options);
    boost::beast::error_code ec;
    while (!parser.is_done() && input.size() > 0) {
      const size_t used = parser.put(input, ec);
      input += used;
      if (ec == boost::beast::http::error::need_more) ec = {};
      if (ec || used == 0) break;
    }
    // An error is answered 400/413/431 by the session and the connection closed; a request cut
    // short by the end of the input is the client going away. Neither reaches the router.
    if (ec || !parser.is_done()) return 0;
    const bool keep_alive = parser.get().keep_alive();
    api::HttpRequest request = api::ToHttpRequest(parser.release());
    // The session's deliver formats each event for its stream; so does this one.
    api::HttpResponse response = router.Handle(
        request, [](const api::ServiceEvent& event) { (void)api::FormatSseEvent(event); });
    CheckResponse(response, echoes);
    if (!keep_alive) break;
  }
  return 0;
}
