// Writes a known sequence of events into DIR for tests/tools/read_tfevents.py --check, which reads
// them back with an independent implementation of the format.
#include <cstdio>

#include "trainingd/engine/io/event_file_writer.h"

int main(int argc, char** argv) {
  using trainingd::engine::EventFileWriter;
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_sample_events DIR\n");
    return 2;
  }
  EventFileWriter::Options options;
  options.start_wall_time = 1700000000.0;
  auto writer = EventFileWriter::Create(argv[1], options);
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.status().ToString().c_str());
    return 1;
  }
  for (int s = 1; s <= 200; ++s) {
    const double t = 1700000000.0 + s;
    if (!(*writer)->AddScalar("loss", s, 1.0f / static_cast<float>(s), t).ok() ||
        !(*writer)->AddScalar("accuracy", s, static_cast<float>(s) / 200.0f, t).ok()) {
      return 1;
    }
  }
  const auto st = (*writer)->AddSessionLog(trainingd::engine::SessionLogStatus::kCheckpoint,
                                           "model.ckpt-200", 200, 1700000201.0);
  return st.ok() && (*writer)->Close().ok() ? 0 : 1;
}
