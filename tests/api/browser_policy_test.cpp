// Browser protections without sockets: which Host and Origin values BrowserPolicy allows, and
// what the Router answers for them -- 421 for a Host that is not this server's (DNS rebinding),
// 403 for a POST or DELETE from a foreign Origin, 415 for any POST that is not JSON -- with the
// job untouched; and the security headers on every kind of answer.
#include "trainingd/api/browser_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_job_service.h"
#include "router_test_util.h"
#include "trainingd/api/router.h"

namespace trainingd::api {
namespace {

BrowserPolicy Policy(std::string_view address, uint16_t port, std::vector<std::string> hosts = {},
                     std::vector<std::string> origins = {}) {
  auto policy = BrowserPolicy::Create(address, port, hosts, origins);
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return policy.ok() ? std::move(*policy) : BrowserPolicy();
}

TEST(BrowserPolicyTest, ParsesHostAndPort) {
  auto a = ParseHostAndPort("Example.COM:8080");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->name, "example.com");
  EXPECT_EQ(a->port, 8080);
  auto b = ParseHostAndPort("[0:0::1]");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->name, "[::1]");
  EXPECT_FALSE(b->port);
  auto c = ParseHostAndPort("[FE80::A]:1");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name, "[fe80::a]");
  EXPECT_EQ(c->port, 1);
  for (const char* bad : {"", ":80", "host:", "host:0", "host:65536", "host:8o", "host:+80",
                          "host:80:80", "::1", "[::1", "[::g]", "[]:80", "a b", "host/x",
                          "user@host", "h%41st", "[::1]x", "host:123456"}) {
    EXPECT_FALSE(ParseHostAndPort(bad)) << bad;
  }
}

TEST(BrowserPolicyTest, NormalizesOrigins) {
  EXPECT_EQ(NormalizeOrigin("HTTPS://Trainer.Example"), "https://trainer.example");
  EXPECT_EQ(NormalizeOrigin("https://trainer.example:443"), "https://trainer.example");
  EXPECT_EQ(NormalizeOrigin("http://trainer.example:80"), "http://trainer.example");
  EXPECT_EQ(NormalizeOrigin("http://trainer.example:443"), "http://trainer.example:443");
  EXPECT_EQ(NormalizeOrigin("http://[0::1]:8080"), "http://[::1]:8080");
  for (const char* bad :
       {"null", "", "trainer.example", "ftp://trainer.example", "https://trainer.example/",
        "https://trainer.example/path", "https://", "file:///etc/passwd", "https://a b"}) {
    EXPECT_FALSE(NormalizeOrigin(bad)) << bad;
  }
}

TEST(BrowserPolicyTest, HostsAreLocalNamesTheListenAddressAndTheConfiguredOnes) {
  BrowserPolicy p = Policy("192.168.1.5", 8080, {"trainer.lan", "proxy.example:443"});
  for (const char* ok : {"localhost:8080", "LocalHost:8080", "127.0.0.1:8080", "[::1]:8080",
                         "[0:0:0:0:0:0:0:1]:8080", "192.168.1.5:8080", "trainer.lan:8080",
                         "TRAINER.LAN:8080", "proxy.example:443"}) {
    EXPECT_TRUE(p.AllowsHost(ok)) << ok;
  }
  for (const char* refused :
       {"evil.example:8080", "localhost", "localhost:80", "localhost:8081", "127.0.0.2:8080",
        "trainer.lan", "trainer.lan:8081", "proxy.example:8080", "proxy.example", "localhost.:8080",
        "sub.trainer.lan:8080", "127.0.0.1:08080x", ""}) {
    EXPECT_FALSE(p.AllowsHost(refused)) << refused;
  }
  EXPECT_FALSE(p.listens_on_wildcard());
}

TEST(BrowserPolicyTest, PortlessHostOnlyOnPort80) {
  BrowserPolicy p = Policy("127.0.0.1", 80);
  EXPECT_TRUE(p.AllowsHost("localhost"));
  EXPECT_TRUE(p.AllowsHost("localhost:80"));
  EXPECT_FALSE(p.AllowsHost("localhost:8080"));
  EXPECT_TRUE(p.AllowsOrigin("http://localhost"));
  EXPECT_TRUE(p.AllowsOrigin("http://localhost:80"));
}

TEST(BrowserPolicyTest, WildcardAddressesAddNoNames) {
  for (const char* any : {"0.0.0.0", "::", "0:0::0"}) {
    BrowserPolicy p = Policy(any, 9000, {"gpu-box.lan"});
    EXPECT_TRUE(p.listens_on_wildcard()) << any;
    EXPECT_TRUE(p.AllowsHost("localhost:9000"));
    EXPECT_TRUE(p.AllowsHost("gpu-box.lan:9000"));
    EXPECT_FALSE(p.AllowsHost("0.0.0.0:9000")) << any;
    EXPECT_FALSE(p.AllowsHost("[::]:9000")) << any;
    EXPECT_FALSE(p.AllowsHost("10.0.0.7:9000")) << any;
  }
  BrowserPolicy v6 = Policy("fe80::1", 9000);
  EXPECT_TRUE(v6.AllowsHost("[fe80::1]:9000"));
  EXPECT_FALSE(v6.listens_on_wildcard());
}

TEST(BrowserPolicyTest, UnknownPortMatchesOnlyExplicitPorts) {
  BrowserPolicy p = Policy("127.0.0.1", 0, {"fixed.example:8443"});
  EXPECT_FALSE(p.AllowsHost("127.0.0.1:8080"));
  EXPECT_FALSE(p.AllowsHost("127.0.0.1"));
  EXPECT_TRUE(p.AllowsHost("fixed.example:8443"));
  EXPECT_FALSE(BrowserPolicy().AllowsHost("localhost:8080"));
}

TEST(BrowserPolicyTest, OriginsAreThisServerOrConfigured) {
  BrowserPolicy p = Policy("127.0.0.1", 8080, {"trainer.lan"},
                           {"https://trainer.example", "http://localhost:3000"});
  for (const char* ok :
       {"http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080",
        "HTTP://LOCALHOST:8080", "http://trainer.lan:8080", "https://trainer.example",
        "https://trainer.example:443", "http://localhost:3000"}) {
    EXPECT_TRUE(p.AllowsOrigin(ok)) << ok;
  }
  for (const char* refused :
       {"null", "", "http://evil.example", "http://evil.example:8080", "https://127.0.0.1:8080",
        "http://localhost", "http://localhost:8081", "https://trainer.example:8443",
        "http://trainer.example", "https://evil.trainer.example", "http://127.0.0.1:8080/",
        "file://", "chrome-extension://abc"}) {
    EXPECT_FALSE(p.AllowsOrigin(refused)) << refused;
  }
}

TEST(BrowserPolicyTest, BadEntriesAreNamed) {
  auto hosts = BrowserPolicy::Create("127.0.0.1", 80, {"ok.example", "bad host"}, {});
  ASSERT_FALSE(hosts.ok());
  EXPECT_NE(hosts.status().message().find("allowed_hosts[1]"), std::string::npos);
  auto origins = BrowserPolicy::Create("127.0.0.1", 80, {}, {"https://ok.example/"});
  ASSERT_FALSE(origins.ok());
  EXPECT_NE(origins.status().message().find("allowed_origins[0]"), std::string::npos);
  FakeJobService service;
  RouterOptions options;
  options.allowed_origins = {"*"};
  EXPECT_EQ(Router(service, options).CheckOptions().code(), engine::StatusCode::kInvalidArgument);
}

// The Router over the policy, as the server wires it: listening on 127.0.0.1:8080.
class RouterBrowserTest : public ::testing::Test {
 protected:
  RouterBrowserTest() : router_(service_, Options()) {
    router_.SetListenEndpoint("127.0.0.1", 8080);
  }
  static RouterOptions Options() {
    RouterOptions options;
    options.allowed_hosts = {"trainer.lan"};
    options.allowed_origins = {"https://trainer.example"};
    return options;
  }
  static HttpRequest With(HttpRequest r, HttpHeaders headers) {
    for (auto& h : headers) r.headers.push_back(std::move(h));
    return r;
  }

  FakeJobService service_;
  Router router_;
};

TEST_F(RouterBrowserTest, ForeignHostIs421AndChangesNothing) {
  std::string id = service_.AddJob("a", JobState::kRunning);
  HttpResponse r = router_.Handle(
      With(JsonPost("/api/v1/jobs/" + id + "/stop", "{}"), {{"Host", "evil.example:8080"}}));
  ExpectError(r, 421, "misdirected_request", "Host");
  EXPECT_EQ(BodyJson(router_.Handle(Req("GET", "/api/v1/jobs/" + id)))["state"], "running");
  ExpectError(router_.Handle(With(Req("GET", "/api/v1/jobs"), {{"Host", "evil.example:8080"}})),
              421, "misdirected_request", "Host");
  for (const char* ok : {"127.0.0.1:8080", "localhost:8080", "[::1]:8080", "trainer.lan:8080"}) {
    EXPECT_EQ(router_.Handle(With(Req("GET", "/api/v1/jobs"), {{"Host", ok}})).status, 200) << ok;
  }
  // No Host at all (HTTP/1.0, never a browser): allowed.
  EXPECT_EQ(router_.Handle(Req("GET", "/api/v1/jobs")).status, 200);
  EXPECT_EQ(router_.metrics().RequestCount("/api/v1/jobs", "GET", 421), 1u);
}

TEST_F(RouterBrowserTest, CrossSiteStopIsRefusedTwice) {
  std::string id = service_.AddJob("a", JobState::kRunning);
  const std::string stop = "/api/v1/jobs/" + id + "/stop";
  // The attack of the issue: a form post from another site, empty body.
  HttpResponse r = router_.Handle(Req("POST", stop, "",
                                      {{"Host", "127.0.0.1:8080"},
                                       {"Origin", "http://evil.example"},
                                       {"Content-Type", "application/x-www-form-urlencoded"}}));
  ExpectError(r, 403, "forbidden", "Origin");
  // Without the Origin (a client that is not a browser), the form type alone is refused.
  r = router_.Handle(
      Req("POST", stop, "",
          {{"Host", "127.0.0.1:8080"}, {"Content-Type", "application/x-www-form-urlencoded"}}));
  ExpectError(r, 415, "unsupported_media_type", "Content-Type");
  r = router_.Handle(Req("POST", stop, "{}", {{"Content-Type", "text/plain;charset=UTF-8"}}));
  ExpectError(r, 415, "unsupported_media_type", "Content-Type");
  EXPECT_EQ(BodyJson(router_.Handle(Req("GET", "/api/v1/jobs/" + id)))["state"], "running");
  // A JSON post from a foreign origin (it would need a CORS preflight, which gets no allowance).
  r = router_.Handle(With(JsonPost(stop, "{}"), {{"Origin", "http://evil.example"}}));
  ExpectError(r, 403, "forbidden", "Origin");
  ExpectError(router_.Handle(With(JsonPost(stop, "{}"), {{"Origin", "null"}})), 403, "forbidden",
              "Origin");
  ExpectError(router_.Handle(With(JsonPost(stop, "{}"), {{"Origin", "http://127.0.0.1:8080"},
                                                         {"Origin", "http://evil.example"}})),
              403, "forbidden", "Origin");
  EXPECT_EQ(BodyJson(router_.Handle(Req("GET", "/api/v1/jobs/" + id)))["state"], "running");
  // The dashboard's own request, and one from a configured origin.
  r = router_.Handle(With(JsonPost(stop, "{}"),
                          {{"Host", "127.0.0.1:8080"}, {"Origin", "http://127.0.0.1:8080"}}));
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(BodyJson(r)["state"], "stopping");
  std::string other = service_.AddJob("b", JobState::kRunning);
  r = router_.Handle(With(JsonPost("/api/v1/jobs/" + other + "/stop", ""),
                          {{"Origin", "https://trainer.example"}}));
  EXPECT_EQ(r.status, 202) << r.body;
}

TEST_F(RouterBrowserTest, DeleteAndSubmitAreCheckedAndGetIsNot) {
  std::string id = service_.AddJob("a", JobState::kStopped);
  ExpectError(
      router_.Handle(Req("DELETE", "/api/v1/jobs/" + id, "", {{"Origin", "http://evil.example"}})),
      403, "forbidden", "Origin");
  ExpectError(router_.Handle(With(JsonPost("/api/v1/jobs", kMinimalSpec),
                                  {{"Origin", "http://localhost:9999"}})),
              403, "forbidden", "Origin");
  // Reading cross-origin is up to CORS in the browser (no Access-Control-Allow-Origin is sent).
  HttpResponse r =
      router_.Handle(Req("GET", "/api/v1/jobs/" + id, "", {{"Origin", "http://evil.example"}}));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.Header("Access-Control-Allow-Origin").empty());
  EXPECT_EQ(
      router_.Handle(Req("DELETE", "/api/v1/jobs/" + id, "", {{"Origin", "http://localhost:8080"}}))
          .status,
      204);
  // OPTIONS (a CORS preflight) gets a 405 and no CORS allowance.
  r = router_.Handle(
      Req("OPTIONS", "/api/v1/jobs", "",
          {{"Origin", "http://evil.example"}, {"Access-Control-Request-Method", "POST"}}));
  EXPECT_EQ(r.status, 405);
  for (const auto& [name, value] : r.headers) {
    EXPECT_FALSE(name.starts_with("Access-Control")) << name;
  }
}

TEST_F(RouterBrowserTest, EveryAnswerCarriesTheSecurityHeaders) {
  TempDir dir;
  dir.Write("index.html", "<!doctype html><title>t</title>");
  dir.Write("app.js", "1");
  RouterOptions options = Options();
  options.web_root = dir.path().string();
  Router router(service_, options);
  router.SetListenEndpoint("127.0.0.1", 8080);
  std::string id = service_.AddJob("a", JobState::kRunning);
  struct Case {
    HttpRequest request;
    int status;
    bool html;
  };
  std::vector<Case> cases = {
      {Req("GET", "/api/v1/jobs"), 200, false},
      {Req("GET", "/"), 200, true},
      {Req("GET", "/app.js"), 200, false},
      {Req("GET", "/metrics"), 200, false},
      {Req("GET", "/api/v1/jobs/" + id + "/events"), 200, false},
      {Req("GET", "/api/v1/nope"), 404, false},
      {Req("GET", "/", "", {{"Host", "evil.example"}}), 421, false},
      {Req("POST", "/api/v1/jobs/" + id + "/stop"), 415, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.request.method + " " + c.request.target);
    HttpResponse r = router.Handle(c.request);
    EXPECT_EQ(r.status, c.status) << r.body;
    EXPECT_EQ(r.Header("X-Frame-Options"), "DENY");
    EXPECT_EQ(r.Header("Referrer-Policy"), "no-referrer");
    EXPECT_EQ(r.Header("X-Content-Type-Options"), "nosniff");
    std::string_view csp = r.Header("Content-Security-Policy");
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string_view::npos) << csp;
    if (c.html) {
      EXPECT_EQ(csp, kDashboardCsp);
      EXPECT_NE(csp.find("script-src 'self'"), std::string_view::npos);
      EXPECT_EQ(csp.find("unsafe-inline"), std::string_view::npos);
      EXPECT_EQ(csp.find("unsafe-eval"), std::string_view::npos);
    } else {
      EXPECT_EQ(csp, "default-src 'none'; frame-ancestors 'none'");
    }
  }
}

}  // namespace
}  // namespace trainingd::api
