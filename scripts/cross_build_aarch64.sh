#!/usr/bin/env bash
# Cross-builds qnnpy's C++ core and its test driver qnnpy_kernel_tests for AArch64 and runs
# the kernel twin checks under qemu-user, on an emulated CPU with the dot-product extension
# (-cpu max) and on one without it (-cpu cortex-a53).
#   scripts/cross_build_aarch64.sh [BUILD_DIR]      (default build/aarch64-kernel-tests)
# Tools: scripts/install_cross_tools.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/aarch64-kernel-tests}
SYSROOT=/usr/aarch64-linux-gnu
GENERATOR=()
if command -v ninja > /dev/null; then GENERATOR=(-G Ninja); fi
cmake -S . -B "$BUILD" "${GENERATOR[@]}" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DQNNPY_PYTHON=OFF -DQNNPY_KERNEL_TESTS=ON
cmake --build "$BUILD" --target qnnpy_kernel_tests --parallel
for cpu in max cortex-a53; do
  echo "== qemu-aarch64 -cpu $cpu"
  qemu-aarch64 -cpu "$cpu" -L "$SYSROOT" "$BUILD/qnnpy_kernel_tests" info
  qemu-aarch64 -cpu "$cpu" -L "$SYSROOT" "$BUILD/qnnpy_kernel_tests" twins
done
