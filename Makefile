# libmcp: the two commands of the README, and a few more.
#
#   make demo      install missing packages, build, run the tour
#   make check     install missing packages, build with ASan+UBSan, run every test
#   make fuzz      build the libFuzzer targets with clang-14 and run each for FUZZ_SECONDS
#   make tsan      build with ThreadSanitizer, run the tests (not part of check: slow)
#   make bench     optimised build, run the benchmarks against real peers
#   make install   install headers, libraries, pkg-config and CMake files (PREFIX)

PREFIX       ?= /usr/local
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
CTEST_ARGS   ?=

RELEASE_DIR := build/release
CHECK_DIR   := build/check
FUZZ_DIR    := build/fuzz
BENCH_DIR   := build/bench
TSAN_DIR    := build/tsan

.PHONY: all demo check fuzz tsan bench install deps clean

all: release

deps:
	@scripts/install-deps.sh build

release: deps
	@cmake -S . -B $(RELEASE_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_INSTALL_PREFIX=$(PREFIX) -DMCP_BUILD_TESTS=OFF >/dev/null
	@cmake --build $(RELEASE_DIR) -j $(JOBS)

demo: release
	@scripts/demo.sh $(RELEASE_DIR)

check:
	@scripts/install-deps.sh check
	@# The release tree (gcc, what make demo builds) must compile warning-free too.
	@cmake -S . -B $(RELEASE_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_INSTALL_PREFIX=$(PREFIX) -DMCP_BUILD_TESTS=OFF >/dev/null
	@cmake --build $(RELEASE_DIR) -j $(JOBS)
	@CC=clang-14 cmake -S . -B $(CHECK_DIR) -DCMAKE_BUILD_TYPE=Debug \
	  -DMCP_SANITIZE=ON -DMCP_BUILD_FUZZ=ON >/dev/null
	@cmake --build $(CHECK_DIR) -j $(JOBS)
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(CHECK_DIR) --output-on-failure -j $(JOBS) $(CTEST_ARGS)

fuzz:
	@scripts/install-deps.sh check
	@CC=clang-14 cmake -S . -B $(FUZZ_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DMCP_SANITIZE=ON -DMCP_BUILD_FUZZ=ON -DMCP_BUILD_TESTS=OFF \
	  -DMCP_BUILD_EXAMPLES=OFF >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS)
	@scripts/run-fuzzers.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

# Fuzzers and benchmarks are left out: libFuzzer and TSan do not mix, and
# timings under TSan mean nothing. So is the install test, which builds a
# program against the installed (uninstrumented) library.
tsan:
	@scripts/install-deps.sh check
	@CC=clang-14 cmake -S . -B $(TSAN_DIR) -DCMAKE_BUILD_TYPE=Debug -DMCP_BUILD_FUZZ=OFF \
	  -DCMAKE_C_FLAGS="-fsanitize=thread -g -O1" -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
	  -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >/dev/null
	@cmake --build $(TSAN_DIR) -j $(JOBS)
	@TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/scripts/tsan.supp" \
	  ctest --test-dir $(TSAN_DIR) --output-on-failure -j $(JOBS) -E '^(fuzz|bench|install)/' $(CTEST_ARGS)

bench:
	@scripts/install-deps.sh bench
	@cmake -S . -B $(BENCH_DIR) -DCMAKE_BUILD_TYPE=Release -DMCP_BUILD_TESTS=OFF \
	  -DMCP_BUILD_BENCH=ON >/dev/null
	@cmake --build $(BENCH_DIR) -j $(JOBS)
	@if [ -x bench/run.sh ]; then bench/run.sh $(BENCH_DIR); \
	  else echo "bench: no benchmarks yet (see issue: benchmarks)"; fi

install: release
	@cmake --install $(RELEASE_DIR) --prefix $(PREFIX)

clean:
	rm -rf build
