// Internal to the api target: the request side of the Beast boundary. HttpSession and the HTTP
// fuzzer (tests/fuzz/http_request_fuzzer.cpp) both use it, so the fuzzer parses and converts
// requests exactly as the server does.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "trainingd/api/http_message.h"
#include "trainingd/api/http_server.h"

namespace trainingd::api {

using BeastRequest = boost::beast::http::request<boost::beast::http::string_body>;
using BeastRequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// Sets the server's limits on a parser that has read nothing yet: header_limit (request line and
// headers; over it the parser fails with header_limit, answered 431) and body_limit (body_limit,
// answered 413).
void LimitRequestParser(BeastRequestParser& parser, const HttpServerOptions& options);

// The Router's plain request from a parsed Beast message: method and target as sent, every header
// in order, the body moved out.
HttpRequest ToHttpRequest(BeastRequest&& message);
// The same from a message whose body is still to come (its header only; body_follows set).
HttpRequest HeaderToHttpRequest(const BeastRequest& message);

}  // namespace trainingd::api
