// The strict JSON toolkit every reader uses (job spec, request bodies, config): parse errors
// that name where they are, unknown keys, integers that are integral and in range.
#include "trainingd/api/strict_json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace trainingd::api::strict_json {
namespace {

std::string ParseError(std::string_view text) {
  auto r = Parse(text);
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? "" : r.status().message();
}

TEST(StrictJsonTest, ParseErrorsNameTheMemberAndTheByte) {
  EXPECT_TRUE(Parse(R"({"a": [1, 2]})").ok());
  // The member being read when the error came: here the array's last element.
  EXPECT_EQ(ParseError(R"({"a": {"b": [1, }})").rfind("a.b[0]: invalid JSON at byte 17: ", 0), 0u)
      << ParseError(R"({"a": {"b": [1, }})");
  EXPECT_EQ(ParseError("").rfind("invalid JSON at byte 1: ", 0), 0u);
  EXPECT_EQ(ParseError(R"({"a": 1} x)").rfind("invalid JSON at byte", 0), 0u);
  EXPECT_EQ(ParseError(R"({"n": 1e999})"), "n: invalid JSON: number overflow parsing '1e999'");
  EXPECT_EQ(ParseError("{\"s\": \"\xff\"}").rfind("s: invalid JSON at byte", 0), 0u);
  // A NUL byte ends nlohmann's input: without the check, "2\0junk" parsed as 2 (found by the
  // infer_request fuzzer).
  EXPECT_EQ(ParseError(std::string("2\0junk", 6)), "invalid JSON at byte 2: a NUL byte");
  EXPECT_EQ(ParseError(std::string("{\"a\": [1, \0]}", 13)),
            "a[0]: invalid JSON at byte 11: a NUL byte");
}

TEST(StrictJsonTest, UnknownKeysAreNamedWithTheKnownOnes) {
  const json v = json::parse(R"({"a": 1, "typo": 2})");
  EXPECT_TRUE(CheckObject(v, "x", {"a", "typo"}).ok());
  EXPECT_EQ(CheckObject(v, "x", {"a", "b"}).message(), "x.typo: unknown field; known: a, b");
  EXPECT_EQ(CheckObject(v, "", {"a"}, "key").message(), "typo: unknown key; known: a");
  // A key that is not an identifier is quoted in the message, never put in the path.
  EXPECT_EQ(CheckObject(json::parse(R"({"a b: c": 1})"), "x", {"a"}).message(),
            "x: unknown field 'a b: c'; known: a");
  EXPECT_EQ(CheckObject(json::parse("[]"), "x", {"a"}).message(),
            "x: must be an object, got array");
}

TEST(StrictJsonTest, IntegersAreIntegralAndInRange) {
  int64_t i = 0;
  EXPECT_TRUE(ReadInt(json::parse("1e3"), "n", 1, 5000, &i).ok());
  EXPECT_EQ(i, 1000);
  EXPECT_EQ(ReadInt(json::parse("1.5"), "n", 1, 5000, &i).message(),
            "n: must be an integer, got 1.5");
  EXPECT_EQ(ReadInt(json::parse("0"), "n", 1, 5000, &i).message(),
            "n: must be an integer in [1, 5000], got 0");
  EXPECT_EQ(ReadInt(json::parse("\"9\""), "n", 1, 5000, &i).message(),
            "n: must be an integer, got string");
  EXPECT_EQ(ReadInt(json::parse("null"), "n", 1, 5000, &i).message(),
            "n: must be an integer, got null");
  // Beyond 2^53 a double does not hold every integer: refused rather than rounded.
  EXPECT_FALSE(ReadInt(json::parse("1e17"), "n", 0, INT64_MAX, &i).ok());
  int small = 0;
  EXPECT_EQ(Read(json::parse("3000000000"), "n", &small).message(),
            "n: must be an integer in [-2147483648, 2147483647], got 3000000000");
  uint64_t u = 0;
  EXPECT_TRUE(Read(json::parse("18446744073709551615"), "seed", &u).ok());
  EXPECT_EQ(u, UINT64_MAX);
  EXPECT_EQ(Read(json::parse("-1"), "seed", &u).message(),
            "seed: must be an integer in [0, 18446744073709551615], got -1");
  EXPECT_EQ(Read(json::parse("0.5"), "seed", &u).message(), "seed: must be an integer, got 0.5");
}

TEST(StrictJsonTest, NumbersStringsAndArrays) {
  float f = 0;
  EXPECT_EQ(Read(json::parse("1e39"), "lr", &f).message(),
            "lr: must be a finite number within float range, got 1e+39");
  std::vector<std::string> list;
  const json doc = json::parse(R"({"hosts": ["a", 5]})");
  EXPECT_EQ(Field(doc, "", "hosts", &list).message(), "hosts[1]: must be a string, got integer");
  std::string s = "default";
  EXPECT_TRUE(Field(doc, "", "absent", &s).ok());
  EXPECT_EQ(s, "default");
  EXPECT_EQ(Require(doc, "cfg", "listen").message(), "cfg.listen: required");
  EXPECT_EQ(Quote(std::string(100, 'x')), "'" + std::string(64, 'x') + "...'");
}

}  // namespace
}  // namespace trainingd::api::strict_json
