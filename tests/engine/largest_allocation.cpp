#include "largest_allocation.h"

#include <cstdlib>
#include <new>

namespace trainingd::engine::testing {
namespace {
thread_local size_t* g_largest = nullptr;  // the innermost live LargestAllocation's counter
}  // namespace

LargestAllocation::LargestAllocation() : previous_(g_largest) { g_largest = &largest_; }
LargestAllocation::~LargestAllocation() { g_largest = previous_; }

}  // namespace trainingd::engine::testing

// The plain forms only: std::vector and std::string allocate through them. The aligned forms
// keep the library's own (malloc-compatible) implementation.
void* operator new(size_t n) {
  if (size_t* largest = trainingd::engine::testing::g_largest; largest && n > *largest) {
    *largest = n;
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
