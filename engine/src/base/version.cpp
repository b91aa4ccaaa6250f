#include "trainingd/engine/base/version.h"

// Defined for this file only (engine/CMakeLists.txt), so a new version recompiles one file.
#ifndef TRAININGD_VERSION
#error "TRAININGD_VERSION is set by engine/CMakeLists.txt"
#endif

namespace trainingd::engine {

const char* TrainingdVersion() { return TRAININGD_VERSION; }

}  // namespace trainingd::engine
