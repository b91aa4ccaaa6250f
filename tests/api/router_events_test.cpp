// The event-stream routes through the Router alone: subscription, Last-Event-ID resumption, the
// logs?follow=true filter, errors, and unsubscribing.
#include <gtest/gtest.h>

#include <mutex>
#include <vector>

#include "fake_job_service.h"
#include "router_test_util.h"
#include "trainingd/api/router.h"

namespace trainingd::api {
namespace {

class Collector {
 public:
  EventDeliver Deliver() {
    return [this](const ServiceEvent& e) {
      std::lock_guard lock(mu_);
      events_.push_back(e);
    };
  }
  std::vector<int64_t> Ids() {
    std::lock_guard lock(mu_);
    std::vector<int64_t> ids;
    for (const ServiceEvent& e : events_) ids.push_back(e.id);
    return ids;
  }
  std::vector<ServiceEvent> Events() {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  std::mutex mu_;
  std::vector<ServiceEvent> events_;
};

TEST(RouterEventsTest, JobStreamReplaysAfterLastEventIdThenGoesLive) {
  FakeJobService service;
  Router router(service, {});
  std::string id = service.AddJob("a", JobState::kRunning);
  for (int i = 0; i < 5; ++i) service.Publish(id, EventKind::kScalar, ScalarEvent{"loss", i});

  Collector all;
  HttpResponse r = router.Handle(Req("GET", "/api/v1/jobs/" + id + "/events"), all.Deliver());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.event_stream);
  ASSERT_NE(r.subscription, nullptr);
  EXPECT_EQ(r.Header("Content-Type"), "text/event-stream");
  EXPECT_EQ(r.Header("Cache-Control"), "no-cache");
  EXPECT_EQ(service.calls().subscribe_after, 0);

  Collector resumed;
  HttpResponse r2 =
      router.Handle(Req("GET", "/api/v1/jobs/" + id + "/events", "", {{"Last-Event-ID", "3"}}),
                    resumed.Deliver());
  ASSERT_EQ(r2.status, 200);
  Collector by_query;
  HttpResponse r3 = router.Handle(Req("GET", "/api/v1/jobs/" + id + "/events?last_event_id=4"),
                                  by_query.Deliver());
  ASSERT_EQ(r3.status, 200);

  service.Publish(id, EventKind::kState, JobStateEvent{id, "a", JobState::kStopping});
  EXPECT_EQ(all.Ids(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(resumed.Ids(), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(by_query.Ids(), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(all.Events().back().kind, EventKind::kState);

  // Dropping the subscription unsubscribes.
  EXPECT_EQ(service.SubscriberCount(id), 3u);
  r.subscription.reset();
  r2.subscription.reset();
  r3.subscription.reset();
  EXPECT_EQ(service.SubscriberCount(id), 0u);
  service.Publish(id, EventKind::kState, JobStateEvent{});
  EXPECT_EQ(all.Ids().size(), 6u);
}

TEST(RouterEventsTest, ListStreamAndLogFollow) {
  FakeJobService service;
  Router router(service, {});
  std::string id = service.AddJob("a", JobState::kRunning);
  Collector list;
  HttpResponse r = router.Handle(Req("GET", "/api/v1/events"), list.Deliver());
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(service.calls().subscribe_job, "");
  service.Publish("", EventKind::kJob, JobStateEvent{"job-1"});
  EXPECT_EQ(list.Ids(), std::vector<int64_t>{1});

  Collector logs;
  HttpResponse f =
      router.Handle(Req("GET", "/api/v1/jobs/" + id + "/logs?follow=true"), logs.Deliver());
  ASSERT_EQ(f.status, 200) << f.body;
  EXPECT_TRUE(f.event_stream);
  service.Publish(id, EventKind::kScalar, ScalarEvent{});
  service.Publish(id, EventKind::kLog, LogEvent{"hello"});
  service.Publish(id, EventKind::kState, JobStateEvent{});
  ASSERT_EQ(logs.Events().size(), 1u);
  EXPECT_EQ(logs.Events()[0].id, 2);
  EXPECT_EQ(logs.Events()[0].kind, EventKind::kLog);
}

TEST(RouterEventsTest, Errors) {
  FakeJobService service;
  Router router(service, {});
  ExpectError(router.Handle(Req("GET", "/api/v1/jobs/ghost/events")), 404, "not_found");
  ExpectError(router.Handle(Req("GET", "/api/v1/jobs/ghost/logs?follow=1")), 404, "not_found");
  std::string id = service.AddJob("a", JobState::kRunning);
  ExpectError(
      router.Handle(Req("GET", "/api/v1/jobs/" + id + "/events", "", {{"Last-Event-ID", "abc"}})),
      400, "invalid_argument", "Last-Event-ID");
  ExpectError(router.Handle(Req("GET", "/api/v1/events?last_event_id=-1")), 400, "invalid_argument",
              "last_event_id");
  ExpectError(router.Handle(Req("GET", "/api/v1/jobs/" + id + "/logs?follow=maybe")), 400,
              "invalid_argument", "follow");
  service.FailNext(engine::Status::Unavailable("shutting down"));
  ExpectError(router.Handle(Req("GET", "/api/v1/events")), 503, "unavailable");
  // Without a deliver callback the stream still opens; events are dropped.
  HttpResponse r = router.Handle(Req("GET", "/api/v1/events"));
  EXPECT_TRUE(r.event_stream);
  service.Publish("", EventKind::kJob, JobStateEvent{});
}

}  // namespace
}  // namespace trainingd::api
