// The subcommands' one flag parser: values, ranges, positionals, and errors that name the flag.
#include "trainingd/daemon/service/flags.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainingd::daemon {
namespace {

struct Parsed {
  std::string name = "default";
  int threads = 1;
  std::optional<int64_t> steps;
  uint64_t seed = 0;
  std::optional<double> rate;
  std::vector<std::string> files;
};

Flags FlagsFor(Parsed& p) {
  Flags f("test", "FILE", "about\n");
  f.String("--name", "NAME", "a name", &p.name)
      .Int("--threads", "threads", 1, 256, &p.threads)
      .Int("--steps", "steps", 1, INT64_MAX, &p.steps)
      .Uint("--seed", "seed", &p.seed)
      .Positive("--rate", "rate", &p.rate)
      .Positionals("file", 1, &p.files);
  return f;
}

std::string Error(const std::vector<std::string>& args) {
  Parsed p;
  return FlagsFor(p).Parse(args).message();
}

TEST(FlagsTest, ValuesArePutWhereTheyBelong) {
  Parsed p;
  ASSERT_TRUE(FlagsFor(p)
                  .Parse({"--name", "x", "a.json", "--threads", "8", "--steps", "9000000000",
                          "--seed", "18446744073709551615", "--rate", "1e-3", "--name", "y"})
                  .ok());
  EXPECT_EQ(p.name, "y");  // the last one wins
  EXPECT_EQ(p.threads, 8);
  EXPECT_EQ(p.steps, 9000000000);
  EXPECT_EQ(p.seed, UINT64_MAX);
  EXPECT_EQ(p.rate, 1e-3);
  EXPECT_EQ(p.files, std::vector<std::string>{"a.json"});
}

TEST(FlagsTest, ErrorsStartWithTheFlag) {
  EXPECT_EQ(Error({"--bogus", "1"}),
            "--bogus: unknown flag (flags: --name, --threads, --steps, --seed, --rate)");
  EXPECT_EQ(Error({"--name"}), "--name: missing value");
  EXPECT_EQ(Error({"--threads", "0"}), "--threads: must be an integer in [1, 256], got '0'");
  EXPECT_EQ(Error({"--threads", "2x"}), "--threads: must be an integer in [1, 256], got '2x'");
  EXPECT_EQ(Error({"--threads", ""}), "--threads: must be an integer in [1, 256], got ''");
  EXPECT_EQ(Error({"--seed", "-1"}), "--seed: must be an integer in [0, 2^64), got '-1'");
  EXPECT_EQ(Error({"--rate", "nan"}), "--rate: must be a positive finite number, got 'nan'");
  EXPECT_EQ(Error({"--rate", "0"}), "--rate: must be a positive finite number, got '0'");
  EXPECT_EQ(Error({"a", "b"}), "b: unexpected argument (only 1 file may be given)");
}

TEST(FlagsTest, HelpStopsTheParseWhereAFlagWouldBe) {
  Parsed p;
  bool help = false;
  ASSERT_TRUE(FlagsFor(p).Parse({"--threads", "2", "--help", "--bogus"}, &help).ok());
  EXPECT_TRUE(help);
  ASSERT_TRUE(FlagsFor(p).Parse({"--name", "-h"}, &help).ok());
  EXPECT_FALSE(help);  // a value, not a flag
  EXPECT_EQ(p.name, "-h");
}

TEST(FlagsTest, UsageListsEveryFlag) {
  Parsed p;
  const std::string usage = FlagsFor(p).Usage();
  EXPECT_EQ(usage.rfind("usage: trainingd test FILE [flags]\n", 0), 0u) << usage;
  for (const char* flag : {"--name NAME", "--threads N", "--steps N", "--seed N", "--rate X"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(usage.substr(usage.size() - 6), "about\n");
}

}  // namespace
}  // namespace trainingd::daemon

namespace trainingd::daemon {
namespace {

TEST(FlagsTest, SwitchesTakeNoValue) {
  bool follow = false, yes = false;
  std::vector<std::string> ids;
  Flags f("jobs logs", "ID");
  f.Switch("-f", "follow", &follow).Switch("--yes", "yes", &yes).Positionals("job id", 1, &ids);
  ASSERT_TRUE(f.Parse({"-f", "abc"}).ok());
  EXPECT_TRUE(follow);
  EXPECT_FALSE(yes);
  EXPECT_EQ(ids, std::vector<std::string>{"abc"});
  EXPECT_NE(f.Usage().find("  -f                     follow\n"), std::string::npos) << f.Usage();
  ids.clear();
  EXPECT_EQ(f.Parse({"abc", "def"}).message(),
            "def: unexpected argument (only 1 job id may be given)");
}

}  // namespace
}  // namespace trainingd::daemon
