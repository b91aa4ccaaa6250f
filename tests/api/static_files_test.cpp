// Static files: content types, index.html, and every way out of the web root refused.
#include "trainingd/api/static_files.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace trainingd::api
