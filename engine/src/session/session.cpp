#include "trainingd/engine/session/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "trainingd/engine/train/trainer_checkpoint.h"

namespace trainingd::engine {
namespace {

// "validation/loss" -> ("validation", "loss"); nullopt unless a known split and a metric of a
// `task` job (of either task when not given; metrics.h).
std::optional<std::pair<std::string_view, std::string_view>> SplitFetch(
    std::string_view name, std::optional<Task> task = std::nullopt) {
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view split = name.substr(0, slash);
  const std::string_view metric = name.substr(slash + 1);
  if (!FindEvaluationMetric(metric, task)) return std::nullopt;
  for (const char* s : kSplits) {
    if (split == s) return std::make_pair(split, metric);
  }
  return std::nullopt;
}

bool IsStepFetch(std::string_view name, std::optional<Task> task = std::nullopt) {
  return name == kLossFetch || (name == kAccuracyFetch && task != Task::kRegression) ||
         name == kGlobalStepFetch || name == kLearningRateFetch || name == kEpochFetch;
}

// How the training split's values relate to its images' [0, 1] units (augmentation.h).
ChannelUnits ChannelUnitsOf(const Datasets& data) {
  if (data.preprocessing != Preprocessing::kPerChannel) return {};
  return {data.feature_mean, data.feature_std};
}

}  // namespace

// `metric`'s value in an evaluation: a regression job's from its sums, a classifier's from its
// metrics (metrics.h).
double SplitMetricValue(const SplitEvaluation& e, std::string_view metric) {
  if (metric == "rmse") return e.rmse;
  if (metric == "mae") return e.mae;
  if (metric == "r2") return e.r2;
  if (metric == kAccuracyFetch) return e.accuracy;
  return MetricValue(e.metrics, e.loss, metric);
}

double RunValues::get(const std::string& name) const {
  const auto it = results.find(name);
  return it == results.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

Result<std::unique_ptr<Session>> Session::Create(const SessionConfig& config,
                                                 std::shared_ptr<const Datasets> datasets, Env* env,
                                                 std::shared_ptr<Logger> logger) {
  if (!datasets) return Status::InvalidArgument("dataset: none given");
  if (config.num_epochs < 0) {
    return Status::InvalidArgument("num_epochs must be >= 0 (0 = repeat forever), got " +
                                   std::to_string(config.num_epochs));
  }
  if (config.eval_batch_size <= 0) {
    return Status::InvalidArgument("eval_batch_size must be positive, got " +
                                   std::to_string(config.eval_batch_size));
  }
  std::unique_ptr<Session> s(new Session());
  s->config_ = config;
  s->datasets_ = std::move(datasets);
  s->env_ = env ? env : Env::Default();
  s->logger_ = logger ? std::move(logger) : Logger::Stderr();
  auto trainer = Trainer::Create(
      config.model, config.optimizer, s->datasets_->train, s->datasets_->num_classes,
      {.batch_size = config.batch_size,
       .seed = config.seed,
       .communicator = config.communicator.get(),
       .reduction_blocks = config.reduction_blocks,
       .precision = config.precision,
       .label_smoothing = config.label_smoothing,
       .augmentation = config.augmentation,
       .units = ChannelUnitsOf(*s->datasets_),
       .task = s->datasets_->task,
       .regression_loss = config.regression_loss,
       .huber_delta = config.huber_delta,
       .target_scale = {s->datasets_->target_mean, s->datasets_->target_std},
       .class_weights = config.class_weights,
       .decision_threshold = config.decision_threshold});
  if (!trainer.ok()) return trainer.status();
  s->trainer_ = std::move(trainer).value();
  return s;
}

int64_t Session::epochs_completed() const {
  const BatchIterator::State st = trainer_->input().state();
  return st.epoch + (st.index_in_epoch >= datasets_->train.size() ? 1 : 0);
}

Status Session::CheckFetchNames(const std::vector<std::string>& fetches, std::optional<Task> task) {
  for (const std::string& f : fetches) {
    if (IsStepFetch(f, task) || SplitFetch(f, task)) continue;
    return Status::InvalidArgument(
        "fetch '" + f + "' is unknown" +
        (task ? std::string(" to a ") + TaskName(*task) + " job" : std::string()) +
        "; known: loss, " + (task == Task::kRegression ? "" : "accuracy, ") +
        "global_step, learning_rate, epoch, <split>/<metric> with split train, validation or "
        "test and metric one of " +
        EvaluationMetricNames(task));
  }
  return Status::Ok();
}

Status Session::CheckFeeds(const Feeds& feeds, const Batch** batch,
                           std::optional<float>* rate) const {
  for (const auto& [name, value] : feeds) {
    if (name == kLearningRateFeed) {
      const double* r = std::get_if<double>(&value);
      if (!r || !(*r >= 0) || !std::isfinite(*r)) {
        return Status::InvalidArgument("feed 'learning_rate' must be a finite number >= 0");
      }
      *rate = static_cast<float>(*r);
    } else if (name == kBatchFeed) {
      const auto* b = std::get_if<std::shared_ptr<const Batch>>(&value);
      if (!b || !*b) return Status::InvalidArgument("feed 'batch' must be a Batch");
      TRAININGD_RETURN_IF_ERROR(trainer_->CheckBatch(**b));
      *batch = b->get();
    } else {
      return Status::InvalidArgument("feed '" + name + "' is unknown; known: learning_rate, batch");
    }
  }
  return Status::Ok();
}

Status Session::Run(const RunArgs& args, RunValues* values) {
  TRAININGD_RETURN_IF_ERROR(CheckFetchNames(args.fetches, task()));
  const Batch* batch = nullptr;
  std::optional<float> rate;
  TRAININGD_RETURN_IF_ERROR(CheckFeeds(args.feeds, &batch, &rate));
  if (!batch && config_.num_epochs > 0 && epochs_completed() >= config_.num_epochs) {
    return Status::OutOfRange("input exhausted: " + std::to_string(config_.num_epochs) +
                              " epoch(s) of the training split done at global step " +
                              std::to_string(global_step()));
  }
  std::shared_ptr<StepTrace> trace;
  if (args.options.trace) trace = std::make_shared<StepTrace>();
  trainer_->optimizer().set_learning_rate_override(rate);
  last_step_ = trainer_->Step({.batch = batch,
                               .trace = trace.get(),
                               .stop_vote = args.options.stop_vote,
                               .whole_state_vote = args.options.whole_state});
  trainer_->optimizer().set_learning_rate_override(std::nullopt);
  if (!last_step_->error.ok()) return last_step_->error;
  diverged_ = !std::isfinite(last_step_->loss);
  if (values) {
    values->results.clear();
    values->trace = trace;
  }
  const auto t0 = std::chrono::steady_clock::now();
  TRAININGD_RETURN_IF_ERROR(FillFetches(args.fetches, values));
  if (trace && std::any_of(args.fetches.begin(), args.fetches.end(),
                           [](const std::string& f) { return SplitFetch(f).has_value(); })) {
    trace->Add("evaluation", "evaluation", t0);
  }
  return Status::Ok();
}

Status Session::Fetch(const std::vector<std::string>& fetches, RunValues* values) {
  TRAININGD_RETURN_IF_ERROR(CheckFetchNames(fetches, task()));
  if (values) {
    values->results.clear();
    values->trace.reset();
  }
  return FillFetches(fetches, values);
}

Status Session::FillFetches(const std::vector<std::string>& fetches, RunValues* values) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const std::string& f : fetches) {
    double v = nan;
    if (f == kLossFetch) {
      v = last_step_ ? last_step_->loss : nan;
    } else if (f == kAccuracyFetch) {
      v = last_step_ ? last_step_->accuracy : nan;
    } else if (f == kGlobalStepFetch) {
      v = static_cast<double>(global_step());
    } else if (f == kLearningRateFetch) {
      // After a step, the rate that step used; before any, the rate the next step will use.
      v = last_step_ && last_step_->global_step == global_step()
              ? last_step_->learning_rate
              : trainer_->optimizer().LearningRate(global_step());
    } else if (f == kEpochFetch) {
      v = static_cast<double>(epochs_completed());
    } else {
      const auto sf = SplitFetch(f);
      auto eval = Evaluate(sf->first);
      if (!eval.ok()) return eval.status();
      v = SplitMetricValue(*eval, sf->second);
    }
    if (values) values->results[f] = v;
  }
  return Status::Ok();
}

Result<SplitEvaluation> Session::Evaluate(std::string_view split_name) {
  const Split* split = nullptr;
  if (split_name == "train") split = &datasets_->train;
  if (split_name == "validation") split = &datasets_->validation;
  if (split_name == "test") split = &datasets_->test;
  if (!split) {
    return Status::NotFound("split '" + std::string(split_name) +
                            "' is unknown; known: train, validation, test");
  }
  if (split->size() == 0) {
    return Status::FailedPrecondition("the " + std::string(split_name) + " split is empty" +
                                      (split_name == "validation" ? " (validation_size = 0)" : ""));
  }
  auto it = eval_cache_.find(split_name);
  if (it != eval_cache_.end() && it->second.global_step == global_step()) return it->second.value;
  auto la = trainer_->Evaluate(*split, config_.eval_batch_size);
  if (!la.ok()) return la.status();
  eval_cache_[std::string(split_name)] = {global_step(), *la};
  return la;
}

Result<CheckpointData> Session::Capture() { return CaptureTrainer(*trainer_); }

Status Session::Restore(const CheckpointData& data) {
  TRAININGD_RETURN_IF_ERROR(RestoreTrainer(*trainer_, data));
  eval_cache_.clear();
  last_step_.reset();
  diverged_ = false;
  return Status::Ok();
}

}  // namespace trainingd::engine
