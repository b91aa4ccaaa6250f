// LargestAllocation: the largest single operator-new allocation made on this thread while one is
// alive, to test that a reader sizes its buffers by the bytes it has, not by the sizes a corrupt
// input declares. Works by replacing the global operator new/delete in engine_tests
// (largest_allocation.cpp); they only call malloc/free and note the size.
#pragma once

#include <cstddef>

namespace trainingd::engine::testing {

class LargestAllocation {
 public:
  LargestAllocation();
  ~LargestAllocation();
  LargestAllocation(const LargestAllocation&) = delete;
  LargestAllocation& operator=(const LargestAllocation&) = delete;

  // Bytes of the largest allocation so far.
  size_t bytes() const { return largest_; }

 private:
  size_t largest_ = 0;
  size_t* previous_;
};

}  // namespace trainingd::engine::testing
