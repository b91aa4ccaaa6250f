# Two commands on a fresh Debian 12 machine, as root:
#   make run    installs what is missing, builds, and starts the daemon (trainingd serve) on
#               127.0.0.1:8080 with its database and jobs under ./var
#   make test   installs what is missing, builds, and runs every test (Release; ASan+UBSan,
#               with each fuzz target's seeds and regression inputs and a few seconds of
#               fuzzing; ThreadSanitizer), each later suite's build as an idle task beside the
#               tests of the one before; then prints each suite's build and test times, the
#               total and the slowest tests (tools/run-suites.sh). Every build links with lld
#               when it is installed (install-deps does), and the Release build compiles the
#               service (api/, daemon/) at -O2, the engine at -O3 (docs/architecture.md#build)
#   make test-tsan  only the ThreadSanitizer build (clang, build-tsan/): the daemon's and the
#               api's unit tests, the command-line and e2e tests against its trainingd, the
#               stress tests (docs/architecture.md#threadsanitizer)
#   make fuzz   runs each libFuzzer target for FUZZ_SECONDS (default 60) on a working corpus in
#               build-fuzz/corpus (docs/fuzzing.md)
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
TSAN_BUILD ?= build-tsan
FUZZ_SECONDS ?= 60
FUZZERS    := job_spec http_request checkpoint idx config csv npz upload_body infer_request \
              experiment_spec
JOBS       ?= $(shell nproc)
CMAKE_GEN  := -G Ninja

# Each suite's tests also write JUnit XML beside its build, for the slowest-tests summary.
CTEST = ctest --output-on-failure -j $(JOBS) --output-junit ctest-junit.xml --test-dir

.PHONY: all deps build run test test-release test-asan test-fuzz test-tsan clang-deps fuzz \
	asan-build tsan-build fuzz-build bench bench-deps format clean

all: build

deps:
	@tools/install-deps.sh build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/daemon/trainingd serve --listen 127.0.0.1:8080 --data-dir var

# The suites one after the other, each built and then tested; stops at the first that fails.
test:
	@MAKE="$(MAKE)" BUILD=$(BUILD) ASAN_BUILD=$(ASAN_BUILD) FUZZ_BUILD=$(FUZZ_BUILD) \
	  TSAN_BUILD=$(TSAN_BUILD) tools/run-suites.sh release asan tsan

test-release: build
	$(CTEST) $(BUILD)

# clang-14: it compiles this build in a third of GCC's time (docs/architecture.md#build).
asan-build: clang-deps
	cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DTRAININGD_SANITIZE=address \
	  -DTRAININGD_BUILD_BENCH=OFF -DCMAKE_CXX_COMPILER=clang++-14
	cmake --build $(ASAN_BUILD) -j $(JOBS)

test-asan: asan-build
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(CTEST) $(ASAN_BUILD)

# clang-14; of the engine's tests only its thread team's (tests/engine/CMakeLists.txt says why).
# Options and suppressions: tests/tsan/.
tsan-build: clang-deps
	cmake -S . -B $(TSAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DTRAININGD_SANITIZE=thread \
	  -DTRAININGD_BUILD_BENCH=OFF -DCMAKE_CXX_COMPILER=clang++-14
	cmake --build $(TSAN_BUILD) -j $(JOBS)

test-tsan: tsan-build
	$(CTEST) $(TSAN_BUILD)

# clang-14 and its runtimes: the ASan, TSan and fuzz builds.
clang-deps:
	@tools/install-deps.sh clang

# clang-14 with libFuzzer; only the fuzz targets and the libraries they link.
fuzz-build: clang-deps
	cmake -S . -B $(FUZZ_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DTRAININGD_FUZZ=ON \
	  -DCMAKE_CXX_COMPILER=clang++-14
	cmake --build $(FUZZ_BUILD) -j $(JOBS)

# The smoke: seeds and regression inputs replayed, then a few seconds of fuzzing per target
# (`make test` runs the same in the ASan build, where only the targets' own files have coverage).
test-fuzz: fuzz-build
	$(CTEST) $(FUZZ_BUILD)

fuzz: fuzz-build
	@for t in $(FUZZERS); do \
	  echo "== $$t: $(FUZZ_SECONDS) s"; \
	  tests/fuzz/run_fuzzer.sh $(FUZZ_BUILD)/tests/fuzz/$${t}_fuzzer $$t $(FUZZ_SECONDS) \
	    $(FUZZ_BUILD) || exit 1; \
	done

bench-deps:
	@tools/install-deps.sh bench

bench: bench-deps build
	/usr/bin/python3 bench/compare.py --build $(BUILD)

format:
	clang-format -i $$(git ls-files '*.h' '*.cpp')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(TSAN_BUILD)
