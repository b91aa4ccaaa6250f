#include "beast_request.h"

#include <cstdint>
#include <string>
#include <utility>

namespace trainingd::api {

void LimitRequestParser(BeastRequestParser& parser, const HttpServerOptions& options) {
  parser.header_limit(static_cast<uint32_t>(options.header_limit));
  parser.body_limit(options.body_limit);
}

HttpRequest ToHttpRequest(BeastRequest&& message) {
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  for (const auto& field : message) {
    request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  request.body = std::move(message.body());
  return request;
}

HttpRequest HeaderToHttpRequest(const BeastRequest& message) {
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  for (const auto& field : message) {
    request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  request.body_follows = true;
  return request;
}

}  // namespace trainingd::api
