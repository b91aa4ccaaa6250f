#include "trainingd/daemon/commands/serve_command.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <thread>

#include "commands/client/client.h"
#include "trainingd/api/http_server.h"
#include "trainingd/api/router.h"
#include "trainingd/daemon/datasets/dataset_store.h"
#include "trainingd/daemon/executors/local_executor.h"
#include "trainingd/daemon/executors/mpi_executor.h"
#include "trainingd/daemon/executors/slurm_executor.h"
#include "trainingd/daemon/experiments/experiment_manager.h"
#include "trainingd/daemon/jobs/event_bus.h"
#include "trainingd/daemon/jobs/job_manager.h"
#include "trainingd/daemon/service/config.h"
#include "trainingd/daemon/service/data_dir_format.h"
#include "trainingd/daemon/service/data_dir_lock.h"
#include "trainingd/daemon/service/descriptor_limit.h"
#include "trainingd/daemon/service/systemd_notify.h"
#include "trainingd/daemon/serving/model_server.h"
#include "trainingd/daemon/store/store.h"
#include "trainingd/daemon/store/store_file.h"
#include "trainingd/daemon/users/audit_log.h"
#include "trainingd/daemon/users/user_directory.h"

namespace trainingd::daemon {
namespace fs = std::filesystem;
namespace {

void Say(const std::string& line) {
  std::string l = "trainingd: " + line + "\n";
  std::fwrite(l.data(), 1, l.size(), stderr);
}

// The dashboard: the configured directory, else <exe dir>/../share/trainingd/web: the installed
// one (<prefix>/share/trainingd/web), or in a build tree build/share/trainingd/web, which the
// build assembles from web/ and uPlot (the source tree's web/ alone lacks uPlot).
std::string FindWebDir(const std::string& configured) {
  if (!configured.empty()) return configured;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share/trainingd/web";
    if (fs::is_directory(installed, ec)) return installed.string();
  }
  return "";
}

// Which Host names requests may carry (api/browser_policy.h), for the start-up log.
std::string AllowedHostsLine(const ServeConfig& config, uint16_t port) {
  std::string names = "localhost, 127.0.0.1, [::1]";
  const bool wildcard = config.listen_address == "0.0.0.0" || config.listen_address == "::";
  if (!wildcard && config.listen_address != "localhost" && config.listen_address != "127.0.0.1" &&
      config.listen_address != "::1") {
    names += config.listen_address.find(':') != std::string::npos
                 ? ", [" + config.listen_address + "]"
                 : ", " + config.listen_address;
  }
  for (const std::string& host : config.allowed_hosts) names += ", " + host;
  std::string line = "requests must name this server in Host: " + names + " (port " +
                     std::to_string(port) + " unless given)";
  if (!config.allowed_origins.empty()) {
    line += "; cross-origin POST/DELETE allowed from";
    for (const std::string& origin : config.allowed_origins) line += " " + origin;
  }
  if (wildcard) {
    line += "; listening on " + config.listen_address +
            ": this machine's other names and addresses must be listed in allowed_hosts";
  }
  return line;
}

}  // namespace

int ServeCommand(const std::vector<std::string>& args) {
  ServeConfig config;
  bool help = false;
  if (ServeFlags(config).Parse(args, &help).ok() && help) {
    std::fputs(ServeFlags(config).Usage().c_str(), stdout);
    return 0;
  }
  // Jobs come and go with buffers of many MiB (datasets, activations, checkpoint copies). glibc
  // maps such a buffer on its own only above a threshold it raises after every free, up to
  // 32 MiB; from then on a job's 31 MiB training split lands in a malloc arena that keeps the
  // space once it is freed, and in a soak (bench/soak.py) the daemon's RSS grew by one dataset
  // every few minutes. A fixed threshold keeps every buffer of 4 MiB or more in its own mapping,
  // given back to the kernel when freed. Buffers that large are made when a job starts, not
  // per step.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  if (engine::Status st = ParseServeArgs(args, config); !st.ok()) {
    std::fprintf(stderr, "trainingd serve: %s\n%s", st.message().c_str(),
                 ServeFlags(config).Usage().c_str());
    return 2;
  }
  // Connections must leave descriptors for the daemon's own files (descriptor_limit.h).
  auto descriptor_limit = RaiseDescriptorLimit();
  if (!descriptor_limit.ok()) {
    Say(descriptor_limit.status().message());
    return 1;
  }
  const size_t reserve = DescriptorReserve(config.max_concurrent_jobs, config.http_handler_threads);
  const size_t max_connections =
      FitConnectionCap(static_cast<size_t>(config.max_connections), *descriptor_limit, reserve);
  if (max_connections == 0) {
    Say("the file descriptor limit (" + std::to_string(*descriptor_limit) +
        ") leaves no room for HTTP connections after the " + std::to_string(reserve) +
        " the daemon keeps for its own files; raise it (ulimit -n, LimitNOFILE=)");
    return 1;
  }
  if (max_connections < static_cast<size_t>(config.max_connections)) {
    Say("warning: max_connections lowered from " + std::to_string(config.max_connections) + " to " +
        std::to_string(max_connections) + " to fit the file descriptor limit (" +
        std::to_string(*descriptor_limit) + ", of which " + std::to_string(reserve) +
        " are kept for the daemon's own files); raise the limit (ulimit -n, LimitNOFILE=) to "
        "allow more");
  }
  // Signals are taken by this thread alone (sigtimedwait below): block them before any thread
  // starts, so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::error_code ec;
  fs::create_directories(config.data_dir, ec);
  if (ec) {
    Say("cannot create the data directory " + config.data_dir + ": " + ec.message());
    return 1;
  }
  auto lock_fd = LockDataDir(config.data_dir);  // held until the process exits
  if (!lock_fd.ok()) {
    Say(lock_fd.status().message());
    return 1;
  }
  // A data directory or database written by a newer trainingd is refused before anything in it
  // is touched, with an exit code of its own (docs/operations.md#upgrading).
  const std::string db_path = config.data_dir + "/trainingd.db";
  auto format = ReadDataDirFormat(config.data_dir);
  if (!format.ok()) {
    Say(format.status().message());
    return format.status().message().find("newer than this trainingd") != std::string::npos
               ? client::kExitNewerData
               : 1;
  }
  int64_t stored_version = 0;
  if (fs::exists(db_path, ec)) {
    auto v = ReadStoreSchemaVersion(db_path);
    if (v.ok()) stored_version = *v;  // else Store::Open says what is wrong with the file
    if (v.ok() && *v > StoreSchemaVersionOfThisBuild()) {
      Say(db_path + ": database schema version " + std::to_string(*v) +
          " is newer than this trainingd supports (" +
          std::to_string(StoreSchemaVersionOfThisBuild()) +
          "); nothing was changed: use a newer trainingd, or restore a backup "
          "(docs/operations.md#upgrading)");
      return client::kExitNewerData;
    }
  }
  // On a full or failing disk the store retries its writes until they commit; at exit the
  // manager's shutdown has already waited for them, so the store gives them up soon after.
  StoreOptions store_options;
  store_options.give_up_after_stop = std::chrono::seconds(1);
  if (stored_version > 0 && stored_version < StoreSchemaVersionOfThisBuild()) {
    Say("migrating the database from schema version " + std::to_string(stored_version) + " to " +
        std::to_string(StoreSchemaVersionOfThisBuild()) + ", after a backup beside it");
  }
  auto store = Store::Open(db_path, store_options);
  if (!store.ok()) {
    Say(store.status().message());
    return store.status().message().find("newer than this trainingd") != std::string::npos
               ? client::kExitNewerData
               : 1;
  }
  if (stored_version > 0 && stored_version < StoreSchemaVersionOfThisBuild()) {
    const std::vector<std::string> backups = ListMigrationBackups(db_path);
    Say("migrated the database to schema version " +
        std::to_string(StoreSchemaVersionOfThisBuild()) + "; the database before is in " +
        (backups.empty() ? std::string("(no backup found)") : backups.back()));
  }
  // A directory already in this build's format may go without the new marker (a full disk must
  // not keep the daemon from starting); one in an older format must get it before this build
  // writes files in its own.
  if (engine::Status st = WriteDataDirFormat(config.data_dir, StoreSchemaVersionOfThisBuild());
      !st.ok()) {
    if (*format != kDataDirFormat) {
      Say(st.message());
      return 1;
    }
    Say("warning: " + st.message() + " (the directory is in this build's format already)");
  }
  EventBus bus;
  // Jobs never oversubscribe the cores: each of the concurrent runs gets its share.
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const int threads_per_job = config.threads_per_job > 0
                                  ? config.threads_per_job
                                  : std::max(1, cores / config.max_concurrent_jobs);
  JobManagerOptions jm;
  jm.data_dir = config.data_dir;
  jm.data_root = config.data_root;
  jm.threads_per_job = threads_per_job;
  jm.limits = config.limits;
  jm.scheduler = config.scheduler;
  // Testing only: "NAME" or "NAME@STEP" makes that job abort the process (crash containment's
  // test, docs/operations.md#crash-containment).
  if (const char* abort = std::getenv("TRAININGD_TEST_ABORT_JOB"); abort && *abort) {
    const std::string spec = abort;
    const size_t at = spec.rfind('@');
    jm.abort_job_name = spec.substr(0, at);
    if (at != std::string::npos) jm.abort_at_step = std::atoll(spec.c_str() + at + 1);
    Say("TRAININGD_TEST_ABORT_JOB is set: job '" + jm.abort_job_name +
        "' will abort the process (a test)");
  }
  // Uploaded datasets: on the shared job root under Slurm, so that the nodes read them there.
  std::string datasets_dir = config.datasets_dir;
  if (datasets_dir.empty()) {
    datasets_dir = config.executor == "slurm" ? config.slurm.job_root + "/datasets"
                                              : config.data_dir + "/datasets";
  }
  DatasetStoreOptions dso;
  dso.dir = datasets_dir;
  dso.data_root = config.data_root;
  dso.max_upload_bytes = config.max_dataset_bytes;
  JobManager* jobs_for_datasets = nullptr;  // set once the manager exists; read under requests
  dso.jobs_using = [&jobs_for_datasets](const std::string& name) {
    return jobs_for_datasets ? jobs_for_datasets->JobsUsingDataset(name)
                             : std::vector<std::string>();
  };
  auto datasets = DatasetStore::Open(std::move(dso));
  if (!datasets.ok()) {
    Say("datasets: " + datasets.status().message());
    return 1;
  }
  jm.datasets_dir = datasets_dir;
  jm.resolve_dataset = [store = datasets->get()](engine::DatasetSpec* d) {
    return store->ResolveJobDataset(d);
  };
  std::unique_ptr<Executor> executor;
  if (config.executor == "slurm") {
    // Every job is a Slurm batch job (docs/slurm.md), its directory under job_root.
    SlurmOptions so = config.slurm;
    if (so.data_root.empty()) so.data_root = config.data_root;
    so.datasets_dir = datasets_dir;
    if (engine::Status st = SlurmExecutor::Check(so); !st.ok()) {
      Say("slurm: " + st.message());
      return 1;
    }
    jm.jobs_dir = so.job_root;
    jm.threads_per_job = so.cpus_per_task;
    executor = std::make_unique<SlurmExecutor>(std::move(so));
  } else {
    LocalExecutorOptions lo;
    lo.slots = config.max_concurrent_jobs;
    lo.threads_per_job = threads_per_job;
    lo.data_root = config.data_root;
    lo.datasets_dir = datasets_dir;
    // Data-parallel jobs run as mpirun with ranks of trainingd-mpi (docs/distributed.md); the
    // others on threads of this process.
    MpiExecutorOptions mo;
    mo.slots = config.max_concurrent_jobs;
    mo.data_root = config.data_root;
    mo.datasets_dir = datasets_dir;
    mo.hostfile = config.mpi_hostfile;
    mo.mpirun_options = config.mpirun_options;
    executor = std::make_unique<RoutingExecutor>(std::make_unique<LocalExecutor>(std::move(lo)),
                                                 std::make_unique<MpiExecutor>(mo));
  }
  auto manager = JobManager::Create(**store, bus, std::move(executor), jm);
  if (!manager.ok()) {
    Say(manager.status().message());
    return 1;
  }
  jobs_for_datasets = manager->get();
  // Models out (docs/models.md): beside the job manager, which only tells it where a job's
  // checkpoints are.
  ModelServerOptions mso;
  mso.checkpoint_dir = [jobs = manager->get()](const std::string& id) {
    return jobs->CheckpointDir(id);
  };
  mso.memory_budget_bytes = config.serving.memory_bytes;
  mso.threads = config.serving.threads;
  mso.compute_threads = config.serving.compute_threads > 0
                            ? config.serving.compute_threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  mso.max_batch = config.serving.max_batch;
  mso.max_delay = std::chrono::milliseconds(config.serving.max_delay_ms);
  mso.max_queue_examples = config.serving.max_queue;
  auto models = ModelServer::Create(std::move(mso));
  if (!models.ok()) {
    Say("serving: " + models.status().message());
    (*manager)->Shutdown();
    return 1;
  }
  // Hyperparameter search (docs/experiments.md): beside the job manager, whose jobs its trials
  // are. It goes on with the experiments a previous run left running.
  auto experiments = ExperimentManager::Create(**store, bus, **manager, {});
  if (!experiments.ok()) {
    Say("experiments: " + experiments.status().message());
    (*manager)->Shutdown();
    return 1;
  }
  // Users, roles and tokens, and the audit (docs/operations.md#team-use): beside the job
  // manager, which only tells the directory which jobs a user owns.
  UserDirectoryOptions udo;
  udo.active_jobs_of = [jobs = manager->get()](const std::string& user) {
    return jobs->ActiveJobsOf(user);
  };
  auto users = UserDirectory::Open(**store, std::move(udo));
  if (!users.ok()) {
    Say("users: " + users.status().message());
    (*experiments)->Shutdown();
    (*manager)->Shutdown();
    return 1;
  }
  AuditLog audit(**store, config.audit_keep);
  api::RouterOptions ro;
  ro.api_token = config.token;
  ro.web_root = FindWebDir(config.web_dir);
  ro.listen_address = config.listen_address;
  ro.allowed_hosts = config.allowed_hosts;
  ro.allowed_origins = config.allowed_origins;
  ro.log = [](std::string_view line) {  // the lines name their source ("trainingd http: ")
    std::string l = std::string(line) + "\n";
    std::fwrite(l.data(), 1, l.size(), stderr);
  };
  api::Router router(**manager, ro, datasets->get(), models->get(), experiments->get());
  router.SetUsers(users->get(), &audit);
  if (engine::Status st = router.CheckOptions(); !st.ok()) {
    Say(st.message());
    return 2;
  }
  api::HttpServerOptions so;
  so.address = config.listen_address == "localhost" ? "127.0.0.1" : config.listen_address;
  so.port = static_cast<uint16_t>(config.listen_port);
  so.io_threads = config.http_threads;
  so.handler_threads = config.http_handler_threads;
  so.max_connections = max_connections;
  so.log = ro.log;
  api::HttpServer server(router, so);
  if (engine::Status st = server.Start(); !st.ok()) {
    Say(st.message());
    (*experiments)->Shutdown();
    (*manager)->Shutdown();
    return 1;
  }
  const std::string host =
      so.address.find(':') != std::string::npos ? "[" + so.address + "]" : so.address;
  // Tests and scripts read the port from this line.
  std::printf("trainingd: listening on http://%s:%u/\n", host.c_str(), server.port());
  std::fflush(stdout);
  Say("data in " + config.data_dir + ", datasets from " + config.data_root + " and uploads in " +
      datasets_dir + ", " + std::to_string(config.max_concurrent_jobs) +
      " concurrent job(s) with " + std::to_string(threads_per_job) + " compute thread(s) each" +
      (ro.web_root.empty() ? ", no dashboard files found" : ", dashboard from " + ro.web_root) +
      (config.token.empty() ? "" : ", API token required") + ", at most " +
      std::to_string(max_connections) + " connections (descriptor limit " +
      std::to_string(*descriptor_limit) + ")");
  Say(AllowedHostsLine(config, server.port()));
  if (config.executor == "slurm") {
    Say("jobs run as Slurm batch jobs (at most " + std::to_string(config.slurm.max_jobs) +
        " at once), their directories under " + config.slurm.job_root +
        (config.slurm.partition.empty() ? "" : ", partition " + config.slurm.partition));
  }
  {
    const engine::JobBudget budget = (*manager)->Budget();
    Say("per-job budgets: memory " +
        (budget.memory_bytes > 0 ? engine::FormatBytes(budget.memory_bytes) : "unlimited") +
        ", disk " +
        (budget.disk_bytes > 0 ? engine::FormatBytes(budget.disk_bytes) + " now" : "unlimited") +
        "; at most " + std::to_string(config.limits.max_checkpoints_per_job) + " checkpoints, " +
        std::to_string(config.limits.max_profiler_traces_per_job) + " profiler traces and " +
        engine::FormatBytes(2 * config.limits.max_log_bytes_per_job) + " of log per job");
  }
  SdNotify("READY=1\nSTATUS=serving on " + host + ":" + std::to_string(server.port()));

  const auto watchdog = WatchdogPingInterval();
  const double tick = watchdog ? *watchdog : 5.0;
  int sig = 0;
  while (sig <= 0) {
    timespec ts{static_cast<time_t>(tick),
                static_cast<long>((tick - static_cast<long>(tick)) * 1e9)};
    sig = sigtimedwait(&signals, nullptr, &ts);
    if (sig < 0 && watchdog) SdNotify("WATCHDOG=1");
  }
  Say(std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
      ": stopping running jobs after their current step (final checkpoints)");
  SdNotify("STOPPING=1\nSTATUS=stopping jobs");
  // Keep the watchdog fed while jobs finish their step, evaluation and checkpoint.
  std::atomic<bool> done{false};
  std::thread pinger;
  if (watchdog) {
    pinger = std::thread([&] {
      while (!done) {
        SdNotify("WATCHDOG=1");
        std::this_thread::sleep_for(std::chrono::duration<double>(*watchdog));
      }
    });
  }
  (*models)->Shutdown();  // its last answers go out while the server still runs
  server.Stop();
  (*experiments)->Shutdown();  // decides nothing more while the jobs stop
  (*manager)->Shutdown();
  // Bounded: writes the disk cannot take (full, failing) would otherwise keep the daemon from
  // ever exiting. What is not committed by then is lost, and the exit status says so.
  int code = 0;
  if (engine::Status st = (*store)->Flush(std::chrono::seconds(2)); !st.ok()) {
    Say("database: " + st.message());
    if (st.code() == engine::StatusCode::kDeadlineExceeded) {
      Say("database: " + std::to_string((*store)->stats().queued_writes) +
          " writes are not committed and are lost (state changes and scalars since the disk "
          "failed; docs/operations.md#full-disk-and-storage-faults)");
      code = 1;
    }
  }
  done = true;
  if (pinger.joinable()) pinger.join();
  Say(code == 0 ? "stopped" : "stopped, with writes lost");
  return code;
}

}  // namespace trainingd::daemon
