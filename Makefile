# hiredhand -- the two commands of the quick start, and the rest.
#   make demo    install what is missing, build, run a worker on real jobs
#   make test    install what is missing, build, run every test
#   make fuzz    run each libFuzzer harness of tests/fuzz for FUZZ_SECONDS
# Everything else builds through CMake into build/ (build-asan/ for the
# AddressSanitizer + UndefinedBehaviorSanitizer run, build-fuzz/ for fuzzing).

BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= 2
CMAKE_ARGS ?=

.PHONY: all build deps demo test test-build test-unit test-integration test-asan fuzz bench soak install clean

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

# Each harness of tests/fuzz with libFuzzer (clang, ASan+UBSan) for
# FUZZ_SECONDS, starting from its committed corpus; new inputs go to
# build-fuzz/corpus/<target>, crashers to build-fuzz/crash-<target>-*.
# A crash ends that target's run (the others still run, then make fails):
# fix it, then commit the input into
# tests/fuzz/corpus/<target>/ so that `make test` replays it.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= job redis_url keys http utf8 exec_split
fuzz:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DHH_FUZZ=ON -DHH_TESTS=OFF $(CMAKE_ARGS) >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@failed=""; for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	    echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
	    if $(FUZZ_BUILD)/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        -artifact_prefix=$(FUZZ_BUILD)/crash-$$t- $(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t \
	        >$(FUZZ_BUILD)/fuzz-$$t.log 2>&1; then \
	        grep -h '^stat::number_of_executed_units' $(FUZZ_BUILD)/fuzz-$$t.log || true; \
	    else \
	        grep -a -h -E 'property failed|^SUMMARY|Test unit written' $(FUZZ_BUILD)/fuzz-$$t.log; \
	        failed="$$failed $$t"; \
	    fi; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: failed:$$failed (logs: $(FUZZ_BUILD)/fuzz-<target>.log)"; exit 1; fi

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DHH_SANITIZE=ON -DHH_TESTS=ON $(CMAKE_ARGS) >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

bench: build
	@scripts/deps.sh bench
	@bench/run.sh $(BENCH_ARGS)

soak: build
	@tests/soak/soak.sh

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
