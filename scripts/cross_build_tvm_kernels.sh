#!/usr/bin/env bash
# Cross-builds qnnpy's TVM kernel library (libqnnpy_tvm_kernels.so, the kernels form's calls) for AArch64, linked
# against the libtvm_ffi.so of apache-tvm-ffi's AArch64 wheel (fetched once into qnnpy's cache), and prints its path:
# what `qnnpy build MODEL -o bundle/ --target aarch64-linux-gnu --form kernels --kernel-library PATH` takes.
#   scripts/cross_build_tvm_kernels.sh [BUILD_DIR]      (default build/aarch64-tvm-kernels)
# Needs: the cross compiler (scripts/install_cross_tools.sh) and qnnpy installed with its [tvm] extra ($PYTHON,
# default .venv/bin/python; run with -P: the installed qnnpy, not this source tree).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/aarch64-tvm-kernels}
PYTHON=${PYTHON:-.venv/bin/python}
RUNTIME=$("$PYTHON" -P -m qnnpy.tvm_bridge.deploy aarch64-linux-gnu)
INCLUDE=$("$PYTHON" -P -m tvm_ffi.config --includedir)
GENERATOR=()
if command -v ninja > /dev/null; then GENERATOR=(-G Ninja); fi
cmake -S . -B "$BUILD" "${GENERATOR[@]}" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
  -DQNNPY_PYTHON=OFF -DQNNPY_TVM_KERNELS=ON -DQNNPY_TVM_FFI_LIBRARY="$RUNTIME/libtvm_ffi.so" \
  -DQNNPY_TVM_FFI_INCLUDE="$INCLUDE" -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 > /dev/null
cmake --build "$BUILD" --target qnnpy_tvm_kernels --parallel >&2
echo "$(cd "$BUILD" && pwd)/libqnnpy_tvm_kernels.so"
