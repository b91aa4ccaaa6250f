// Router::Context: one request being answered, as Router::Dispatch (router.cpp) hands it to the
// route handlers (router.cpp, job_routes.cpp, dataset_routes.cpp). Private to api/src.
#pragma once

#include <string>
#include <string_view>

#include "trainingd/api/router.h"
#include "trainingd/api/url.h"

namespace trainingd::api {

struct Router::Context {
  const HttpRequest& request;
  std::string_view path;
  QueryParams query;   // the request's query parameters, decoded
  std::string job_id;  // the route's {id}, when it has one
  const EventDeliver& deliver;
  const Principal& principal;  // who asks (the access check has passed)
};

}  // namespace trainingd::api
