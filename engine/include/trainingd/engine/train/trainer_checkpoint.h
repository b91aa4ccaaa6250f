// Capturing a Trainer's whole state into CheckpointData and putting it back.
//
// A capture holds everything that decides the rest of a run, so restoring it into a fresh Trainer
// built from the same spec and seed continues with bitwise-identical losses:
//   tensors  every model parameter by name ("dense/kernel"), then every optimizer slot by name
//            ("dense/kernel/Adam", "dense/kernel/Adam_1"); Adam's beta powers follow from the step
//   states   "input_pipeline" = {epoch, index_in_epoch} (BatchIterator::State, as two's complement)
//            "<layer>/rng"     = the layer's Rng state (4 words) for each layer that has one
//   global_step
#pragma once

#include "trainingd/engine/base/status.h"
#include "trainingd/engine/io/checkpoint.h"
#include "trainingd/engine/train/trainer.h"

namespace trainingd::engine {

// Name of the input pipeline's state record.
inline constexpr const char* kInputPipelineStateName = "input_pipeline";

// Copies `trainer`'s state. Creates the optimizer's slots first (as zeros when no step ran yet), so
// every checkpoint lists every slot; this is why the trainer is not const and why this can fail:
// InvalidArgument from Optimizer::CreateSlots when a slot does not match its parameter's shape;
// FailedPrecondition on a data-parallel rank that does not hold the whole state
// (Trainer::state_whole).
Result<CheckpointData> CaptureTrainer(Trainer& trainer);

// Puts `data` into `trainer`. Everything is checked before anything changes, so on error the
// trainer is untouched. InvalidArgument, naming the variable or record:
//   a model parameter missing from the checkpoint ("dense/kernel: missing from the checkpoint"),
//   or of another shape ("dense/kernel: checkpoint has [3136,1024], model has [784,1024]");
//   a tensor that is neither a parameter nor one of this optimizer's slots (a different model or
//   optimizer), a slot of another shape than its parameter, a missing slot;
//   a missing, malformed or unknown state record; an input position out of range; a negative step.
Status RestoreTrainer(Trainer& trainer, const CheckpointData& data);

// The model's half of RestoreTrainer, for a model that only predicts (TrainedModel): copies
// `data`'s value of each of `model`'s parameters into it, by name, and ignores the rest of `data`
// (optimizer slots, state records). Checked first, with RestoreTrainer's errors (a parameter
// missing from the checkpoint or of another shape, a name twice); on error the model is untouched.
Status RestoreModelParameters(Model& model, const CheckpointData& data);

}  // namespace trainingd::engine
