#include "trainingd/engine/session/second_or_step_timer.h"

#include <gtest/gtest.h>

namespace trainingd::engine {
namespace {

TEST(SecondOrStepTimerTest, RequiresExactlyOneOfSecondsAndSteps) {
  auto none = SecondOrStepTimer::Create(0, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "Either every_secs or every_steps should be provided.");
  auto both = SecondOrStepTimer::Create(1.0, 10);
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().message(), "Can not provide both every_secs and every_steps.");
  EXPECT_TRUE(SecondOrStepTimer::Create(-1, 5).ok());  // <= 0 means "not given"
}

TEST(SecondOrStepTimerTest, StepsModeTriggersFirstThenEveryNSteps) {
  auto t = SecondOrStepTimer::Create(0, 100);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->ShouldTriggerForStep(1));  // never triggered
  EXPECT_FALSE(t->UpdateLastTriggeredStep(1).has_value());
  EXPECT_FALSE(t->ShouldTriggerForStep(1));  // same step
  EXPECT_FALSE(t->ShouldTriggerForStep(100));
  EXPECT_TRUE(t->ShouldTriggerForStep(101));
  EXPECT_TRUE(t->ShouldTriggerForStep(150));  // at least N steps later
  auto e = t->UpdateLastTriggeredStep(101);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->steps, 100);
  EXPECT_EQ(t->last_triggered_step(), 101);
  t->Reset();
  EXPECT_TRUE(t->ShouldTriggerForStep(102));
}

TEST(SecondOrStepTimerTest, SecondsModeUsesTheInjectedClock) {
  double now = 1000.0;
  auto t = SecondOrStepTimer::Create(10.0, 0, [&] { return now; });
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->ShouldTriggerForStep(0));
  (void)t->UpdateLastTriggeredStep(0);
  now = 1009.9;
  EXPECT_FALSE(t->ShouldTriggerForStep(50));
  now = 1010.0;
  EXPECT_TRUE(t->ShouldTriggerForStep(50));
  EXPECT_FALSE(t->ShouldTriggerForStep(0));  // the step last triggered never triggers again
  auto e = t->UpdateLastTriggeredStep(50);
  ASSERT_TRUE(e.has_value());
  EXPECT_DOUBLE_EQ(e->seconds, 10.0);
  EXPECT_EQ(e->steps, 50);
}

}  // namespace
}  // namespace trainingd::engine
