// What the job spec JSON tests share: every field of a JobSpec as tuples gtest compares and
// prints, parsing that must succeed or fail with an exact message, and a minimal valid spec.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>

#include "trainingd/api/job_spec_json.h"

namespace trainingd::api::spec_test {

// Every field, as tuples gtest can compare and print.
inline auto Fields(const engine::LayerSpec& l) {
  return std::tie(l.type, l.name, l.inputs, l.momentum, l.epsilon, l.filters, l.kernel, l.stride,
                  l.padding, l.units, l.pool, l.rate, l.activation, l.initializer, l.stddev,
                  l.bias_init);
}
inline auto Fields(const engine::LearningRateSchedule& s) {
  return std::tie(s.type, s.learning_rate, s.decay_steps, s.decay_rate, s.staircase, s.boundaries,
                  s.values, s.warmup_steps, s.alpha);
}
inline auto Fields(const engine::OptimizerOptions& o) {
  return std::tie(o.type, o.momentum, o.use_nesterov, o.beta1, o.beta2, o.epsilon, o.weight_decay,
                  o.weight_decay_parameters);
}
inline auto Fields(const engine::TriggerSpec& t) { return std::tie(t.every_steps, t.every_secs); }
inline auto Fields(const engine::HooksSpec& h) {
  return std::tie(h.checkpoint.enabled, h.checkpoint.max_to_keep,
                  h.checkpoint.keep_checkpoint_every_n_hours, h.summary.enabled,
                  h.step_counter.enabled, h.step_counter.every_steps, h.logging.enabled,
                  h.logging.every_n_iter, h.logging.every_n_secs, h.logging.tensors,
                  h.logging.at_end, h.nan_guard.enabled, h.nan_guard.fail, h.evaluation.enabled,
                  h.evaluation.split, h.evaluation.at_end, h.final_eval.enabled, h.final_eval.split,
                  h.early_stopping.enabled, h.early_stopping.monitor, h.early_stopping.mode,
                  h.early_stopping.patience, h.early_stopping.min_delta, h.profiler.enabled);
}
inline auto Fields(const engine::DatasetSpec& d) {
  return std::tie(d.name, d.validation_size, d.max_train_examples, d.max_test_examples);
}
inline auto Fields(const engine::DistributedSpec& d) {
  return std::tie(d.workers, d.hosts, d.hostfile, d.max_restarts, d.stall_timeout_secs,
                  d.reduction_blocks);
}
inline auto Fields(const engine::ResourcesSpec& r) {
  return std::tie(r.cpus_per_worker, r.time_limit_secs);
}
inline auto Fields(const engine::JobSpec& s) {
  return std::tie(s.name, s.model_preset, s.precision, s.label_smoothing, s.batch_size, s.max_steps,
                  s.num_epochs, s.seed);
}

inline void ExpectSameSpec(const engine::JobSpec& a, const engine::JobSpec& b) {
  EXPECT_EQ(Fields(a), Fields(b));
  EXPECT_EQ(Fields(a.dataset), Fields(b.dataset));
  ASSERT_EQ(a.model.layers.size(), b.model.layers.size());
  for (size_t i = 0; i < a.model.layers.size(); ++i) {
    EXPECT_EQ(Fields(a.model.layers[i]), Fields(b.model.layers[i])) << "layer " << i;
  }
  EXPECT_EQ(Fields(a.optimizer), Fields(b.optimizer));
  EXPECT_EQ(Fields(a.optimizer.learning_rate), Fields(b.optimizer.learning_rate));
  EXPECT_EQ(Fields(a.hooks), Fields(b.hooks));
  EXPECT_EQ(Fields(a.distributed), Fields(b.distributed));
  EXPECT_EQ(Fields(a.resources), Fields(b.resources));
  EXPECT_EQ(a.augmentation, b.augmentation);
  EXPECT_EQ(Fields(a.hooks.checkpoint.trigger), Fields(b.hooks.checkpoint.trigger));
  EXPECT_EQ(Fields(a.hooks.summary.trigger), Fields(b.hooks.summary.trigger));
  EXPECT_EQ(Fields(a.hooks.evaluation.trigger), Fields(b.hooks.evaluation.trigger));
  EXPECT_EQ(Fields(a.hooks.early_stopping.trigger), Fields(b.hooks.early_stopping.trigger));
  EXPECT_EQ(Fields(a.hooks.profiler.trigger), Fields(b.hooks.profiler.trigger));
}

inline engine::JobSpec MustParse(const std::string& text) {
  FieldError error;
  engine::Result<engine::JobSpec> r = ParseJobSpec(text, &error);
  EXPECT_TRUE(r.ok()) << r.status().ToString() << "\n" << text;
  return r.ok() ? std::move(r).value() : engine::JobSpec();
}

// Parses `text`, expects it to fail with exactly `message`, and returns the error.
inline FieldError MustFail(const std::string& text, const std::string& message) {
  FieldError error;
  engine::Result<engine::JobSpec> r = ParseJobSpec(text, &error);
  EXPECT_FALSE(r.ok()) << "parsed: " << text;
  if (!r.ok()) {
    EXPECT_EQ(r.status().code(), engine::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), message);
    EXPECT_EQ(error.message, message);
  }
  return error;
}

// A minimal valid spec with `extra` members added: R"("batch_size": 7)".
inline std::string Spec(const std::string& extra = "") {
  return R"({"name": "t", "model": "softmax", "max_steps": 10)" +
         (extra.empty() ? std::string() : ", " + extra) + "}";
}

}  // namespace trainingd::api::spec_test
