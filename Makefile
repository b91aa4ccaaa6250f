# Two commands on a fresh Debian 12 machine, as root:
#   make run    installs what is missing, builds, and starts the daemon (trainingd serve) on
#               127.0.0.1:8080 with its database and jobs under ./var
#   make test   installs what is missing, builds, and runs every test (Release and ASan+UBSan)
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_GEN  := -G Ninja

.PHONY: all deps build run test test-release test-asan bench bench-deps format clean

all: build

deps:
	@tools/install-deps.sh build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/daemon/trainingd serve --listen 127.0.0.1:8080 --data-dir var

test: test-release test-asan

test-release: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DTRAININGD_SANITIZE=ON \
	  -DTRAININGD_BUILD_BENCH=OFF
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

bench-deps:
	@tools/install-deps.sh bench

bench: bench-deps build
	/usr/bin/python3 bench/compare.py --build $(BUILD)

format:
	clang-format -i $$(git ls-files '*.h' '*.cpp')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
