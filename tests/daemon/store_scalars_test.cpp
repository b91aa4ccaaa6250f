// Store: scalars (duplicates, tags, dropping and deleting them, another writer on the file)
// and their downsampling, checked against the rule of Store::QueryScalars on many shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "store_fixture.h"
#include "trainingd/daemon/store/store.h"

namespace trainingd::daemon {
namespace {

using api::ScalarQuery;
using engine::StatusCode;

using testing::kNaN;

// ---- scalars ------------------------------------------------------------------------------------

TEST_F(StoreTest, AddScalarsReplacesDuplicates) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  std::vector<ScalarRecord> recs;
  for (int s = 0; s < 10; ++s) recs.push_back({"a", "loss", s, 100.0 + s, 1.0 * s});
  store->AddScalars(recs);
  ASSERT_TRUE(store->Flush().ok());
  // Another batch overwrites step 5; one call with step 3 twice: the later one wins.
  store->AddScalars({{"a", "loss", 5, 555, 50}});
  store->AddScalars({{"a", "loss", 3, 333, 30}, {"a", "loss", 3, 334, 31}});
  ASSERT_TRUE(store->Flush().ok());
  const auto got = Query(*store, "a", {.tag = "loss"});
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(got[5].value, 50);
  EXPECT_EQ(got[5].wall_time, 555);
  EXPECT_EQ(got[3].value, 31);
  EXPECT_EQ(got[3].wall_time, 334);
  EXPECT_EQ(got[4].value, 4);
  // Downsampled, the buckets hold the new values: a replaced maximum no longer counts.
  Series big;
  for (int s = 0; s < 4000; ++s) big[s] = {1.0, 1.0 * s};
  AddSeries(*store, "a", "big", big);
  std::vector<ScalarRecord> lower;
  for (int s = 0; s < 4000; s += 3) {
    lower.push_back({"a", "big", s, 2.0, -1.0 * s});
    big[s] = {2.0, -1.0 * s};
  }
  store->AddScalars(std::move(lower));
  ASSERT_TRUE(store->Flush().ok());
  for (int64_t mp : {2, 3, 20, 300}) {
    const ScalarQuery q{.tag = "big", .max_points = mp};
    EXPECT_TRUE(FollowsRule(big, q, Query(*store, "a", q))) << mp;
  }
}

TEST_F(StoreTest, ScalarsForAnUnknownJobFailAtFlushAndTheRestIsKept) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  store->AddScalars({{"nope", "loss", 1, 1, 1}});
  store->AddScalars({{"a", "loss", 1, 1, 1}});
  store->AddScalars({{"a", "", 2, 1, 1}});  // empty tag
  const engine::Status st = store->Flush();
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.ToString();
  EXPECT_NE(st.message().find("'nope'"), std::string::npos) << st.message();
  EXPECT_TRUE(store->Flush().ok()) << "the error is reported once";
  EXPECT_TRUE(store->ScalarTags("nope")->empty());
  EXPECT_EQ(*store->ScalarTags("a"), std::vector<std::string>{"loss"});
}

TEST_F(StoreTest, FlushReturnsTheFirstErrorSinceTheLastFlush) {
  auto store = OpenStore();
  store->AddScalars({{"first", "loss", 1, 1, 1}});
  ASSERT_EQ(store->Flush().code(), StatusCode::kNotFound);
  store->AddScalars({{"second", "loss", 1, 1, 1}});
  store->AddScalars({{"third", "loss", 1, 1, 1}});
  const engine::Status st = store->Flush();
  EXPECT_NE(st.message().find("'second'"), std::string::npos) << st.message();
  EXPECT_TRUE(store->Flush().ok());
}

TEST_F(StoreTest, TagsAreSortedAndLatestIsAtTheHighestStep) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  store->PutJob(MakeJob("b", 2));
  store->AddScalars({{"a", "train/loss", 20, 1, 0.2},
                     {"a", "accuracy", 5, 1, 0.9},
                     {"a", "train/loss", 30, 1, 0.3},
                     {"a", "train/loss", 10, 1, 0.1},  // out of order
                     {"a", "eval/loss", 7, 1, kNaN},
                     {"b", "other", 1, 1, 1}});
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(*store->ScalarTags("a"),
            (std::vector<std::string>{"accuracy", "eval/loss", "train/loss"}));
  auto latest = store->LatestScalars("a");
  ASSERT_TRUE(latest.ok());
  ASSERT_EQ(latest->size(), 3u);
  EXPECT_EQ(latest->at("train/loss"), 0.3);
  EXPECT_EQ(latest->at("accuracy"), 0.9);
  EXPECT_TRUE(std::isnan(latest->at("eval/loss")));
  EXPECT_TRUE(store->ScalarTags("zzz")->empty());
  EXPECT_TRUE(store->LatestScalars("zzz")->empty());
}

TEST_F(StoreTest, DropScalarsAfterDeletesLaterStepsOfEveryTag) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  store->PutJob(MakeJob("b", 2));
  Series ref;
  for (int s = 0; s < 5000; ++s) ref[s] = {1.0 * s, 1.0 * s};
  AddSeries(*store, "a", "loss", ref);
  AddSeries(*store, "a", "acc", ref);
  AddSeries(*store, "b", "loss", ref);
  store->DropScalarsAfter("a", 2999);
  ASSERT_TRUE(store->Flush().ok());
  Series kept(ref.begin(), ref.find(3000));
  for (const char* tag : {"loss", "acc"}) {
    const auto raw = Query(*store, "a", {.tag = tag, .max_points = 10000});
    ASSERT_EQ(raw.size(), 3000u) << tag;
    EXPECT_EQ(raw.back().step, 2999);
    for (int64_t mp : {1, 2, 50, 1000}) {
      const ScalarQuery q{.tag = tag, .max_points = mp};
      EXPECT_TRUE(FollowsRule(kept, q, Query(*store, "a", q))) << tag << " " << mp;
    }
  }
  EXPECT_EQ(Query(*store, "b", {.tag = "loss", .max_points = 10000}).size(), 5000u);
  // Resuming writes the steps again, with new values.
  Series resumed = kept;
  for (int s = 3000; s < 4000; ++s) resumed[s] = {2.0 * s, -1.0 * s};  // dropped maxima must go
  AddSeries(*store, "a", "loss", Series(resumed.find(3000), resumed.end()));
  for (int64_t mp : {3, 100, 999}) {
    const ScalarQuery q{.tag = "loss", .max_points = mp};
    EXPECT_TRUE(FollowsRule(resumed, q, Query(*store, "a", q))) << mp;
  }
}

TEST_F(StoreTest, DeleteJobRemovesTheRowAndItsScalarsOnly) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  store->PutJob(MakeJob("b", 2));
  Series ref;
  for (int s = 0; s < 3000; ++s) ref[s] = {1.0 * s, 1.0 * s};
  AddSeries(*store, "a", "loss", ref);
  AddSeries(*store, "b", "loss", ref);
  store->DeleteJob("a");
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_FALSE(store->GetJob("a")->has_value());
  EXPECT_TRUE(store->ScalarTags("a")->empty());
  EXPECT_TRUE(Query(*store, "a", {.tag = "loss"}).empty());
  EXPECT_EQ(Query(*store, "b", {.tag = "loss", .max_points = 5000}).size(), 3000u);
  EXPECT_EQ(RawText(path_, "SELECT count(*) FROM series WHERE job_id = 'a'"), "0");
  EXPECT_EQ(RawText(path_,
                    "SELECT count(*) FROM scalar_rollups WHERE series_id NOT IN "
                    "(SELECT id FROM series)"),
            "0");
  EXPECT_EQ(
      RawText(path_, "SELECT count(*) FROM scalars WHERE series_id NOT IN (SELECT id FROM series)"),
      "0");
  // The same id again starts empty: no old points or rollups leak into its series.
  store->PutJob(MakeJob("a", 3));
  Series fresh;
  for (int s = 0; s < 2000; ++s) fresh[s] = {1.0, -1.0 * s};
  AddSeries(*store, "a", "loss", fresh);
  const ScalarQuery q{.tag = "loss", .max_points = 100};
  EXPECT_TRUE(FollowsRule(fresh, q, Query(*store, "a", q)));
}

TEST_F(StoreTest, DroppingEveryPointOfATagUnlistsItAndItCanBeWrittenAgain) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  store->AddScalars(
      {{"a", "late", 100, 1, 1.0}, {"a", "late", 200, 1, 2.0}, {"a", "early", 5, 1, 5.0}});
  store->DropScalarsAfter("a", 50);
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(*store->ScalarTags("a"), std::vector<std::string>{"early"});
  EXPECT_EQ(*store->LatestScalars("a"), (std::map<std::string, double>{{"early", 5.0}}));
  EXPECT_TRUE(Query(*store, "a", {.tag = "late"}).empty());
  // Steps at or below the old largest one are new again.
  store->AddScalars({{"a", "late", 150, 1, 3.0}, {"a", "late", 60, 1, 4.0}});
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(*store->ScalarTags("a"), (std::vector<std::string>{"early", "late"}));
  const auto late = Query(*store, "a", {.tag = "late"});
  ASSERT_EQ(late.size(), 2u);
  EXPECT_EQ(late[0].step, 60);
  EXPECT_EQ(late[1].value, 3.0);
  const ScalarQuery one{.tag = "late", .max_points = 1};
  EXPECT_TRUE(FollowsRule({{60, {1, 4.0}}, {150, {1, 3.0}}}, one, Query(*store, "a", one)));
}

// The writer remembers each series' largest step between transactions; another store writing
// the same file meanwhile must not make it take a stored step for a new one.
TEST_F(StoreTest, AnotherWriterOnTheSameFileIsNoticed) {
  auto first = OpenStore();
  first->PutJob(MakeJob("a", 1));
  Series ref;
  std::vector<ScalarRecord> recs;
  for (int s = 0; s < 100; ++s) {
    recs.push_back({"a", "loss", s, 1.0, 1.0 * s});
    ref[s] = {1.0, 1.0 * s};
  }
  first->AddScalars(std::move(recs));
  ASSERT_TRUE(first->Flush().ok());
  {
    auto second = OpenStore();
    std::vector<ScalarRecord> more;
    for (int s = 100; s < 200; ++s) {
      more.push_back({"a", "loss", s, 2.0, 1000.0 + s});
      ref[s] = {2.0, 1000.0 + s};
    }
    second->AddScalars(std::move(more));
    ASSERT_TRUE(second->Flush().ok());
  }
  std::vector<ScalarRecord> overlap;
  for (int s = 150; s < 250; ++s) {
    overlap.push_back({"a", "loss", s, 3.0, -1.0 * s});
    ref[s] = {3.0, -1.0 * s};
  }
  first->AddScalars(std::move(overlap));
  const engine::Status st = first->Flush();
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (int64_t mp : {1, 7, 50, 1000}) {
    const ScalarQuery q{.tag = "loss", .max_points = mp};
    EXPECT_TRUE(FollowsRule(ref, q, Query(*first, "a", q))) << mp;
  }
}

TEST_F(StoreTest, BatchesMixingNewAndStoredStepsKeepRollupsExact) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  Series ref;
  for (int s = 0; s < 3000; ++s) ref[s * 2] = {1.0, std::sin(s * 0.01)};
  AddSeries(*store, "a", "loss", ref, 3000);
  // One op: old steps replaced (a new maximum and minimum among them), gaps filled, new steps
  // after the end, out of order and with a duplicate whose last copy must win.
  std::vector<ScalarRecord> recs;
  auto put = [&](int64_t step, double value) {
    recs.push_back({"a", "loss", step, 2.0, value});
    ref[step] = {2.0, value};
  };
  put(7000, 5.0);
  put(5998, 10.0);   // the stored last step
  put(4001, -10.0);  // a gap
  put(6500, 1.0);
  put(6500, 2.0);
  put(6000, 3.0);
  put(10, 0.25);
  store->AddScalars(std::move(recs));
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(Query(*store, "a", {.tag = "loss", .max_points = 100000}).size(), ref.size());
  for (int64_t mp : {1, 2, 5, 64, 300, 2999}) {
    const ScalarQuery q{.tag = "loss", .max_points = mp};
    EXPECT_TRUE(FollowsRule(ref, q, Query(*store, "a", q))) << mp;
  }
  EXPECT_EQ(store->LatestScalars("a")->at("loss"), 5.0);
}

// ---- downsampling -------------------------------------------------------------------------------

TEST_F(StoreTest, QueryValidatesItsArguments) {
  auto store = OpenStore();
  auto expect_invalid = [&](const ScalarQuery& q, const std::string& field) {
    auto r = store->QueryScalars("a", q);
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(field, 0), 0u) << r.status().message();
  };
  expect_invalid({.tag = ""}, "tag");
  expect_invalid({.tag = "x", .max_points = 0}, "max_points");
  expect_invalid({.tag = "x", .max_points = -5}, "max_points");
  expect_invalid({.tag = "x", .from_step = 10, .to_step = 9}, "from_step");
  EXPECT_TRUE(store->QueryScalars("a", {.tag = "x", .from_step = 9, .to_step = 9}).ok());
}

TEST_F(StoreTest, FewPointsComeBackRaw) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  Series ref;
  for (int s = 0; s < 10; ++s) ref[s * 3] = {100.0 + s, s * 0.5};
  AddSeries(*store, "a", "loss", ref);
  const auto got = Query(*store, "a", {.tag = "loss", .max_points = 10});
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(got[4].step, 12);
  EXPECT_EQ(got[4].value, 2.0);
  EXPECT_EQ(got[4].min, 2.0);
  EXPECT_EQ(got[4].max, 2.0);
  EXPECT_EQ(got[4].wall_time, 104.0);
  const auto fewer = Query(*store, "a", {.tag = "loss", .max_points = 9});
  EXPECT_LE(fewer.size(), 9u);
  EXPECT_TRUE(FollowsRule(ref, {.tag = "loss", .max_points = 9}, fewer));
  const auto sub = Query(*store, "a", {.tag = "loss", .from_step = 4, .to_step = 12});
  ASSERT_EQ(sub.size(), 3u);
  EXPECT_EQ(sub.front().step, 6);
  EXPECT_EQ(sub.back().step, 12);
  EXPECT_TRUE(Query(*store, "a", {.tag = "loss", .from_step = 100}).empty());
}

TEST_F(StoreTest, DownsamplingKeepsSpikesAndEnds) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  Series ref;
  for (int s = 0; s < 200000; ++s) ref[s] = {1000.0 + s, 0.0};
  ref[123457].value = 1e6;
  ref[98765].value = -1e6;
  ref[0].value = 7;
  ref[199999].value = 9;
  AddSeries(*store, "a", "loss", ref, 5000);
  for (int64_t mp : {100, 1000}) {
    const ScalarQuery q{.tag = "loss", .max_points = mp};
    const auto got = Query(*store, "a", q);
    EXPECT_TRUE(FollowsRule(ref, q, got));
    ASSERT_GE(got.size(), static_cast<size_t>(mp / 2)) << "buckets far too wide";
    EXPECT_EQ(got.front().step, 0);
    EXPECT_EQ(got.front().value, 7);
    EXPECT_EQ(got.back().step, 199999);
    EXPECT_EQ(got.back().value, 9);
    int spikes_up = 0;
    int spikes_down = 0;
    for (const auto& p : got) {
      spikes_up += p.max == 1e6;
      spikes_down += p.min == -1e6;
    }
    EXPECT_EQ(spikes_up, 1);
    EXPECT_EQ(spikes_down, 1);
  }
  // A sub-range that holds only the upward spike, its ends inside rollup blocks.
  const ScalarQuery sub{.tag = "loss", .from_step = 100003, .to_step = 150011, .max_points = 77};
  const auto got = Query(*store, "a", sub);
  EXPECT_TRUE(FollowsRule(ref, sub, got));
  EXPECT_EQ(got.front().step, 100003);
  EXPECT_EQ(got.back().step, 150011);
  double mx = 0;
  double mn = 0;
  for (const auto& p : got) {
    mx = std::max(mx, p.max);
    mn = std::min(mn, p.min);
  }
  EXPECT_EQ(mx, 1e6);
  EXPECT_EQ(mn, 0);
}

TEST_F(StoreTest, DownsamplingFollowsTheRuleOnManyShapes) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  std::mt19937_64 rng(42);
  std::normal_distribution<double> noise;
  std::map<std::string, Series> shapes;
  for (int s = 0; s < 30000; ++s) shapes["dense"][s] = {1.0 * s, noise(rng)};
  for (int s = 0; s < 20000; ++s) shapes["sparse"][s * 100] = {1.0 * s, noise(rng)};
  for (int s = -5000; s < 5000; ++s) shapes["negative"][s * 7] = {1.0, noise(rng)};
  for (int s = 0; s < 3000; ++s) {
    shapes["nan"][s] = {1.0, (s % 50) < 30 ? kNaN : noise(rng)};  // all-NaN stretches too
  }
  const int64_t big = std::numeric_limits<int64_t>::max();
  for (int64_t s : {std::numeric_limits<int64_t>::min(), int64_t{-1}, int64_t{0}, int64_t{1},
                    int64_t{1} << 40, big - 20, big - 1, big}) {
    shapes["extreme"][s] = {1.0, noise(rng)};
  }
  for (int s = 0; s < 2000; ++s) {  // clustered: bursts far apart
    shapes["bursts"][(s / 100) * 1000003 + s % 100] = {1.0, noise(rng)};
  }
  for (const auto& [tag, ref] : shapes) AddSeries(*store, "a", tag, ref, 777);

  std::uniform_int_distribution<int> pick(0, 99);
  for (const auto& [tag, ref] : shapes) {
    const int64_t first = ref.begin()->first;
    const int64_t last = ref.rbegin()->first;
    for (int64_t mp : {1, 2, 3, 4, 7, 16, 100, 1000, 5000}) {
      std::vector<ScalarQuery> queries = {{.tag = tag, .max_points = mp}};
      for (int r = 0; r < 4; ++r) {
        // Random sub-ranges, in step space (not just at points).
        const long double f = first + (static_cast<long double>(last) - first) * pick(rng) / 100;
        const long double t = f + (static_cast<long double>(last) - f) * pick(rng) / 100;
        queries.push_back({.tag = tag,
                           .from_step = static_cast<int64_t>(f),
                           .to_step = static_cast<int64_t>(t),
                           .max_points = mp});
      }
      queries.push_back({.tag = tag, .from_step = first + 1, .max_points = mp});
      queries.push_back({.tag = tag, .to_step = last - 1, .max_points = mp});
      for (const ScalarQuery& q : queries) {
        EXPECT_TRUE(FollowsRule(ref, q, Query(*store, "a", q)))
            << tag << " from " << q.from_step.value_or(-1) << " to " << q.to_step.value_or(-1);
      }
    }
  }
}

// Random writes -- out of order, duplicates, NaN, drop-after -- must keep the rollups exact.
TEST_F(StoreTest, RollupsStayExactUnderRandomWrites) {
  auto store = OpenStore();
  store->PutJob(MakeJob("a", 1));
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> step_in(0, 70000);
  std::uniform_real_distribution<double> val(-1, 1);
  std::map<std::string, Series> ref;
  for (int round = 0; round < 40; ++round) {
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 7) {
      std::vector<ScalarRecord> recs;
      const int n = static_cast<int>(rng() % 3000) + 1;
      const int64_t base = step_in(rng);
      for (int i = 0; i < n; ++i) {
        const std::string tag = (rng() % 3 == 0) ? "b" : "a";
        // Mostly runs of nearby steps, some anywhere (earlier steps, duplicates).
        const int64_t step = (rng() % 5 == 0) ? step_in(rng) : base + static_cast<int64_t>(i);
        const double v = (rng() % 97 == 0) ? kNaN : val(rng);
        const double wall = static_cast<double>(round * 10000 + i);
        recs.push_back({"a", tag, step, wall, v});
        ref[tag][step] = {wall, v};
      }
      store->AddScalars(std::move(recs));
    } else if (kind < 9) {
      const int64_t after = step_in(rng);
      store->DropScalarsAfter("a", after);
      for (auto& [tag, series] : ref) series.erase(series.upper_bound(after), series.end());
    }
    if (rng() % 3 == 0 || round == 39) {
      ASSERT_TRUE(store->Flush().ok());
      for (const auto& [tag, series] : ref) {
        for (int64_t mp : {2, 9, 300}) {
          const ScalarQuery q{.tag = tag, .max_points = mp};
          ASSERT_TRUE(FollowsRule(series, q, Query(*store, "a", q)))
              << "round " << round << " tag " << tag;
        }
      }
    }
  }
}

}  // namespace
}  // namespace trainingd::daemon
