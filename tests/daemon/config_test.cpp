// trainingd serve's configuration: the JSON file, the flags over it, and the token rule.
#include "trainingd/daemon/service/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace trainingd::daemon {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("TRAININGD_TOKEN");
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("config_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(ConfigTest, DefaultsBindLoopback) {
  ServeConfig c;
  ASSERT_TRUE(ParseServeArgs({}, c).ok());
  EXPECT_EQ(c.listen_address, "127.0.0.1");
  EXPECT_EQ(c.listen_port, 8080);
  EXPECT_EQ(c.data_dir, "var");
}

TEST_F(ConfigTest, ParseConfigTextIsTheFilesParse) {
  ServeConfig c;
  ASSERT_TRUE(ParseConfigText(R"({"listen": "[::1]:9000", "data_dir": "d"})", "mem.json", c).ok());
  EXPECT_EQ(c.listen_address, "::1");
  EXPECT_EQ(c.listen_port, 9000);
  EXPECT_EQ(c.data_dir, "d");
  const engine::Status st = ParseConfigText("[1]", "mem.json", c);
  EXPECT_EQ(st.code(), engine::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "mem.json: must be a JSON object");
}

TEST_F(ConfigTest, TheSlurmExecutorIsConfiguredAndChecked) {
  ServeConfig c;
  ASSERT_TRUE(ParseConfigText(R"({"executor": "slurm", "slurm": {"job_root": "/shared/jobs",
      "partition": "p", "account": "a", "sbatch_options": ["--qos=high"], "poll_secs": 0.5,
      "max_jobs": 8, "time_limit_minutes": 60, "cpus_per_task": 4}})",
                              "mem.json", c)
                  .ok());
  EXPECT_EQ(c.executor, "slurm");
  EXPECT_EQ(c.slurm.job_root, "/shared/jobs");
  EXPECT_EQ(c.slurm.partition, "p");
  EXPECT_EQ(c.slurm.account, "a");
  EXPECT_EQ(c.slurm.sbatch_options, std::vector<std::string>{"--qos=high"});
  EXPECT_EQ(c.slurm.poll_secs, 0.5);
  EXPECT_EQ(c.slurm.max_jobs, 8);
  EXPECT_EQ(c.slurm.time_limit_minutes, 60);
  EXPECT_EQ(c.slurm.cpus_per_task, 4);
  ASSERT_TRUE(ParseConfigText(R"({"mpi": {"hostfile": "/etc/trainingd/hosts",
      "mpirun_options": ["--mca", "btl_tcp_if_include", "eth0"]}})",
                              "mem.json", c)
                  .ok());
  EXPECT_EQ(c.mpi_hostfile, "/etc/trainingd/hosts");
  EXPECT_EQ(c.mpirun_options, (std::vector<std::string>{"--mca", "btl_tcp_if_include", "eth0"}));
  for (const auto& [text, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"executor": "k8s"})", "executor: must be"},
           {R"({"mpi": {"hostfile": "hosts"}})", "mpi.hostfile: must be an absolute path"},
           {R"({"mpi": {"mpirun_options": "-x"}})", "mpi.mpirun_options"},
           {R"({"executor": "slurm"})", "slurm.job_root: is required"},
           {R"({"slurm": {"job_root": "relative"}})", "slurm.job_root: must be an absolute"},
           {R"({"slurm": {"poll_secs": 0}})", "slurm.poll_secs: must be in"},
           {R"({"slurm": {"max_jobs": 0}})", "slurm.max_jobs"},
           {R"({"slurm": {"sbatch_options": ["qos"]}})", "slurm.sbatch_options[0]: must be"},
           {R"({"slurm": {"partitions": "p"}})", "slurm.partitions"}}) {
    ServeConfig d;
    const engine::Status st = ParseConfigText(text, "mem.json", d);
    EXPECT_EQ(st.code(), engine::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(st.message().find(field), std::string::npos) << text << " -> " << st.message();
  }
}

TEST_F(ConfigTest, ThreadCountsAreReadAndBounded) {
  ServeConfig c;
  ASSERT_TRUE(
      LoadConfigFile(Write("ok.json", R"({"http_threads": 3, "http_handler_threads": 4})"), c)
          .ok());
  EXPECT_EQ(c.http_threads, 3);
  EXPECT_EQ(c.http_handler_threads, 4);
  const engine::Status st = LoadConfigFile(Write("bad.json", R"({"http_handler_threads": 0})"), c);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("http_handler_threads"), std::string::npos) << st.message();
}

TEST_F(ConfigTest, TheModelServerIsConfiguredAndChecked) {
  ServeConfig c;
  ASSERT_TRUE(ParseConfigText(R"({"serving": {"memory_bytes": 2097152, "threads": 2,
                                  "max_batch": 16, "max_delay_ms": 3, "max_queue": 32}})",
                              "mem.json", c)
                  .ok());
  EXPECT_EQ(c.serving.memory_bytes, 2097152);
  EXPECT_EQ(c.serving.threads, 2);
  EXPECT_EQ(c.serving.compute_threads, 0);  // all cores
  EXPECT_EQ(c.serving.max_batch, 16);
  EXPECT_EQ(c.serving.max_delay_ms, 3);
  EXPECT_EQ(c.serving.max_queue, 32);
  for (const auto& [text, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"serving": {"max_batch": 0}})", "serving.max_batch"},
           {R"({"serving": {"max_batch": 64, "max_queue": 8}})", "serving.max_queue"},
           {R"({"serving": {"max_delay_ms": 5000}})", "serving.max_delay_ms"},
           {R"({"serving": {"memory_bytes": 10}})", "serving.memory_bytes"},
           {R"({"serving": {"batch": 1}})", "serving.batch"}}) {
    ServeConfig fresh;
    const engine::Status st = ParseConfigText(text, "mem.json", fresh);
    EXPECT_FALSE(st.ok()) << text;
    EXPECT_NE(st.message().find(field), std::string::npos) << text << " -> " << st.message();
  }
}

TEST_F(ConfigTest, FairShareQuotasAndPreemptionAreConfiguredAndChecked) {
  ServeConfig c;
  EXPECT_TRUE(c.scheduler.preemption);  // on by default
  EXPECT_EQ(c.scheduler.min_run_secs, 120);
  ASSERT_TRUE(ParseConfigText(R"({"fair_share": {"half_life_secs": 3600, "estimate_secs": 30,
                                                 "weights": {"alice": 3, "bob": 0.5}},
                                  "quotas": {"default": {"running_slots": 2, "queued_jobs": 9},
                                             "users": {"root": {"max_priority": -5}}},
                                  "preemption": {"enabled": false, "min_run_secs": 10}})",
                              "s.json", c)
                  .ok());
  EXPECT_EQ(c.scheduler.half_life_secs, 3600);
  EXPECT_EQ(c.scheduler.default_estimate_secs, 30);
  EXPECT_EQ(c.scheduler.weights.at("alice"), 3);
  EXPECT_EQ(c.scheduler.weights.at("bob"), 0.5);
  EXPECT_EQ(c.scheduler.default_quota.running_slots, 2);
  EXPECT_EQ(c.scheduler.default_quota.queued_jobs, 9);
  EXPECT_FALSE(c.scheduler.default_quota.max_priority.has_value());
  EXPECT_EQ(c.scheduler.quotas.at("root").max_priority, -5);
  EXPECT_FALSE(c.scheduler.quotas.at("root").running_slots.has_value());
  EXPECT_FALSE(c.scheduler.preemption);
  EXPECT_EQ(c.scheduler.min_run_secs, 10);
  // A quota of zero or less, and every other bad value, refused naming the key.
  for (const auto& [text, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"quotas": {"default": {"running_slots": 0}}})", "quotas.default.running_slots"},
           {R"({"quotas": {"users": {"bob": {"queued_jobs": -1}}}})",
            "quotas.users.bob.queued_jobs"},
           {R"({"quotas": {"default": {"max_priority": 5000}}})", "quotas.default.max_priority"},
           {R"({"quotas": {"default": {"slots": 1}}})", "quotas.default.slots"},
           {R"({"quotas": {"alice": {}}})", "quotas.alice"},
           {R"({"fair_share": {"weights": {"alice": 0}}})", "fair_share.weights.alice"},
           {R"({"fair_share": {"half_life_secs": 0}})", "fair_share.half_life_secs"},
           {R"({"preemption": {"min_run_secs": -1}})", "preemption.min_run_secs"},
           {R"({"preemption": {"enabled": 1}})", "preemption.enabled"}}) {
    ServeConfig fresh;
    const engine::Status st = ParseConfigText(text, "s.json", fresh);
    EXPECT_FALSE(st.ok()) << text;
    EXPECT_NE(st.message().find(field), std::string::npos) << text << " -> " << st.message();
  }
}

TEST_F(ConfigTest, FileThenFlagsWin) {
  const std::string f = Write("c.json", R"({"listen": "127.0.0.1:9000", "data_dir": "/srv/t",
                                          "max_concurrent_jobs": 2, "data_root": "/data"})");
  ServeConfig c;
  ASSERT_TRUE(ParseServeArgs({"--listen", "127.0.0.2:0", "--config", f}, c).ok());
  EXPECT_EQ(c.listen_address, "127.0.0.2");
  EXPECT_EQ(c.listen_port, 0);
  EXPECT_EQ(c.data_dir, "/srv/t");
  EXPECT_EQ(c.data_root, "/data");
  EXPECT_EQ(c.max_concurrent_jobs, 2);
}

TEST_F(ConfigTest, BadFilesAndFlagsNameTheProblem) {
  ServeConfig c;
  auto st = LoadConfigFile(Write("a.json", R"({"listn": "x"})"), c);
  EXPECT_NE(st.message().find("listn: unknown key"), std::string::npos) << st.message();
  st = LoadConfigFile(Write("b.json", R"({"max_concurrent_jobs": "two"})"), c);
  EXPECT_NE(st.message().find("max_concurrent_jobs: must be an integer"), std::string::npos);
  st = LoadConfigFile(Write("c.json", "{not json"), c);
  EXPECT_NE(st.message().find("invalid JSON"), std::string::npos);
  EXPECT_EQ(LoadConfigFile((dir_ / "missing.json").string(), c).code(),
            engine::StatusCode::kNotFound);
  EXPECT_NE(ParseServeArgs({"--listen", "localhost"}, c).message().find("ADDRESS:PORT"),
            std::string::npos);
  EXPECT_NE(ParseServeArgs({"--listen", "127.0.0.1:99999"}, c).message().find("port"),
            std::string::npos);
  EXPECT_NE(ParseServeArgs({"--bogus", "1"}, c).message().find("--bogus: unknown flag"),
            std::string::npos);
}

TEST_F(ConfigTest, NonLoopbackNeedsAToken) {
  ServeConfig c;
  auto st = ParseServeArgs({"--listen", "0.0.0.0:8080"}, c);
  EXPECT_EQ(st.code(), engine::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("without an API token"), std::string::npos);

  ServeConfig with_file;
  const std::string token = Write("token", "0123456789abcdef0123\n");
  const std::string f = Write("c.json", R"({"token_file": ")" + token + R"("})");
  ASSERT_TRUE(ParseServeArgs({"--config", f, "--listen", "0.0.0.0:8080"}, with_file).ok());
  EXPECT_EQ(with_file.token, "0123456789abcdef0123");

  ServeConfig short_token;
  const std::string f2 = Write("c2.json", R"({"token_file": ")" + Write("t2", "short") + R"("})");
  EXPECT_FALSE(ParseServeArgs({"--config", f2}, short_token).ok());

  setenv("TRAININGD_TOKEN", "from-the-environment-123", 1);
  ServeConfig env;
  ASSERT_TRUE(ParseServeArgs({"--listen", "[::]:8080"}, env).ok());
  EXPECT_EQ(env.token, "from-the-environment-123");
  EXPECT_EQ(env.listen_address, "::");
  unsetenv("TRAININGD_TOKEN");
}

TEST_F(ConfigTest, LoopbackAddresses) {
  EXPECT_TRUE(IsLoopback("127.0.0.1"));
  EXPECT_TRUE(IsLoopback("127.1.2.3"));
  EXPECT_TRUE(IsLoopback("::1"));
  EXPECT_TRUE(IsLoopback("localhost"));
  EXPECT_FALSE(IsLoopback("0.0.0.0"));
  EXPECT_FALSE(IsLoopback("::"));
  EXPECT_FALSE(IsLoopback("10.0.0.1"));
}

TEST_F(ConfigTest, AllowedHostsOriginsAndConnectionCap) {
  ServeConfig c;
  EXPECT_EQ(c.max_connections, 1024);
  EXPECT_TRUE(c.allowed_hosts.empty());
  const std::string f = Write("ok.json", R"({"allowed_hosts": ["trainer.lan", "[fe80::1]:8443"],
      "allowed_origins": ["https://dash.example"], "max_connections": 300})");
  ASSERT_TRUE(ParseServeArgs({"--config", f, "--max-connections", "200"}, c).ok());
  EXPECT_EQ(c.allowed_hosts, (std::vector<std::string>{"trainer.lan", "[fe80::1]:8443"}));
  EXPECT_EQ(c.allowed_origins, (std::vector<std::string>{"https://dash.example"}));
  EXPECT_EQ(c.max_connections, 200);  // the flag wins

  struct Bad {
    const char* json;
    const char* names;
  };
  for (const Bad& bad : {
           Bad{R"({"allowed_hosts": "trainer.lan"})", "allowed_hosts: must be an array"},
           Bad{R"({"allowed_hosts": ["ok", 5]})", "allowed_hosts[1]: must be a string"},
           Bad{R"({"allowed_hosts": ["trainer.lan/x"]})", "allowed_hosts[0]: must be a host"},
           Bad{R"({"allowed_hosts": ["*"]})", "allowed_hosts[0]"},
           Bad{R"({"allowed_origins": ["https://dash.example/"]})",
               "allowed_origins[0]: must be an origin"},
           Bad{R"({"allowed_origins": ["null"]})", "allowed_origins[0]"},
           Bad{R"({"allowed_origins": ["dash.example"]})", "allowed_origins[0]"},
           Bad{R"({"max_connections": 0})", "max_connections"},
           Bad{R"({"max_connections": "many"})", "max_connections"},
       }) {
    ServeConfig b;
    const engine::Status st = LoadConfigFile(Write("bad.json", bad.json), b);
    EXPECT_FALSE(st.ok()) << bad.json;
    EXPECT_NE(st.message().find(bad.names), std::string::npos) << st.message();
  }
  ServeConfig flag;
  EXPECT_FALSE(ParseServeArgs({"--max-connections", "0"}, flag).ok());
  EXPECT_FALSE(ParseServeArgs({"--max-connections", "x"}, flag).ok());
}

}  // namespace
}  // namespace trainingd::daemon
