// ThreadSanitizer's defaults for every program of a TRAININGD_SANITIZE=thread build (the top-level
// CMakeLists.txt links this into each executable), so the tests and a daemon started by hand
// behave alike: the first race ends the process (exit code 66) with both stacks, and the
// suppressions of third-party libraries in suppressions.txt apply. TSAN_OPTIONS in the
// environment is read after these and overrides them.
extern "C" const char* __tsan_default_options() {
  return "halt_on_error=1 second_deadlock_stack=1 suppressions=" TRAININGD_TSAN_SUPPRESSIONS;
}
