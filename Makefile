# hiredhand -- the two commands of the quick start, and the rest.
#   make demo    install what is missing, build, run a worker on real jobs
#   make check   build, unit tests + fast integration tests (< 3 min): the edit loop
#   make test    install what is missing, build, run every test, sanitizers, lint
#   make fuzz    run each libFuzzer harness of tests/fuzz for FUZZ_SECONDS
#   make format  clang-format the C sources in place (format-check: only look)
# Everything else builds through CMake into build/ (build-asan/ for the
# AddressSanitizer + UndefinedBehaviorSanitizer run, build-tsan/ for
# ThreadSanitizer, build-fuzz/ for fuzzing).

BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
JOBS       ?= 2
# make check's tests at a time: most of them wait on Redis or a worker for much of
# their run, so four share two cores well (measured: 184% CPU at -j4)
CHECK_JOBS ?= 4
CMAKE_ARGS ?=

.PHONY: all build deps demo check test test-build test-unit test-integration test-asan test-tsan \
        lint cppcheck format format-check fuzz bench soak install clean

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

# The edit-build-test loop: unit tests, fuzz corpus replays and the
# integration tests that do not wait out real timeouts, one or more per concept
# (the others carry the ctest label `slow`, see tests/CMakeLists.txt, and run
# in `make test`).
check:
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory test-build && \
	(cd $(BUILD) && ctest --output-on-failure -LE slow -j $(CHECK_JOBS)); rc=$$?; \
	echo "make check: $$(( $$(date +%s) - start )) s"; exit $$rc

# Everything: lint, every test on the normal build, then the same suite under
# ASan+UBSan, then the unit tests and a short worker run under TSan.
test: deps lint test-build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory test-asan
	@$(MAKE) --no-print-directory test-tsan

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

# ThreadSanitizer: the unit tests (several of which run threads against a
# real Redis) and three integration tests that run a worker with several
# threads: heartbeats, retries and a stop; a fast drain where threads share
# fetched batches and acks (the shapes driver, built with TSan too).
TSAN_TESTS ?= ^unit_|^integration_test_retry_dead$$|^integration_test_sigterm_requeue_reliable$$|^integration_test_fetch_slow_jobs_together$$
test-tsan:
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DHH_SANITIZE=thread -DHH_TESTS=ON $(CMAKE_ARGS) >/dev/null
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	@rm -rf $(TSAN_BUILD)/tsan-reports && mkdir -p $(TSAN_BUILD)/tsan-reports
	@# Reports go to files too: a worker started by an integration test logs
	@# to its own file, which the test does not read.
	cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:log_path=$(CURDIR)/$(TSAN_BUILD)/tsan-reports/tsan \
	  ctest --output-on-failure -R '$(TSAN_TESTS)' -j $(JOBS)
	@if [ -n "$$(ls -A $(TSAN_BUILD)/tsan-reports)" ]; then \
	  cat $(TSAN_BUILD)/tsan-reports/*; echo "test-tsan: ThreadSanitizer reports above ($(TSAN_BUILD)/tsan-reports)"; exit 1; fi

lint: format-check cppcheck

# cppcheck over the library, the CLI and the examples. Suppressions are in
# .cppcheck-suppressions, each with the reason it is there.
cppcheck:
	cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability,performance \
	  --inline-suppr --suppressions-list=.cppcheck-suppressions -D_GNU_SOURCE \
	  --include=scripts/cppcheck-macros.h -I include -I src src cli examples

# clang-format (style in .clang-format) over the C sources we own.
FORMAT_FILES = $(wildcard src/*.[ch] include/*.h cli/*.[ch] tests/unit/*.[ch] examples/*.[ch] bench/*.c)
format:
	clang-format -i $(FORMAT_FILES)

# Names each file that differs (clang-format --dry-run FILE shows how).
format-check:
	@bad=0; for f in $(FORMAT_FILES); do \
	    clang-format --dry-run --Werror "$$f" >/dev/null 2>&1 || { echo "format-check: $$f"; bad=$$((bad+1)); }; \
	done; \
	if [ $$bad -gt 0 ]; then echo "format-check: $$bad files differ from .clang-format: run make format"; exit 1; fi

bench: build
	@scripts/deps.sh bench
	@bench/run.sh $(BENCH_ARGS)

soak: build
	@tests/soak/soak.sh

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
