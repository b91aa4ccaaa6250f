// Helpers for tests that call the Router directly: building requests and checking error bodies.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "trainingd/api/http_message.h"

namespace trainingd::api {

constexpr const char* kMinimalSpec = R"({"name": "t", "model": "softmax", "max_steps": 100})";

inline HttpRequest Req(std::string method, std::string target, std::string body = "",
                       HttpHeaders headers = {}) {
  HttpRequest r;
  r.method = std::move(method);
  r.target = std::move(target);
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

inline HttpRequest JsonPost(std::string target, std::string body) {
  return Req("POST", std::move(target), std::move(body), {{"Content-Type", "application/json"}});
}

inline nlohmann::json BodyJson(const HttpResponse& r) {
  return nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
}

// Checks status, Content-Type and the {"error":{"code","message"[,"field"]}} body.
inline void ExpectError(const HttpResponse& r, int status, const std::string& code,
                        const std::string& field = "") {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  nlohmann::json body = BodyJson(r);
  ASSERT_TRUE(body.is_object()) << r.body;
  ASSERT_TRUE(body.contains("error")) << r.body;
  const nlohmann::json& e = body["error"];
  EXPECT_EQ(e.value("code", ""), code) << r.body;
  EXPECT_FALSE(e.value("message", "").empty()) << r.body;
  if (field.empty()) {
    EXPECT_FALSE(e.contains("field")) << r.body;
  } else {
    EXPECT_EQ(e.value("field", ""), field) << r.body;
  }
}

// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("trainingd_api_test_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  void Write(const std::string& relative, const std::string& content) const {
    std::filesystem::path p = path_ / relative;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace trainingd::api
