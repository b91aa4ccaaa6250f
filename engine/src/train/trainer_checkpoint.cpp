#include "trainingd/engine/train/trainer_checkpoint.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace trainingd::engine {
namespace {

std::string RngStateName(const Layer& layer) { return layer.name() + "/rng"; }

using TensorsByName = std::map<std::string, const Tensor*, std::less<>>;

// `data`'s tensors by name, each checked to be there once and whole.
Status IndexTensors(const CheckpointData& data, TensorsByName* tensors) {
  for (const auto& [name, t] : data.tensors) {
    if (!tensors->emplace(name, &t).second) {
      return Status::InvalidArgument(name + ": appears twice in the checkpoint");
    }
    if (t.size() != t.shape().num_elements()) {
      return Status::InvalidArgument(name + ": checkpoint tensor has shape " +
                                     t.shape().ToString() + " but " + std::to_string(t.size()) +
                                     " elements");
    }
  }
  return Status::Ok();
}

// Every model parameter is in `tensors`, with its shape.
// The parameters, then the variables that are not trained (batch norm's moving statistics).
std::vector<Parameter*> SavedVariables(const Model& model) {
  std::vector<Parameter*> all = model.parameters();
  all.insert(all.end(), model.variables().begin(), model.variables().end());
  return all;
}

Status CheckModelParameters(const Model& model, const TensorsByName& tensors) {
  for (const Parameter* p : SavedVariables(model)) {
    const auto it = tensors.find(p->name);
    if (it == tensors.end())
      return Status::InvalidArgument(p->name + ": missing from the checkpoint");
    if (it->second->shape() != p->value.shape()) {
      return Status::InvalidArgument(p->name + ": checkpoint has " +
                                     it->second->shape().ToString() + ", model has " +
                                     p->value.shape().ToString());
    }
  }
  return Status::Ok();
}

// After CheckModelParameters.
void CopyModelParameters(Model& model, const TensorsByName& tensors) {
  for (Parameter* p : SavedVariables(model)) {
    const Tensor& t = *tensors.find(p->name)->second;
    std::copy_n(t.data(), t.size(), p->value.data());
  }
}

}  // namespace

Status RestoreModelParameters(Model& model, const CheckpointData& data) {
  TensorsByName tensors;
  TRAININGD_RETURN_IF_ERROR(IndexTensors(data, &tensors));
  TRAININGD_RETURN_IF_ERROR(CheckModelParameters(model, tensors));
  CopyModelParameters(model, tensors);
  return Status::Ok();
}

Result<CheckpointData> CaptureTrainer(Trainer& trainer) {
  if (!trainer.state_whole()) {
    return Status::FailedPrecondition(
        "this rank holds only its own part of the optimizer slots (a data-parallel step updates "
        "no more); a checkpoint needs a step with a whole-state vote (RunOptions::whole_state) or "
        "MakeStateWhole() on every rank first");
  }
  Model& model = trainer.model();
  TRAININGD_RETURN_IF_ERROR(trainer.optimizer().CreateSlots(model.parameters()));
  CheckpointData data;
  data.global_step = trainer.global_step();
  for (const Parameter* p : SavedVariables(model)) data.tensors.emplace_back(p->name, p->value);
  for (const auto& [name, slot] : trainer.optimizer().Slots()) {
    data.tensors.emplace_back(name, *slot);
  }
  const BatchIterator::State pos = trainer.input().state();
  data.states.push_back(
      {kInputPipelineStateName,
       {static_cast<uint64_t>(pos.epoch), static_cast<uint64_t>(pos.index_in_epoch)}});
  for (const auto& layer : model.layers()) {
    if (const Rng* rng = layer->rng()) {
      const Rng::State& s = rng->state();
      data.states.push_back({RngStateName(*layer), std::vector<uint64_t>(s.begin(), s.end())});
    }
  }
  return data;
}

Status RestoreTrainer(Trainer& trainer, const CheckpointData& data) {
  Model& model = trainer.model();
  if (data.global_step < 0) {
    return Status::InvalidArgument("global_step: checkpoint has negative step " +
                                   std::to_string(data.global_step));
  }
  TensorsByName tensors;
  TRAININGD_RETURN_IF_ERROR(IndexTensors(data, &tensors));

  // 1. Every model parameter, with its shape.
  TRAININGD_RETURN_IF_ERROR(CheckModelParameters(model, tensors));
  std::set<std::string, std::less<>> param_names;
  for (const Parameter* p : SavedVariables(model)) param_names.insert(p->name);

  // 2. Every other tensor must be a slot of this optimizer for one of those parameters. A scratch
  // optimizer of the same kind takes them first, so the real one changes only once all is valid.
  Result<std::unique_ptr<Optimizer>> scratch = MakeOptimizer(trainer.optimizer().options());
  if (!scratch.ok()) return scratch.status();
  const std::string opt_name = trainer.optimizer().name();
  std::vector<std::pair<const std::string*, const Tensor*>> slots;
  for (const auto& [name, t] : data.tensors) {
    if (param_names.count(name)) continue;
    const size_t slash = name.rfind('/');
    const bool of_a_param = slash != std::string::npos && param_names.count(name.substr(0, slash));
    const Status st = of_a_param ? (*scratch)->RestoreSlot(name, t) : Status::NotFound("");
    if (!st.ok()) {
      if (st.code() != StatusCode::kNotFound) return st;
      return Status::InvalidArgument(
          name + ": in the checkpoint but neither a variable of this model nor a slot of its " +
          opt_name + " optimizer (a checkpoint of a different model or optimizer?)");
    }
    slots.emplace_back(&name, &t);
  }
  TRAININGD_RETURN_IF_ERROR((*scratch)->CreateSlots(model.parameters()));
  for (const auto& [name, slot] : (*scratch)->Slots()) {
    if (!tensors.count(name)) {
      return Status::InvalidArgument(name + ": optimizer slot missing from the checkpoint");
    }
  }

  // 3. State records: the input position and each layer's random stream, nothing else.
  std::map<std::string, const std::vector<uint64_t>*, std::less<>> states;
  for (const auto& [name, words] : data.states) {
    if (!states.emplace(name, &words).second) {
      return Status::InvalidArgument(name + ": state record appears twice in the checkpoint");
    }
  }
  const auto input_it = states.find(kInputPipelineStateName);
  if (input_it == states.end() || input_it->second->size() != 2) {
    return Status::InvalidArgument(std::string(kInputPipelineStateName) +
                                   ": missing from the checkpoint or not {epoch, index_in_epoch}");
  }
  BatchIterator::State pos;
  pos.epoch = static_cast<int64_t>((*input_it->second)[0]);
  pos.index_in_epoch = static_cast<int64_t>((*input_it->second)[1]);
  if (pos.epoch < 0 || pos.index_in_epoch < 0 ||
      pos.index_in_epoch > trainer.input().num_examples()) {
    return Status::InvalidArgument(std::string(kInputPipelineStateName) + ": position (epoch " +
                                   std::to_string(pos.epoch) + ", index " +
                                   std::to_string(pos.index_in_epoch) + ") is out of range for " +
                                   std::to_string(trainer.input().num_examples()) + " examples");
  }
  std::vector<std::pair<Rng*, const std::vector<uint64_t>*>> rngs;
  for (const auto& layer : model.layers()) {
    Rng* rng = layer->rng();
    if (rng == nullptr) continue;
    const std::string name = RngStateName(*layer);
    const auto it = states.find(name);
    if (it == states.end() || it->second->size() != std::tuple_size_v<Rng::State>) {
      return Status::InvalidArgument(name + ": missing from the checkpoint or not 4 words");
    }
    rngs.emplace_back(rng, it->second);
  }
  if (states.size() != rngs.size() + 1) {
    for (const auto& entry : states) {
      // A plain reference, not a structured binding: clang before 16 cannot capture those.
      const std::string& name = entry.first;
      const bool known =
          name == kInputPipelineStateName ||
          std::any_of(model.layers().begin(), model.layers().end(), [&](const auto& layer) {
            return layer->rng() != nullptr && RngStateName(*layer) == name;
          });
      if (!known) {
        return Status::InvalidArgument(name + ": state record unknown to this model");
      }
    }
  }

  // All checked: apply.
  CopyModelParameters(model, tensors);
  for (const auto& [name, t] : slots) {
    TRAININGD_RETURN_IF_ERROR(trainer.optimizer().RestoreSlot(*name, *t));
  }
  TRAININGD_RETURN_IF_ERROR(trainer.input().Restore(pos));
  for (const auto& [rng, words] : rngs) {
    Rng::State s;
    std::copy(words->begin(), words->end(), s.begin());
    rng->set_state(s);
  }
  trainer.set_global_step(data.global_step);
  trainer.StateRestored();
  return Status::Ok();
}

}  // namespace trainingd::engine
