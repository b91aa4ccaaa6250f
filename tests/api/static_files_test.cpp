// Static files: content types, index.html, and every way out of the web root refused.
#include "trainingd/api/static_files.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "fake_job_service.h"
#include "router_test_util.h"
#include "trainingd/api/router.h"

namespace trainingd::api {
namespace {

namespace fs = std::filesystem;

class StaticFilesTest : public ::testing::Test {
 protected:
  StaticFilesTest() {
    dir_.Write("root/index.html", "<h1>dash</h1>");
    dir_.Write("root/app.js", "console.log(1)");
    dir_.Write("root/style.css", "body{}");
    dir_.Write("root/data.json", "{}");
    dir_.Write("root/icon.svg", "<svg/>");
    dir_.Write("root/blob.bin", "xx");
    dir_.Write("root/sub/index.html", "<p>sub</p>");
    dir_.Write("root/sub/page.html", "<p>page</p>");
    dir_.Write("root/.hidden", "nope");
    dir_.Write("secret.txt", "top secret");
    fs::create_symlink(dir_.path() / "secret.txt", dir_.path() / "root/leak.txt");
    fs::create_directory_symlink(dir_.path(), dir_.path() / "root/up");
    fs::create_symlink(dir_.path() / "root/app.js", dir_.path() / "root/alias.js");
    options_.web_root = (dir_.path() / "root").string();
  }

  TempDir dir_;
  RouterOptions options_;
  FakeJobService service_;
};

TEST_F(StaticFilesTest, ServesFilesWithTheirContentType) {
  Router router(service_, options_);
  ASSERT_TRUE(router.CheckOptions().ok());
  struct Case {
    const char* path;
    const char* type;
    const char* body;
  } cases[] = {
      {"/", "text/html; charset=utf-8", "<h1>dash</h1>"},
      {"/index.html", "text/html; charset=utf-8", "<h1>dash</h1>"},
      {"/app.js", "text/javascript; charset=utf-8", "console.log(1)"},
      {"/style.css", "text/css; charset=utf-8", "body{}"},
      {"/data.json", "application/json", "{}"},
      {"/icon.svg", "image/svg+xml", "<svg/>"},
      {"/blob.bin", "application/octet-stream", "xx"},
      {"/sub/", "text/html; charset=utf-8", "<p>sub</p>"},
      {"/sub", "text/html; charset=utf-8", "<p>sub</p>"},
      {"/sub/page.html?v=3", "text/html; charset=utf-8", "<p>page</p>"},
      {"/%73tyle.css", "text/css; charset=utf-8", "body{}"},
      {"/alias.js", "text/javascript; charset=utf-8", "console.log(1)"},  // link inside root
  };
  for (const Case& c : cases) {
    HttpResponse r = router.Handle(Req("GET", c.path));
    EXPECT_EQ(r.status, 200) << c.path << " " << r.body;
    EXPECT_EQ(r.Header("Content-Type"), c.type) << c.path;
    EXPECT_EQ(r.body, c.body) << c.path;
    EXPECT_EQ(r.Header("X-Content-Type-Options"), "nosniff");
  }
}

TEST_F(StaticFilesTest, NeverLeavesTheRoot) {
  Router router(service_, options_);
  // Traversal by text: 400 naming the path.
  for (const char* path :
       {"/../secret.txt", "/../../etc/passwd", "/%2e%2e/secret.txt", "/%2E%2E/%2e%2e/etc/passwd",
        "/sub/../../secret.txt", "/./index.html", "//etc/passwd", "/..%2fsecret.txt",
        "/%2e%2e%2fsecret.txt", "/sub/..%5c..%5csecret.txt", "/a%00.html", "/bad%zzescape", "/%"}) {
    ExpectError(router.Handle(Req("GET", path)), 400, "invalid_argument", "path");
  }
  // Everything else that does not resolve to a file inside the root: 404.
  for (const char* path : {"/leak.txt", "/up/secret.txt", "/up/root/index.html/../../secret.txt",
                           "/.hidden", "/missing.html", "/sub/missing/", "/etc/passwd"}) {
    HttpResponse r = router.Handle(Req("GET", path));
    EXPECT_NE(r.status, 200) << path;
    EXPECT_TRUE(r.status == 404 || r.status == 400) << path << " " << r.status;
    EXPECT_EQ(r.body.find("top secret"), std::string::npos) << path;
  }
  ExpectError(router.Handle(Req("GET", "/leak.txt")), 404, "not_found");
  ExpectError(router.Handle(Req("GET", "/up/secret.txt")), 404, "not_found");
  ExpectError(router.Handle(Req("POST", "/index.html")), 405, "method_not_allowed");
}

TEST_F(StaticFilesTest, WithoutAWebRootEverythingIs404) {
  Router router(service_, {});
  EXPECT_TRUE(router.CheckOptions().ok());
  ExpectError(router.Handle(Req("GET", "/")), 404, "not_found");
  ExpectError(router.Handle(Req("GET", "/app.js")), 404, "not_found");
  RouterOptions missing;
  missing.web_root = (dir_.path() / "nope").string();
  Router broken(service_, missing);
  EXPECT_EQ(broken.CheckOptions().code(), engine::StatusCode::kNotFound);
}

TEST_F(StaticFilesTest, LookupDirectly) {
  StaticFiles files(options_.web_root, /*max_file_bytes=*/8);
  EXPECT_EQ(files.Lookup("/app.js").status().code(), engine::StatusCode::kNotFound);  // 14 bytes
  EXPECT_TRUE(files.Lookup("/blob.bin").ok());
  EXPECT_EQ(files.Lookup("relative").status().code(), engine::StatusCode::kInvalidArgument);
  EXPECT_EQ(ContentTypeForPath("A.HTML"), "text/html; charset=utf-8");
  EXPECT_EQ(ContentTypeForPath("dir.js/file"), "application/octet-stream");
}

TEST_F(StaticFilesTest, GzipCopyServedOnlyWhenAcceptedFreshAndInside) {
  dir_.Write("root/app.js.gz", "GZ-OF-APP");
  dir_.Write("root/style.css.gz", "STALE");
  fs::last_write_time(dir_.path() / "root/style.css.gz",
                      fs::last_write_time(dir_.path() / "root/style.css") - std::chrono::hours(1));
  dir_.Write("elsewhere.gz", "OUTSIDE");
  fs::create_symlink(dir_.path() / "elsewhere.gz", dir_.path() / "root/icon.svg.gz");
  StaticFiles files(options_.web_root);

  auto gz = files.Lookup("/app.js", /*accept_gzip=*/true);
  ASSERT_TRUE(gz.ok());
  EXPECT_TRUE(gz->gzip);
  EXPECT_EQ(gz->content, "GZ-OF-APP");
  EXPECT_EQ(gz->content_type, "text/javascript; charset=utf-8");
  auto plain = files.Lookup("/app.js", /*accept_gzip=*/false);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->gzip);
  EXPECT_EQ(plain->content, "console.log(1)");
  EXPECT_NE(gz->etag, plain->etag);
  EXPECT_EQ(plain->etag.rfind("W/\"", 0), 0u) << plain->etag;

  auto stale = files.Lookup("/style.css", true);  // older than the file: not used
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->gzip);
  EXPECT_EQ(stale->content, "body{}");
  auto outside = files.Lookup("/icon.svg", true);  // a link out of the root: not used
  ASSERT_TRUE(outside.ok());
  EXPECT_FALSE(outside->gzip);
  EXPECT_EQ(outside->content, "<svg/>");
}

TEST_F(StaticFilesTest, RouterSendsEncodingVaryAndAnswersIfNoneMatchWith304) {
  dir_.Write("root/app.js.gz", "GZ-OF-APP");
  Router router(service_, options_);
  HttpResponse gz = router.Handle(Req("GET", "/app.js", "", {{"Accept-Encoding", "br, gzip"}}));
  EXPECT_EQ(gz.status, 200);
  EXPECT_EQ(gz.Header("Content-Encoding"), "gzip");
  EXPECT_EQ(gz.Header("Vary"), "Accept-Encoding");
  EXPECT_EQ(gz.body, "GZ-OF-APP");
  const std::string etag(gz.Header("ETag"));
  ASSERT_FALSE(etag.empty());

  HttpResponse plain = router.Handle(Req("GET", "/app.js"));
  EXPECT_EQ(plain.status, 200);
  EXPECT_EQ(plain.Header("Content-Encoding"), "");
  EXPECT_EQ(plain.body, "console.log(1)");

  HttpResponse again = router.Handle(
      Req("GET", "/app.js", "", {{"Accept-Encoding", "gzip"}, {"If-None-Match", etag}}));
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());
  EXPECT_EQ(again.Header("ETag"), etag);
  // The plain form's validator does not match the gzipped one.
  HttpResponse other = router.Handle(Req("GET", "/app.js", "", {{"If-None-Match", etag}}));
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.body, "console.log(1)");
}

TEST_F(StaticFilesTest, AcceptEncodingParsing) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("gzip, deflate, br"));
  EXPECT_TRUE(AcceptsGzip("br;q=1.0, GZIP;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_TRUE(AcceptsGzip("x-gzip"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("br, deflate"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip; q=0.000"));
  EXPECT_FALSE(AcceptsGzip("gzipped"));
}

}  // namespace
}  // namespace trainingd::api
