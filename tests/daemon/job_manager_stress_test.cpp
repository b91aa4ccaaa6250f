// JobManager under storms: 16 threads send stop, resume, delete and get to the same running job
// while a second job waits its turn. Every answer must be a documented one, every state a client
// or the event stream sees must be legal and reached by a legal transition, the job must end as
// the database says across a restart, its series stay monotonic, and nothing may be lost or
// duplicated. Run under ThreadSanitizer too (make test-tsan).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "job_manager_fixture.h"

namespace trainingd::daemon {
namespace {
namespace fs = std::filesystem;
using api::JobState;
using Clock = std::chrono::steady_clock;
using engine::StatusCode;
using json = nlohmann::json;

constexpr int kThreads = 16;

// The state machine of job_manager.h: queued -> running -> completed | failed | stopped, stopping
// in between; a queued job stops at once; resume queues an ended job again; a daemon shutting
// down leaves a running job queued. No job is ever preempted here (every job has one priority),
// so no transition to or from preempted is legal.
bool LegalTransition(JobState from, JobState to) {
  switch (from) {
    case JobState::kQueued:
      return to == JobState::kRunning || to == JobState::kStopped;
    case JobState::kRunning:
      return to == JobState::kStopping || to == JobState::kCompleted || to == JobState::kFailed ||
             to == JobState::kStopped || to == JobState::kQueued;
    case JobState::kStopping:
      return to == JobState::kStopped || to == JobState::kCompleted || to == JobState::kFailed;
    case JobState::kCompleted:
    case JobState::kFailed:
    case JobState::kStopped:
      return to == JobState::kQueued;
    case JobState::kPreempted:
      return false;
  }
  return false;
}

enum class Op { kStop, kResume, kDelete, kGet };

const char* OpName(Op op) {
  switch (op) {
    case Op::kStop:
      return "stop";
    case Op::kResume:
      return "resume";
    case Op::kDelete:
      return "delete";
    case Op::kGet:
      return "get";
  }
  return "?";
}

// One call as a client saw it.
struct Call {
  Op op;
  Clock::time_point start, end;
  StatusCode code;
  std::optional<JobState> state;  // of the job returned, for stop, resume and get
};

// What the bus delivered for one job: its state and scalar events, and its entries in the job
// list ("deleted" included), in delivery order.
class EventLog {
 public:
  EventLog(EventBus& bus, const std::string& id) : id_(id) {
    job_ = bus.Subscribe(id, 0, [this](const api::ServiceEvent& e) { Add(e, &events_); });
    list_ = bus.Subscribe("", 0, [this](const api::ServiceEvent& e) {
      if (api::EventToJson(e).value("id", "") == id_) Add(e, &list_events_);
    });
  }
  // The job's states, in order (its "state" events).
  std::vector<JobState> States() const {
    std::vector<JobState> out;
    for (const auto& e : Events(events_)) {
      if (std::string(api::EventKindName(e.kind)) == "state") {
        out.push_back(*api::ParseJobState(api::EventToJson(e)["state"].get<std::string>()));
      }
    }
    return out;
  }
  std::vector<api::ServiceEvent> JobEvents() const { return Events(events_); }
  std::vector<std::string> ListStates() const {
    std::vector<std::string> out;
    for (const auto& e : Events(list_events_)) out.push_back(api::EventToJson(e)["state"]);
    return out;
  }
  int Count(JobState s) const {
    const auto states = States();
    return static_cast<int>(std::count(states.begin(), states.end(), s));
  }

 private:
  void Add(const api::ServiceEvent& e, std::vector<api::ServiceEvent>* to) {
    std::lock_guard<std::mutex> lock(mu_);
    to->push_back(e);
  }
  std::vector<api::ServiceEvent> Events(const std::vector<api::ServiceEvent>& v) const {
    std::lock_guard<std::mutex> lock(mu_);
    return v;
  }

  const std::string id_;
  mutable std::mutex mu_;
  std::vector<api::ServiceEvent> events_, list_events_;
  std::unique_ptr<api::Subscription> job_, list_;
};

class JobManagerStressTest : public JobManagerTest {
 protected:
  // kThreads threads call stop, resume, get and (with `deletes`) delete on `id` at random, a
  // thread's calls up to 2 ms apart, until `done()` holds or the job is gone, at most `limit`.
  // Returns each thread's calls in its order.
  std::vector<std::vector<Call>> Storm(const std::string& id, bool deletes,
                                       const std::function<bool()>& done,
                                       std::chrono::seconds limit) {
    std::vector<std::vector<Call>> calls(kThreads);
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(1000 + t);  // a fixed seed per thread
        std::uniform_int_distribution<int> pick(0, 99), pause_us(0, 2000);
        while (!stop) {
          const int p = pick(rng);
          const Op op = p < 30              ? Op::kStop
                        : p < 60            ? Op::kResume
                        : deletes && p < 70 ? Op::kDelete
                                            : Op::kGet;
          Call c{op, Clock::now(), {}, StatusCode::kOk, std::nullopt};
          if (op == Op::kDelete) {
            c.code = manager_->Delete(id).code();
          } else {
            auto info = op == Op::kStop     ? manager_->Stop(id)
                        : op == Op::kResume ? manager_->Resume(id, std::nullopt)
                                            : manager_->Get(id);
            c.code = info.status().code();
            if (info.ok()) c.state = info->state;
          }
          c.end = Clock::now();
          calls[t].push_back(c);
          if (op == Op::kDelete && c.code == StatusCode::kOk) stop = true;
          std::this_thread::sleep_for(std::chrono::microseconds(pause_us(rng)));
        }
      });
    }
    const auto deadline = Clock::now() + limit;
    while (!stop && !done() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    stop = true;
    for (auto& t : threads) t.join();
    return calls;
  }
};

// Every call got a documented answer, with a state its operation may return.
void ExpectDocumentedAnswers(const std::vector<std::vector<Call>>& calls) {
  for (const auto& thread : calls) {
    for (const Call& c : thread) {
      SCOPED_TRACE(std::string(OpName(c.op)) + " -> " + engine::StatusCodeName(c.code));
      if (c.code != StatusCode::kOk) {
        EXPECT_TRUE(c.code == StatusCode::kNotFound ||
                    (c.code == StatusCode::kFailedPrecondition && c.op != Op::kGet));
        continue;
      }
      if (c.op == Op::kStop) {
        EXPECT_TRUE(c.state == JobState::kStopping || c.state == JobState::kStopped);
      }
      if (c.op == Op::kResume) {
        EXPECT_EQ(c.state, JobState::kQueued);
      }
    }
  }
}

// The event stream's states follow the state machine, and each thread saw them in that order:
// its calls' states, in its order, are a subsequence of the stream (a call returns the state
// between two state events, under the same lock that publishes them).
void ExpectLegalHistory(const std::vector<JobState>& history,
                        const std::vector<std::vector<Call>>& calls) {
  ASSERT_FALSE(history.empty());
  for (size_t i = 1; i < history.size(); ++i) {
    EXPECT_TRUE(LegalTransition(history[i - 1], history[i]))
        << "event " << i << ": " << api::JobStateName(history[i - 1]) << " -> "
        << api::JobStateName(history[i]);
  }
  for (size_t t = 0; t < calls.size(); ++t) {
    size_t at = 0;
    for (const Call& c : calls[t]) {
      if (!c.state) continue;
      while (at < history.size() && history[at] != *c.state) ++at;
      ASSERT_LT(at, history.size()) << "thread " << t << " saw " << api::JobStateName(*c.state)
                                    << " out of the stream's order";
    }
  }
}

// A series stays monotonic across stops and resumes: strictly increasing steps, and no point
// left from a run that was redone (its wall time would be older than the point before it).
void ExpectMonotonicSeries(const std::vector<api::ScalarPoint>& points, int64_t global_step) {
  ASSERT_FALSE(points.empty());
  for (size_t i = 1; i < points.size(); ++i) {
    EXPECT_LT(points[i - 1].step, points[i].step);
    EXPECT_LE(points[i - 1].wall_time, points[i].wall_time) << "at step " << points[i].step;
  }
  EXPECT_LE(points.back().step, global_step);
}

// Within each run (between two "running" events), a tag's steps only grow.
void ExpectMonotonicScalarEvents(const std::vector<api::ServiceEvent>& events) {
  std::map<std::string, int64_t> last;
  for (const auto& e : events) {
    const json d = api::EventToJson(e);
    if (std::string(api::EventKindName(e.kind)) == "state" && d["state"] == "running") last.clear();
    if (std::string(api::EventKindName(e.kind)) != "scalar") continue;
    const std::string tag = d["tag"];
    const int64_t step = d["step"];
    if (last.count(tag)) {
      EXPECT_GT(step, last[tag]) << tag << " in event " << e.id;
    }
    last[tag] = step;
  }
}

std::set<std::string> JobIds(JobManager& m) {
  std::set<std::string> ids;
  const auto page = m.List(std::nullopt, 1000, "");
  EXPECT_TRUE(page.ok());
  for (const auto& j : page->jobs) EXPECT_TRUE(ids.insert(j.id).second) << "twice: " << j.id;
  return ids;
}

TEST_F(JobManagerStressTest, StormsOfStopResumeAndDeleteOnARunningJobKeepItsStatesLegal) {
  auto target = Submit(SmallJob("target", 1000000));
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  const std::string id = target->id;
  EventLog log(bus_, id);
  WaitFor(id, {JobState::kRunning});
  EXPECT_EQ(log.States().front(), JobState::kQueued);
  // Queued behind the target: it runs whenever the target does not, and must come out whole.
  auto bystander = Submit(SmallJob("bystander", 200));
  ASSERT_TRUE(bystander.ok());

  // Stop, resume and get only, until the target was stopped while running several times.
  auto calls = Storm(
      id, /*deletes=*/false, [&] { return log.Count(JobState::kStopping) >= 5; },
      std::chrono::seconds(30));
  EXPECT_GE(log.Count(JobState::kStopping), 3) << "too few stops of the running job";
  ExpectDocumentedAnswers(calls);
  ExpectLegalHistory(log.States(), calls);
  ExpectMonotonicScalarEvents(log.JobEvents());
  const api::JobInfo done = WaitFor(bystander->id, {JobState::kCompleted, JobState::kFailed});
  EXPECT_EQ(done.state, JobState::kCompleted) << done.error;
  EXPECT_EQ(done.global_step, 200);
  EXPECT_EQ(log.Count(JobState::kFailed), 0) << manager_->Get(id)->error;

  // A stop, and the daemon shuts down while the job is still stopping: the stop holds.
  if (WaitFor(id, {JobState::kRunning, JobState::kStopped}).state == JobState::kStopped) {
    ASSERT_TRUE(manager_->Resume(id, std::nullopt).ok());
    WaitFor(id, {JobState::kRunning});
  }
  WaitForStep(id, manager_->Get(id)->global_step + 1);
  ASSERT_TRUE(manager_->Stop(id).ok());
  manager_->Shutdown();
  const api::JobInfo before = *manager_->Get(id);
  EXPECT_EQ(before.state, JobState::kStopped) << before.reason;
  ExpectLegalHistory(log.States(), {});
  ASSERT_TRUE(store_->Flush().ok());
  const auto row = store_->GetJob(id).value();
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->state, before.state);
  EXPECT_EQ(row->global_step, before.global_step);
  EXPECT_EQ(manager_->Checkpoints(id)->back().global_step, before.global_step);
  ExpectMonotonicSeries(*manager_->Scalars(id, {.tag = "loss", .max_points = 100000}),
                        before.global_step);
  EXPECT_EQ(manager_->Scalars(bystander->id, {.tag = "loss"})->size(), 20u);

  // Restarted, the daemon shows the same: nothing runs, nothing is lost or doubled.
  manager_.reset();
  store_.reset();
  OpenAll();
  const api::JobInfo after = *manager_->Get(id);
  EXPECT_EQ(after.state, before.state);
  EXPECT_EQ(after.global_step, before.global_step);
  EXPECT_EQ(after.reason, before.reason);
  EXPECT_EQ(JobIds(*manager_), (std::set<std::string>{id, bystander->id}));

  // Running again, and now deletes too: one succeeds, and from then on the job is gone.
  ASSERT_TRUE(manager_->Resume(id, std::nullopt).ok());
  WaitFor(id, {JobState::kRunning});
  EventLog log2(bus_, id);
  calls = Storm(
      id, /*deletes=*/true, [] { return false; }, std::chrono::seconds(20));
  ExpectDocumentedAnswers(calls);
  ExpectLegalHistory(log2.States(), calls);
  std::optional<Clock::time_point> deleted;
  for (const auto& thread : calls) {
    for (const Call& c : thread) {
      if (c.op != Op::kDelete || c.code != StatusCode::kOk) continue;
      EXPECT_FALSE(deleted) << "deleted twice";
      deleted = c.end;
    }
  }
  ASSERT_TRUE(deleted) << "never deleted";
  for (const auto& thread : calls) {
    for (const Call& c : thread) {
      if (c.start > *deleted) {
        EXPECT_EQ(c.code, StatusCode::kNotFound) << OpName(c.op);
      }
    }
  }
  EXPECT_EQ(manager_->Get(id).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(dir_ + "/jobs/" + id));
  EXPECT_EQ(JobIds(*manager_), std::set<std::string>{bystander->id});
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_FALSE(store_->GetJob(id).value().has_value());
  EXPECT_TRUE(store_->QueryScalars(id, {.tag = "loss"})->empty());

  // The manager's workers are joined: nothing of the job went on after its delete.
  manager_.reset();
  const std::vector<std::string> listed = log2.ListStates();
  EXPECT_EQ(std::count(listed.begin(), listed.end(), "deleted"), 1);
  EXPECT_EQ(listed.back(), "deleted");
  store_.reset();
  OpenAll();
  EXPECT_EQ(JobIds(*manager_), std::set<std::string>{bystander->id});
  EXPECT_EQ(manager_->Get(bystander->id)->state, JobState::kCompleted);
  EXPECT_FALSE(fs::exists(dir_ + "/jobs/" + id));
}

}  // namespace
}  // namespace trainingd::daemon
