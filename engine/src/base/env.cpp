#include "trainingd/engine/base/env.h"

#include <chrono>
#include <thread>

namespace trainingd::engine {
namespace {

class RealEnv final : public Env {
 public:
  double NowSeconds() override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  double NowMonotonic() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void SleepForSeconds(double seconds) override {
    if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }
};

}  // namespace

Env* Env::Default() {
  static RealEnv env;
  return &env;
}

}  // namespace trainingd::engine
