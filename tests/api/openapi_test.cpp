// docs/openapi.yaml describes exactly the routes the Router answers: the (method, path) pairs under
// `paths:` equal Router::Routes(). The YAML is read line by line (no YAML library): path keys are
// the lines indented by two spaces that start with '/', methods the four-space keys below them.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "trainingd/api/router.h"

namespace trainingd::api {
namespace {

using RouteSet = std::set<std::pair<std::string, std::string>>;

size_t Indent(const std::string& line) { return line.find_first_not_of(' '); }

RouteSet ReadOpenApiRoutes(const std::string& file) {
  std::ifstream in(file);
  EXPECT_TRUE(in) << file;
  RouteSet routes;
  bool in_paths = false;
  std::string path;
  std::string line;
  const std::set<std::string> methods = {"get",     "put",  "post",  "delete",
                                         "options", "head", "patch", "trace"};
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t indent = Indent(line);
    if (indent == std::string::npos || line[indent] == '#') continue;
    if (indent == 0) {
      in_paths = line == "paths:";
      continue;
    }
    if (!in_paths) continue;
    // A quoted key may hold a colon ("/v1/models/{id}:predict").
    std::string key;
    if (line[indent] == '"' || line[indent] == '\'') {
      key = line.substr(indent + 1, line.find(line[indent], indent + 1) - indent - 1);
    } else {
      key = line.substr(indent, line.find(':', indent) - indent);
    }
    if (indent == 2) {
      path = key;
    } else if (indent == 4 && methods.count(key)) {
      std::string upper;
      for (char c : key) upper.push_back(static_cast<char>(c - 'a' + 'A'));
      routes.insert({upper, path});
    }
  }
  return routes;
}

TEST(OpenApiTest, DocumentsExactlyTheRouterTable) {
  RouteSet documented = ReadOpenApiRoutes(std::string(TRAININGD_DOCS_DIR) + "/openapi.yaml");
  RouteSet served;
  for (const RouteInfo& r : Router::Routes()) {
    served.insert({std::string(r.method), std::string(r.path)});
  }
  for (const auto& [method, path] : served) {
    EXPECT_TRUE(documented.count({method, path})) << "undocumented: " << method << " " << path;
  }
  for (const auto& [method, path] : documented) {
    EXPECT_TRUE(served.count({method, path})) << "not served: " << method << " " << path;
  }
}

}  // namespace
}  // namespace trainingd::api
