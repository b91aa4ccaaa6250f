// Whether this test is built with a sanitizer (TRAININGD_SANITIZED, which tests/CMakeLists.txt
// defines for every test target of the ASan and TSan builds). Code runs there several times
// slower (the engine about ten times): a test whose point is what much work computes, not how
// memory and threads are used, does less of it there or leaves it to the Release run, saying
// which.
#pragma once

namespace trainingd::test_support {

#ifdef TRAININGD_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace trainingd::test_support
