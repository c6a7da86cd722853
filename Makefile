# kforge: the README's commands. `make help` lists them.
#   make run    deps, build, embedded PostgreSQL, server on :8080 and one worker
#   make test   deps, build, the docs check, throwaway PostgreSQL, every test through ctest
BUILD_DIR ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)
CTEST_ARGS ?=
BENCH ?=

.PHONY: help deps build run test test-fast check-docs bench fmt clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

deps: ## install build and run dependencies from Debian packages and the test venv (quiet when present)
	@echo "deps: checking Debian packages (scripts/install-deps.sh) and the Python venv"
	@scripts/install-deps.sh
	@scripts/python-env.sh $(BUILD_DIR)

$(BUILD_DIR)/build.ninja:
	@echo "build: configuring $(BUILD_DIR) (CMake finds libtorch, cpprestsdk, libpqxx, OpenCL)"
	@cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS) >/dev/null

# Ninja's [done/total] lines are the progress: a first build compiles about 300 files, many
# against libtorch's headers (README "Quick start" says how long that takes); ccache makes
# later ones mostly cache hits.
build: deps $(BUILD_DIR)/build.ninja ## configure and build (Release, ccache when present)
	@echo "build: compiling with $(JOBS) jobs into $(BUILD_DIR) (a first build takes minutes; [done/total] below)"
	@cmake --build $(BUILD_DIR) -j $(JOBS)
	@echo "build: done"

run: build ## start PostgreSQL, kforge-server on http://127.0.0.1:8080 and one worker; Ctrl-C stops all
	@echo "run: starting PostgreSQL, kforge-server and one worker"
	@scripts/run.sh $(BUILD_DIR)

test: build check-docs ## check the docs, then run every test against a throwaway PostgreSQL
	@scripts/test.sh $(BUILD_DIR) $(CTEST_ARGS)

test-fast: build ## run only the tests that need no database
	@cd $(BUILD_DIR) && ctest -L fast --output-on-failure -j $(JOBS)

check-docs: $(BUILD_DIR)/build.ninja ## fail when a doc or file header names a missing test, target or file, or a source file has no header
	@python3 scripts/check_docs.py $(BUILD_DIR)

bench: build ## list the benchmarks (bench/README.md); BENCH=name runs one
	@bench/run.sh $(BENCH)

fmt: ## clang-format every C++ source
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean: ## remove the build folder (data in ./var is kept)
	rm -rf $(BUILD_DIR)
