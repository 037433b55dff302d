#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang, ASan and UBSan, and qnnpy_kernel_tests (the C++ driver of
# the kernels and the runtime) on the same instrumented core:
#   scripts/build_fuzzers.sh [BUILD_DIR]   (default build/fuzz)
# The executables are BUILD_DIR/fuzz/fuzz_<target> and BUILD_DIR/qnnpy_kernel_tests; docs/fuzzing.md says how
# to run them.
# A second run rebuilds only what changed. A unity build (16 sources a translation unit) compiles
# in about 60% of the time of one translation unit a source.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build/fuzz}
CXX=${CXX_FUZZ:-clang++}
if ! command -v "$CXX" >/dev/null; then
  echo "build_fuzzers: $CXX not found (apt-get install clang libclang-rt-14-dev, or run scripts/setup.sh as root)" >&2
  exit 2
fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE= \
  -DQNNPY_PYTHON=OFF -DQNNPY_TVM_KERNELS=OFF -DQNNPY_FUZZ=ON -DQNNPY_KERNEL_TESTS=ON -DQNNPY_SANITIZE=address,undefined \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
