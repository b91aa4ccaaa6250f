// trainingd's version, as the top-level CMakeLists.txt's project() declares it: what an exported
// model records as its producer.
#pragma once

namespace trainingd::engine {

// "0.1.0"; never null.
const char* TrainingdVersion();

}  // namespace trainingd::engine
