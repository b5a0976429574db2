# hiredhand -- the two commands of the quick start, and the rest.
#   make demo    install what is missing, build, run a worker on real jobs
#   make test    install what is missing, build, run every test
# Everything else builds through CMake into build/ (build-asan/ for the
# AddressSanitizer + UndefinedBehaviorSanitizer run).

BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= 2
CMAKE_ARGS ?=

.PHONY: all build deps demo test test-build test-unit test-integration test-asan bench soak install clean

all: build

deps:
	@scripts/deps.sh test

$(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)

build: $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

demo:
	@scripts/deps.sh demo
	@$(MAKE) --no-print-directory build
	@HH_BUILD=$(BUILD) scripts/demo.sh

# Unit and integration tests on the normal build, then the same suite
# under ASan+UBSan. Each integration test starts its own redis-server.
# The tests need cmocka: configure with HH_TESTS=ON so a missing cmocka is an
# error here, even in a build dir first configured without it (make demo).
test-build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHH_TESTS=ON $(CMAKE_ARGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

test: deps test-build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory test-asan

test-unit: test-build
	cd $(BUILD) && ctest --output-on-failure -L unit -j $(JOBS)

test-integration: test-build
	cd $(BUILD) && ctest --output-on-failure -L integration -j $(JOBS)

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DHH_SANITIZE=ON -DHH_TESTS=ON $(CMAKE_ARGS) >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

bench: build
	@scripts/deps.sh test
	@bench/run.sh $(BENCH_ARGS)

soak: build
	@tests/soak/soak.sh

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
