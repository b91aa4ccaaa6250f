#include "trainingd/daemon/commands/export_command.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "trainingd/api/model_json.h"
#include "trainingd/daemon/service/flags.h"
#include "trainingd/engine/io/best_checkpoint.h"
#include "trainingd/engine/io/checkpoint.h"
#include "trainingd/engine/io/onnx_writer.h"
#include "trainingd/engine/job/trained_model.h"

namespace trainingd::daemon {
namespace eng = trainingd::engine;

int ExportCommand(const std::vector<std::string>& args) {
  std::vector<std::string> dirs;
  std::optional<int64_t> step;
  std::string output;
  std::string job_id;
  std::string checkpoint;
  Flags flags(
      "export", "CHECKPOINT_DIR -o model.onnx",
      "Writes the model of the directory's best checkpoint (kept when the run evaluated),\n"
      "else of its latest, or of step N, as an ONNX\n"
      "file (IR 7, opset 13): input 'input' in the dataset's raw units, outputs 'logits'\n"
      "and 'probabilities' (docs/models.md). The directory is a `trainingd run` checkpoint\n"
      "directory, or a daemon job's <data-dir>/jobs/<id>.\n");
  flags.Positionals("checkpoint directory", 1, &dirs)
      .Int("--step", "the checkpoint of this global step (the best, else the latest)", 0, INT64_MAX,
           &step)
      .String("--checkpoint", "best|latest",
              "which checkpoint, instead of --step (the best, else the latest)", &checkpoint)
      .String("-o", "FILE", "the ONNX file to write (required; replaced atomically)", &output)
      .String("--output", "FILE", "the same as -o", &output)
      .String("--job-id", "ID", "recorded in the file's metadata as job_id (none)", &job_id);
  return RunWithFlags(flags, args, [&]() -> int {
    if (dirs.empty() || output.empty()) {
      std::fprintf(stderr, "trainingd export: %s\n%s",
                   dirs.empty() ? "no checkpoint directory given" : "-o: required (the file)",
                   flags.Usage().c_str());
      return 2;
    }
    if (!checkpoint.empty() && checkpoint != "best" && checkpoint != "latest") {
      std::fprintf(stderr, "trainingd export: --checkpoint: 'best' or 'latest', got '%s'\n",
                   checkpoint.c_str());
      return 2;
    }
    if (!checkpoint.empty() && step) {
      std::fprintf(stderr, "trainingd export: --checkpoint: give --checkpoint or --step\n");
      return 2;
    }
    std::string which = step ? "step" : "latest";
    if (!step && checkpoint != "latest") {
      auto best = eng::ReadBestCheckpoint(dirs[0]);
      if (!best.ok()) {
        std::fprintf(stderr, "trainingd export: %s\n", best.status().message().c_str());
        return 1;
      }
      if (*best) {
        step = (*best)->global_step;
        which = "best";
      } else if (checkpoint == "best") {
        std::fprintf(stderr,
                     "trainingd export: --checkpoint best: %s has no best checkpoint (one is "
                     "kept when the run evaluates)\n",
                     dirs[0].c_str());
        return 1;
      }
    }
    auto input = api::ReadModelJson(dirs[0]);
    if (!input.ok()) {
      std::fprintf(stderr, "trainingd export: %s\n", input.status().message().c_str());
      return 1;
    }
    auto model = eng::LoadTrainedModel(dirs[0], step, *input);
    if (!model.ok()) {
      std::fprintf(stderr, "trainingd export: %s\n", model.status().message().c_str());
      return 1;
    }
    auto bytes = eng::ExportOnnx(*model, {.job_id = job_id, .checkpoint = which});
    if (!bytes.ok()) {
      std::fprintf(stderr, "trainingd export: %s\n", bytes.status().message().c_str());
      return 1;
    }
    if (eng::Status st = eng::WriteFileAtomically(output, *bytes); !st.ok()) {
      std::fprintf(stderr, "trainingd export: %s\n", st.message().c_str());
      return 1;
    }
    std::printf("%s: the model of %s at global step %lld, its %s checkpoint (%zu bytes)\n",
                output.c_str(), dirs[0].c_str(), static_cast<long long>(model->step()),
                which == "step" ? "chosen" : which.c_str(), bytes->size());
    return 0;
  });
}

}  // namespace trainingd::daemon
